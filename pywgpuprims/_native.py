"""The per-call path to the GPU: command encoding, submission, buffer mapping and queue writes,
through wgpu-native's C functions directly (the ``lib`` that wgpu-py itself calls).

wgpu-py wraps every C call in Python bookkeeping (error capture, descriptor structs, promise
objects, a poll thread for mappings). For objects made once (pipelines, bind groups, buffers) that
is fine; on the path every primitive call takes, it cost more than the GPU work of a small call.
Measured on an H200 (Vulkan, wgpu-py 0.32, 2026-11-27, a probe of bare calls): one dispatch +
submit 40 us through wgpu-py and 17 us through these calls; a 16-byte map round trip 152 us
through ``map_sync`` and 28 us here (torch's ``.item()``: 19 us).

Validation errors surface where wgpu-native reports them, at ``finish`` and ``submit``: those two
go through wgpu-py's error-capturing wrappers, so a rejected batch raises ``wgpu.GPUError`` as
before. Objects stay wgpu-py's; only their handles (``_internal``) are passed here.
"""

from __future__ import annotations

import time
import weakref

import numpy as np
from wgpu.backends.wgpu_native._api import libf
from wgpu.backends.wgpu_native._ffi import ffi, lib

from ._errors import ShaderError

NULL = ffi.NULL
#: On a GPU, a mapping waited for is polled without blocking for this long before the wait blocks:
#: a small call's fence is back within tens of microseconds, and a blocking poll adds ~25 us (H200,
#: 2026-11-27, 16-byte map round trip 28 us spinning, 54 us blocking). On a CPU adapter (lavapipe,
#: llvmpipe) a spinning host thread takes the cores that run the work, so waits block at once.
GPU_SPIN_S = 0.0002
_SPIN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def set_spin(device, seconds: float) -> None:
    """How long a wait on ``device`` (a wgpu-py GPUDevice) polls before it blocks (0: it blocks)."""
    _SPIN[device] = float(seconds)

MAP_READ = lib.WGPUMapMode_Read
MAP_WRITE = lib.WGPUMapMode_Write
_OK = lib.WGPUMapAsyncStatus_Success


@ffi.callback("void(WGPUMapAsyncStatus, WGPUStringView, void *, void *)")
def _mapped(status, message, cell, _unused):
    ffi.cast("int *", cell)[0] = 1 if status == _OK else 2 + int(status)


class Encoder:
    """One command encoder: record, then :meth:`submit` (once). Handles are wgpu-native's."""

    __slots__ = ("_enc", "_pass", "_offset")

    def __init__(self, device):
        self._enc = lib.wgpuDeviceCreateCommandEncoder(device._internal, NULL)
        self._pass = None
        self._offset = ffi.new("uint32_t[1]")

    # compute passes
    def begin_pass(self, query_set=None, begin_index: int | None = None, end_index: int | None = None) -> None:
        if query_set is None:
            self._pass = lib.wgpuCommandEncoderBeginComputePass(self._enc, NULL)
            return
        tw = ffi.new("WGPUPassTimestampWrites *")
        tw.querySet = query_set._internal
        tw.beginningOfPassWriteIndex = lib.WGPU_QUERY_SET_INDEX_UNDEFINED if begin_index is None else begin_index
        tw.endOfPassWriteIndex = lib.WGPU_QUERY_SET_INDEX_UNDEFINED if end_index is None else end_index
        desc = ffi.new("WGPUComputePassDescriptor *")
        desc.timestampWrites = tw
        self._pass = lib.wgpuCommandEncoderBeginComputePass(self._enc, desc)

    def end_pass(self) -> None:
        p, self._pass = self._pass, None
        if p is not None:
            lib.wgpuComputePassEncoderEnd(p)
            lib.wgpuComputePassEncoderRelease(p)

    def dispatch(self, pipeline, group, groups, offset: int | None = None) -> None:
        p = self._pass
        lib.wgpuComputePassEncoderSetPipeline(p, pipeline._internal)
        if offset is None:
            lib.wgpuComputePassEncoderSetBindGroup(p, 0, group._internal, 0, NULL)
        else:
            self._offset[0] = offset
            lib.wgpuComputePassEncoderSetBindGroup(p, 0, group._internal, 1, self._offset)
        if groups is None:
            return
        if groups.__class__ is tuple:
            lib.wgpuComputePassEncoderDispatchWorkgroups(p, groups[0], groups[1], groups[2])
        else:  # (buffer, offset) of indirect counts
            lib.wgpuComputePassEncoderDispatchWorkgroupsIndirect(p, groups.buffer._internal, groups.offset)

    # outside passes
    def clear(self, buffer, offset: int, size: int) -> None:
        lib.wgpuCommandEncoderClearBuffer(self._enc, buffer._internal, offset, size)

    def copy(self, src, src_offset: int, dst, dst_offset: int, size: int) -> None:
        lib.wgpuCommandEncoderCopyBufferToBuffer(self._enc, src._internal, src_offset, dst._internal, dst_offset, size)

    def resolve(self, query_set, first: int, count: int, dst, offset: int) -> None:
        lib.wgpuCommandEncoderResolveQuerySet(self._enc, query_set._internal, first, count, dst._internal, offset)

    def submit(self, queue) -> None:
        """Finish and submit; raises ``wgpu.GPUError`` where the work was rejected."""
        self.end_pass()
        enc, self._enc = self._enc, None
        try:
            cmd = libf.wgpuCommandEncoderFinish(enc, NULL)
        finally:
            lib.wgpuCommandEncoderRelease(enc)
        try:
            libf.wgpuQueueSubmit(queue._internal, 1, ffi.new("WGPUCommandBuffer[1]", [cmd]))
        finally:
            lib.wgpuCommandBufferRelease(cmd)

    def __del__(self) -> None:  # dropped unsubmitted (an exception while recording)
        if self._pass is not None:
            lib.wgpuComputePassEncoderEnd(self._pass)
            lib.wgpuComputePassEncoderRelease(self._pass)
        if self._enc is not None:
            lib.wgpuCommandEncoderRelease(self._enc)


def write(queue, buffer, offset: int, data: np.ndarray) -> None:
    """Queue a write of the contiguous array ``data`` (a multiple of 4 bytes) into ``buffer``."""
    if data.nbytes:
        lib.wgpuQueueWriteBuffer(queue._internal, buffer._internal, offset, ffi.from_buffer(data), data.nbytes)


class Mapping:
    """A map request of ``size`` bytes of a MAP_READ or MAP_WRITE buffer from ``offset``, made now;
    :meth:`wait` waits for it, :meth:`array` is the mapped bytes, :meth:`unmap` gives them back.

    It resolves once the GPU has finished the work submitted before it that uses the buffer.
    """

    __slots__ = ("_buffer", "_offset", "_size", "_mode", "_cell", "_state")

    def __init__(self, buffer, mode: int, offset: int, size: int):
        self._buffer, self._mode = buffer, mode
        self._offset, self._size = offset, size
        self._cell = cell = ffi.new("int[1]")
        info = ffi.new("WGPUBufferMapCallbackInfo *")
        info.mode = lib.WGPUCallbackMode_AllowSpontaneous
        info.callback = _mapped
        info.userdata1 = cell
        self._state = 0  # 0 requested, 1 mapped, 2 unmapped
        lib.wgpuBufferMapAsync(buffer._internal, mode, offset, size, info[0])

    def wait(self, what: str = "readback") -> Mapping:
        cell = self._cell
        if cell[0] == 0:
            device = self._buffer._device
            dev = device._internal
            lib.wgpuDevicePoll(dev, 0, NULL)
            spin = _SPIN.get(device, 0.0)
            if cell[0] == 0 and spin:
                deadline = time.perf_counter() + spin
                while cell[0] == 0 and time.perf_counter() < deadline:
                    lib.wgpuDevicePoll(dev, 0, NULL)
            while cell[0] == 0:
                lib.wgpuDevicePoll(dev, 1, NULL)
        if cell[0] != 1:
            self._state = 2
            raise ShaderError(what, f"mapping a staging buffer failed (wgpu status {cell[0] - 2})")
        self._state = 1
        return self

    def array(self, nbytes: int | None = None) -> np.ndarray:
        """The mapped bytes as a uint8 array (writable for a MAP_WRITE mapping); valid until
        :meth:`unmap`."""
        if self._state != 1:
            self.wait()
        n = self._size if nbytes is None else nbytes
        if self._mode == MAP_WRITE:
            ptr = lib.wgpuBufferGetMappedRange(self._buffer._internal, self._offset, self._size)
        else:
            ptr = lib.wgpuBufferGetConstMappedRange(self._buffer._internal, self._offset, self._size)
        if ptr == NULL:
            raise ShaderError("readback", "the mapped range could not be read")
        return np.frombuffer(ffi.buffer(ptr, n), np.uint8)

    def unmap(self) -> None:
        """Give the mapping back (waiting for it first if it is still pending)."""
        if self._state == 2:
            return
        if self._state == 0:
            try:
                self.wait()
            except ShaderError:
                return
        self._state = 2
        lib.wgpuBufferUnmap(self._buffer._internal)

"""The one way pywgpuprims compiles, caches and dispatches kernels.

A :class:`Device` owns a wgpu device, a pipeline cache, a bind-group cache and the memory pool.
Primitives record work into a :class:`Batch` (clears, copies, dispatches) and submit it once;
kernels are named by their WGSL path and specialisation, and bound by the names their WGSL
declares, so no primitive touches bind-group layouts or command encoders itself.
"""

from __future__ import annotations

import itertools
import logging
import os
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import wgpu

from . import _native
from ._errors import DeviceLimitError, InputError, PrimitiveError, ShaderError
from ._hooks import TestHooks, replace_hooks
from ._memory import STORAGE_USAGE, Block, MemoryPool
from ._shader import parse_bindings, parse_params, preprocess

_BACKENDS = {"vulkan": "Vulkan", "gl": "OpenGL", "opengl": "OpenGL", "metal": "Metal", "d3d12": "D3D12"}
_ADAPTER_RANK = {"DiscreteGPU": 0, "IntegratedGPU": 1, "VirtualGPU": 2, "CPU": 3, "Unknown": 4}
_WANTED_FEATURES = ("subgroup", "timestamp-query", "shader-int64", "shader-f64")
_WANTED_LIMITS = (
    "max-storage-buffer-binding-size",
    "max-buffer-size",
    "max-compute-workgroup-storage-size",
    "max-compute-invocations-per-workgroup",
    "max-compute-workgroup-size-x",
    "max-storage-buffers-per-shader-stage",
)


def _ranked_adapters(backend: str | None = None, name: str | None = None) -> list:
    """The adapters pywgpuprims may use, best first: filtered by ``backend`` / ``name`` (else by
    ``PYWGPUPRIMS_BACKEND`` / ``PYWGPUPRIMS_ADAPTER``), discrete GPUs first, Vulkan first within a kind.

    The enumeration is made once per filter; :func:`devices` lists one :class:`Device` per entry."""
    backend = backend or os.environ.get("PYWGPUPRIMS_BACKEND") or None
    name = name or os.environ.get("PYWGPUPRIMS_ADAPTER") or None
    key = (backend, name)
    ranked = _RANKED.get(key)
    if ranked is not None:
        return ranked
    if not _RANKED.get("all"):
        _RANKED["all"] = list(wgpu.gpu.enumerate_adapters_sync())
    adapters = [a for a in _RANKED["all"] if a.info.get("backend_type") in _BACKENDS.values()]
    if backend:
        want = _BACKENDS.get(backend.lower())
        if want is None:
            raise ValueError(f"PYWGPUPRIMS_BACKEND={backend!r}: expected one of vulkan, gl, metal, d3d12")
        adapters = [a for a in adapters if a.info.get("backend_type") == want]
    if name:
        adapters = [a for a in adapters if name.lower() in a.summary.lower()]
    if not adapters:
        found = ", ".join(a.summary for a in _RANKED["all"]) or "none"
        raise RuntimeError(
            f"pywgpuprims: no GPU adapter matches backend={backend!r} name={name!r} (found: {found}). "
            "On a machine without a GPU install lavapipe: apt-get install mesa-vulkan-drivers libvulkan1"
        )
    adapters.sort(key=lambda a: (_ADAPTER_RANK.get(a.info.get("adapter_type", "Unknown"), 4),
                                 a.info.get("backend_type") != "Vulkan"))
    _RANKED[key] = adapters
    return adapters


_RANKED: dict = {}  # (backend, name) -> adapters in rank order; "all" -> the enumeration


def _choose_adapter(backend: str | None, name: str | None):
    return _ranked_adapters(backend, name)[0]


class Binding:
    """A byte range of a buffer to bind (``size=None``: to the end of the block).

    A value (equal and hashed by its fields; never changed once made), made several times per
    call: a plain class with slots, not a frozen dataclass, whose ``__init__`` costs 3-4 times as much.
    """

    __slots__ = ("buffer", "offset", "size")

    def __init__(self, buffer: Any, offset: int = 0, size: int | None = None):
        self.buffer = buffer
        self.offset = offset
        self.size = size

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Binding:
            return NotImplemented
        return (self.buffer, self.offset, self.size) == (other.buffer, other.offset, other.size)

    def __hash__(self) -> int:
        return hash((self.buffer, self.offset, self.size))

    def __repr__(self) -> str:
        return f"Binding(buffer={self.buffer!r}, offset={self.offset!r}, size={self.size!r})"


@dataclass(frozen=True)
class TransferTuning:
    """Host <-> device transfer settings (one per device class; the default serves all).

    H200 via Vulkan, 2026-11-27, probes of 64 and 400 MiB float32 arrays: host copies split over
    threads: download into a fresh array 3.1-3.4 GB/s on one thread, 8.7-11.7 on eight; upload
    7.8-9.0 through ``write_mapped``, 14-21 on four. Chunks of 64 MiB: with upload staging of 32
    or 128 MiB, every later small call on that H200 took 4-5 ms instead of 0.3-0.6 (not understood;
    64 MiB showed none of it in the same sequence of calls).
    """

    #: uploads up to this size go through ``queue.write_buffer`` (no map round trip)
    small_upload: int = 1 << 20
    #: staged transfers move chunks of this size, the GPU copy of one overlapping the host copy of the next
    chunk: int = 64 << 20
    #: results up to this size are copied out in the submission that computes them (one map round trip)
    one_shot: int = 32 << 20
    #: results with a count (compaction, RLE) up to this worst-case size are copied out whole beside
    #: their count; larger ones read the count first, then just the kept part
    one_shot_counted: int = 1 << 20
    #: threads that copy a chunk between numpy and a mapping (capped by the machine's cores)
    threads: int = 8
    #: no thread copies less than this
    min_part: int = 1 << 20


TRANSFER = TransferTuning()
_COPY_POOL: list = []


def _parallel_copy(dst: np.ndarray, src: np.ndarray, tuning: TransferTuning) -> None:
    """``np.copyto(dst, src)`` for 1-D uint8 arrays, split over threads (numpy's copy releases the
    GIL, and page faults of a fresh destination are taken in parallel too)."""
    n = dst.size
    parts = max(1, min(tuning.threads, os.cpu_count() or 1, n // max(1, tuning.min_part)))
    if parts == 1:
        np.copyto(dst, src)
        return
    if not _COPY_POOL:
        from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415

        _COPY_POOL.append(ThreadPoolExecutor(max(1, min(tuning.threads, os.cpu_count() or 1)),
                                             thread_name_prefix="pywgpuprims-copy"))
    step = (-(-n // parts) + 4095) // 4096 * 4096
    futures = [_COPY_POOL[0].submit(np.copyto, dst[i:i + step], src[i:i + step]) for i in range(step, n, step)]
    np.copyto(dst[:step], src[:step])
    for f in futures:
        f.result()

_PARAM_FMT = {"u32": "I", "i32": "i", "f32": "f"}
CONSTANTS_KEPT = 64 << 20  # bytes of Device.constant buffers kept before the plans are dropped


class Kernel:
    """A compiled compute pipeline plus what its WGSL declares (bindings, Params fields)."""

    def __init__(self, device: Device, path: str, entry: str, defines: dict, constants: dict):
        self.device = device
        self.path = path
        self.entry = entry
        self.defines = defines
        self.name = f"{path}:{entry}"
        source = preprocess(path, defines)
        self.source = source
        self.bindings = parse_bindings(source)
        self.params = parse_params(source)
        self._param_names = frozenset(n for n, _ in self.params)
        self._param_order = tuple(n for n, _ in self.params)
        self._param_u32 = tuple(t == "u32" for _, t in self.params)
        self._param_struct = struct.Struct("<" + "".join(_PARAM_FMT[t] for _, t in self.params))
        self.param_size = -(-self._param_struct.size // 16) * 16
        self._storage = tuple((num, name, kind != "uniform") for num, kind, name in self.bindings
                              if name != "params")
        self._storage_names = tuple(name for _, name, _ in self._storage)
        self._written = frozenset(name for _, kind, name in self.bindings if kind == "read_write")
        raw = device.raw
        layout_entries = []
        for num, kind, name in self.bindings:
            if kind == "uniform":
                ty = {"type": wgpu.BufferBindingType.uniform, "has_dynamic_offset": name == "params"}
            elif kind == "read":
                ty = {"type": wgpu.BufferBindingType.read_only_storage}
            else:
                ty = {"type": wgpu.BufferBindingType.storage}
            layout_entries.append({"binding": num, "visibility": wgpu.ShaderStage.COMPUTE, "buffer": ty})
        self._params_binding = next((num for num, kind, name in self.bindings
                                     if kind == "uniform" and name == "params"), None)
        try:
            module = raw.create_shader_module(label=self.name, code=source)
            self.bind_group_layout = raw.create_bind_group_layout(entries=layout_entries)
            pipeline_layout = raw.create_pipeline_layout(bind_group_layouts=[self.bind_group_layout])
            compute = {"module": module, "entry_point": entry}
            if constants:
                compute["constants"] = dict(constants)
            self.pipeline = raw.create_compute_pipeline(label=self.name, layout=pipeline_layout, compute=compute)
        except wgpu.GPUError as exc:
            raise ShaderError(self.name, f"WGSL failed to compile or validate:\n{exc}") from exc

    def pack_params(self, params: dict) -> bytes:
        if params.keys() != self._param_names:
            unknown = set(params) - self._param_names
            missing = self._param_names - set(params)
            raise TypeError(f"{self.name}: params unknown {sorted(unknown)}, missing {sorted(missing)}")
        values = [int(params[n]) & 0xFFFFFFFF if u else params[n]
                  for n, u in zip(self._param_order, self._param_u32, strict=True)]
        return self._param_struct.pack(*values)


class _Dispatch:
    __slots__ = ("kernel", "groups", "bindings", "params", "indirect", "param_offset")

    def __init__(self, kernel: Kernel, groups, bindings: dict, params: bytes | None, indirect=None):
        self.kernel = kernel
        self.groups = groups
        self.bindings = bindings
        self.params = params
        self.indirect = indirect
        self.param_offset = 0


def _span(buffer) -> tuple[Any, int]:
    """``(wgpu buffer, byte offset)`` where a Block, BlockView, GpuArray's buffer or wgpu buffer
    starts: offsets given with ``buffer`` count from there. A GpuArray's own ``byte_offset`` is
    not included (callers pass it as the offset). Every binding, clear, copy and transfer goes
    through here, so a view (:class:`~pywgpuprims._memory.BlockView`) is never read or written
    from its block's start."""
    buffer = getattr(buffer, "buffer", buffer)
    return getattr(buffer, "raw", buffer), getattr(buffer, "base", 0)


class Readback:
    """Ranges a batch copies into one mappable buffer, read once the batch was submitted.

    Made by :meth:`Batch.readback`; reading waits for the GPU (one map round trip for all parts).
    """

    def __init__(self, staging, parts: list[tuple[int, int]]):
        self._staging = staging
        self._parts = parts  # (offset in staging, nbytes)
        self._mapping = None  # the map requested by prefetch()

    def prefetch(self) -> Readback:
        """Request the mapping now, right after the batch's submission: the wait of a later read
        then covers this submission's work, not work submitted after it (pipelined transfers)."""
        end4 = -(-max((o + n for o, n in self._parts), default=0) // 4) * 4
        if end4 and self._mapping is None:
            self._mapping = _native.Mapping(self._staging.raw, _native.MAP_READ, 0, end4)
        return self

    def discard(self) -> None:
        """Drop a prefetched mapping unread (the staging buffer must go back to the pool unmapped)."""
        mapping, self._mapping = self._mapping, None
        if mapping is not None:
            mapping.unmap()

    @contextmanager
    def _mapped(self) -> Iterator[np.ndarray]:
        """The staging bytes, mapped for the block (one map round trip; nothing to map: empty)."""
        end = max((o + n for o, n in self._parts), default=0)
        end4 = -(-end // 4) * 4
        if not end4:
            yield np.empty(0, np.uint8)
            return
        mapping = self._map(end4)
        try:
            yield mapping.array()
        finally:
            mapping.unmap()

    def _map(self, end4: int) -> _native.Mapping:
        mapping, self._mapping = self._mapping, None
        return (mapping or _native.Mapping(self._staging.raw, _native.MAP_READ, 0, end4)).wait()

    def numpy(self, dtype=np.uint8) -> np.ndarray:
        """The first part as a new array of ``dtype``."""
        off, n = self._parts[0]
        end4 = -(-(off + n) // 4) * 4
        if len(self._parts) > 1 or not end4:
            with self._mapped() as view:
                return view[off:off + n].view(np.dtype(dtype)).copy()
        mapping = self._map(end4)  # one part: map just its words (scalar readbacks)
        try:
            data = mapping.array()[off:off + n].copy()
        finally:
            mapping.unmap()
        return data.view(dtype)

    def into(self, *outs: np.ndarray, tuning: TransferTuning = TRANSFER) -> None:
        """Copy each part into the C-contiguous array of the same place in ``outs``, in one mapping."""
        with self._mapped() as view:
            for (off, n), o in zip(self._parts, outs, strict=True):
                _parallel_copy(o.reshape(-1).view(np.uint8), view[off:off + n], tuning)

    def parts(self, *dtypes) -> list[np.ndarray]:
        """Every part, as ``dtypes`` (one each), read in one mapping."""
        with self._mapped() as view:
            return [view[off:off + n].view(np.dtype(dt)).copy()
                    for (off, n), dt in zip(self._parts, dtypes, strict=True)]

    def counted(self, *dtypes) -> list[np.ndarray]:
        """Part 0 is a uint32 count k; returns the first k elements of each further part, as ``dtypes``."""
        with self._mapped() as view:
            k = int(view[:4].view(np.uint32)[0])
            res = []
            for (off, n), dt in zip(self._parts[1:], dtypes, strict=True):
                dt = np.dtype(dt)
                if k * dt.itemsize > n:
                    raise ShaderError("readback", f"a count of {k} exceeds the {n // dt.itemsize} elements read")
                res.append(view[off:off + k * dt.itemsize].view(dt).copy())
            return res


def _forget(snaps: dict, res) -> None:
    """Drop the snapshot (if any) of the buffer that ``res`` (a GpuArray, Binding, Block or view)
    writes: its bytes are about to change."""
    b = getattr(res, "buffer", res)
    snaps.pop(getattr(getattr(b, "buffer", b), "serial", None), None)


_TOKENS = itertools.count(1)


class Snapshot:
    """The bytes of a small result (a reduction's value, a count) copied for the host by the
    submission that computed them, so that reading them costs one map round trip and no
    submission of its own (:meth:`Batch.snapshot`).

    It stays valid while nothing writes the result's buffer: every clear, copy, dispatch output and
    upload through a :class:`Batch` or :meth:`Device.upload` drops the snapshot of the buffer it
    writes (``Device._snaps``, by buffer serial), and a later read goes to the buffer itself. The
    first read maps the staging block, keeps the bytes and gives the block back; threads reading
    at once map it once.
    """

    __slots__ = ("_rb", "_snaps", "_serial", "_token", "_value", "_lock")

    def __init__(self, rb: Readback, snaps: dict, serial: int, lock: threading.Lock):
        self._rb = rb
        self._lock = lock
        self._snaps = snaps
        self._serial = serial
        self._token = next(_TOKENS)
        self._value: np.ndarray | None = None
        snaps[serial] = self._token

    def read(self) -> np.ndarray | None:
        """The result's bytes (uint8; do not write), or None where the buffer was written since."""
        if self._snaps.get(self._serial) != self._token:
            return None
        v = self._value
        if v is None:
            with self._lock:  # one mapping of the staging block, whichever thread reads first
                v = self._value
                if v is None:
                    rb, self._rb = self._rb, None  # the staging block goes back to the pool
                    try:
                        v = self._value = rb.numpy()
                    except Exception:  # a lost device, a failed map: the buffer's own download says why
                        self._snaps.pop(self._serial, None)
                        return None
        return v

    def __del__(self) -> None:
        snaps, serial = self._snaps, self._serial
        if snaps.get(serial) == self._token:
            snaps.pop(serial, None)


#: results up to this many bytes get a :class:`Snapshot` (one map round trip to read them)
SNAPSHOT_BYTES = 16


class Batch:
    """Clears, copies, dispatches and readbacks recorded in order and submitted together.

    Dispatches in one compute pass see each other's writes (WebGPU orders them), so a chain of
    kernels needs no host round trip. The batch holds every block it records until it is
    submitted, so no buffer it uses can go back to the pool before that.
    """

    __slots__ = ("device", "commands", "_scratch")

    def __init__(self, device: Device, commands: list | None = None):
        self.device = device
        self.commands = [] if commands is None else commands
        #: scratch blocks taken by :meth:`scratch`, kept by the pool for later batches once submitted
        self._scratch: list | None = None

    def __repr__(self) -> str:
        return f"Batch(device={self.device!r}, commands={self.commands!r})"

    def scratch(self, nbytes: int) -> Block:
        """A storage block of ``nbytes`` for this batch's own scratch (tile states, indirect
        arguments, partials), contents unspecified: whatever the batch reads of it, it must write
        first. After :meth:`submit` the block serves later batches (the pool keeps a few), so a
        repeated call takes the same buffers (and bind groups) without a pool allocation; the queue's
        order puts their work after this batch's. Never hand it out beyond the batch."""
        blk = self.device.memory.take_scratch(nbytes)
        if self._scratch is None:
            self._scratch = [blk]
        else:
            self._scratch.append(blk)
        return blk

    def clear(self, buffer, offset: int = 0, size: int | None = None) -> None:
        buffer = getattr(buffer, "buffer", buffer)
        if self.device._snaps:
            _forget(self.device._snaps, buffer)
        if size is None:  # to the end; for a view, not into the elements after it
            end = getattr(buffer, "writable_end", None)
            size = (buffer.size if end is None else min(buffer.size, end - buffer.base)) - offset
        self.commands.append(("clear", buffer, offset, size))

    def copy(self, src, src_offset: int, dst, dst_offset: int, size: int) -> None:
        src, dst = getattr(src, "buffer", src), getattr(dst, "buffer", dst)
        if self.device._snaps:
            _forget(self.device._snaps, dst)
        self.commands.append(("copy", src, src_offset, dst, dst_offset, size))

    def dispatch(self, kernel: Kernel, groups, params: dict | bytes | None = None, **bindings) -> None:
        """Record ``kernel`` over ``groups`` workgroups (an int is split over x and y as needed).

        ``params`` fills the kernel's ``struct Params``: a dict by field name, or the bytes
        :meth:`Kernel.pack_params` made of one (for a plan reused call after call).
        """
        if kernel.params and params.__class__ is not bytes:
            params = kernel.pack_params(params or {})
        snaps = self.device._snaps
        if snaps and kernel._written:
            for name in kernel._written:
                _forget(snaps, bindings.get(name))
        g = groups if groups.__class__ is int and 0 < groups <= self.device.max_groups else 0
        self.commands.append(("dispatch", _Dispatch(kernel, (g, 1, 1) if g else self.device.grid(groups), bindings,
                                                    params if kernel.params else None)))

    def dispatch_indirect(self, kernel: Kernel, indirect, offset: int = 0, params: dict | None = None,
                          **bindings) -> None:
        """Record ``kernel`` with its workgroup counts read from ``indirect`` at ``offset`` (GPU-side;
        ``indirect`` may be a :class:`Binding`, whose offset is added)."""
        if isinstance(indirect, Binding):
            indirect, offset = indirect.buffer, indirect.offset + offset
        d = _Dispatch(kernel, (0, 0, 0), bindings, kernel.pack_params(params or {}) if kernel.params else None,
                      Binding(getattr(indirect, "buffer", indirect), offset))
        snaps = self.device._snaps
        if snaps and kernel._written:
            for name in kernel._written:
                _forget(snaps, bindings.get(name))
        self.commands.append(("dispatch", d))

    def readback(self, *ranges) -> Readback:
        """Record copies of ``(src, offset, nbytes)`` ranges (offsets a multiple of 4) for the host.

        They land side by side in one mappable buffer; read them with the returned object after
        :meth:`submit`: a count beside a small result costs one map round trip and no submission
        of its own.
        """
        parts, end = [], 0
        for _, _, nbytes in ranges:
            parts.append((end, int(nbytes)))
            end += -(-int(nbytes) // 16) * 16
        staging = self.device.memory.alloc(max(16, end), _READ_USAGE, "readback")
        for (src, offset, nbytes), (at, _) in zip(ranges, parts, strict=True):
            n4 = -(-int(nbytes) // 4) * 4
            if n4:
                self.copy(src, offset, staging, at, n4)
        return Readback(staging, parts)

    def snapshot(self, g) -> None:
        """Copy the bytes of the small GpuArray ``g`` (at most :data:`SNAPSHOT_BYTES`, on a 4-byte
        boundary) for the host in this batch, after the work recorded so far: ``g.numpy()``,
        ``float(g)`` and ``int(g)`` then read them with one map round trip (:class:`Snapshot`).
        Larger or unaligned arrays are left as they are."""
        nbytes, off = g.nbytes, g.byte_offset
        serial = getattr(g.buffer, "serial", None)
        if not 0 < nbytes <= SNAPSHOT_BYTES or off % 4 or serial is None:
            return
        staging = self.device.memory.alloc(16, _READ_USAGE, "snapshot")
        self.commands.append(("copy", g.buffer, off, staging, 0, -(-nbytes // 4) * 4))
        g._snap = Snapshot(Readback(staging, [(0, nbytes)]), self.device._snaps, serial, self.device._snap_lock)

    def submit(self) -> None:
        self.device._submit(self)
        self.commands = []
        if self._scratch is not None:
            scratch, self._scratch = self._scratch, None
            self.device.memory.keep_scratch(scratch)


_READ_USAGE = wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST
_GPUARRAY: type | None = None  # GpuArray, set by _array (which imports this module): _bind_group's fast key
_WRITE_USAGE = wgpu.BufferUsage.MAP_WRITE | wgpu.BufferUsage.COPY_SRC


class _Timer:
    def __init__(self, replays: int = 1, warmup: int = 0, warmup_ns: int = 0, learned: dict | None = None):
        self.replays = max(1, int(replays))
        self.warmup = max(0, int(warmup)) if self.replays > 1 else 0
        self.warmup_ns = int(warmup_ns) if self.replays > 1 else 0
        self.learned = learned or {}
        #: GPU ns of each batch shape timed here (kernel names and grids): ``learned=`` of a later timer
        self.durations: dict = {}
        self.pending: list = []
        self.marks: list[int] = []
        self._ns: int | None = None
        self._each: list[int] = []

    def mark(self) -> None:
        """End a lap: :attr:`laps` gives the GPU time of the batches between marks."""
        self.marks.append(len(self.pending))

    @property
    def ns(self) -> int:
        """Total GPU time of the timed batches, in nanoseconds (available after the block)."""
        if self._ns is None:
            raise RuntimeError("timer still running")
        return self._ns

    @property
    def laps(self) -> list[int]:
        """GPU ns of each lap (see :meth:`mark`)."""
        out, start = [], 0
        for end in self.marks:
            out.append(sum(self._each[start:end]))
            start = end
        return out


class _BindGroups:
    """Bind groups by kernel and bound ranges, so that a repeated call makes none.

    Keys name buffers by their pool serial (never reused), so a key cannot match a buffer that
    has gone; a buffer the pool destroys takes its entries with it.
    """

    LIMIT = 4096

    def __init__(self):
        self._groups: dict = {}
        self._by_serial: dict[int, list] = {}
        self._lock = threading.Lock()

    def get(self, key):
        return self._groups.get(key)

    def put(self, key, group, serials) -> None:
        with self._lock:
            if len(self._groups) >= self.LIMIT:
                self._groups.clear()
                self._by_serial.clear()
            self._groups[key] = group
            for s in serials:
                self._by_serial.setdefault(s, []).append(key)

    def forget(self, serial: int) -> None:
        with self._lock:
            for key in self._by_serial.pop(serial, ()):
                self._groups.pop(key, None)


class Device:
    """A GPU device for pywgpuprims: adapter, limits, features, kernel cache, memory pool.

    Parameters
    ----------
    backend, adapter_name : str, optional
        Which adapter (see :func:`device`).
    features : tuple of str
        Further wgpu features to request where the adapter has them.
    memory_limit : int or str, optional
        Bytes the memory pool may hold (see :class:`MemoryPool`); default ``PYWGPUPRIMS_MEMORY_LIMIT``.
    adapter : wgpu.GPUAdapter, optional
        The adapter to use, instead of choosing one by ``backend`` and ``adapter_name``.

    A Device made here is a device of its own; :func:`devices` lists the process's shared ones
    (one per adapter), whose :attr:`index` is their place in that list.

    Examples
    --------
    >>> import pywgpuprims as pp
    >>> dev = pp.device()
    >>> dev.adapter_summary  # doctest: +SKIP
    'NVIDIA H100 80GB HBM3 (DiscreteGPU) via Vulkan'
    """

    def __init__(self, backend: str | None = None, adapter_name: str | None = None, features: tuple = (),
                 memory_limit: int | str | None = None, adapter: Any = None):
        self.adapter = adapter if adapter is not None else _choose_adapter(backend, adapter_name)
        #: this device's place in :func:`devices` (None for a Device made directly)
        self.index: int | None = None
        adapter_limits = self.adapter.limits
        self.features = tuple(f for f in (*_WANTED_FEATURES, *features) if f in self.adapter.features)
        wanted = {k: adapter_limits[k] for k in _WANTED_LIMITS if k in adapter_limits}
        self.raw = self.adapter.request_device_sync(
            label="pywgpuprims", required_features=list(self.features), required_limits=wanted
        )
        self.queue = self.raw.queue
        self.limits = dict(self.raw.limits)
        self.info = dict(self.adapter.info)
        self.adapter_summary = self.adapter.summary
        _native.set_spin(self.raw, 0.0 if self.adapter.info.get("adapter_type") == "CPU" else _native.GPU_SPIN_S)
        self.backend = self.info.get("backend_type", "?")
        self.has_subgroups = "subgroup" in self.features
        self.has_timestamps = "timestamp-query" in self.features
        # wgpu-py 0.32 spells these keys 'stackgroup_*'; accept either.
        self.subgroup_min_size = int(self.info.get("subgroup_min_size", self.info.get("stackgroup_min_size", 0)) or 0)
        self.subgroup_max_size = int(self.info.get("subgroup_max_size", self.info.get("stackgroup_max_size", 0)) or 0)
        self.max_binding = int(self.limits["max-storage-buffer-binding-size"])
        self.max_buffer = int(self.limits["max-buffer-size"])
        self.max_groups = int(self.limits["max-compute-workgroups-per-dimension"])
        self.storage_align = int(self.limits["min-storage-buffer-offset-alignment"])
        self.uniform_align = int(self.limits["min-uniform-buffer-offset-alignment"])
        self.transfer = TRANSFER
        self._kernels: dict = {}
        self._lock = threading.RLock()
        self._bind_groups = _BindGroups()
        #: the caching allocator every buffer comes from (:class:`MemoryPool`)
        self.memory = MemoryPool(self.raw, self._bind_groups.forget, memory_limit)
        self._params: Block | None = None   # the uniform buffer every batch's params go to
        # two upload staging buffers, kept mapped for writing between uploads: [block, pending map]
        self._upload_ring: list = []
        self._upload_lock = threading.Lock()
        self._params_written = b""
        #: buffer serial -> token of the live Snapshot of its bytes (see Snapshot)
        self._snaps: dict[int, int] = {}
        self._snap_lock = threading.Lock()  # a snapshot's first read maps its staging block under it
        self._timers: list[_Timer] = []
        self.lost: str | None = None  # why the device was lost, once it is
        _LostWatcher.watch(self)
        self._hooks = TestHooks()
        self._hooks_version = 0  # plans are keyed on it: rebuilt after any change of the hooks
        self._plans: dict = {}
        self._constant_bytes = 0  # held by plans through Device.constant

    def __repr__(self) -> str:
        return f"<pywgpuprims.Device {self.name}>"

    @property
    def name(self) -> str:
        """The adapter's summary, after this device's index in :func:`devices` when it has one
        (two identical GPUs have the same summary; the index tells them apart)."""
        return self.adapter_summary if self.index is None else f"{self.index}: {self.adapter_summary}"

    # ---------------------------------------------------------------- kernels
    def kernel(self, path: str, entry: str = "main", defines: dict | None = None,
               constants: dict | None = None) -> Kernel:
        """The compiled kernel for ``path`` with this specialisation (compiled once, then cached)."""
        key = (path, entry, tuple(sorted(defines.items())) if defines else (),
               tuple(sorted(constants.items())) if constants else ())
        k = self._kernels.get(key)
        if k is None:
            with self._lock:
                k = self._kernels.get(key)
                if k is None:
                    k = self._kernels[key] = Kernel(self, path, entry, dict(defines or {}), dict(constants or {}))
        return k

    @property
    def binding_limit(self) -> int:
        """Bytes a primitive may put in one storage binding: the device's limit, or the smaller
        ``max_binding`` test hook (which forces the chunked paths on small inputs)."""
        h = self.hooks.max_binding
        return self.max_binding if h is None else min(h, self.max_binding)

    @property
    def hooks(self) -> TestHooks:
        """The test hooks in force (:class:`~pywgpuprims._hooks.TestHooks`; set with :meth:`using`)."""
        return self._hooks

    def plan(self, key, build):
        """``build()``, computed once per ``key`` and state of :attr:`hooks` (a primitive's kernels
        and fixed parameters for one shape, so that a repeated call rebuilds nothing)."""
        full = (self._hooks_version, self.max_groups, key)  # grids split by max_groups (tests lower it)
        p = self._plans.get(full)
        if p is None:
            if len(self._plans) > 4096:
                self._plans.clear()
                self._constant_bytes = 0
            p = self._plans[full] = build()
        return p

    def constant(self, data: np.ndarray, usage: int = STORAGE_USAGE, label: str = "constants") -> Block:
        """A device buffer holding ``data`` (small: filter matrices, weights), uploaded once per
        distinct content and kept; never write to it."""
        data = np.ascontiguousarray(data)
        key = ("constant", usage, data.dtype.str, data.tobytes())

        def make() -> Block:
            blk = self.alloc(max(16, data.nbytes), usage, label)
            self.upload(blk, data)
            self._constant_bytes += blk.size
            return blk

        if self._constant_bytes > CONSTANTS_KEPT:  # plans hold the constants: start afresh
            self._plans.clear()
            self._constant_bytes = 0
        return self.plan(key, make)

    def grid(self, groups) -> tuple[int, int, int]:
        """Split a workgroup count over x and y when it exceeds the per-dimension limit.

        Kernels recover the linear id as ``wid.x + wid.y * nwg.x`` and must ignore ids past the
        count they were asked for (the split can round up).
        """
        if isinstance(groups, tuple):
            return tuple(int(g) for g in groups) + (1,) * (3 - len(groups))  # type: ignore[return-value]
        g = int(groups)
        if g <= self.max_groups:
            return (g, 1, 1)
        y = -(-g // self.max_groups)
        x = -(-g // y)
        if y > self.max_groups:
            raise DeviceLimitError("dispatch", f"{g} workgroups exceed the device's grid")
        return (x, y, 1)

    # ---------------------------------------------------------------- buffers
    def alloc(self, nbytes: int, usage: int = STORAGE_USAGE, label: str = "") -> Block:
        """A buffer of at least ``nbytes`` (rounded up to 16) from the memory pool; its contents are
        unspecified. It goes back to the pool when the last reference to it goes."""
        if nbytes > self.max_buffer:
            raise DeviceLimitError(label or "buffer", f"{nbytes} bytes exceed the device's largest buffer "
                                   f"({self.max_buffer} bytes)")
        if self.lost is not None:
            self._check_alive(label or "buffer")
        return self.memory.alloc(nbytes, usage, label)

    def upload(self, dst, data: np.ndarray, offset: int = 0) -> None:
        """Copy the C-contiguous array ``data`` into ``dst`` (a Block or GpuArray) at byte ``offset``.

        Small arrays go through the queue's own write; larger ones through mapped staging buffers
        filled straight from ``data``'s memory, chunk by chunk, each chunk's GPU copy overlapping
        the host copy of the next. A last partial word is padded with zeros.
        """
        raw, base = _span(dst)
        offset += base + getattr(dst, "byte_offset", 0)
        if self._snaps:
            _forget(self._snaps, dst)
        src = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
        n = src.size
        if n == 0:
            return
        self._check_alive("upload")
        whole = n & ~3
        tail = None
        if whole != n:
            tail = np.zeros(4, np.uint8)
            tail[: n - whole] = src[whole:]
        if n <= self.transfer.small_upload:
            _native.write(self.queue, raw, offset, src[:whole])
            if tail is not None:
                _native.write(self.queue, raw, offset + whole, tail)
            return
        chunk = self.transfer.chunk
        with self._upload_lock:
            ring = self._upload_ring
            if not ring or ring[0][0].size < chunk:
                for _block, pending in ring:  # mapped buffers never go back to the pool
                    if pending is not None:
                        pending.unmap()
                ring[:] = [[self.memory.alloc(chunk, _WRITE_USAGE, "upload"), None] for _ in range(2)]
            for i, start in enumerate(range(0, whole, chunk)):
                size = min(chunk, whole - start)
                stage = ring[i % 2]
                st = stage[0].raw
                # mapped again as soon as the GPU had copied it
                mapping = stage[1] or _native.Mapping(st, _native.MAP_WRITE, 0, stage[0].size)
                stage[1] = None
                try:
                    _parallel_copy(mapping.wait("upload").array(size), src[start:start + size], self.transfer)
                finally:
                    mapping.unmap()
                enc = _native.Encoder(self.raw)
                enc.copy(st, 0, raw, offset + start, size)
                enc.submit(self.queue)
                stage[1] = _native.Mapping(st, _native.MAP_WRITE, 0, stage[0].size)
        if tail is not None:
            _native.write(self.queue, raw, offset + whole, tail)

    def download(self, src, out: np.ndarray, offset: int = 0) -> np.ndarray:
        """Copy ``out.nbytes`` bytes of ``src`` (a Block or GpuArray) from byte ``offset`` into the
        C-contiguous array ``out``; waits for the GPU. Returns ``out``.

        Chunks pass through mapped staging buffers, the GPU copy of the next chunk running while
        the host copies this one straight into ``out``.
        """
        raw, base = _span(src)
        offset += base + getattr(src, "byte_offset", 0)
        dst = out.reshape(-1).view(np.uint8)
        n = dst.size
        if n == 0:
            return out
        self._check_alive("download")
        chunk = self.transfer.chunk
        starts = list(range(0, n, chunk))
        stages = [self.memory.alloc(min(chunk, -(-n // 4) * 4), _READ_USAGE, "download")
                  for _ in range(min(2, len(starts)))]

        def copy_to_stage(i: int):
            size = min(chunk, n - starts[i])
            size4 = -(-size // 4) * 4
            st = stages[i % 2].raw
            enc = _native.Encoder(self.raw)
            enc.copy(raw, offset + starts[i], st, 0, size4)
            enc.submit(self.queue)
            return _native.Mapping(st, _native.MAP_READ, 0, size4), size, size4

        pending = None
        try:
            pending = copy_to_stage(0)
            for i, start in enumerate(starts):
                mapping, size, size4 = pending
                mapping.wait("download")
                # the GPU copies the next chunk while we copy this one
                pending = copy_to_stage(i + 1) if i + 1 < len(starts) else None
                try:
                    _parallel_copy(dst[start:start + size], mapping.array(size), self.transfer)
                finally:
                    mapping.unmap()
        except Exception as exc:
            if pending is not None:  # staging goes back to the pool unmapped
                pending[0].unmap()
            self._check_alive("download")
            if isinstance(exc, PrimitiveError):
                raise
            raise ShaderError("download", f"reading a result back failed: {exc}") from exc
        return out

    def write(self, buffer, data, offset: int = 0) -> None:
        """Copy host ``data`` (bytes or a numpy array) into ``buffer`` at ``offset`` (see :meth:`upload`)."""
        arr = data if isinstance(data, np.ndarray) else np.frombuffer(memoryview(data).cast("B"), np.uint8)
        self.upload(buffer, arr, offset)

    def read(self, buffer, offset: int = 0, size: int | None = None) -> memoryview:
        """``size`` bytes of ``buffer`` from ``offset`` (to the block's end by default); waits for the GPU."""
        buffer = getattr(buffer, "buffer", buffer)
        if size is None:
            size = buffer.size - offset
        out = np.empty(int(size), np.uint8)
        self.download(buffer, out, offset)
        return memoryview(out)

    # ---------------------------------------------------------------- submission
    def batch(self) -> Batch:
        return Batch(self)

    @contextmanager
    def using(self, **hooks: Any) -> Iterator[Device]:
        """Set test hooks (fields of :class:`~pywgpuprims._hooks.TestHooks`) for the block, then
        restore the previous ones. An unknown name or a value of the wrong type raises TypeError.

        Examples
        --------
        >>> import pywgpuprims as pp
        >>> dev = pp.device()
        >>> with dev.using(scan_withhold_period=2):
        ...     dev.hooks.scan_withhold_period
        2
        >>> dev.hooks.scan_withhold_period
        0
        """
        saved = self._hooks
        self._hooks = replace_hooks(saved, hooks)
        self._hooks_version += 1
        try:
            yield self
        finally:
            self._hooks = saved
            self._hooks_version += 1

    @contextmanager
    def timer(self, replays: int = 1, warmup: int = 0, warmup_ns: int = 0,
              learned: dict | None = None) -> Iterator[_Timer]:
        """Time GPU work: every batch submitted inside the block gets timestamp queries.

        ``t.ns`` (after the block) is the summed GPU time of those batches in nanoseconds. With
        ``replays`` K > 1 each batch is recorded K times back to back in one submission and reports
        the mean, after ``warmup`` untimed copies, or as many as fill ``warmup_ns`` by the durations
        a previous timer ``learned`` (its ``durations``), at most 2000: so that a short batch runs
        at a steady clock.
        """
        if not self.has_timestamps:
            raise RuntimeError(f"{self.adapter_summary} has no timestamp-query feature")
        t = _Timer(replays, warmup, warmup_ns, learned)
        self._timers.append(t)
        try:
            yield t
        finally:
            self._timers.remove(t)
            for rb, reps, key in t.pending:
                begin, end = struct.unpack("<QQ", rb.numpy().tobytes())
                t._each.append((end - begin) // reps)
                t.durations[key] = t._each[-1]
            t._ns = sum(t._each)

    def _check_alive(self, what: str) -> None:
        if self.lost is not None:
            raise ShaderError(what, f"the GPU device was lost ({self.lost}); make a new one with "
                              "pywgpuprims.set_device(None)")

    def _param_buffer(self, blob: bytes):
        """The uniform buffer holding this batch's params (written only when they changed)."""
        pb = self._params
        if pb is None or pb.size < len(blob):
            size = max(4096, 1 << (len(blob) - 1).bit_length())
            pb = self._params = self.memory.alloc(size, wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST,
                                                  "params")
            self._params_written = b""
        if blob != self._params_written:
            _native.write(self.queue, pb.raw, 0, np.frombuffer(blob, np.uint8))
            self._params_written = blob
        return pb

    def _submit(self, batch: Batch) -> None:
        if self.lost is not None:
            self._check_alive(_names(batch))
        commands = batch.commands
        stride = max(self.uniform_align, 16)
        parts = []
        off = 0
        for c in commands:
            if c[0] == "dispatch" and c[1].params is not None:
                d = c[1]
                d.param_offset = off
                parts.append(d.params)
                pad = -len(d.params) % stride
                if pad:
                    parts.append(bytes(pad))
                off += len(d.params) + pad
        with self._lock:  # the params buffer is shared: write and submit together
            pbuf = self._param_buffer(b"".join(parts)) if parts else None
            try:
                enc = _native.Encoder(self.raw)
                if self._timers:
                    self._record_timed(enc, commands, pbuf, self._timers[-1])
                else:
                    self._record(enc, commands, pbuf)
                enc.submit(self.queue)
            except wgpu.GPUError as exc:
                raise ShaderError(_names(batch), f"the GPU rejected the work: {exc}") from exc

    def _record(self, enc: _native.Encoder, commands, pbuf) -> None:
        in_pass = False
        for cmd in commands:
            kind = cmd[0]
            if kind == "dispatch":
                if not in_pass:
                    enc.begin_pass()
                    in_pass = True
                self._record_dispatch(enc, cmd[1], pbuf)
                continue
            if in_pass:
                enc.end_pass()
                in_pass = False
            if kind == "clear":
                if cmd[3]:
                    raw, base = _span(cmd[1])
                    enc.clear(raw, base + cmd[2], cmd[3])
            else:
                src, sbase = _span(cmd[1])
                dst, dbase = _span(cmd[3])
                enc.copy(src, sbase + cmd[2], dst, dbase + cmd[4], cmd[5])
        if in_pass:
            enc.end_pass()

    def _record_dispatch(self, enc: _native.Encoder, d: _Dispatch, pbuf) -> None:
        if d.indirect is not None:
            raw, base = _span(d.indirect.buffer)
            groups = Binding(raw, base + d.indirect.offset)
        else:
            groups = d.groups if d.groups[0] and d.groups[1] and d.groups[2] else None
        enc.dispatch(d.kernel.pipeline, self._bind_group(d, pbuf),
                     groups, d.param_offset if d.params is not None else None)

    def _record_timed(self, enc, commands, pbuf, timer: _Timer) -> None:
        """Record the batch ``warmup + timer.replays`` times, timestamps around the replays."""
        raw = self.raw
        key = tuple((c[1].kernel.name, c[1].groups) for c in commands if c[0] == "dispatch")
        warmup = timer.warmup
        if timer.warmup_ns and timer.learned.get(key):
            warmup = max(warmup, min(2000, -(-timer.warmup_ns // timer.learned[key])))
        passes_per = sum(1 for i, c in enumerate(commands)
                         if c[0] == "dispatch" and (i == 0 or commands[i - 1][0] != "dispatch"))
        if not passes_per:
            for _ in range(warmup + timer.replays):
                self._record(enc, commands, pbuf)
            return
        query_set = raw.create_query_set(type=wgpu.QueryType.timestamp, count=2)
        first, last = warmup * passes_per + 1, (warmup + timer.replays) * passes_per
        pass_no = 0
        for _ in range(warmup + timer.replays):
            in_pass = False
            for cmd in commands:
                if cmd[0] != "dispatch":
                    if in_pass:
                        enc.end_pass()
                        in_pass = False
                    self._record(enc, [cmd], pbuf)
                    continue
                if not in_pass:
                    pass_no += 1
                    if pass_no in (first, last):  # middle passes: no timestamps
                        enc.begin_pass(query_set, 0 if pass_no == first else None, 1 if pass_no == last else None)
                    else:
                        enc.begin_pass()
                    in_pass = True
                self._record_dispatch(enc, cmd[1], pbuf)
            if in_pass:
                enc.end_pass()
        qbuf = self.memory.alloc(16, wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC, "timestamps")
        enc.resolve(query_set, 0, 2, qbuf.raw, 0)
        staging = self.memory.alloc(16, _READ_USAGE, "timestamps")
        enc.copy(qbuf.raw, 0, staging.raw, 0, 16)
        timer.pending.append((Readback(staging, [(0, 16)]), timer.replays, key))

    def _bind_group(self, d: _Dispatch, pbuf):
        k = d.kernel
        bound = d.bindings
        # The cache key, for the common bindings (Blocks, GpuArrays on a Block, Bindings of a Block
        # with a size) without the general path's getattr chain; it is the key that path makes.
        key = [k, pbuf.serial if pbuf is not None else 0]
        if len(bound) == len(k._storage_names):
            for name in k._storage_names:
                res = bound.get(name)
                cls = res.__class__
                if cls is Block:
                    key += (res.serial, 0, res.size)
                    continue
                if cls is _GPUARRAY:
                    buf = res.buffer
                    if buf.__class__ is Block:
                        off = res.byte_offset
                        key += (buf.serial, off, buf.size - off)
                        continue
                elif cls is Binding:
                    buf = res.buffer
                    if buf.__class__ is Block and res.size is not None:
                        key += (buf.serial, res.offset, res.size)
                        continue
                break
            else:
                group = self._bind_groups.get(tuple(key))
                if group is not None:
                    return group
        return self._bind_group_slow(d, pbuf)

    def _bind_group_slow(self, d: _Dispatch, pbuf):
        k = d.kernel
        bound = d.bindings
        if len(bound) != len(k._storage):
            names = {n for _, n, _ in k._storage}
            missing, extra = names - set(bound), set(bound) - names
            raise TypeError(f"{k.name}: binding {sorted(missing)} not given" if missing
                            else f"{k.name}: no binding named {sorted(extra)}")
        ranges = []
        key = [k, pbuf.serial if pbuf is not None else 0]
        for _, name, _ in k._storage:
            res = bound.get(name)
            if res is None:
                raise TypeError(f"{k.name}: binding {name!r} was not given")
            if res.__class__ is Binding:
                buf, off, size = res.buffer, res.offset, res.size
                off += getattr(buf, "byte_offset", 0)  # a GpuArray given to Binding: from its first element
            else:
                buf, off, size = getattr(res, "buffer", res), getattr(res, "byte_offset", 0), None
            buf = getattr(buf, "buffer", buf)
            if size is None:
                size = buf.size - off
            off += getattr(buf, "base", 0)  # a view: its range of the block, not the block's start
            ranges.append((buf, off, size))
            key += (getattr(buf, "serial", None), off, size)
        key = tuple(key) if None not in key else None  # only pool buffers (serials never reused) are cached
        if key is not None:
            group = self._bind_groups.get(key)
            if group is not None:
                return group
        if k._written:
            _check_exclusive(k, ranges)
        entries = []
        for (num, name, storage), (buf, off, size) in zip(k._storage, ranges, strict=True):
            if storage and size > self.max_binding:
                raise DeviceLimitError(k.name, f"binding {name!r} of {size} bytes exceeds the device's "
                                       f"largest storage binding ({self.max_binding} bytes)")
            if name in k._written and off + size > getattr(buf, "writable_end", off + size):
                raise PrimitiveError(k.name, f"the output {name!r} is a view of {buf.nbytes} bytes whose last "
                                     f"word (bytes {buf.writable_end - buf.base}..{off + size - buf.base} of "
                                     "the view, bound whole) holds elements of the array around it; write into "
                                     "a whole array, or a view that ends on a 16-byte boundary, and copy")
            align = self.storage_align if storage else self.uniform_align
            if off % align:
                raise PrimitiveError(k.name, f"binding {name!r} starts at byte {off} of its buffer, not a "
                                     f"multiple of the device's offset alignment ({align}); copy the array first")
            entries.append({"binding": num, "resource": {"buffer": getattr(buf, "raw", buf), "offset": off,
                                                         "size": size}})
        if k._params_binding is not None:
            entries.append({"binding": k._params_binding,
                            "resource": {"buffer": pbuf.raw, "offset": 0, "size": k.param_size}})
        group = self.raw.create_bind_group(layout=k.bind_group_layout, entries=entries)
        if key is not None:
            serials = [buf.serial for buf, _, _ in ranges] + ([pbuf.serial] if pbuf is not None else [])
            self._bind_groups.put(key, group, serials)
        return group

    def sync(self) -> None:
        """Wait until the GPU has finished all submitted work."""
        b = self.batch()
        rb = b.readback((self._sync_block(), 0, 4))
        b.submit()
        rb.numpy()

    def _sync_block(self):
        if not hasattr(self, "_syncbuf"):
            self._syncbuf = self.alloc(16, label="sync")
        return self._syncbuf

    def describe(self) -> str:
        """A multi-line report: adapter, backend, limits and features obtained."""
        lines = [f"adapter:  {self.adapter_summary}", f"backend:  {self.backend}",
                 f"features: {', '.join(self.features) or 'none'} (of wanted {', '.join(_WANTED_FEATURES)})"]
        for k in _WANTED_LIMITS:
            lines.append(f"limit {k}: {self.limits.get(k)}")
        if self.has_subgroups:
            lines.append(f"subgroup size: {self.subgroup_min_size}..{self.subgroup_max_size}")
        return "\n".join(lines)


def _check_exclusive(k: Kernel, ranges) -> None:
    """WebGPU refuses a buffer bound both read-only and written in one dispatch, whatever the
    ranges: say so in the library's words (an output that is a view of an input's array)."""
    written = {getattr(buf, "raw", buf) for (_, name, _), (buf, _, _) in zip(k._storage, ranges, strict=True)
               if name in k._written}
    for (_, name, storage), (buf, _, _) in zip(k._storage, ranges, strict=True):
        if storage and name not in k._written and getattr(buf, "raw", buf) in written:
            raise PrimitiveError(k.name, f"the input {name!r} and an output share one buffer (views of one "
                                 "array?), which a dispatch cannot both read and write; write into another "
                                 "array")


def _names(batch: Batch) -> str:
    return ", ".join(sorted({c[1].kernel.name for c in batch.commands if c[0] == "dispatch"})) or "batch"


class _LostWatcher(logging.Handler):
    """wgpu-py reports a lost device only through its logger: note it on our Devices."""

    _installed: _LostWatcher | None = None

    def __init__(self):
        super().__init__(logging.ERROR)
        self.devices: list = []

    @classmethod
    def watch(cls, dev: Device) -> None:
        import weakref

        if cls._installed is None:
            cls._installed = cls()
            logging.getLogger("wgpu").addHandler(cls._installed)
        cls._installed.devices.append(weakref.ref(dev))

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if "device was lost" not in msg.lower():
            return
        for ref in self.devices:
            dev = ref()
            if dev is not None and dev.lost is None:
                dev.lost = msg.strip().splitlines()[0]


_default: Device | None = None
_default_lock = threading.RLock()
# (filter, id(adapter)) -> the listed Device of that adapter, or the reason it was left out
_shared: dict[tuple, Device | str] = {}
# id(adapter) -> (the adapter, kept so its id stays its own; why it cannot start): warned once, never retried
_left_out: dict[int, tuple[Any, str]] = {}
_thread = threading.local()  # .stack: the devices chosen by use_device in this thread, innermost last
DEVICE_ENV = "PYWGPUPRIMS_DEVICE"


def _start_listed(adapter, index: int) -> Device | str:
    """A Device on ``adapter`` as ``devices()[index]``, or why the adapter cannot run compute work."""
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
    try:
        limits = adapter.limits
        if not (limits.get("max-compute-invocations-per-workgroup", 0) > 0
                and limits.get("max-storage-buffers-per-shader-stage", 0) > 0):
            return "it has no compute shaders with storage buffers"
        dev = Device(adapter=adapter)
    except Exception as exc:
        return f"starting it failed: {str(exc).strip() or type(exc).__name__}"
    dev.index = index
    return dev


def _listed(upto: int | None) -> list[Device]:
    """The first ``upto + 1`` entries of :func:`devices` (all when ``upto`` is None), fewer where
    the list is shorter. Adapters are started in rank order and kept; one that cannot start is
    left out with one warning, so the indices count the devices that started. A lost device is
    started again in its place."""
    import warnings

    ranked = _ranked_adapters()
    fkey = (os.environ.get("PYWGPUPRIMS_BACKEND") or None, os.environ.get("PYWGPUPRIMS_ADAPTER") or None)
    out: list[Device] = []
    with _default_lock:
        for adapter in ranked:
            if upto is not None and len(out) > upto:
                break
            if id(adapter) in _left_out:
                continue
            key = (*fkey, id(adapter))
            dev = _shared.get(key)
            if isinstance(dev, Device) and dev.lost is not None:
                dev = _start_listed(adapter, len(out))
                if not isinstance(dev, Device):
                    raise ShaderError("devices", f"device {len(out)} ({adapter.summary}) was lost and "
                                      f"could not be started again: {dev}")
            elif dev is None:
                dev = _start_listed(adapter, len(out))
                if not isinstance(dev, Device):
                    _left_out[id(adapter)] = (adapter, dev)
                    warnings.warn(f"pywgpuprims.devices: left out {adapter.summary}: {dev}; "
                                  "PYWGPUPRIMS_BACKEND / PYWGPUPRIMS_ADAPTER choose the adapters listed",
                                  RuntimeWarning, stacklevel=2)
                    continue
            _shared[key] = dev
            out.append(dev)
    return out


def _shared_device(index: int) -> Device | None:
    """``devices()[index]`` (None when the list is shorter), starting only the adapters before it."""
    ds = _listed(index)
    return ds[index] if index < len(ds) else None


def devices() -> list[Device]:
    """Every device pywgpuprims can use, one per adapter, best first.

    The order is the one the default device is chosen by: discrete GPUs first, then integrated,
    virtual and CPU adapters, Vulkan before other backends of the same kind; ``PYWGPUPRIMS_BACKEND``
    and ``PYWGPUPRIMS_ADAPTER`` filter the list. Devices are started on the first call and kept:
    a later call, :func:`device` and ``PYWGPUPRIMS_DEVICE`` give the same objects. An adapter that
    cannot start (or has no compute shaders: an OpenGL adapter of some GPUs) is left out of the
    list with one :class:`RuntimeWarning` naming it. Each device knows its place in the list
    (:attr:`Device.index`); two identical GPUs differ only by it. Work runs on one of them through
    ``device=`` arguments or :func:`use_device`.

    Examples
    --------
    >>> import pywgpuprims as pp
    >>> ds = pp.devices()
    >>> ds[0] is pp.devices()[0]
    True
    >>> [d.index for d in ds] == list(range(len(ds)))
    True
    >>> for d in ds: print(d.name)  # doctest: +SKIP
    0: llvmpipe (LLVM 15.0.6, 256 bits) (CPU) via Vulkan
    1: llvmpipe (LLVM 15.0.6, 256 bits) (CPU) via OpenGL
    """
    return _listed(None)


def _no_device() -> ShaderError:
    failed = "; ".join(f"{a.summary}: {_left_out[id(a)][1]}" for a in _ranked_adapters() if id(a) in _left_out)
    return ShaderError("devices", f"no adapter could be started ({failed or 'none listed'}); "
                       "PYWGPUPRIMS_BACKEND / PYWGPUPRIMS_ADAPTER choose the adapters listed")


def _env_index() -> int:
    """The index ``PYWGPUPRIMS_DEVICE`` names (0 when unset), checked against :func:`devices`."""
    raw = os.environ.get(DEVICE_ENV, "").strip()
    if not raw:
        return 0
    try:
        index = int(raw)
    except ValueError:
        index = -1
    if index < 0 or _shared_device(index) is None:
        ds = devices()
        if not ds:
            raise _no_device()
        choices = "; ".join(d.name for d in ds)
        raise InputError("device", f"{DEVICE_ENV}={raw!r} is not the index of a device; choose one of "
                         f"0..{len(ds) - 1} ({choices})")
    return index


def device() -> Device:
    """The default :class:`Device`: this thread's choice (:func:`use_device`), else the process's.

    The process's default is ``devices()[i]`` with ``i`` from ``PYWGPUPRIMS_DEVICE`` (0 when
    unset), in the list that ``PYWGPUPRIMS_BACKEND`` (vulkan, gl, metal, d3d12) and
    ``PYWGPUPRIMS_ADAPTER`` (a substring of the adapter's name) filter: so by default the
    highest-performance adapter, preferring Vulkan. :func:`set_device` replaces it.

    Examples
    --------
    >>> import pywgpuprims as pp
    >>> pp.device() is pp.device()
    True
    >>> print(pp.device().describe())  # doctest: +SKIP
    """
    stack = getattr(_thread, "stack", None)
    if stack:
        return stack[-1]
    global _default
    dev = _default
    if dev is not None:
        return dev
    with _default_lock:
        if _default is None:
            dev = _shared_device(_env_index())
            if dev is None:
                raise _no_device()
            _default = dev
        return _default


def set_device(dev: Device | None) -> None:
    """Make ``dev`` the process's default device (``None``: choose again on next use).

    A thread inside :func:`use_device` keeps its own choice.

    Examples
    --------
    >>> import pywgpuprims as pp
    >>> pp.set_device(pp.devices()[-1])
    >>> pp.device() is pp.devices()[-1]
    True
    >>> pp.set_device(None)  # the next pp.device() chooses again
    >>> pp.set_device("gl")
    Traceback (most recent call last):
    ...
    pywgpuprims._errors.InputError: set_device: expected a pywgpuprims.Device or None, got str ('gl')
    """
    if dev is not None and not isinstance(dev, Device):
        raise InputError("set_device", f"expected a pywgpuprims.Device or None, got {type(dev).__name__} "
                         f"({dev!r:.60})")
    global _default
    with _default_lock:
        _default = dev


def _as_device(dev, primitive: str) -> Device | None:
    """``dev`` as a Device: a Device, an index into :func:`devices`, or None (no choice)."""
    if dev is None or isinstance(dev, Device):
        return dev
    if isinstance(dev, (int, np.integer)) and not isinstance(dev, (bool, np.bool_)):
        ds = devices()
        if 0 <= dev < len(ds):
            return ds[int(dev)]
        raise InputError(primitive, f"device={int(dev)} is not the index of a device; choose one of "
                         f"0..{len(ds) - 1} ({'; '.join(d.name for d in ds)})")
    raise InputError(primitive, "device must be a pywgpuprims.Device, an index into pywgpuprims.devices() "
                     f"or None, got {type(dev).__name__} ({dev!r:.60})")


@contextmanager
def use_device(dev: Device | int | None) -> Iterator[Device]:
    """Make ``dev`` (a Device or an index into :func:`devices`) this thread's default device for
    the block: :func:`device`, and so every call without ``device=`` and without GpuArray inputs,
    uses it there. Blocks nest; the previous choice comes back when a block ends, by an exception
    too. Other threads keep their own choice. ``None`` leaves the current choice as it is.

    Examples
    --------
    >>> import numpy as np, pywgpuprims as pp
    >>> last = pp.devices()[-1]
    >>> with pp.use_device(last) as d:
    ...     g = pp.asarray(np.arange(4, dtype=np.uint32))
    ...     pp.device() is last, g.device is last
    (True, True)
    >>> pp.scan(g).device is last  # a GpuArray's work stays on its device
    True
    """
    d = _as_device(dev, "use_device")
    if d is None:
        yield device()
        return
    stack = _thread.__dict__.setdefault("stack", [])
    depth = len(stack)
    stack.append(d)
    try:
        yield d
    finally:
        del stack[depth:]


def _array_devices(value):
    """The devices of the GpuArrays in ``value``: itself, a short list or tuple of them, or a
    dataclass holding them (Compacted, RunLengths)."""
    d = value if isinstance(value, Device) else getattr(value, "device", None)  # a Device argument (dev=) too
    if isinstance(d, Device):
        yield d, value
    elif isinstance(value, (list, tuple)) and len(value) <= 64:
        for v in value:
            d = getattr(v, "device", None)
            if isinstance(d, Device):
                yield d, v
    elif hasattr(type(value), "__dataclass_fields__"):
        for name in type(value).__dataclass_fields__:
            d = getattr(getattr(value, name, None), "device", None)
            if isinstance(d, Device):
                yield d, value


#: argument types that never hold a GpuArray or a Device: takes_device skips them at once
_NO_DEVICE = frozenset({type(None), bool, int, float, complex, str, bytes, np.ndarray, np.dtype, type,
                        *(type(np.dtype(t)) for t in (np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32,
                                                      np.uint32, np.int64, np.uint64, np.float16, np.float32,
                                                      np.float64))})


def _two(a: Device, b: Device) -> str:
    if a.name == b.name:  # two Devices of one adapter made directly
        return f"{a.name} (one Device) and {b.name} (another Device of the same adapter)"
    return f"{a.name} and {b.name}"


_DEVICE_DOC = """device : Device or int, optional
    Where to run: a :class:`Device` or an index into :func:`devices`. Default: the device of the
    GpuArray inputs, else :func:`device` (this thread's :func:`use_device` choice, else the
    process's). A GpuArray input on another device raises InputError: copy it over with
    ``pp.asarray(x.numpy(), device=...)``."""


def _with_device_doc(doc: str | None) -> str | None:
    """``doc`` with the ``device`` parameter at the end of its NumPy-style Parameters section."""
    if not doc:
        return doc
    lines = doc.split("\n")
    heads = [i for i in range(len(lines) - 1) if lines[i].strip() and set(lines[i + 1].strip()) == {"-"}
             and len(lines[i + 1].strip()) == len(lines[i].strip())]
    params = next((i for i in heads if lines[i].strip() == "Parameters"), None)
    if params is not None:
        after = [i for i in heads if i > params]
        at = after[0] if after else len(lines)
        while at > params + 2 and not lines[at - 1].strip():
            at -= 1
        indent = lines[params][:len(lines[params]) - len(lines[params].lstrip())]
        entry = [indent + line for line in _DEVICE_DOC.split("\n")]
    elif heads:
        at = heads[0]
        indent = lines[at][:len(lines[at]) - len(lines[at].lstrip())]
        entry = [indent + "Parameters", indent + "----------", *(indent + line for line in _DEVICE_DOC.split("\n")), ""]
    else:
        return doc
    return "\n".join(lines[:at] + entry + lines[at:])


def takes_device(fn=None, *, name: str | None = None):
    """Decorator: give a public call a keyword-only ``device=`` argument (added to its signature
    and its docstring's Parameters) and run it there.

    The call runs under :func:`use_device` of ``device``, or of its GpuArray inputs' device when
    ``device`` is not given, so the function body needs no change: its uploads and scratch come
    from :func:`device`. GpuArray inputs (and those inside lists, tuples and result dataclasses)
    on another device than the one asked for, or on two devices, raise :class:`InputError` naming
    both; nothing is copied between devices behind the caller's back.
    """
    if fn is None:
        return lambda f: takes_device(f, name=name)
    import functools  # noqa: PLC0415
    import inspect  # noqa: PLC0415

    primitive = name or fn.__qualname__
    sig = inspect.signature(fn)
    if "device" in sig.parameters:
        raise TypeError(f"{primitive} has a parameter named 'device' already")

    def clash(want: Device | None, have: Device | None, d: Device, v) -> None:
        if want is not None and d is not want:
            where = (f"another Device of the same adapter ({d.name})" if d.name == want.name
                     else f"device {d.name}")
            if v is d:
                raise InputError(primitive, f"two devices asked for: {where} and device={want.name}")
            raise InputError(primitive, f"a GpuArray input lives on {where}, not on {want.name}, the "
                             "device asked for; copy it over with pp.asarray(x.numpy(), device=...)")
        if have is not None and d is not have:
            raise InputError(primitive, f"the GpuArray inputs live on two devices, {_two(have, d)}; "
                             "copy one over with pp.asarray(x.numpy(), device=...)")

    @functools.wraps(fn)
    def call(*args, device: Device | int | None = None, **kwargs):
        want = _as_device(device, primitive) if device is not None else None
        have = None
        for value in (args + tuple(kwargs.values())) if kwargs else args:
            cls = value.__class__
            if cls in _NO_DEVICE:  # numpy arrays, numbers, strings, None, dtypes: nothing to look at
                continue
            if cls is tuple and all(v.__class__ in _NO_DEVICE for v in value):  # a shape
                continue
            d = value if cls is Device else getattr(value, "device", None)
            if d.__class__ is Device:  # a GpuArray or a Device argument (dev=)
                if want is not None or (have is not None and d is not have):
                    clash(want, have, d, value)
                have = d
                continue
            for d2, v2 in _array_devices(value):  # lists, tuples, dataclasses, Device subclasses
                if want is not None or (have is not None and d2 is not have):
                    clash(want, have, d2, v2)
                have = d2
        target = want or have
        if target is None:
            return fn(*args, **kwargs)
        stack = getattr(_thread, "stack", None)
        if target is (stack[-1] if stack else _default):
            return fn(*args, **kwargs)
        with use_device(target):
            return fn(*args, **kwargs)

    params = list(sig.parameters.values())
    extra = inspect.Parameter("device", inspect.Parameter.KEYWORD_ONLY, default=None,
                              annotation="Device | int | None")
    at = len(params) - (1 if params and params[-1].kind is inspect.Parameter.VAR_KEYWORD else 0)
    call.__signature__ = sig.replace(parameters=[*params[:at], extra, *params[at:]])
    call.__doc__ = _with_device_doc(fn.__doc__)
    return call


def _current() -> Device | None:
    """:func:`device`'s answer where one is chosen already (None before the first use)."""
    stack = getattr(_thread, "stack", None)
    return stack[-1] if stack else _default

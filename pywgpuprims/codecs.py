"""numcodecs and zarr v3 codecs that compress chunks on the GPU: FSE and RLE.

numcodecs is an optional extra (``pip install pywgpuprims[zarr]``); ``import pywgpuprims`` does
not import this module. The package registers the codecs through entry points, so numcodecs
(``numcodecs.get_codec({"id": "pywgpuprims.fse"})``) and zarr (a store whose metadata names
``"pywgpuprims.fse"``) find them in any process, Dask workers included, without an import;
importing this module also registers them.

=====================  =========================  =================================================
numcodecs codec        zarr v3 codec              what
=====================  =========================  =================================================
:class:`FSE`           :class:`FSECodec`          :func:`pywgpuprims.fse.compress` of the chunk's
                       (bytes to bytes,           bytes (bytes in, bytes out; container of
                       ``compressors=``)          ``docs/fse-format.md``)
:class:`RLE`           :class:`RLECodec`          :func:`pywgpuprims.rle_encode` of the typed chunk
                       (array to bytes,           in the container below; decoded by
                       ``serializer=``)           :func:`pywgpuprims.rle_decode`
=====================  =========================  =================================================

Decoding is as strict as :func:`pywgpuprims.fse.decompress`: truncated, corrupt or forged input
raises :class:`~pywgpuprims.CorruptDataError`, checked on the host before any GPU work, and the
output is never larger than the chunk it decodes (zarr passes the chunk's shape and dtype; a
numcodecs ``decode(buf, out)`` caps by ``out``): a header claiming more raises before anything is
allocated.

RLE container (little-endian): a 28-byte header ``magic b"PWRL", version u8 (1), run dtype u8 (0:
uint8, 1: uint32, 2: int32, 3: float32), reserved u16 (0), elements u64, runs u64, crc32 u32``,
then ``runs`` values of the run dtype and ``runs`` uint32 counts. The crc32 covers the header's
first 24 bytes and everything after the header. Chunks of other dtypes are coded as runs of their
4-byte words (when their size is a multiple of 4) or of their bytes.

Example
-------
>>> import numpy as np, zarr
>>> from pywgpuprims.codecs import FSECodec
>>> z = zarr.create_array(zarr.storage.MemoryStore(), shape=(100,), chunks=(30,), dtype="int32",
...                       compressors=[FSECodec()])
>>> z[:] = np.arange(100, dtype=np.int32) % 5
>>> int(z[:].sum())
200
"""

from __future__ import annotations

import asyncio
import math
import os
import queue
import struct
import threading
import zlib
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass

import numpy as np
from numcodecs.abc import Codec
from numcodecs.compat import ensure_contiguous_ndarray, ndarray_copy
from numcodecs.registry import register_codec

from . import fse as _fse
from ._device import device as _device
from ._errors import CorruptDataError
from ._serial import GPU_LOCK
from ._serial import serial as _gpu
from .compaction import rle_decode as _rle_decode
from .compaction import rle_encode as _rle_encode
from .fse import _codec as _fse_codec

__all__ = ["FSE", "RLE", "FSECodec", "RLECodec", "rle_pack", "rle_unpack"]

FSE_ID = "pywgpuprims.fse"
RLE_ID = "pywgpuprims.rle"
RLE_MAGIC = b"PWRL"
RLE_VERSION = 1
_RLE_HEAD = struct.Struct("<4sBBHQQI")
_RUN_DTYPES = (np.dtype("<u1"), np.dtype("<u4"), np.dtype("<i4"), np.dtype("<f4"))
# zarr v3: the most bytes FSECodec may decode for a chunk of B bytes is 5 B + 4 KiB: what comes out
# of the array-to-bytes codec before it is at most RLE's worst case (28 + runs x (itemsize + 4)
# bytes, 5 B for uint8) or B (the plain bytes codec), plus room for a checksum codec.
_FSE_CAP = (5, 4096)


# ----------------------------------------------------------------------------- RLE container
def _run_view(a: np.ndarray) -> np.ndarray:
    """The chunk as a 1-D array of a run dtype the GPU encodes (its own, its words, or bytes)."""
    a = np.ascontiguousarray(a).reshape(-1)
    for dt in _RUN_DTYPES:
        if a.dtype == dt or a.dtype == dt.newbyteorder("="):
            return a.view(dt)
    b = a.view(np.uint8)
    return b.view("<u4") if b.size % 4 == 0 else b


def rle_pack(a: np.ndarray) -> bytes:
    """Run-length encode an array on the GPU into the RLE container (see the module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> from pywgpuprims.codecs import rle_pack, rle_unpack
    >>> blob = rle_pack(np.array([5, 5, 5, 9], np.int32))
    >>> len(blob), rle_unpack(blob).tolist()
    (44, [5, 5, 5, 9])
    """
    x = _run_view(np.asarray(a))
    code = next(i for i, dt in enumerate(_RUN_DTYPES) if x.dtype == dt)
    if x.size:
        values, counts = _gpu(_rle_encode, x)
    else:
        values, counts = x[:0], np.empty(0, np.uint32)
    body = np.ascontiguousarray(values, _RUN_DTYPES[code]).tobytes() + counts.astype("<u4").tobytes()
    head = _RLE_HEAD.pack(RLE_MAGIC, RLE_VERSION, code, 0, x.size, values.size, 0)
    crc = zlib.crc32(body, zlib.crc32(head[:24]))
    return head[:24] + struct.pack("<I", crc) + body


def rle_unpack(blob, max_items: int | None = None, expect_bytes: int | None = None) -> np.ndarray:
    """Decode an RLE container on the GPU (1-D array of its run dtype).

    Parameters
    ----------
    blob : bytes-like
    max_items : int, optional
        The most elements the caller accepts; a header claiming more raises before any allocation.
    expect_bytes : int, optional
        The exact decoded size in bytes (a chunk's size); anything else raises.

    Raises
    ------
    CorruptDataError
        Truncated or trailing bytes, bad magic/version/dtype, a checksum mismatch, zero counts,
        counts that do not add up, or a size beyond ``max_items`` / other than ``expect_bytes``.
    """
    name = "codecs.rle"
    buf = memoryview(blob).cast("B") if not isinstance(blob, bytes) else blob
    if len(buf) < _RLE_HEAD.size:
        raise CorruptDataError(name, f"truncated container ({len(buf)} bytes, header is {_RLE_HEAD.size})")
    magic, ver, code, res, n, runs, crc = _RLE_HEAD.unpack_from(buf, 0)
    if magic != RLE_MAGIC:
        raise CorruptDataError(name, "bad magic: not an RLE container")
    if ver != RLE_VERSION:
        raise CorruptDataError(name, f"unsupported container version {ver}")
    if code >= len(_RUN_DTYPES) or res != 0:
        raise CorruptDataError(name, f"unknown run dtype {code} or nonzero reserved field")
    dt = _RUN_DTYPES[code]
    if expect_bytes is not None and n * dt.itemsize != expect_bytes:
        raise CorruptDataError(name, f"the container holds {n} x {dt} ({n * dt.itemsize} bytes), "
                               f"expected {expect_bytes} bytes for this chunk")
    if max_items is not None and n > max_items:
        raise CorruptDataError(name, f"the container claims {n} elements, more than the chunk's {max_items}")
    if runs > n or (n > 0) != (runs > 0):
        raise CorruptDataError(name, f"{runs} runs cannot code {n} elements")
    if len(buf) != _RLE_HEAD.size + runs * (dt.itemsize + 4):
        raise CorruptDataError(name, f"container is {len(buf)} bytes; {runs} runs of {dt} need "
                               f"{_RLE_HEAD.size + runs * (dt.itemsize + 4)}")
    if zlib.crc32(buf[_RLE_HEAD.size:], zlib.crc32(buf[:24])) != crc:
        raise CorruptDataError(name, "checksum mismatch")
    values = np.frombuffer(buf, dt, runs, _RLE_HEAD.size)
    counts = np.frombuffer(buf, "<u4", runs, _RLE_HEAD.size + runs * dt.itemsize)
    if runs and (counts.min() == 0 or int(counts.sum(dtype=np.uint64)) != n):
        raise CorruptDataError(name, "run counts are zero or do not add up to the element count")
    if n == 0:
        return np.empty(0, dt)
    return _gpu(_rle_decode, values.astype(dt.newbyteorder("="), copy=False), counts.astype(np.uint32))


def _fse_check(blob, expect: int | None, cap: int | None) -> None:
    hdr, e = _fse.parse(blob)  # CorruptDataError on a malformed container
    size = hdr["size"]
    end = int((e["offset"].astype(np.int64) + e["csize"].astype(np.int64)).max()) if len(e) else len(blob)
    if end != len(blob):  # a chunk is exactly one container: nothing may follow it
        raise CorruptDataError("codecs.fse", f"{len(blob) - end} bytes after the container's last block")
    if expect is not None and size != expect:
        raise CorruptDataError("codecs.fse", f"the container holds {size} bytes, expected {expect} for this chunk")
    if cap is not None and size > cap:
        raise CorruptDataError("codecs.fse", f"the container claims {size} bytes, more than the chunk's {cap}")


# ----------------------------------------------------------------------------- FSE calls in flight
class _Interleaver:
    """One thread per process that runs the FSE codecs' GPU calls, several chunks in flight.

    Each call is a step generator (``fse._codec.compress_steps`` / ``decompress_steps``) that
    yields before every wait for the GPU. The thread steps the calls in turn, oldest first, each
    step under :data:`~pywgpuprims._serial.GPU_LOCK`: while one chunk waits for its read-back (one
    per group of blocks: sizes and payloads together), the GPU runs the work the other chunks in
    flight submitted after it, and the host work of one chunk (its upload, container) overlaps the
    GPU work of the others.
    zarr encodes and decodes up to ``async.concurrency`` chunks at once and numcodecs callers may
    be several threads: their calls meet here. A new call is stepped to its first submission as
    soon as it is taken in.
    """

    #: calls in flight: their buffers (a 16 MiB chunk: about 45 MiB) are held at once
    WINDOW = 4

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue | None = None
        self._pid: int | None = None
        self._thread: threading.Thread | None = None

    def submit(self, make) -> Future:
        """A Future of the value of the step generator ``make()`` (made and run on the thread)."""
        fut: Future = Future()
        with self._lock:
            if self._pid != os.getpid():  # first use, or a forked child (the thread is not there)
                self._queue, self._pid = queue.SimpleQueue(), os.getpid()
                self._thread = threading.Thread(target=self._loop, args=(self._queue,), daemon=True,
                                                name="pywgpuprims-codecs")
                self._thread.start()
            self._queue.put((make, fut))
        return fut

    def run(self, make):
        """``make()``'s value, waited for (in the thread itself: run there and then)."""
        if threading.current_thread() is self._thread:
            return _fse_codec.run_steps(make())
        return self.submit(make).result()

    @staticmethod
    def _step(steps, fut: Future) -> bool:
        """One step of a call (to its next wait); False once it returned or raised (``fut`` set)."""
        try:
            with GPU_LOCK:
                next(steps)
        except StopIteration as stop:
            fut.set_result(stop.value)
            return False
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            fut.set_exception(exc)
            return False
        return True

    def _loop(self, q: queue.SimpleQueue) -> None:
        active: deque = deque()
        while True:
            while len(active) < self.WINDOW:  # take in new calls: block only when idle
                try:
                    make, fut = q.get(block=not active)
                except queue.Empty:
                    break
                if not fut.set_running_or_notify_cancel():
                    continue
                try:
                    steps = make()
                except BaseException as exc:  # noqa: BLE001 - handed to the caller
                    fut.set_exception(exc)
                    continue
                if self._step(steps, fut):
                    active.append((steps, fut))
            steps, fut = active.popleft()
            if self._step(steps, fut):
                active.append((steps, fut))


_CALLS = _Interleaver()


def _compress_steps(dev, data: np.ndarray, mode: str, table_log: int, block_size: int | None):
    """The steps of ``fse.compress`` of a flat uint8 array on ``dev`` (the caller's :func:`device`)."""
    mode, table_log, block_size, lanes = _fse_codec.check_args(mode, table_log, block_size, 256, "codecs.fse")
    return _fse_codec.compress_steps(dev, None, data, table_log, block_size, mode, lanes)


def _decompress_steps(dev, blob, expect: int | None, cap: int | None):
    """The steps of checking a chunk's container (:func:`_fse_check`) and decompressing it on ``dev``."""
    _fse_check(blob, expect, cap)
    return (yield from _fse_codec.decompress_steps(dev, blob, _fse_codec.DEFAULT_MAX_OUTPUT))


# ----------------------------------------------------------------------------- numcodecs
class FSE(Codec):
    """numcodecs codec: FSE (tANS) on the GPU, bytes in, bytes out.

    Parameters
    ----------
    mode : {"interleaved", "reference"}
        As :func:`pywgpuprims.fse.compress` (interleaved: faster; reference: blocks the reference
        FSE decoder reads).
    table_log : int
        Largest table log, 5..12.
    block_size : int, optional
        Bytes per FSE block (default: the mode's).

    Examples
    --------
    >>> import numpy as np, numcodecs
    >>> from pywgpuprims.codecs import FSE
    >>> c = numcodecs.get_codec({"id": "pywgpuprims.fse"})
    >>> x = np.arange(1000, dtype=np.int32) % 3
    >>> bool((np.frombuffer(c.decode(c.encode(x)), np.int32) == x).all())
    True
    """

    codec_id = FSE_ID

    def __init__(self, mode: str = "interleaved", table_log: int = 11, block_size: int | None = None):
        self.mode, self.table_log, self.block_size = mode, int(table_log), block_size
        if mode not in ("interleaved", "reference"):
            raise ValueError(f"pywgpuprims.fse: mode must be 'interleaved' or 'reference', got {mode!r}")

    def encode(self, buf) -> bytes:
        data = ensure_contiguous_ndarray(buf).view(np.uint8).reshape(-1)
        dev = _device()
        return _CALLS.run(lambda: _compress_steps(dev, data, self.mode, self.table_log, self.block_size))

    def decode(self, buf, out=None):
        """Decode; with ``out`` the container must hold exactly ``out.nbytes`` bytes."""
        blob = memoryview(ensure_contiguous_ndarray(buf).view(np.uint8).reshape(-1))  # read in place, not copied
        expect = None if out is None else ensure_contiguous_ndarray(out).nbytes
        dev = _device()
        dec = _CALLS.run(lambda: _decompress_steps(dev, blob, expect, None))
        return ndarray_copy(np.frombuffer(dec, np.uint8), out)


class RLE(Codec):
    """numcodecs codec: run-length encoding of the typed chunk on the GPU, in the RLE container.

    Runs are found in the chunk's own dtype when it is uint8, uint32, int32 or float32, else in
    its 4-byte words or bytes. ``decode`` returns the runs' dtype (1-D); zarr views it as the
    array's dtype.

    Examples
    --------
    >>> import numpy as np
    >>> from pywgpuprims.codecs import RLE
    >>> x = np.repeat(np.array([3.5, -1.0], np.float32), [600, 400])
    >>> c = RLE()
    >>> len(c.encode(x)), bool((c.decode(c.encode(x)) == x).all())
    (44, True)
    """

    codec_id = RLE_ID

    def encode(self, buf) -> bytes:
        return rle_pack(ensure_contiguous_ndarray(buf, flatten=False) if not isinstance(buf, np.ndarray) else buf)

    def decode(self, buf, out=None):
        """Decode; with ``out`` the container must hold exactly ``out.nbytes`` bytes."""
        blob = ensure_contiguous_ndarray(buf).view(np.uint8).tobytes()
        if out is None:
            return rle_unpack(blob)
        res = rle_unpack(blob, expect_bytes=ensure_contiguous_ndarray(out).nbytes)
        return ndarray_copy(res.view(np.uint8), out)


register_codec(FSE)
register_codec(RLE)

# ----------------------------------------------------------------------------- zarr v3
try:
    from zarr.abc.codec import ArrayBytesCodec, BytesBytesCodec
    from zarr.core.common import parse_named_configuration
    from zarr.registry import register_codec as _zarr_register
except ImportError:  # numcodecs without zarr: the numcodecs codecs alone
    pass
else:
    def _chunk_nbytes(chunk_spec) -> int:
        return math.prod(chunk_spec.shape) * chunk_spec.dtype.to_native_dtype().itemsize

    @dataclass(frozen=True)
    class FSECodec(BytesBytesCodec):
        """zarr v3 bytes-to-bytes codec (``compressors=[FSECodec()]``): :class:`FSE`'s coding.

        ``mode``, ``table_log`` and ``block_size`` (bytes per FSE block; default the mode's) as
        :func:`pywgpuprims.fse.compress`'s; they are stored in the array's metadata.

        Decoding refuses a container that claims more than ``5 B + 4096`` bytes for a chunk of
        ``B`` bytes (the serializer before it may be :class:`RLECodec`, whose worst case is 5 B,
        and a checksum codec may sit between them), before allocating anything.

        Examples
        --------
        >>> import numpy as np, zarr
        >>> from pywgpuprims.codecs import FSECodec
        >>> z = zarr.create_array({}, shape=(6, 5), chunks=(4, 4), dtype="float32", compressors=FSECodec())
        >>> z[:] = 1.5
        >>> float(z[:].sum())
        45.0
        """

        is_fixed_size = False
        mode: str = "interleaved"
        table_log: int = 11
        block_size: int | None = None

        def __init__(self, *, mode: str = "interleaved", table_log: int = 11, block_size: int | None = None) -> None:
            FSE(mode, table_log)  # validates
            if block_size is not None:  # InputError for a size the mode does not take
                block_size = _fse_codec.check_args(mode, table_log, block_size, 256, "codecs.fse")[2]
            object.__setattr__(self, "mode", mode)
            object.__setattr__(self, "table_log", int(table_log))
            object.__setattr__(self, "block_size", block_size)

        @classmethod
        def from_dict(cls, data):
            _, cfg = parse_named_configuration(data, FSE_ID)
            return cls(**(cfg or {}))

        def to_dict(self):
            cfg = {"mode": self.mode, "table_log": self.table_log}
            if self.block_size is not None:
                cfg["block_size"] = self.block_size
            return {"name": FSE_ID, "configuration": cfg}

        # zarr awaits up to async.concurrency chunks at once: each call goes to the codecs' thread,
        # which keeps several in flight on the GPU (``_Interleaver``)
        async def _decode_single(self, chunk_bytes, chunk_spec):
            blob = memoryview(np.ascontiguousarray(chunk_bytes.as_numpy_array()).view(np.uint8).reshape(-1))
            cap = _FSE_CAP[0] * _chunk_nbytes(chunk_spec) + _FSE_CAP[1]
            dev = _device()
            dec = await asyncio.wrap_future(_CALLS.submit(lambda: _decompress_steps(dev, blob, None, cap)))
            return chunk_spec.prototype.buffer.from_bytes(dec)

        async def _encode_single(self, chunk_bytes, chunk_spec):
            data = np.ascontiguousarray(chunk_bytes.as_numpy_array()).view(np.uint8).reshape(-1)
            dev = _device()
            fut = _CALLS.submit(lambda: _compress_steps(dev, data, self.mode, self.table_log, self.block_size))
            return chunk_spec.prototype.buffer.from_bytes(await asyncio.wrap_future(fut))

        def compute_encoded_size(self, _input_byte_length, _chunk_spec):
            raise NotImplementedError

    @dataclass(frozen=True)
    class RLECodec(ArrayBytesCodec):
        """zarr v3 array-to-bytes codec (``serializer=RLECodec()``): :class:`RLE`'s container.

        Decoding requires the container to hold exactly the chunk's elements in the run dtype the
        chunk's dtype maps to.

        Examples
        --------
        >>> import numpy as np, zarr
        >>> from pywgpuprims.codecs import RLECodec
        >>> z = zarr.create_array({}, shape=(10,), chunks=(4,), dtype="uint8", serializer=RLECodec(),
        ...                       compressors=None)
        >>> z[:] = np.array([1, 1, 1, 2, 2, 3, 3, 3, 3, 3], np.uint8)
        >>> z[:].tolist()
        [1, 1, 1, 2, 2, 3, 3, 3, 3, 3]
        """

        is_fixed_size = False

        @classmethod
        def from_dict(cls, data):
            parse_named_configuration(data, RLE_ID, require_configuration=False)
            return cls()

        def to_dict(self):
            return {"name": RLE_ID}

        def _decode_sync(self, chunk_bytes, chunk_spec):
            dt = chunk_spec.dtype.to_native_dtype()
            blob = chunk_bytes.as_numpy_array().view(np.uint8).tobytes()
            res = rle_unpack(blob, expect_bytes=_chunk_nbytes(chunk_spec))
            arr = res.view(np.uint8).view(dt).reshape(chunk_spec.shape)
            return chunk_spec.prototype.nd_buffer.from_ndarray_like(arr)

        def _encode_sync(self, chunk_array, chunk_spec):
            return chunk_spec.prototype.buffer.from_bytes(rle_pack(chunk_array.as_numpy_array()))

        async def _decode_single(self, chunk_bytes, chunk_spec):
            return await asyncio.to_thread(self._decode_sync, chunk_bytes, chunk_spec)

        async def _encode_single(self, chunk_array, chunk_spec):
            return await asyncio.to_thread(self._encode_sync, chunk_array, chunk_spec)

        def compute_encoded_size(self, _input_byte_length, _chunk_spec):
            raise NotImplementedError

    _zarr_register(FSE_ID, FSECodec)
    _zarr_register(RLE_ID, RLECodec)

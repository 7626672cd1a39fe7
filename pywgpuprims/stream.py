"""Out-of-core primitives: numpy arrays (``np.memmap`` included) larger than the GPU's memory,
streamed through it chunk by chunk.

Each function reads its input a chunk at a time (``chunk`` elements; by default what one staged
transfer moves, 64 MiB, within the device's largest storage binding), runs the in-memory
primitive on the chunk's GpuArray and writes the chunk's result straight into ``out`` (which may
be a memmap too), so that host and GPU memory stay bounded by a few chunks whatever the input's
size. Chunks are double-buffered: chunk k+1's upload (the host copy into a mapped staging buffer)
runs while the GPU scans chunk k, and chunk k's result is copied out while the GPU works on chunk
k+1 (its read-back mapping is requested at submission, so the wait covers that chunk's work only).

What crosses a chunk boundary is carried exactly:

- :func:`scan`: the previous chunk's inclusive total stays on the GPU (never read back). Where
  the 32-bit kernels scan (int32, uint32, float32 in their own dtype) it enters the next chunk as
  the kernels pass carries between the binding-sized chunks of one in-memory scan: the chunk's
  tile prefixes start from it, so the result is bit for bit :func:`pywgpuprims.scan`'s with the
  same chunks (``deterministic=True`` for floats, whose single-pass order varies from run to run
  at tile boundaries in memory too; a float32 running total, never a float64 sum on the host).
  Other dtypes (the typed kernels) take the carry as the chunk's first element (integers:
  identical results; float64: equal to rounding). The result dtype is ``np.cumsum``'s (as
  :func:`pywgpuprims.scan`'s); a chunk of another dtype is converted to it on the host.
- :func:`reduce`: one partial per chunk in the result's dtype (``np.sum``'s), reduced on the GPU
  by :func:`pywgpuprims.reduce`.
- :func:`compact`, :func:`nonzero`: kept elements appended at the running count; nonzero's indices
  are int64 (as ``np.flatnonzero``), the chunk's start added on the GPU as a 64-bit base by the
  pass that writes them, so indices past 2^32 are exact.
- :func:`rle_encode`: a run spanning a boundary is joined (values compared bit for bit, as the
  kernel does).
- :func:`fse_compress` / :func:`fse_decompress`: FSE blocks are independent; the chunks' blocks
  are gathered into (or cut out of) one container of ``docs/fse-format.md``.

Examples
--------
>>> import numpy as np, pywgpuprims as pp
>>> x = np.arange(10, dtype=np.uint32)
>>> pp.stream.scan(x, chunk=4)  # np.cumsum's dtype
array([ 0,  1,  3,  6, 10, 15, 21, 28, 36, 45], dtype=uint64)
>>> pp.stream.scan(x, chunk=4, dtype=np.uint32)  # the input's: the 32-bit single-pass path
array([ 0,  1,  3,  6, 10, 15, 21, 28, 36, 45], dtype=uint32)
"""

from __future__ import annotations

import os

import numpy as np

from ._array import GpuArray
from ._device import Binding, Device, device, takes_device
from ._dtypes import acc_dtype, exclusive_identity, host_array, result_dtype
from ._errors import InputError
from .compaction import _flatnonzero
from .compaction import compact as _compact
from .compaction import rle_encode as _rle_encode
from .fse import _codec as _fc
from .scan import _FAST_OPS, _gpu_can_read, _int_op, record_scan
from .scan import reduce as _reduce
from .scan import scan as _scan

__all__ = ["compact", "fse_compress", "fse_decompress", "nonzero", "reduce", "rle_encode", "scan"]


# ----------------------------------------------------------------------------- helpers
def _flat(x, primitive: str, keep_bool: bool = False) -> np.ndarray:
    """``x`` as a flat view (no copy of a C-contiguous array or memmap); bool as uint8 unless
    ``keep_bool``."""
    if isinstance(x, GpuArray):
        raise InputError(primitive, "expected a numpy array or np.memmap (a GpuArray is in GPU memory already: "
                         "use the in-memory call)")
    a = np.asarray(x)
    if not a.flags.c_contiguous:
        raise InputError(primitive, "the input must be C-contiguous (a memmap or np.load(..., mmap_mode='r') is); "
                         "copying a strided array would load it whole")
    a = a.reshape(-1)
    return a.view(np.uint8) if a.dtype == np.bool_ and not keep_bool else a


def _chunk(chunk, dev: Device, itemsize: int, primitive: str) -> int:
    """Elements per chunk: ``chunk`` checked, or what one staged transfer moves within a binding."""
    limit = (min(dev.max_binding, dev.max_buffer) - 16) // itemsize
    if chunk is None:
        return max(1, min(dev.transfer.chunk // itemsize, limit))
    if isinstance(chunk, (bool, np.bool_)) or not isinstance(chunk, (int, np.integer)) or chunk < 1:
        raise InputError(primitive, f"chunk must be a positive number of elements, got {chunk!r}")
    if chunk > limit:
        raise InputError(primitive, f"chunk={chunk} elements exceed the device's largest storage binding "
                         f"({limit} elements of {itemsize} bytes)")
    return int(chunk)


def _out(out, n: int, shape, dtype, primitive: str) -> tuple[np.ndarray, np.ndarray]:
    """(what to return, its flat view): a new array, or ``out`` checked (a memmap is fine)."""
    if out is None:
        res = np.empty(shape, dtype)
        return res, res.reshape(-1)
    if not isinstance(out, np.ndarray):
        raise InputError(primitive, f"out must be a numpy array or np.memmap, got {type(out).__name__}")
    if out.dtype != dtype or out.size < n or not out.flags.c_contiguous or not out.flags.writeable:
        raise InputError(primitive, f"out must be a writeable C-contiguous array of {dtype} with at least {n} "
                         f"elements; got {out.dtype} of shape {out.shape}")
    return out, out.reshape(-1)


def _identity(op: str, dtype: np.dtype) -> np.ndarray:
    """What an exclusive scan starts with, as a one-element array of ``dtype``."""
    return np.array([exclusive_identity(op, dtype)], dtype)


def _source(x, primitive: str) -> tuple[np.ndarray, np.dtype]:
    """(flat view, its dtype) for scan and reduce: any dtype :func:`pywgpuprims.scan` takes."""
    a = _flat(x, primitive, keep_bool=True)
    return a, host_array(a[:0], primitive).dtype  # checks the dtype (longlong and friends as int64 / uint64)


class _Pipeline:
    """Chunks in flight: each read-back's mapping is requested when its batch is submitted and
    its host copy runs after the next chunk's work is submitted. Used as a context manager: on an
    error, read-backs still pending are dropped unread (their staging goes back unmapped)."""

    def __init__(self):
        self.pending: list = []

    def push(self, readback, finish) -> None:
        readback.prefetch()
        self.pending.append((readback, finish))
        if len(self.pending) > 1:
            self.pop()

    def pop(self) -> None:
        rb, finish = self.pending.pop(0)
        finish(rb)

    def drain(self) -> None:
        while self.pending:
            self.pop()

    def __enter__(self) -> _Pipeline:
        return self

    def __exit__(self, kind, exc, tb) -> None:
        try:
            if kind is None:
                self.drain()
        finally:
            for rb, _ in self.pending:
                rb.discard()
            self.pending.clear()


def _ring(dev: Device, n_chunks: int, shape, dtype) -> list[GpuArray]:
    return [GpuArray.empty(shape, dtype, dev) for _ in range(min(2, n_chunks))]


# ----------------------------------------------------------------------------- scan, reduce
@takes_device(name="stream.scan")
def scan(x, op: str = "add", exclusive: bool = False, out=None, dtype=None, deterministic: bool = False, *,
         chunk: int | None = None) -> np.ndarray:
    """Scan an array of any size (``np.memmap`` included) through the GPU chunk by chunk.

    The flattened array is scanned, as ``np.cumsum(x)`` does with ``axis=None``; the result has
    ``x``'s shape and :func:`pywgpuprims.scan`'s dtype. Results equal :func:`pywgpuprims.scan`
    of the whole array (integers exactly, floats to rounding: see the module's notes).

    Parameters
    ----------
    x : numpy.ndarray or np.memmap
        C-contiguous; any dtype :func:`pywgpuprims.scan` takes.
    op : {"add", "min", "max", "and", "or", "xor", "fmin", "fmax"}
    exclusive : bool
        Element i receives the combination of elements 0 .. i-1 (the identity at 0).
    out : numpy.ndarray or np.memmap, optional
        Where to write the result (at least x.size elements, C-contiguous; without ``dtype``, its
        dtype is the one computed in, as numpy's ``out``); may be ``x`` itself (chunks are read
        before they are written).
    dtype : numpy dtype, optional
        The dtype to accumulate in and return. Default ``np.cumsum``'s for add (int64 for bool
        and signed integers below 64 bits, uint64 for unsigned ones, floats their own), the
        input's for the other ops. Where it is the input's dtype (``dtype=x.dtype``, or ``out=x``),
        32-bit input takes the single-pass scan and moves 4 bytes per element each way; otherwise
        each chunk is converted to ``dtype`` on the host before its upload.
    deterministic : bool
        As :func:`pywgpuprims.scan`'s: float32 sums in a fixed order (the reduce-then-scan
        kernels), so results repeat bit for bit.
    chunk : int, optional
        Elements per chunk (default: 64 MiB of them, within the device's largest binding). Host and
        GPU memory in use: about six chunks.

    Returns
    -------
    numpy.ndarray
        ``out`` when given.

    Examples
    --------
    >>> import numpy as np, pywgpuprims as pp
    >>> pp.stream.scan(np.array([3, 1, 4, 1, 5], np.int32), op="max", exclusive=True, chunk=2).tolist()
    [-2147483648, 3, 3, 4, 4]
    """
    name = "stream.scan"
    a, src = _source(x, name)
    if out is not None and not isinstance(out, np.ndarray):
        raise InputError(name, f"out must be a numpy array or np.memmap, got {type(out).__name__}")
    dt = result_dtype(op, src, dtype, None if out is None or dtype is not None else out.dtype, name)
    dev = device()
    n = a.size
    # computed in gd: dt, or for an 8- or 16-bit result its 32-bit sibling (as the in-memory scan
    # computes it; a carry in gd wraps or rounds like dt's once the result is cast), so that the
    # carry's element stays 4-byte aligned
    gd, gop = acc_dtype(dt), _int_op(op, dt)
    isz = gd.itemsize
    m = _chunk(chunk, dev, isz, name)
    res, flat = _out(out, n, np.shape(x), dt, name)
    if n == 0:
        return res
    n_chunks = -(-n // m)
    ident = dev.constant(_identity(op, dt).astype(gd))

    def finish(r, s, c):
        if gd == dt:
            r.into(flat[s:s + c], tuning=dev.transfer)
        else:
            flat[s:s + c] = r.numpy(gd).astype(dt)

    if gop in _FAST_OPS.get(gd, ()):  # the 32-bit kernels: the carry enters as the kernels pass it on
        ins, outs = _ring(dev, n_chunks, (m,), gd), _ring(dev, n_chunks, (m,), gd)
        carries = dev.alloc(16)  # slots 0 and 1: chunk k reads slot k % 2, writes the other
        method = "rts" if deterministic else None
        b = dev.batch()
        b.copy(ident, 0, carries, 0, isz)
        b.submit()
        with _Pipeline() as pipe:
            for k, start in enumerate(range(0, n, m)):
                c = min(m, n - start)
                gin, gout = GpuArray(dev, ins[k % 2].buffer, (c,), gd), GpuArray(dev, outs[k % 2].buffer, (c,), gd)
                piece = a[start:start + c]
                dev.upload(gin, piece if piece.dtype == gd else piece.astype(dt, copy=False).astype(gd, copy=False))
                b = dev.batch()
                record_scan(b, gin, gout, gop, exclusive, method, carry_in=(carries, 4 * (k % 2)),
                            carry_out=(carries, 4 * ((k + 1) % 2)))
                rb = b.readback((gout, 0, c * isz))
                b.submit()
                pipe.push(rb, lambda r, s=start, c=c: finish(r, s, c))
        return res
    ins, outs = _ring(dev, n_chunks, (m + 1,), gd), _ring(dev, n_chunks, (m + 1,), gd)
    with _Pipeline() as pipe:
        prev = None  # (GpuArray, elements) of the chunk before
        for k, start in enumerate(range(0, n, m)):
            c = min(m, n - start)
            gin, gout = ins[k % 2], outs[k % 2]
            # element 0: the carry (the previous chunk's inclusive total, on the GPU) or the identity
            piece = a[start:start + c]  # converted as numpy does: to dt first (then widened to gd)
            dev.upload(gin, piece if piece.dtype == gd else piece.astype(dt, copy=False).astype(gd, copy=False),
                       offset=isz)
            b = dev.batch()
            if prev is None:
                b.copy(ident, 0, gin, 0, isz)
            else:
                b.copy(prev[0], isz * prev[1], gin, 0, isz)
            b.submit()
            _scan(GpuArray(dev, gin.buffer, (c + 1,), gd), gop, out=GpuArray(dev, gout.buffer, (c + 1,), gd),
                  dtype=gd)
            b = dev.batch()
            # inclusive: elements 1..c; exclusive: 0..c-1 (the carry is the first exclusive value)
            rb = b.readback((gout, 0 if exclusive else isz, c * isz))
            b.submit()
            pipe.push(rb, lambda r, s=start, c=c: finish(r, s, c))
            prev = (gout, c)
    return res


@takes_device(name="stream.reduce")
def reduce(x, op: str = "add", dtype=None, *, chunk: int | None = None):
    """Reduce an array of any size (``np.memmap`` included) to a scalar, chunk by chunk.

    Each chunk's partial comes from :func:`pywgpuprims.reduce` (in the result's dtype) and stays
    on the GPU; the partials are reduced there at the end (integers: identical to the in-memory
    result; floats: the partials of the chunks are added in a fixed order, so results repeat).

    Parameters
    ----------
    x : numpy.ndarray or np.memmap
        C-contiguous; any dtype :func:`pywgpuprims.reduce` takes; the flattened array is reduced.
    op : {"add", "min", "max", "and", "or", "xor", "fmin", "fmax"}
    dtype : numpy dtype, optional
        The dtype to accumulate in and return: default ``np.sum``'s for add (int64 / uint64 for
        narrower integers), the input's for the others (:func:`pywgpuprims.reduce`'s rule).
    chunk : int, optional
        Elements per chunk (see :func:`scan`).

    Returns
    -------
    numpy scalar
        As :func:`pywgpuprims.reduce` with ``axis=None``.

    Examples
    --------
    >>> import numpy as np, pywgpuprims as pp
    >>> r = pp.stream.reduce(np.full(1000, 4_000_000, np.uint32), chunk=300)  # np.sum's dtype
    >>> int(r), r.dtype
    (4000000000, dtype('uint64'))
    """
    name = "stream.reduce"
    a, src = _source(x, name)
    rd = result_dtype(op, src, dtype, None, name)
    dev = device()
    m = _chunk(chunk, dev, a.dtype.itemsize, name)
    if a.size <= m:
        return _reduce(np.ascontiguousarray(a), op, dtype=rd)
    # a conversion the kernels do not read (e.g. int64 into float64) is made on the host, per chunk
    gdt = a.dtype if _gpu_can_read(a.dtype, rd, _int_op(op, rd), dev) else rd
    m = _chunk(chunk, dev, gdt.itemsize, name) if gdt != a.dtype else m
    n_chunks = -(-a.size // m)
    ring = _ring(dev, n_chunks, (m,), gdt)
    partials, narrow = None, []
    for k, start in enumerate(range(0, a.size, m)):
        c = min(m, a.size - start)
        g = GpuArray(dev, ring[k % 2].buffer, (c,), gdt)
        piece = a[start:start + c]
        dev.upload(g, piece if gdt == a.dtype else piece.astype(gdt))  # the next upload overlaps this reduction
        r = _reduce(g, op, dtype=rd)
        if rd.itemsize < 4:  # an 8- or 16-bit partial: read back (GPU copies move whole words)
            narrow.append(r.numpy()[()])
            continue
        if partials is None:
            partials = GpuArray.empty((n_chunks,), r.dtype, dev)
        b = dev.batch()
        b.copy(r, r.byte_offset, partials, r.dtype.itemsize * k, r.dtype.itemsize)
        b.submit()
    if narrow:
        return _reduce(np.array(narrow, rd), op, dtype=rd)
    return _reduce(partials, op, dtype=rd).numpy()[()]


# ----------------------------------------------------------------------------- compaction
def _stream_compact(name: str, x, mask, out, chunk) -> np.ndarray:
    mk = _flat(mask, name)
    a = _flat(x, name) if x is not None else None
    if a is not None and a.size != mk.size:
        raise InputError(name, f"mask has {mk.size} elements, x has {a.size}")
    dev = device()
    src = a if a is not None else mk
    dt = np.dtype(np.int64) if a is None else a.dtype
    m = _chunk(chunk, dev, 8 if a is None else max(src.dtype.itemsize, 4), name)  # nonzero writes int64
    n = mk.size
    flat = _out(out, 0, None, dt, name)[1] if out is not None else None
    pieces: list[np.ndarray] = []
    count = [0]
    n_chunks = max(1, -(-n // m))
    xs = _ring(dev, n_chunks, (m,), a.dtype) if a is not None else None
    ms = _ring(dev, n_chunks, (m,), mk.dtype)

    def finish(rb, start):
        part = rb.counted(dt)[0]  # nonzero: int64 indices, the chunk's start added on the GPU
        k, at = part.size, count[0]
        if flat is not None:
            if at + k > flat.size:
                raise InputError(name, f"out has {flat.size} elements; more are kept")
            flat[at:at + k] = part
        else:
            pieces.append(part)
        count[0] = at + k


    with _Pipeline() as pipe:
        for k, start in enumerate(range(0, n, m)):
            c = min(m, n - start)
            gm = GpuArray(dev, ms[k % 2].buffer, (c,), mk.dtype)
            dev.upload(gm, mk[start:start + c])
            if a is None:
                res_k = _flatnonzero(gm, np.int64, None, name, base=start)
            else:
                gx = GpuArray(dev, xs[k % 2].buffer, (c,), a.dtype)
                dev.upload(gx, a[start:start + c])
                res_k = _compact(gx, gm)
            b = dev.batch()
            d = res_k.data
            rb = b.readback((res_k.count, res_k.count.byte_offset, 4), (d, d.byte_offset, c * d.dtype.itemsize))
            b.submit()
            pipe.push(rb, lambda r, s=start: finish(r, s))
    if flat is not None:
        return flat[:count[0]]
    return np.concatenate(pieces) if pieces else np.empty(0, dt)


@takes_device(name="stream.compact")
def compact(x, mask, out=None, *, chunk: int | None = None) -> np.ndarray:
    """``x[mask]`` (flattened) for arrays of any size (``np.memmap`` included), chunk by chunk.

    Parameters
    ----------
    x : numpy.ndarray or np.memmap
        C-contiguous; a dtype :func:`pywgpuprims.compact` takes.
    mask : numpy.ndarray or np.memmap
        bool, uint8, uint32 or int32, as many elements as ``x``; nonzero keeps.
    out : numpy.ndarray or np.memmap, optional
        1-D of x's dtype with room for the kept elements (the input's size is always enough); the
        result is its first part.
    chunk : int, optional
        Elements per chunk (see :func:`scan`).

    Returns
    -------
    numpy.ndarray
        The kept elements in order (a view of ``out`` when given).

    Examples
    --------
    >>> import numpy as np, pywgpuprims as pp
    >>> x = np.arange(10, dtype=np.float32)
    >>> pp.stream.compact(x, x % 3 == 0, chunk=4)
    array([0., 3., 6., 9.], dtype=float32)
    """
    return _stream_compact("stream.compact", x, mask, out, chunk)


@takes_device(name="stream.nonzero")
def nonzero(mask, out=None, *, chunk: int | None = None) -> np.ndarray:
    """``np.flatnonzero(mask)`` for arrays of any size (``np.memmap`` included), chunk by chunk.

    Parameters
    ----------
    mask : numpy.ndarray or np.memmap
        bool, uint8, uint32 or int32; C-contiguous.
    out : numpy.ndarray or np.memmap, optional
        1-D int64 with room for the indices (mask.size is always enough).
    chunk : int, optional
        Elements per chunk (see :func:`scan`).

    Returns
    -------
    numpy.ndarray of int64
        The flat indices of the nonzero elements (a view of ``out`` when given).

    Examples
    --------
    >>> import numpy as np, pywgpuprims as pp
    >>> pp.stream.nonzero(np.array([0, 3, 0, 1, 1, 0, 2], np.uint32), chunk=3)
    array([1, 3, 4, 6])
    """
    return _stream_compact("stream.nonzero", None, mask, out, chunk)


# ----------------------------------------------------------------------------- RLE
@takes_device(name="stream.rle_encode")
def rle_encode(x, out=None, *, chunk: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Run-length encode an array of any size (``np.memmap`` included), chunk by chunk.

    A run that spans chunk boundaries comes out as one run, as from the in-memory call.

    Parameters
    ----------
    x : numpy.ndarray or np.memmap
        C-contiguous; a dtype :func:`pywgpuprims.rle_encode` takes. Flattened.
    out : (numpy.ndarray, numpy.ndarray), optional
        Arrays (memmaps too) for the values (x's dtype) and the counts (the counts' dtype below),
        1-D, with room for the runs (x.size is always enough); the result is their first parts.
        Without them the runs are gathered in memory.
    chunk : int, optional
        Elements per chunk (see :func:`scan`).

    Returns
    -------
    values, counts : numpy.ndarray
        The runs; counts uint32 (uint64 for inputs of 2^32 elements or more, where a run may be
        longer than uint32 holds).

    Examples
    --------
    >>> import numpy as np, pywgpuprims as pp
    >>> v, c = pp.stream.rle_encode(np.array([7, 7, 7, 2, 9, 9], np.int32), chunk=2)
    >>> v.tolist(), c.tolist()
    ([7, 2, 9], [3, 1, 2])
    """
    name = "stream.rle_encode"
    a = _flat(x, name)
    dev = device()
    m = _chunk(chunk, dev, max(a.dtype.itemsize, 4), name)
    cdt = np.dtype(np.uint32) if a.size < (1 << 32) else np.dtype(np.uint64)
    if out is not None:
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            raise InputError(name, "out must be a pair of arrays (values, counts)")
        vals_out = _out(out[0], 0, None, a.dtype, name)[1]
        cnts_out = _out(out[1], 0, None, cdt, name)[1]
    else:
        vals_out = cnts_out = None
    if a.size <= m and out is None:
        v, c = _rle_encode(np.ascontiguousarray(a))
        return v, c.astype(cdt, copy=False)
    ring = _ring(dev, max(1, -(-a.size // m)), (m,), a.dtype)
    values: list[np.ndarray] = []
    counts: list[np.ndarray] = []
    bits = np.dtype(f"u{a.dtype.itemsize}")
    runs = [0]  # runs written so far
    last = [None, None]  # the last run's value bits, and where its count lives (array, index)

    def finish(rb):
        v, c = rb.counted(a.dtype, np.uint32)
        c = c.astype(cdt)
        if last[0] is not None and v.size and last[0] == v[:1].view(bits)[0]:
            arr, i = last[1]
            arr[i] += c[0]  # the run goes on across the boundary
            v, c = v[1:], c[1:]
        if not v.size:
            return
        if vals_out is not None:
            at = runs[0]
            if at + v.size > vals_out.size or at + v.size > cnts_out.size:
                raise InputError(name, f"out has room for {min(vals_out.size, cnts_out.size)} runs; there are more")
            vals_out[at:at + v.size] = v
            cnts_out[at:at + v.size] = c
            last[1] = (cnts_out, at + v.size - 1)
        else:
            values.append(v)
            counts.append(c)
            last[1] = (c, c.size - 1)
        runs[0] += v.size
        last[0] = v[-1:].view(bits)[0]

    with _Pipeline() as pipe:
        for k, start in enumerate(range(0, a.size, m)):
            c = min(m, a.size - start)
            g = GpuArray(dev, ring[k % 2].buffer, (c,), a.dtype)
            dev.upload(g, a[start:start + c])
            rl = _rle_encode(g)
            b = dev.batch()
            isz = a.dtype.itemsize
            rb = b.readback((rl.n_runs, rl.n_runs.byte_offset, 4), (rl.values, rl.values.byte_offset, c * isz),
                            (rl.counts, rl.counts.byte_offset, 4 * c))
            b.submit()
            pipe.push(rb, finish)
    if vals_out is not None:
        return vals_out[:runs[0]], cnts_out[:runs[0]]
    if not values:
        return np.empty(0, a.dtype), np.empty(0, cdt)
    return np.concatenate(values), np.concatenate(counts)


# ----------------------------------------------------------------------------- FSE
def _fse_chunk(chunk, block_size: int, name: str) -> int:
    if chunk is None:
        chunk = 64 << 20
    if isinstance(chunk, (bool, np.bool_)) or not isinstance(chunk, (int, np.integer)) or chunk < 1:
        raise InputError(name, f"chunk must be a positive number of bytes, got {chunk!r}")
    return max(1, int(chunk) // block_size) * block_size


@takes_device(name="stream.fse_compress")
def fse_compress(data, out=None, *, chunk: int | None = None, table_log: int = 11, block_size: int | None = None,
                 mode: str = "reference", lanes: int = 256):
    """:func:`pywgpuprims.fse.compress` for data of any size (``np.memmap`` included), chunk by
    chunk, into one container (the same bytes as compressing it whole).

    Parameters
    ----------
    data : bytes, numpy uint8 array or np.memmap
    out : str, os.PathLike or binary file, optional
        Where to write the container (a file must be seekable: the block table is written last);
        without it the container is returned as bytes.
    chunk : int, optional
        Input bytes per chunk (rounded down to whole blocks; default 64 MiB).
    table_log, block_size, mode, lanes
        As :func:`pywgpuprims.fse.compress`.

    Returns
    -------
    bytes, or the number of bytes written to ``out``

    Examples
    --------
    >>> import pywgpuprims as pp
    >>> blob = pp.stream.fse_compress(b"abracadabra" * 10_000, chunk=1 << 15)
    >>> pp.fse.decompress(blob) == b"abracadabra" * 10_000
    True
    """
    name = "stream.fse_compress"
    if isinstance(data, (bytes, bytearray, memoryview)):
        data = np.frombuffer(data, np.uint8)
    a = _flat(data, name)
    if a.dtype != np.uint8:
        raise InputError(name, f"expected uint8 data, got {a.dtype}")
    mode, table_log, bs, lanes = _fc.check_args(mode, table_log, block_size, lanes, name)
    step = _fse_chunk(chunk, bs, name) // bs
    dev = device()
    n, nb = a.size, -(-a.size // bs)
    entries = np.zeros(nb, _fc.ENTRY)
    tend = _fc.HEADER.size + _fc.ENTRY.itemsize * nb

    def source(start: int, nbytes: int) -> Binding:
        return Binding(_fc._upload(dev, a[start:start + nbytes]))

    own = isinstance(out, (str, os.PathLike))
    f = open(out, "wb") if own else out  # noqa: SIM115
    parts: list = []
    try:
        if f is not None:
            f.seek(tend)
        pos = tend
        # group k+1's upload and histograms run while group k's payload is copied out and written
        for grp in _fc.encode_groups(dev, source, n, mode, table_log, bs, lanes, max_blocks=step):
            e = entries[grp.first:grp.first + len(grp.csize)]
            e["offset"] = pos + grp.rel
            e["csize"], e["kind"], e["check"] = grp.csize, grp.kind, grp.check
            buf = np.empty(grp.size, np.uint8)
            _fc.copy_payload(dev, grp.payload, buf)
            if f is not None:
                f.write(buf)
            else:
                parts.append(buf)
            pos += grp.size
        head = _fc.header(_fc.MODES[mode], table_log, lanes if mode == "interleaved" else 0, bs, n, entries)
        if f is None:
            blob, view = _fc._new_bytes(pos)
            view[:tend] = np.frombuffer(head, np.uint8)
            at = tend
            for p in parts:
                view[at:at + p.size] = p
                at += p.size
            del view
            return blob if isinstance(blob, bytes) else bytes(blob)
        f.seek(0)
        f.write(head)
        return pos
    finally:
        if own:
            f.close()


@takes_device(name="stream.fse_decompress")
def fse_decompress(blob, out=None, *, chunk: int | None = None) -> np.ndarray:
    """:func:`pywgpuprims.fse.decompress` for containers of any size (``np.memmap`` included),
    chunk by chunk, into ``out`` (which may be a memmap).

    Every check of :func:`pywgpuprims.fse.decompress` applies (header, table, streams, block
    checksums); a chunk's blocks are decoded only after the whole table was checked.

    Parameters
    ----------
    blob : bytes, numpy uint8 array or np.memmap
        A container made by :func:`pywgpuprims.fse.compress` or :func:`fse_compress`.
    out : numpy.ndarray or np.memmap, optional
        uint8, C-contiguous, at least the original size.
    chunk : int, optional
        Output bytes per chunk (rounded down to whole blocks; default 64 MiB).

    Returns
    -------
    numpy.ndarray of uint8
        The original bytes (``out`` when given).

    Examples
    --------
    >>> import numpy as np, pywgpuprims as pp
    >>> blob = pp.fse.compress(b"abracadabra" * 10_000)
    >>> bytes(pp.stream.fse_decompress(blob, chunk=1 << 15)) == b"abracadabra" * 10_000
    True
    """
    name = "stream.fse_decompress"
    if isinstance(blob, (bytes, bytearray, memoryview)):
        blob = np.frombuffer(blob, np.uint8)
    src = _flat(blob, name)
    if src.dtype != np.uint8:
        raise InputError(name, f"expected uint8 data, got {src.dtype}")
    hdr, e = _fc.parse(src)
    n, bs = hdr["size"], hdr["block_size"]
    res, flat = _out(out, n, (n,), np.dtype(np.uint8), name)
    if n:  # group k+1 is uploaded and decoded while group k is checked and copied out
        _fc.decode_groups(device(), hdr, e, src, flat, max_blocks=_fse_chunk(chunk, bs, name) // bs)
    return res

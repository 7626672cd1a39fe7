"""Dask integration: pywgpuprims kernels on the chunks of a ``dask.array.Array``.

Dask is an optional extra (``pip install pywgpuprims[dask]``); ``import pywgpuprims`` does not
import this module. Every function here builds a Dask graph whose tasks call the numpy-in,
numpy-out primitives on one chunk each, so the graph runs on any Dask scheduler: the default
threaded one, or a ``dask.distributed`` cluster whose worker processes each open their own device
(:func:`gpu_cluster` places one worker per GPU). Within a process, chunk calls are serialised by a
lock: one process drives one device, and Dask's threads take turns on it.

How each family is split, and how close the chunked result is to the unchunked one:

===========================  ===================================================  ====================
function                     chunking                                             result
===========================  ===================================================  ====================
:func:`scan`, :func:`cumsum`  ``dask.array.reductions.cumreduction``: our scan per  integers exact;
                             chunk, each chunk's last row carried into the next   float32 rounding
:func:`reduce`, :func:`sum`,  ``dask.array.reduction``: our reduce per chunk and    as above
:func:`min`, :func:`max`      over the partial results
:func:`box_filter`            ``map_overlap``, depth = radius                      integers exact
:func:`correlate`             overlap of the kernel's half-width, padded as the     float32 rounding
                             boundary says; per chunk a ``"valid"`` correlation
:func:`summed_area_table`     per-chunk table plus carries: the exclusive prefix   integers exact
                             of earlier chunks' column sums and row sums
:func:`gaussian_filter`,      ``map_overlap`` with a depth from the filter's decay  float32 rounding
:func:`recursive_filter`,     (see :func:`recursive_depth`)                         (see there)
:func:`bspline_prefilter`
:func:`rle_encode`            per chunk, runs that cross a boundary joined         exact
:func:`compact`,              per chunk; output chunks of unknown size             exact
:func:`nonzero`
:func:`fse_compress`,         one container per chunk (FSE blocks are independent)  lossless
:func:`fse_decompress`
===========================  ===================================================  ====================

Example
-------
>>> import dask.array as da, numpy as np
>>> from pywgpuprims import dask as ppd
>>> x = da.from_array(np.arange(10, dtype=np.int32), chunks=(3, 3, 4))
>>> ppd.cumsum(x).compute()  # numpy's result dtype: int64 for int32 input
array([ 0,  1,  3,  6, 10, 15, 21, 28, 36, 45])
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from functools import partial

import dask
import dask.array as da
import numpy as np
from dask.array.reductions import cumreduction

from . import _ndimage as _nd
from . import fse as _fse
from ._dtypes import ALL_DTYPES, result_dtype
from ._errors import CorruptDataError, InputError
from ._serial import serial as _gpu
from .compaction import _flatnonzero
from .compaction import compact as _compact
from .compaction import rle_encode as _rle_encode
from .conv import _origin as _conv_origin
from .conv import check_extension_keywords as _check_extension_keywords
from .conv import correlate as _correlate
from .recfilter import _SPLINE_Z, _coefs, _gaussian_coefs, _padlen
from .recfilter import bspline_prefilter as _bspline
from .recfilter import gaussian_filter as _gaussian
from .recfilter import recursive_filter as _recursive
from .sat import box_filter as _box_filter
from .sat import summed_area_table as _sat
from .scan import reduce as _reduce
from .scan import scan as _scan

__all__ = [
    "box_filter", "bspline_prefilter", "compact", "correlate", "cumsum", "fse_compress", "fse_decompress",
    "gaussian_filter", "gpu_cluster", "max", "min", "nonzero", "recursive_depth", "recursive_filter", "reduce",
    "rle_encode", "scan", "sum", "summed_area_table",
]

_DTYPES = (np.dtype(np.uint32), np.dtype(np.int32), np.dtype(np.float32))
_BINOPS = {"add": np.add, "min": np.minimum, "max": np.maximum, "and": np.bitwise_and,
           "or": np.bitwise_or, "xor": np.bitwise_xor}


def _check_array(x, primitive: str, dtypes=_DTYPES) -> da.Array:
    if not isinstance(x, da.Array):
        raise InputError(primitive, f"expected a dask.array.Array, got {type(x).__name__}")
    if dtypes is not None and x.dtype not in dtypes:
        raise InputError(primitive, f"dtype {x.dtype} is not supported (expected one of "
                         f"{', '.join(str(d) for d in dtypes)})")
    return x


def _identity(op: str, dtype: np.dtype):
    if dtype.kind == "b":
        return dtype.type(op in ("and", "min"))
    if op in ("add", "or", "xor"):
        return dtype.type(0)
    if op == "and":
        return dtype.type(-1) if dtype.kind == "i" else np.iinfo(dtype).max
    if dtype.kind == "f":
        return dtype.type(np.inf if op == "min" else -np.inf)
    info = np.iinfo(dtype)
    return dtype.type(info.max if op == "min" else info.min)


# ----------------------------------------------------------------------------- scan and reduce
def _scan_block(block: np.ndarray, axis: int, dtype=None, op: str = "add") -> np.ndarray:
    """Inclusive scan of one chunk along ``axis`` with our kernel (any number of dimensions),
    accumulated in and returned as ``dtype``."""
    dtype = np.dtype(dtype or block.dtype)
    if block.size == 0:
        return np.empty(block.shape, dtype)
    moved = np.moveaxis(block, axis, -1)
    rows = np.ascontiguousarray(moved).reshape(-1, moved.shape[-1])
    res = _gpu(_scan, rows if rows.shape[0] > 1 else rows[0], op, dtype=dtype)
    return np.moveaxis(res.reshape(moved.shape), -1, axis)


def scan(x: da.Array, op: str = "add", axis: int | None = None, dtype=None) -> da.Array:
    """Inclusive scan of a dask array along ``axis``: our GPU scan per chunk, carries by Dask.

    Built on ``dask.array.reductions.cumreduction``: each chunk is scanned on its worker's device
    (:func:`pywgpuprims.scan`), and the last row of each chunk's result is combined into the next
    chunk's (``np.add``, ``np.minimum``, ...) in the result's dtype. Integer results equal
    numpy's (wrapping in a narrow ``dtype``); float sums differ from ``np.cumsum`` by rounding.

    Parameters
    ----------
    x : dask.array.Array
        Any dtype :func:`pywgpuprims.scan` takes, any number of dimensions and chunks.
    op : {"add", "min", "max", "and", "or", "xor"}
    axis : int, optional
        The scanned axis; None scans the flattened array (as ``np.cumsum``).
    dtype : numpy dtype, optional
        The dtype to accumulate in and return. Default as ``np.cumsum`` (and
        :func:`pywgpuprims.scan`): int64 for bool and signed integers below 64 bits, uint64 for
        unsigned ones, floats their own, for add; the input's for the other ops.
        ``dtype=x.dtype`` for 32-bit input takes the GPU's fastest path (integers wrap).

    Returns
    -------
    dask.array.Array
        Of ``dtype``; the shape of ``x`` (flattened for ``axis=None``).

    Examples
    --------
    >>> import dask.array as da, numpy as np
    >>> from pywgpuprims import dask as ppd
    >>> x = da.from_array(np.array([3, 1, 4, 1, 5, 9, 2], np.uint32), chunks=2)
    >>> ppd.scan(x, "max").compute()
    array([3, 3, 4, 4, 5, 9, 9], dtype=uint32)
    """
    x = _check_array(x, "dask.scan", ALL_DTYPES)
    if op not in _BINOPS:
        raise InputError("dask.scan", f"op must be one of {', '.join(_BINOPS)}, got {op!r}")
    rd = result_dtype(op, x.dtype, dtype, None, "dask.scan")  # checks dtype, and bitwise ops on floats
    if axis is None:
        x, axis = x.ravel(), 0
    if not -x.ndim <= axis < x.ndim:
        raise InputError("dask.scan", f"axis {axis} is out of range for {x.ndim} dimensions")
    func = partial(_scan_block, op=op)
    func.__name__ = f"pywgpuprims-scan-{op}"  # cumreduction names its tasks after the function
    return cumreduction(func, _BINOPS[op], _identity(op, rd), x, axis=axis % x.ndim, dtype=rd)


def cumsum(x: da.Array, axis: int | None = None, dtype=None) -> da.Array:
    """``np.cumsum`` of a dask array with the GPU scan per chunk (:func:`scan` with ``"add"``);
    numpy's result dtype unless ``dtype`` is given.

    Examples
    --------
    >>> import dask.array as da, numpy as np
    >>> from pywgpuprims import dask as ppd
    >>> ppd.cumsum(da.ones((2, 3), dtype=np.float32, chunks=1), axis=1).compute()
    array([[1., 2., 3.],
           [1., 2., 3.]], dtype=float32)
    """
    return scan(x, "add", axis, dtype)


def _reduce_block(block: np.ndarray, axis=None, keepdims=False, op: str = "add", dtype=None) -> np.ndarray:
    """Reduce one chunk over ``axis`` (a tuple) with our kernel in ``dtype``, keeping the reduced
    dimensions."""
    dtype = np.dtype(dtype or block.dtype)
    axes = tuple(range(block.ndim)) if axis is None else tuple(a % block.ndim for a in axis)
    kept = [a for a in range(block.ndim) if a not in axes]
    out_shape = tuple(1 if a in axes else n for a, n in enumerate(block.shape))
    moved = np.transpose(block, kept + list(axes))
    rows = math.prod(block.shape[a] for a in kept)
    flat = np.ascontiguousarray(moved).reshape(rows, -1)
    if flat.shape[1] == 0:
        res = np.full(rows, _identity(op, dtype), dtype)
    elif rows == 1:
        res = np.asarray(_gpu(_reduce, flat[0], op, dtype=dtype)).reshape(1)
    else:
        res = _gpu(_reduce, flat, op, -1, dtype=dtype)
    res = res.reshape(out_shape)
    return res if keepdims else res.reshape(tuple(n for a, n in enumerate(block.shape) if a not in axes))


def reduce(x: da.Array, op: str = "add", axis: int | Sequence[int] | None = None, keepdims: bool = False,
           split_every: int | None = None, dtype=None) -> da.Array:
    """Reduce a dask array with ``op``: our GPU reduce on each chunk and on the partial results.

    Built on ``dask.array.reduction``; the result dtype is numpy's, as :func:`pywgpuprims.reduce`
    (``np.sum`` for add: int64 / uint64 for narrower integers; min / max / bitwise keep the
    input's dtype), or ``dtype``. Integers exact (wrapping in a narrow ``dtype``); float sums
    differ from numpy's by rounding; float min / max propagate NaN, as ``np.min`` / ``np.max``.
    ``min``/``max`` of an empty array raise, as numpy's.

    Parameters
    ----------
    x : dask.array.Array
        Any dtype :func:`pywgpuprims.reduce` takes.
    op : {"add", "min", "max", "and", "or", "xor"}
    axis : None, int or tuple of ints
    keepdims : bool
    split_every : int, optional
        Dask's tree-reduction fan-in.
    dtype : numpy dtype, optional
        The dtype to accumulate in and return (``dtype=x.dtype`` for 32-bit input takes the
        GPU's fastest path).

    Examples
    --------
    >>> import dask.array as da, numpy as np
    >>> from pywgpuprims import dask as ppd
    >>> int(ppd.reduce(da.arange(100, dtype=np.int32, chunks=7)).compute())
    4950
    """
    x = _check_array(x, "dask.reduce", ALL_DTYPES)
    if op not in _BINOPS:
        raise InputError("dask.reduce", f"op must be one of {', '.join(_BINOPS)}, got {op!r}")
    rd = result_dtype(op, x.dtype, dtype, None, "dask.reduce")  # checks dtype, and bitwise ops on floats
    if op in ("min", "max") and x.size == 0:
        raise InputError("dask.reduce", f"zero-size array to reduction with {op!r}, which has no identity")
    f = partial(_reduce_block, op=op, dtype=rd)  # the partials are of rd, reduced again in rd
    return da.reduction(x, f, f, axis=axis, keepdims=keepdims, dtype=rd, split_every=split_every)


def sum(x: da.Array, axis=None, dtype=None, keepdims: bool = False) -> da.Array:
    """``np.sum(x, axis, dtype)`` with the GPU reduce per chunk (:func:`reduce`, ``"add"``):
    numpy's result dtype (int64 / uint64 for narrower integers) unless ``dtype`` is given."""
    return reduce(x, "add", axis, keepdims, dtype=dtype)


def min(x: da.Array, axis=None, keepdims: bool = False) -> da.Array:
    """``np.min`` with the GPU reduce per chunk (:func:`reduce`, ``"min"``)."""
    return reduce(x, "min", axis, keepdims)


def max(x: da.Array, axis=None, keepdims: bool = False) -> da.Array:
    """``np.max`` with the GPU reduce per chunk (:func:`reduce`, ``"max"``)."""
    return reduce(x, "max", axis, keepdims)


# ----------------------------------------------------------------------------- filters
def _image_depth(x: da.Array, d: int, axes=(0, 1)) -> dict:
    return {a: (d if a in axes else 0) for a in range(x.ndim)}


def _channels_whole(x: da.Array, primitive: str) -> da.Array:
    if x.ndim not in (2, 3):
        raise InputError(primitive, f"expected a 2-D or (H, W, C) image, got {x.ndim} dimensions")
    return x.rechunk({2: -1}) if x.ndim == 3 else x


def box_filter(img: da.Array, radius: int, mode: str = "reflect", *, output=None) -> da.Array:
    """:func:`pywgpuprims.box_filter` of a chunked image through ``map_overlap`` (depth = radius).

    Each chunk is filtered with ``radius`` rows and columns of its neighbours around it; at the
    image's own edges no padding is added, so the chunk function's ``mode`` (scipy.ndimage's
    names, or ``"clip"``) applies there, except for ``"wrap"`` / ``"grid-wrap"``, whose edge
    chunks get the opposite edge's samples. The result equals the unchunked call: the input's
    dtype (integers truncated as ``scipy.ndimage.uniform_filter``'s), float32 for ``"clip"``, or
    ``output`` (a dtype). Chunks smaller than the radius are merged by Dask first.

    Examples
    --------
    >>> import dask.array as da, numpy as np
    >>> from pywgpuprims import dask as ppd
    >>> ppd.box_filter(da.full((3, 3), 9, dtype=np.uint8, chunks=2), 1, "constant").compute()
    array([[4, 6, 4],
           [6, 9, 6],
           [4, 6, 4]], dtype=uint8)
    """
    img = _channels_whole(_check_array(img, "dask.box_filter", None), "dask.box_filter")
    if isinstance(radius, bool) or not isinstance(radius, (int, np.integer)) or radius < 0:
        raise InputError("dask.box_filter", f"radius must be an integer >= 0, got {radius!r}")
    clip = isinstance(mode, str) and mode == "clip"
    if not clip:
        _nd.filter_mode(mode, "dask.box_filter", _nd.FILTER_MODES)
    if isinstance(output, np.ndarray):
        raise InputError("dask.box_filter", "output must be a dtype (a Dask result is a new array)")
    if output is not None:
        dt = np.dtype(output)
    elif img.dtype == np.float64:
        raise InputError("dask.box_filter", "float64 images are filtered in float32 on the GPU: pass "
                         "output=np.float32 (or a float32 image) to accept that")
    else:
        dt = np.dtype(np.float32) if clip else img.dtype
    radius = int(radius)
    periodic = not clip and _nd.FILTER_MODES[mode] == "wrap"
    # output bound here: map_overlap's blockwise has an argument of that name
    return img.map_overlap(partial(_gpu, _box_filter, output=output), depth=_image_depth(img, radius),
                           boundary="periodic" if periodic else "none", radius=radius, mode=mode,
                           dtype=dt, meta=np.empty((0,) * img.ndim, dt))


def _correlate_block(block: np.ndarray, w: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    res = _gpu(_correlate, block, w, output_shape="valid")  # (K, ...) with as many or one more sample per axis
    return res[(slice(None), *(slice(0, n) for n in shape))]


def correlate(volume: da.Array, kernels, mode: str = "reflect", cval: float = 0.0, origin: int | tuple = 0, *,
              boundary=None) -> da.Array:
    """:func:`pywgpuprims.correlate` (``output_shape="same"``) over a chunked 2-D or 3-D volume:
    ``scipy.ndimage.correlate``'s ``mode``, ``cval`` and ``origin``.

    Each chunk is extended by what the kernel reaches past it (``k // 2 + origin`` samples before,
    the rest after, per axis), from its neighbours or, at the volume's edges, by ``mode``, then
    correlated in ``"valid"`` mode: the result equals ``scipy.ndimage.correlate(volume,
    kernels[k], mode=mode, cval=cval, origin=origin)`` for each kernel, float32 rounding apart.

    Parameters
    ----------
    volume : dask.array.Array, (H, W) or (D, H, W), uint8 or float32
    kernels : array_like, float32, (K, kh, kw) or (K, kd, kh, kw)
    mode : str
        scipy.ndimage's names: ``reflect`` (default), ``constant``, ``nearest``, ``mirror``,
        ``wrap``, ``grid-constant``, ``grid-mirror``, ``grid-wrap``.
    cval : float
        The value outside the volume for ``mode="constant"``.
    origin : int or sequence of ints
        scipy.ndimage's ``origin``, one per axis of the volume or one for all.
    boundary : None
        The old name of ``mode``: anything but None raises InputError.

    Returns
    -------
    dask.array.Array
        float32, ``(K, *volume.shape)``, chunked as ``volume`` (one chunk along K).

    Examples
    --------
    >>> import dask.array as da, numpy as np
    >>> from pywgpuprims import dask as ppd
    >>> v = da.from_array(np.arange(16, dtype=np.float32).reshape(4, 4), chunks=2)
    >>> ppd.correlate(v, np.ones((1, 3, 3), np.float32), mode="constant").compute()[0, 1]
    array([27., 45., 54., 39.], dtype=float32)
    """
    name = "dask.correlate"
    _check_extension_keywords(name, mode, cval, boundary, "the output here is always the volume's shape")
    ext = _nd.filter_mode(mode, name)
    cval = _nd.real_scalar(cval, "cval", name, f32=True)
    volume = _check_array(volume, name, (np.dtype(np.uint8), np.dtype(np.float32)))
    if volume.ndim not in (2, 3):
        raise InputError(name, f"expected a 2-D or 3-D volume, got {volume.ndim} dimensions")
    w = np.ascontiguousarray(kernels, dtype=np.float32)
    if w.ndim != volume.ndim + 1 or w.shape[0] == 0 or 0 in w.shape:
        raise InputError(name, f"kernels must have shape (K, {', '.join('k' * volume.ndim)}) with K >= 1,"
                         f" got {w.shape}")
    try:
        org = _conv_origin(origin, w.shape[1:])
    except InputError as exc:
        raise InputError(name, str(exc).split(": ", 1)[1]) from None
    if ext == "constant" and volume.dtype == np.uint8 and (cval != int(cval) or not 0 <= cval <= 255):
        volume = volume.astype(np.float32)  # a cval that uint8 cannot hold
    before = [k // 2 + o for k, o in zip(w.shape[1:], org, strict=True)]  # samples reached before / after
    after = [k - 1 - b for k, b in zip(w.shape[1:], before, strict=True)]
    depth = {a: b if b > e else e for a, (b, e) in enumerate(zip(before, after, strict=True))}
    # Dask extends the volume's edges itself, except for mirror (scipy's mirror is no Dask boundary):
    # the edge chunks extend themselves (np.pad's "reflect" is scipy's mirror)
    bmap = {"constant": cval, "nearest": "nearest", "reflect": "reflect", "wrap": "periodic", "mirror": "none"}
    padded = da.overlap.overlap(volume, depth, {a: bmap[ext] for a in depth})
    nblocks = padded.numblocks
    own = ext != "mirror"  # whether the edge chunks came with their extension

    def size(a: int, i: int) -> int:
        d = depth[a]
        return padded.chunks[a][i] - (2 * d if own else d * ((i > 0) + (i < nblocks[a] - 1)))

    chunks = tuple(tuple(size(a, i) for i in range(nblocks[a])) for a in range(volume.ndim))

    def block(b, block_info=None):
        loc = block_info[0]["chunk-location"]
        if not own:
            b = np.pad(b, [(depth[a] * (i == 0), depth[a] * (i == nblocks[a] - 1)) for a, i in enumerate(loc)],
                       mode="reflect")
        shape = tuple(c[i] for c, i in zip(chunks, loc, strict=True))
        sl = tuple(slice(depth[a] - before[a], depth[a] + n + after[a]) for a, n in enumerate(shape))
        return _correlate_block(b[sl], w, shape)

    return padded.map_blocks(block, new_axis=0, chunks=((w.shape[0],), *chunks), dtype=np.float32,
                             meta=np.empty((0,) * (volume.ndim + 1), np.float32))


def _sat_block(b: np.ndarray, top: np.ndarray, left: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Local table plus the carries: ``top`` = the full table's row just above this chunk (for its
    columns), ``left`` = for each row, the sum of everything left of this chunk in that row."""
    out = _gpu(_sat, b, dtype=dtype) if b.size else np.empty(b.shape, dtype)
    return out + top + np.cumsum(left, axis=0, dtype=dtype)


def summed_area_table(img: da.Array, dtype=None) -> da.Array:
    """:func:`pywgpuprims.summed_area_table` of a chunked image, exact through carries.

    The table of chunk ``(I, J)`` is its own table plus two carries built from sums of the other
    chunks (Dask computes them from every chunk's column and row sums, small arrays): the full
    table's row just above the chunk (the exclusive prefix, over the chunk rows above, of the
    column sums, cumulated along the columns), and for each row the sum of that row left of the
    chunk (cumulated down the chunk). The result dtype is numpy's (``np.cumsum``'s, or
    ``dtype``); integer tables are exact (modulo 2**bits, as unchunked); float tables differ by
    rounding.

    Examples
    --------
    >>> import dask.array as da, numpy as np
    >>> from pywgpuprims import dask as ppd
    >>> ppd.summed_area_table(da.ones((2, 3), dtype=np.uint8, chunks=1)).compute()
    array([[1, 2, 3],
           [2, 4, 6]], dtype=uint64)
    """
    img = _check_array(img, "dask.summed_area_table", ALL_DTYPES)
    img = _channels_whole(img, "dask.summed_area_table")
    odt = result_dtype("add", img.dtype, dtype, None, "dask.summed_area_table")
    nI, nJ = img.numblocks[:2]
    rest = img.chunks[2:]
    colsum = img.map_blocks(lambda b: np.sum(b, axis=0, keepdims=True, dtype=odt), dtype=odt,
                            chunks=((1,) * nI, img.chunks[1], *rest))
    rowsum = img.map_blocks(lambda b: np.sum(b, axis=1, keepdims=True, dtype=odt), dtype=odt,
                            chunks=(img.chunks[0], (1,) * nJ, *rest))
    # the row above each chunk row: sum over chunk rows above (exclusive), cumulated along x
    top = da.cumsum(da.cumsum(colsum, axis=0, dtype=odt) - colsum, axis=1, dtype=odt)
    left = da.cumsum(rowsum, axis=1, dtype=odt) - rowsum  # exclusive over chunk columns
    return da.map_blocks(partial(_sat_block, dtype=odt), img, top, left, dtype=odt, chunks=img.chunks,
                         meta=np.empty((0,) * img.ndim, odt))


def recursive_depth(b0: float, a: Sequence[float]) -> int:
    """The overlap :func:`recursive_filter` uses for coefficients ``(b0, a)``: samples per side.

    Twice the length after which the causal impulse response's tail holds less than 2**-27 of
    its total (the library's own boundary-padding rule, ``recfilter._padlen``): a causal pass
    then an anticausal one respond over both sides, and a chunk is cut where both tails are
    below float32 rounding. The cut (and the chunk function's boundary rule at the cut, which
    reflects or zeroes there) changes the kept samples by less than about ``2**-26`` of the sum of
    ``|x|`` over the response's support, below float32 resolution for images of one sign.
    Measured against the unchunked call on random images, every boundary: largest difference
    2.4e-7 (Gaussian, sigma 1) to 6e-7 (sigma 4) of ``max |x|``; the tests check ``1e-5``. An
    axis no longer than the depth is not split (one chunk along it). A periodic mode (``"wrap"``
    and ``"grid-wrap"``; for the B-spline prefilter ``"grid-wrap"`` only) pads the edge chunks
    with the opposite edge's samples; the others pad nothing at the image's edges, where the
    chunk function's own ``mode`` applies.

    Examples
    --------
    >>> from pywgpuprims import dask as ppd
    >>> ppd.recursive_depth(0.5, [-0.5])
    56
    """
    b0, c, rho = _coefs(b0, a, "dask.recursive_filter")
    return 2 * _padlen(b0, c, rho)


def _recursive_overlap(img: da.Array, depth: int, axes, fn, primitive: str, wrap: bool, **kwargs) -> da.Array:
    """``map_overlap`` of ``fn``: at the image's edges no padding (the chunk function's boundary
    rule applies there), except for a periodic boundary, whose edge chunks get the opposite
    edge's samples (Dask's ``"periodic"``)."""
    img = _channels_whole(_check_array(img, primitive, (np.dtype(np.float32),)), primitive)
    axes = (axes,) if isinstance(axes, (int, np.integer)) else tuple(axes)
    if any(a not in (0, 1) for a in axes) or len(set(axes)) != len(axes):
        raise InputError(primitive, f"axes must be distinct values among 0 and 1, got {axes}")
    # an axis shorter than the depth is filtered whole (one chunk): the unchunked call along it
    whole = {a: -1 for a in axes if depth >= img.shape[a]}
    img = img.rechunk(whole) if whole else img
    depths = {a: (depth if a in axes and a not in whole else 0) for a in range(img.ndim)}
    return img.map_overlap(partial(_gpu, fn, axes=axes, **kwargs), depth=depths,
                           boundary="periodic" if wrap else "none", dtype=np.float32,
                           meta=np.empty((0,) * img.ndim, np.float32))


def recursive_filter(img: da.Array, b0: float, a: Sequence[float], axes=(0, 1), mode: str = "constant") -> da.Array:
    """:func:`pywgpuprims.recursive_filter` (causal and anticausal) of a chunked float32 image.

    The support is infinite, so each chunk is filtered with :func:`recursive_depth` samples of its
    neighbours on each side (``map_overlap``; the image's own edges keep ``mode``, scipy.ndimage's
    names; ``"wrap"`` / ``"grid-wrap"`` pad the edge chunks from the opposite edge): equal to the
    unchunked call to float32 rounding. Chunks smaller than the depth are merged by Dask.

    Examples
    --------
    >>> import dask.array as da, numpy as np
    >>> from pywgpuprims import dask as ppd
    >>> y = ppd.recursive_filter(da.ones((40, 40), dtype=np.float32, chunks=16), 0.25, [-0.75], mode="nearest")
    >>> bool(np.allclose(y.compute(), 1, atol=1e-5))
    True
    """
    wrap = _nd.filter_mode(mode, "dask.recursive_filter") == "wrap"
    return _recursive_overlap(img, recursive_depth(b0, a), axes, _recursive, "dask.recursive_filter",
                              wrap, b0=b0, a=a, mode=mode)


def gaussian_filter(img: da.Array, sigma: float, mode: str = "reflect", axes=(0, 1)) -> da.Array:
    """:func:`pywgpuprims.gaussian_filter` of a chunked float32 image (overlap from the decay).

    The depth is :func:`recursive_depth` of the sigma's third-order recursion (about ``30 sigma``
    samples per side: 68 at sigma 2, 472 at 16); equal to the unchunked call to float32 rounding.
    ``mode``: scipy.ndimage's names, as :func:`recursive_filter`.

    Examples
    --------
    >>> import dask.array as da, numpy as np
    >>> from pywgpuprims import dask as ppd
    >>> y = ppd.gaussian_filter(da.ones((64, 64), dtype=np.float32, chunks=32), 1.5)
    >>> bool(np.allclose(y.compute(), 1, atol=1e-5))
    True
    """
    if not np.isfinite(sigma) or sigma < 0 or (0 < sigma < 0.5) or sigma > 1000:
        raise InputError("dask.gaussian_filter", f"sigma must be 0 or in [0.5, 1000], got {sigma!r}")
    depth = recursive_depth(*_gaussian_coefs(float(sigma))) if sigma else 0
    wrap = _nd.filter_mode(mode, "dask.gaussian_filter") == "wrap"
    return _recursive_overlap(img, depth, axes, _gaussian, "dask.gaussian_filter", wrap, sigma=sigma, mode=mode)


def bspline_prefilter(img: da.Array, mode: str = "mirror", axes=(0, 1)) -> da.Array:
    """:func:`pywgpuprims.bspline_prefilter` of a chunked float32 image (overlap from the decay:
    :func:`recursive_depth` of the pole ``sqrt(3) - 2``, 36 samples per side). ``mode`` as
    ``scipy.ndimage.spline_filter``'s: only ``"grid-wrap"`` is periodic (scipy's ``"wrap"``
    prefilter is mirror-symmetric), and only it pads the edge chunks from the opposite edge.

    Examples
    --------
    >>> import dask.array as da, numpy as np
    >>> from pywgpuprims import dask as ppd
    >>> c = ppd.bspline_prefilter(da.ones((50, 50), dtype=np.float32, chunks=40))
    >>> bool(np.allclose(c.compute(), 1, atol=1e-5))
    True
    """
    z = _SPLINE_Z
    return _recursive_overlap(img, recursive_depth(1.0 - z, [-z]), axes, _bspline, "dask.bspline_prefilter",
                              _nd.filter_mode(mode, "dask.bspline_prefilter", _nd.SPLINE_MODES) == "wrap", mode=mode)


# ----------------------------------------------------------------------------- RLE, compaction
def _bits(v: np.ndarray) -> np.ndarray:
    return v.view(np.dtype(f"u{v.dtype.itemsize}"))


def _rle_block(b: np.ndarray):
    if b.size == 0:
        return np.empty(0, b.dtype), np.empty(0, np.uint32)
    return _gpu(_rle_encode, np.ascontiguousarray(b))


def _rle_plan(*encs) -> list[tuple[bool, int]]:
    """For each chunk: (drop its first run, count to add to its last run), joining runs across
    boundaries; a chunk that is one run continuing the previous chunk's passes its count on."""
    plan = [[False, 0] for _ in encs]
    owner, last = None, None  # chunk holding the open run's start; its value's bits
    for k, (v, c) in enumerate(encs):
        if v.size == 0:
            continue
        if owner is not None and _bits(v[:1])[0] == last:
            plan[owner][1] += int(c[0])
            plan[k][0] = True
            if v.size > 1:
                owner = k
        else:
            owner = k
        last = _bits(v[-1:])[0]
    return [tuple(p) for p in plan]


def _rle_apply(enc, plan, k: int, which: int) -> np.ndarray:
    v, c = enc
    drop, add = plan[k]
    c = c.astype(np.uint64)
    if add:
        c[-1] += np.uint64(add)
    out = (v, c)[which]
    return out[1:] if drop else out


def rle_encode(x: da.Array) -> tuple[da.Array, da.Array]:
    """Run-length encode a 1-D dask array: our kernel per chunk, runs across chunk boundaries joined.

    Each chunk is encoded on its worker; a small pass over the chunks' first and last runs (their
    values compared bit for bit, as :func:`pywgpuprims.rle_encode` does) decides which leading
    runs continue a run of an earlier chunk, whose count grows by theirs. The result equals the
    unchunked encoding; the counts are uint64 (a run may be longer than 2**32 in a dask array).

    Returns
    -------
    (values, counts) : dask arrays of unknown length (``np.nan`` chunks; ``compute_chunk_sizes``)

    Examples
    --------
    >>> import dask, dask.array as da, numpy as np
    >>> from pywgpuprims import dask as ppd
    >>> v, c = ppd.rle_encode(da.from_array(np.array([7, 7, 7, 2, 9, 9], np.int32), chunks=2))
    >>> dask.compute(v, c)
    (array([7, 2, 9], dtype=int32), array([3, 1, 2], dtype=uint64))
    """
    x = _check_array(x, "dask.rle_encode", (np.dtype(np.uint8), *_DTYPES))
    if x.ndim != 1:
        raise InputError("dask.rle_encode", f"expected a 1-D array, got {x.ndim} dimensions")
    encs = [dask.delayed(_rle_block)(b) for b in x.to_delayed().ravel()]
    plan = dask.delayed(_rle_plan)(*encs)
    parts = []
    for which, dt in ((0, x.dtype), (1, np.dtype(np.uint64))):
        parts.append(da.concatenate([da.from_delayed(dask.delayed(_rle_apply)(e, plan, k, which), (np.nan,), dt)
                                     for k, e in enumerate(encs)]) if encs else da.empty((0,), dt))
    return parts[0], parts[1]


def _compact_block(b: np.ndarray, m: np.ndarray) -> np.ndarray:
    b, m = np.ascontiguousarray(b).ravel(), np.ascontiguousarray(m).ravel()
    return _gpu(_compact, b, m) if b.size else np.empty(0, b.dtype)


def _nonzero_block(m: np.ndarray, start: int) -> np.ndarray:
    m = np.ascontiguousarray(m).ravel()
    # int64 indices with the chunk's start added on the GPU (exact past 2^32)
    return _gpu(_flatnonzero, m, np.int64, None, "dask.nonzero", start) if m.size else np.empty(0, np.int64)


def _flat(x: da.Array) -> da.Array:
    return x if x.ndim == 1 else x.ravel()


def compact(x: da.Array, mask: da.Array) -> da.Array:
    """``x[mask]`` (flattened) of dask arrays: :func:`pywgpuprims.compact` per chunk.

    The output offsets are those of Dask's concatenation: chunk ``k``'s kept elements follow those
    of the chunks before it. The result has chunks of unknown length.

    Examples
    --------
    >>> import dask.array as da, numpy as np
    >>> from pywgpuprims import dask as ppd
    >>> x = da.from_array(np.array([5, 6, 7, 8], np.int32), chunks=3)
    >>> ppd.compact(x, x % 2 == 1).compute()
    array([5, 7], dtype=int32)
    """
    x = _check_array(x, "dask.compact", (np.dtype(np.uint8), *_DTYPES))
    mask = _check_array(mask, "dask.compact", None)
    if mask.shape != x.shape:
        raise InputError("dask.compact", f"mask has shape {mask.shape}, expected {x.shape}")
    xf, mf = _flat(x), _flat(mask)
    mf = mf.rechunk(xf.chunks)
    return da.map_blocks(_compact_block, xf, mf, chunks=((np.nan,) * xf.numblocks[0],), dtype=x.dtype,
                         meta=np.empty(0, x.dtype))


def nonzero(mask: da.Array) -> da.Array:
    """``np.flatnonzero(mask)`` of a dask array: :func:`pywgpuprims.flatnonzero` per chunk.

    Chunk ``k``'s indices are offset by the number of elements before it (known from the chunk
    sizes), added on the GPU as a 64-bit base; the result is int64 (global indices may pass
    2**32).

    Examples
    --------
    >>> import dask.array as da, numpy as np
    >>> from pywgpuprims import dask as ppd
    >>> ppd.nonzero(da.from_array(np.array([0, 3, 0, 1, 1], np.uint32), chunks=2)).compute()
    array([1, 3, 4])
    """
    mask = _check_array(mask, "dask.nonzero", None)
    mf = _flat(mask)
    starts = np.concatenate([[0], np.cumsum(mf.chunks[0])[:-1]]).astype(np.int64)
    parts = [da.from_delayed(dask.delayed(_nonzero_block)(b, int(s)), (np.nan,), np.int64)
             for b, s in zip(mf.to_delayed().ravel(), starts, strict=True)]
    return da.concatenate(parts) if parts else da.empty((0,), np.int64)


# ----------------------------------------------------------------------------- FSE
def _fse_block(b: np.ndarray, kwargs: dict) -> np.ndarray:
    blob = _gpu(_fse.compress, np.ascontiguousarray(b).view(np.uint8).ravel(), **kwargs)
    out = np.empty((1,) * b.ndim, object)
    out.flat[0] = blob
    return out


def fse_compress(x: da.Array, **kwargs) -> da.Array:
    """Compress each chunk of a dask array with :func:`pywgpuprims.fse.compress` (its raw bytes).

    Returns an object array with one ``bytes`` container per chunk (shape ``x.numblocks``);
    ``kwargs`` go to :func:`pywgpuprims.fse.compress`. :func:`fse_decompress` inverts it.

    Examples
    --------
    >>> import dask.array as da, numpy as np
    >>> from pywgpuprims import dask as ppd
    >>> x = da.from_array(np.arange(1000, dtype=np.int32) % 7, chunks=300)
    >>> y = ppd.fse_decompress(ppd.fse_compress(x), x.chunks, x.dtype)
    >>> bool((y.compute() == x.compute()).all())
    True
    """
    x = _check_array(x, "dask.fse_compress", None)
    return x.map_blocks(partial(_fse_block, kwargs=kwargs), chunks=tuple((1,) * n for n in x.numblocks), dtype=object,
                        meta=np.empty((0,) * x.ndim, object))


def _fse_unblock(blob: np.ndarray, dtype: np.dtype, block_info=None) -> np.ndarray:
    shape = block_info[None]["chunk-shape"]
    nbytes = math.prod(shape) * dtype.itemsize
    data = _fse.parse(blob.flat[0])[0]
    if data["size"] != nbytes:
        raise CorruptDataError("dask.fse_decompress", f"a chunk's container holds {data['size']} bytes, expected "
                               f"{nbytes} for shape {shape} and dtype {dtype}")
    return np.frombuffer(_gpu(_fse.decompress, blob.flat[0]), dtype).reshape(shape)


def fse_decompress(blobs: da.Array, chunks, dtype) -> da.Array:
    """Invert :func:`fse_compress`: ``chunks`` and ``dtype`` are the original array's. A container
    whose size does not match its chunk raises :class:`~pywgpuprims.CorruptDataError` before
    anything is decoded."""
    dtype = np.dtype(dtype)
    blobs = _check_array(blobs, "dask.fse_decompress", (np.dtype(object),))
    return blobs.map_blocks(_fse_unblock, dtype, chunks=chunks, dtype=dtype, meta=np.empty((0,) * blobs.ndim, dtype))


# ----------------------------------------------------------------------------- one worker per GPU
def gpu_cluster(n_gpus: int | None = None, threads_per_worker: int = 1, memory_limit: str | float | int = "auto",
                silence_logs: int | bool = False, **kwargs):
    """A ``dask.distributed`` cluster with one worker process per GPU.

    Worker ``i`` is a ``distributed.Nanny`` process started with ``PYWGPUPRIMS_DEVICE=i``, so its
    default device is ``pywgpuprims.devices()[i]``; each worker has ``threads_per_worker`` threads
    (their GPU calls take turns on the one device) and the resource ``{"GPU": 1}``.

    Parameters
    ----------
    n_gpus : int, optional
        Workers to start (devices ``0 .. n_gpus - 1``); default: every adapter
        ``pywgpuprims.devices()`` lists (``PYWGPUPRIMS_BACKEND`` and ``PYWGPUPRIMS_ADAPTER`` filter
        it, and pass to the workers).
    threads_per_worker : int
    memory_limit : str, float or int
        Each worker's host memory limit, as ``distributed.Nanny`` takes it (0: none).
    silence_logs : int or bool
        A logging level below which the scheduler's and the workers' logs are dropped (as
        ``LocalCluster``'s; False keeps them).
    **kwargs
        Passed to ``distributed.SpecCluster`` (``asynchronous``, ``name``, ...).

    Returns
    -------
    distributed.SpecCluster
        Use with ``distributed.Client(cluster)``; close it (or use ``with``) when done.

    Examples
    --------
    >>> from distributed import Client
    >>> from pywgpuprims import dask as ppd
    >>> with ppd.gpu_cluster() as cluster, Client(cluster) as client:  # doctest: +SKIP
    ...     total = ppd.sum(x).compute()  # each chunk's reduce on its worker's GPU
    """
    from distributed import Nanny, Scheduler, SpecCluster

    from ._device import _listed  # devices()[:n_gpus]: the indices the workers' PYWGPUPRIMS_DEVICE name

    # an adapter that cannot start is not listed, so the adapters are started (and kept) to count them
    wanted = isinstance(n_gpus, (int, np.integer)) and not isinstance(n_gpus, (bool, np.bool_)) and n_gpus >= 1
    available = len(_listed(int(n_gpus) - 1 if wanted else None))
    if n_gpus is None:
        n_gpus, wanted = available, available >= 1
    if not wanted or n_gpus > available:
        raise InputError("dask.gpu_cluster", f"n_gpus must be an integer from 1 to {available} (the adapters "
                         f"pywgpuprims.devices() lists), got {n_gpus!r}")
    env = {k: v for k, v in os.environ.items() if k.startswith(("PYWGPUPRIMS_", "LP_", "XDG_"))}
    workers = {f"gpu-{i}": {"cls": Nanny, "options": {
        "nthreads": threads_per_worker, "env": {**env, "PYWGPUPRIMS_DEVICE": str(i)},
        "resources": {"GPU": 1}, "name": f"gpu-{i}", "silence_logs": silence_logs,
        "memory_limit": memory_limit}} for i in range(int(n_gpus))}
    scheduler = {"cls": Scheduler, "options": {"dashboard": False}}
    return SpecCluster(workers=workers, scheduler=scheduler, silence_logs=silence_logs, **kwargs)

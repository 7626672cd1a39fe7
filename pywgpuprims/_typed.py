"""Typed reduce-then-scan: scans and reductions of any dtype of :mod:`._dtypes` (``wgsl/wide/``).
(64-bit results of 32- and 64-bit input take the single pass of :mod:`._scan64` where it applies.)

Three passes, each with a fixed combination order, so float results repeat bit for bit: tile
partials (``partials.wgsl``), one workgroup per segment scanning them (``spine.wgsl``), and the
tiles rescanned from their prefixes (``downsweep.wgsl``); a reduction stops after the spine. Inputs
of 8 and 16 bits are read packed and widened in the kernels; 64-bit integers accumulate as WGSL's
u64/i64 where the adapter has ``shader-int64``, else as pairs of 32-bit words with carries.
Inputs and outputs past the device's largest storage binding are split in chunks: rows of a batch,
or pieces of one segment whose totals carry from one chunk to the next.
"""

from __future__ import annotations

import numpy as np

from . import _scan64
from ._array import GpuArray
from ._device import Binding, Device
from ._dtypes import F64, acc_dtype, check_f64, native_int64, typed_defines
from ._errors import DeviceLimitError, InputError

WG = 256
ITEMS = 8    # consecutive elements per invocation in a scan: whole packed words for 8-bit inputs
RITEMS = 32  # in a reduction (its tiles need not match a downsweep's)

__all__ = ["record_typed_scan", "record_typed_reduce", "record_narrow"]


def _defines(dev: Device, op: str, in_dtype, acc: np.dtype, primitive: str, result=None,
             nonzero: bool = False) -> dict:
    return typed_defines(op, in_dtype, acc, native_int64(dev), primitive, result, nonzero)


def _check_features(dev: Device, in_dtype, acc, primitive: str) -> None:
    """float64 needs shader-f64: checked on every call (a plan may predate the hide_shader_f64 hook)."""
    check_f64(dev, primitive, np.dtype(acc))
    check_f64(dev, primitive, np.dtype(in_dtype))


def _chunks(dev: Device, rows: int, row_len: int, sizes: tuple[int, ...], tile: int, primitive: str):
    """(first_row, n_rows, first_elem, n_elems) pieces whose bindings fit the device and start aligned."""
    limit = dev.binding_limit
    big, small = max(sizes), min(sizes)
    if rows == 1:
        per = max(tile, (limit // big) // tile * tile)
        return [(0, 1, s, min(per, row_len - s)) for s in range(0, row_len, per)] or [(0, 1, 0, 0)]
    if row_len * big > limit:
        raise DeviceLimitError(primitive, f"a row of {row_len * big} bytes exceeds the device's largest storage "
                               f"binding ({limit} bytes); pass axis=None or a 1-D array")
    align = dev.storage_align
    step = align // np.gcd(row_len * small, align)
    per = max(step, (limit // (row_len * big)) // step * step)
    return [(r0, min(per, rows - r0), r0 * row_len, min(per, rows - r0) * row_len) for r0 in range(0, rows, per)]


def _range(arr: GpuArray, e0: int, ne: int) -> tuple[int, int]:
    start = arr.byte_offset + e0 * arr.dtype.itemsize
    if start % arr.device.storage_align:
        raise InputError("scan", "a GpuArray view must start at a multiple of the storage alignment")
    return start, min(arr.buffer.size - start, (ne * arr.dtype.itemsize + 15) // 16 * 16)


def record_typed_scan(b, g: GpuArray, dst: GpuArray, op: str, exclusive: bool, primitive: str = "scan",
                      result=None, deterministic: bool | str = False) -> None:
    """Record the scan of each last-axis segment of ``g`` into ``dst`` (of the accumulator dtype:
    int32, uint32, float32, int64, uint64 or float64; ``result``: the 8- or 16-bit dtype it is
    packed to afterwards, whose extremes an exclusive min / max starts from). 64-bit results of
    32- and 64-bit input take the single pass (:mod:`._scan64`) where it applies."""
    dev = g.device
    acc = np.dtype(dst.dtype)
    rows, row_len = (1, g.size) if g.ndim <= 1 else (g.size // g.shape[-1], g.shape[-1])
    _check_features(dev, g.dtype, acc, primitive)
    if _scan64.takes(dev, g.dtype, acc, deterministic) and _scan64.record_single_pass(
            b, g, dst, op, exclusive, primitive, rows, row_len):
        return
    native = native_int64(dev)
    key = ("typed_scan", g.dtype, acc, op, exclusive, rows, row_len, native, dev.binding_limit,
           result)

    def build():
        defs = dict(_defines(dev, op, g.dtype, acc, primitive, result), WG=WG, ITEMS=ITEMS)
        k_part = dev.kernel("wide/partials.wgsl", defines=defs)
        k_spine = dev.kernel("wide/spine.wgsl", defines=dict(defs, PREFIXES=True))
        k_down = dev.kernel("wide/downsweep.wgsl", defines=dict(defs, EXCLUSIVE=exclusive))
        tile = WG * ITEMS
        pieces = _chunks(dev, rows, row_len, (g.dtype.itemsize, acc.itemsize), tile, primitive)
        steps = []
        for ci, (_, nr, e0, ne) in enumerate(pieces):
            seg = ne // nr if nr else 0
            tpr = -(-seg // tile)
            p = {"row_len": seg, "tiles_per_row": tpr, "n_tiles": tpr * nr}
            sp = {"tiles_per_row": tpr, "rows": nr, "carry_in": int(rows == 1 and ci > 0),
                  "total_base": ci if rows == 1 else 0}
            steps.append((e0, ne, tpr * nr, nr, k_part.pack_params(p), k_spine.pack_params(sp),
                          k_down.pack_params(p)))
        max_tiles = max(s[2] for s in steps)
        return k_part, k_spine, k_down, steps, max_tiles, len(pieces) if rows == 1 else max(s[3] for s in steps)

    k_part, k_spine, k_down, steps, max_tiles, n_totals = dev.plan(key, build)
    partials = dev.alloc(max(16, max_tiles * acc.itemsize))
    totals = dev.alloc(max(16, n_totals * acc.itemsize))
    for e0, ne, n_tiles, nr, pp_, sp_, dp_ in steps:
        if not n_tiles:
            continue
        src = Binding(g.buffer, *_range(g, e0, ne))
        out = Binding(dst.buffer, *_range(dst, e0, ne))
        b.dispatch(k_part, n_tiles, pp_, input=src, partials=partials)
        b.dispatch(k_spine, nr, sp_, partials=partials, totals=totals)
        b.dispatch(k_down, n_tiles, dp_, input=src, partials=partials, output=out)


def record_typed_reduce(b, g: GpuArray, dst: GpuArray, op: str, rows: int, row_len: int,
                        primitive: str = "reduce", nonzero: bool = False) -> None:
    """Record the reduction of ``rows`` segments of ``row_len`` elements of ``g`` into ``dst``
    (``rows`` elements of the accumulator dtype); ``nonzero``: count the nonzero elements."""
    dev = g.device
    acc = np.dtype(dst.dtype)
    _check_features(dev, acc, acc, primitive) if nonzero else _check_features(dev, g.dtype, acc, primitive)
    native = native_int64(dev)
    key = ("typed_reduce", g.dtype, acc, op, rows, row_len, native, dev.binding_limit, nonzero)

    def build():
        defs = dict(_defines(dev, op, g.dtype, acc, primitive, nonzero=nonzero), WG=WG, ITEMS=RITEMS)
        k_part = dev.kernel("wide/partials.wgsl", defines=defs)
        k_spine = dev.kernel("wide/spine.wgsl", defines=dict(defs, PREFIXES=False))
        tile = WG * RITEMS
        pieces = _chunks(dev, rows, row_len, (g.dtype.itemsize,), tile, primitive)
        steps = []
        for ci, (r0, nr, e0, ne) in enumerate(pieces):
            seg = ne // nr
            tpr = -(-seg // tile)
            p = {"row_len": seg, "tiles_per_row": tpr, "n_tiles": tpr * nr}
            sp = {"tiles_per_row": tpr, "rows": nr, "carry_in": int(rows == 1 and ci > 0),
                  "total_base": ci if rows == 1 else r0}
            steps.append((e0, ne, tpr * nr, nr, k_part.pack_params(p), k_spine.pack_params(sp)))
        return k_part, k_spine, steps, max(s[2] for s in steps), len(pieces)

    k_part, k_spine, steps, max_tiles, n_pieces = dev.plan(key, build)
    partials = dev.alloc(max(16, max_tiles * acc.itemsize))
    chained = rows == 1 and n_pieces > 1
    totals = dev.alloc(16 * -(-n_pieces * acc.itemsize // 16)) if chained else dst.buffer
    for e0, ne, n_tiles, nr, pp_, sp_ in steps:
        b.dispatch(k_part, n_tiles, pp_, input=Binding(g.buffer, *_range(g, e0, ne)), partials=partials)
        b.dispatch(k_spine, nr, sp_, partials=partials, totals=totals)
    if chained:
        b.copy(totals, (n_pieces - 1) * acc.itemsize, dst.buffer, dst.byte_offset, acc.itemsize)


def record_narrow(b, src: GpuArray, dst: GpuArray) -> None:
    """Record packing ``src`` (32-bit) into ``dst`` (bool, 8- or 16-bit integers, float16)."""
    dev = src.device
    n = src.size
    per = 4 // dst.dtype.itemsize
    k = dev.kernel("wide/narrow.wgsl", defines={"PER": per, "F16": dst.dtype.kind == "f"})
    words = -(-n // per)
    if words:
        b.dispatch(k, -(-words // 256), {"n": n, "n_words": words}, input=src.buffer, output=dst.buffer)


def wide_for(dtype) -> np.dtype:
    """The dtype a result of ``dtype`` is computed in before :func:`record_narrow`."""
    return acc_dtype(dtype)


def is_f64(dtype) -> bool:
    return np.dtype(dtype) == F64

"""Scan and reduce: the base of every other primitive.

The scan is a single-pass chained scan with decoupled lookback and decoupled fallback
(``wgsl/scan/scan.wgsl``): tiles are taken by an atomic ticket, each publishes its aggregate and
then its inclusive prefix, and a workgroup that polls a silent predecessor a few times reduces that
tile itself. Nothing depends on forward progress between workgroups, and every loop is bounded.
If a lookback exhausts its step budget, it walks on one predecessor per loop trip, taking
published values and reducing silent tiles from their input, for up to ``max_self`` tiles (what
lavapipe's loop cap leaves: about 50,000 tiles, 2^29 elements, for add). Only a segment longer
than that could still give up: the tile records it in a status word, and a reduce-then-scan repair
pass, armed on the GPU by indirect dispatch (no host round trip), rewrites the result, so no wrong
result leaves the library, for numpy and GpuArray outputs alike. The repair's dispatches are
recorded only for such segments: even idle they cost 2.5% of a 2^28 scan on an H100 and 60% of a
2^20 one.

Test hooks (``device().using(...)``, fields of ``pywgpuprims._hooks.TestHooks``):
``scan_subgroups``
(False forces the workgroup-memory path), ``scan_spin_limit`` (polls of a silent predecessor
before the fallback), ``scan_lb_stats`` (diagnostics: "steps" or "spins" makes state word 3
count lookback steps or extra polls),
``scan_withhold_period`` (every k-th tile withholds its state so successors must take the
fallback), ``scan_max_steps`` (lookback step budget; 0 sends every lookback to the per-tile walk),
``scan_max_self`` (tiles that walk may cover; 0 with ``scan_max_steps=0`` forces the repair),
``scan_vec4_per_thread`` / ``scan_wg`` (other tiles), ``scan_stats_buffer`` (receives the single
pass's counter words), ``reduce_loads`` (vec4 loads per invocation of the reduction's first pass).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import _dtypes as _dt
from ._array import _DTYPE_CLASSES, GpuArray, asarray, submit_to_host
from ._device import Binding, Device, device, takes_device
from ._dtypes import host_array, result_dtype
from ._errors import DeviceLimitError, InputError
from ._monoid import WGSL_TYPE, monoid_defines
from ._typed import record_narrow, record_typed_reduce, record_typed_scan


@dataclass(frozen=True)
class ScanTuning:
    """The scan's and the reduction's tuning (H100 80GB HBM3, Vulkan, driver 580; ``python -m
    pywgpuprims.bench scan``, with ``PYWGPUPRIMS_SCAN_SWEEP=1`` for the sweeps)."""

    wg: int = 256                   # invocations per workgroup: H100 sweep, 2026-11-21
    vec4_per_thread: int = 13       # tile of 13,312 elements: fastest in that sweep (14 spills), 2026-11-21
    vec4_per_thread_large: int = 16  # segments >= large_row: 2^28 335 -> 348 G el/s, 2^24 248 -> 240, 2026-11-25
    large_row: int = 1 << 25        # where the larger tile stops losing (2^25 289 -> 290 G el/s), 2026-11-25
    spin_limit: int = 16            # polls of a silent predecessor: 2^28 361.3 -> 365.6 G el/s at 16 vs 8, 2026-11-25
    lookback_window: int = 8        # predecessors polled at once (window path): 8 / 16 / 32 within 3%, 2026-11-21
    reduce_loads: int = 32          # vec4 loads per invocation, reduce's first pass: sweep 4-32, 2026-11-21
    final_loads: int = 8            # partials per invocation loaded at once in the reduction's final pass


TUNING = ScanTuning()
WG = TUNING.wg
VEC4_PER_THREAD = TUNING.vec4_per_thread
TILE = WG * VEC4_PER_THREAD * 4
VEC4_PER_THREAD_LARGE = TUNING.vec4_per_thread_large
LARGE_ROW = TUNING.large_row
SPIN_LIMIT = 8  # rle's polls of a silent predecessor before its fallback (H100: 4 took 10x the fallbacks)
SCAN_SPIN_LIMIT = TUNING.spin_limit
LOOKBACK_WINDOW = TUNING.lookback_window
MAX_STEPS = 256  # lookback steps; with spins, window and fallbacks well under lavapipe's 65,535 loop trips
LOOP_BUDGET = 60_000  # loop trips an invocation may take (lavapipe cuts past 65,535 in total)
REDUCE_LOADS = TUNING.reduce_loads
FINAL_LOADS = TUNING.final_loads
SCAN_DTYPES = tuple(WGSL_TYPE)

__all__ = ["scan", "reduce", "cumsum", "count_nonzero"]


def _wg(dev: Device) -> int:
    return dev.hooks.scan_wg or WG


def _vpt(dev: Device, row_len: int = 0) -> int:
    """vec4 words per invocation for segments of ``row_len`` elements (hook ``scan_vec4_per_thread``)."""
    if dev.hooks.scan_vec4_per_thread is not None:
        return dev.hooks.scan_vec4_per_thread
    return VEC4_PER_THREAD_LARGE if row_len >= LARGE_ROW else VEC4_PER_THREAD


def _spin(dev: Device) -> int:
    s = dev.hooks.scan_spin_limit
    return SCAN_SPIN_LIMIT if s is None else s


def _steps(dev: Device) -> int:
    s = dev.hooks.scan_max_steps
    return _max_steps(dev) if s is None else s


def lookback_steps(spin: int, cap: int = MAX_STEPS) -> int:
    """Lookback step budget (common/lookback.wgsl): every step may spin, scan the window and run
    a fallback, so steps x (spin + window + 24) loop trips stay far below lavapipe's cap."""
    return min(cap, 48_000 // (spin + LOOKBACK_WINDOW + 24))


def lookback_walk_tiles(steps: int, spin: int, trips_per_tile: int = 1) -> int:
    """Predecessors a lookback past its step budget may walk (common/lookback.wgsl SELF_REDUCE,
    ``max_self``): what LOOP_BUDGET leaves after the steps, at ``trips_per_tile`` loop trips each."""
    return max(0, (LOOP_BUDGET - steps * (spin + LOOKBACK_WINDOW + 24)) // trips_per_tile)


def _max_steps(dev: Device) -> int:
    return lookback_steps(_spin(dev))


def _max_self(dev: Device, defines: dict) -> int:
    """The scan's ``max_self``: one loop trip per tile, plus the shuffle loop of each vec4's
    subgroup scan for ops other than add (log2 of up to 128 lanes)."""
    if dev.hooks.scan_max_self is not None:
        return dev.hooks.scan_max_self
    per_tile = 1 + (7 * defines["VEC4_PER_THREAD"] if defines["SUBGROUPS"] and not defines["OP_ADD"] else 0)
    return lookback_walk_tiles(_steps(dev), _spin(dev), per_tile)


def _use_subgroups(dev: Device) -> bool:
    return dev.has_subgroups and dev.hooks.scan_subgroups


def _defines(dev: Device, op: str, dtype, scalar: bool, vpt: int | None = None, **extra) -> dict:
    d = monoid_defines(op, dtype, "scan")
    d.update(WG=_wg(dev), VEC4_PER_THREAD=vpt or _vpt(dev), SELF_REDUCE=True, SELF_COUNT=True,
             SUBGROUPS=_use_subgroups(dev),
             SCALAR=scalar,
             SPIN_LIMIT=_spin(dev), LOOKBACK_WINDOW=LOOKBACK_WINDOW,
             EARLY_PUBLISH=True, EARLY_AGGREGATE=True)  # common/lookback.wgsl: what the scan takes
    d["SG_LOOKBACK"] = d["SUBGROUPS"]
    d.update(extra)
    # diagnostics: state word 3 counts lookback steps or extra polls instead of self-reduced tiles
    lb_stats = dev.hooks.scan_lb_stats
    d.update(LB_STATS_STEPS=lb_stats == "steps", LB_STATS_SPINS=lb_stats == "spins")
    if lb_stats:
        d["SELF_COUNT"] = False
    return d


def _as_2d(shape: tuple[int, ...], axis) -> tuple[int, int]:
    return (1, shape[0]) if len(shape) == 1 else (shape[0], shape[1])


def _row_chunks(dev: Device, rows: int, row_len: int, itemsize: int = 4, tile: int = TILE):
    """Split the work so each binding fits the device: yields (first_row, n_rows, first_elem, n_elems)."""
    limit = dev.binding_limit
    if rows == 1:
        per = max(tile, (limit // itemsize) // tile * tile)
        for start in range(0, row_len, per):
            yield 0, 1, start, min(per, row_len - start)
        return
    row_bytes = row_len * itemsize
    if row_bytes > limit:
        raise DeviceLimitError("scan", f"a row of {row_bytes} bytes exceeds the device's largest storage "
                               f"binding ({limit} bytes); scan it as a 1-D array")
    align = dev.storage_align
    step = align // np.gcd(row_bytes, align)  # rows per chunk must keep offsets aligned
    per = max(step, (limit // row_bytes) // step * step)
    for r0 in range(0, rows, per):
        nr = min(per, rows - r0)
        yield r0, nr, r0 * row_len, nr * row_len


def _check_op_axis(x_shape, axis, primitive):
    nd = len(x_shape)
    if axis is None:
        return None
    if not isinstance(axis, (int, np.integer)) or not -nd <= axis < nd:
        raise InputError(primitive, f"axis {axis!r} is out of range for an array of {nd} dimensions")
    return int(axis) % nd


@takes_device
def scan(x, op: str = "add", exclusive: bool = False, axis: int | None = -1, out=None, dtype=None,
         deterministic: bool = False, *, method: str = "single_pass"):
    """Inclusive or exclusive scan (prefix combination) along an axis, as ``np.cumsum`` for add.

    Parameters
    ----------
    x : array_like or GpuArray
        Any shape; bool, int8 to int64, uint8 to uint64, float16, float32 or float64 (float64
        needs the adapter's ``shader-f64``; without it an InputError names the choice
        ``dtype=np.float32``). Lists and scalars as numpy takes them; non-contiguous numpy views
        are copied contiguous on the host.
    op : {"add", "min", "max", "and", "or", "xor", "fmin", "fmax"}
        The combining operator. min / max propagate NaN (``np.minimum`` / ``np.maximum``), fmin /
        fmax ignore it (``np.fmin`` / ``np.fmax``); bitwise ops for integer and bool dtypes only.
    exclusive : bool
        If True, element i receives the combination of elements 0 .. i-1 and element 0 the op's
        identity (0; all ones for and; for min / max the dtype's largest / smallest value or
        +-inf; NaN for fmin / fmax).
    axis : int or None
        The scanned axis (negative counts from the end); None scans the flattened array, as
        ``np.cumsum``'s default. GpuArrays scan an axis with only length-1 axes after it (or
        None); numpy input with another axis is moved on the host (a copy).
    out : GpuArray or numpy.ndarray, optional
        Where to write the result (the result's shape; without ``dtype``, its dtype is the one
        computed in, as numpy's ``out``). Must not be ``x``.
    dtype : numpy dtype, optional
        The dtype to accumulate in and return. Default: ``np.cumsum``'s for add (int64 for bool
        and signed integers below 64 bits, uint64 for unsigned ones, floats their own), the
        input's for the other ops. ``dtype=x.dtype`` for 32-bit input takes the single-pass path
        (the fastest); 8- and 16-bit inputs are widened in the kernels, never on the host.
    deterministic : bool
        float32 and float64 results of 32- and 64-bit input: False (default) takes the
        single-pass scan, whose tiles combine their predecessors' aggregates in an order that
        depends on timing, so the last bits of a float sum may differ from run to run; True
        takes the reduce-then-scan path, whose combination order is fixed, so results repeat
        bit for bit (slower: three passes). Integer scans are exact either way; every other
        dtype and op already takes a fixed order (the typed reduce-then-scan).
    method : {"single_pass", "rts"}
        For 32-bit input scanned in its own dtype and for 64-bit results of 32- and 64-bit
        input: the single-pass chained scan (default; the 64-bit one needs the adapter's
        subgroups, else it is reduce-then-scan), or reduce-then-scan: three passes that need no
        communication between workgroups (the portable baseline, and the single pass's repair).
        ``deterministic=True`` implies "rts" for floats.

    Returns
    -------
    numpy.ndarray or GpuArray
        numpy in gives numpy out; GpuArray in gives GpuArray out. Integer sums wrap like numpy's
        (64-bit ones exactly: through ``shader-int64`` or pairs of 32-bit words). Float sums
        differ from numpy's sequential sum by rounding (at most about n * eps * sum|x|); float16
        sums are accumulated in float32.

    Examples
    --------
    >>> import numpy as np, pywgpuprims as pp
    >>> pp.scan(np.array([3, 1, 4, 1, 5], dtype=np.uint32), dtype=np.uint32)
    array([ 3,  4,  8,  9, 14], dtype=uint32)
    >>> pp.scan([3, 1, 4, 1, 5], op="max", exclusive=True).tolist()
    [-9223372036854775808, 3, 3, 4, 4]
    >>> pp.scan(np.array([[True, False], [True, True]]), axis=None)
    array([1, 1, 2, 3])
    """
    if method not in ("single_pass", "rts"):
        raise InputError("scan", f"method {method!r}: expected 'single_pass' or 'rts'")
    return _scan(x, op, exclusive, axis, out, dtype, "rts" if method == "rts" else deterministic, "scan")


@takes_device
def cumsum(a, axis: int | None = None, dtype=None, out=None):
    """``np.cumsum`` on the GPU: :func:`scan` with ``op="add"`` (``axis=None`` flattens).

    Examples
    --------
    >>> import numpy as np, pywgpuprims as pp
    >>> pp.cumsum(np.arange(6, dtype=np.int16).reshape(2, 3), axis=0)
    array([[0, 1, 2],
           [3, 5, 7]])
    """
    return _scan(a, "add", False, axis, out, dtype, False, "cumsum")


def _host_or_gpu(x, primitive: str):
    """(GpuArray or None, host array or None)."""
    if isinstance(x, GpuArray):
        return x, None
    return None, host_array(x, primitive)


def _upload_keep(host: np.ndarray, dev: Device | None = None) -> GpuArray:
    """Upload keeping the dtype (bool stays bool: asarray views it as uint8 for other primitives)."""
    g = GpuArray.empty(host.shape, host.dtype, dev)
    if host.size:
        g.device.upload(g.buffer, np.ascontiguousarray(host))
    return g


def _scan(x, op, exclusive, axis, out, dtype, deterministic, primitive):
    if x.__class__ is GpuArray:
        g, host = x, None
    else:
        g, host = _host_or_gpu(x, primitive)
    arr = g if g is not None else host
    if out is not None and not isinstance(out, (GpuArray, np.ndarray)):
        raise InputError(primitive, "out must be a GpuArray or a numpy array")
    rd = result_dtype(op, arr.dtype, dtype, None if out is None or dtype is not None else out.dtype, primitive)
    shape = arr.shape
    if axis is None or len(shape) == 0:
        if axis not in (None, 0, -1):
            raise InputError(primitive, f"axis {axis!r} is out of range for an array of 0 dimensions")
        res_shape = (int(np.prod(shape)),)
        lines = g.reshape(-1) if g is not None else host.reshape(-1)
        moved = None
    else:
        ax = _check_op_axis(shape, axis, primitive)
        res_shape = shape
        moved = None
        if ax == len(shape) - 1:
            lines = arr
        elif all(s == 1 for s in shape[ax + 1:]):
            lines = (g if g is not None else host).reshape(shape[:ax + 1])
        elif g is not None:
            raise InputError(primitive, f"a GpuArray is scanned along an axis with only length-1 axes after it "
                             f"(or axis=None), not axis {axis} of shape {shape}; move the axis on the host")
        else:
            lines = np.moveaxis(host, ax, -1)
            moved = ax
    if out is not None and tuple(out.shape) != res_shape:
        raise InputError(primitive, f"out has shape {tuple(out.shape)}; expected {res_shape}")
    if isinstance(lines, np.ndarray):
        lines = np.ascontiguousarray(lines)
        if not _gpu_can_read(lines.dtype, rd, op):
            lines = lines.astype(rd)  # conversions the kernels do not read (e.g. int64 to float64): on the host
        gl = _upload_keep(lines)
    else:
        gl = lines
        if not _gpu_can_read(gl.dtype, rd, op, gl.device):
            raise InputError(primitive, f"{gl.dtype} input accumulated as {rd} is converted on the host only: "
                             "pass a numpy array, or another dtype")
    direct = isinstance(out, GpuArray) and moved is None and out.dtype == rd
    if direct and out.buffer is gl.buffer:
        raise InputError(primitive, "out must not alias the input (the fallback may re-read input after "
                         "another tile wrote output)")
    if isinstance(out, GpuArray) and out.dtype != rd:
        raise InputError(primitive, f"out has dtype {out.dtype}; the result is {rd} (pass dtype= to choose)")
    b = gl.device.batch()
    res = _scan_lines(b, gl, rd, op, exclusive, deterministic, primitive, out.reshape(gl.shape) if direct else None)
    if direct:
        b.submit()
        return out
    if g is not None and not isinstance(out, np.ndarray):  # GpuArray in, GpuArray out
        if res.shape != res_shape:
            res = res.reshape(res_shape)
        if isinstance(out, GpuArray):
            if res.nbytes:
                b.copy(res.buffer, res.byte_offset, out.buffer, out.byte_offset, res.nbytes)
            b.submit()
            return out
        b.submit()
        return res
    h = submit_to_host(b, res) if res.size else np.empty(res.shape, res.dtype)
    if moved is not None:
        h = np.moveaxis(h, -1, moved)
    h = h.reshape(res_shape)
    if isinstance(out, GpuArray):
        out.device.upload(out.buffer, np.ascontiguousarray(h))
        return out
    if out is not None:
        out[...] = h
        return out
    return h


_FAST_OPS = {_dt.U32: ("add", "min", "max", "and", "or", "xor"), _dt.I32: ("add", "min", "max", "and", "or", "xor"),
             _dt.F32: ("add",)}


def _gpu_can_read(in_dtype, rd, op, dev=None) -> bool:
    """Whether the kernels read ``in_dtype`` for a result of ``rd`` (else the host converts)."""
    got = _CAN_READ.get((in_dtype, rd))
    if got is not None:
        return got
    in_dtype, rd = np.dtype(in_dtype), np.dtype(rd)
    if in_dtype != _dt.F64:  # the answer depends on the dtypes alone (float64 input: on the device too)
        got = _gpu_can_read_dtypes(in_dtype, rd)
        if len(_CAN_READ) < 1024:
            _CAN_READ[(in_dtype, rd)] = got
        return got
    if rd == _dt.B and in_dtype != _dt.B:
        return False  # numpy makes each element a bool first
    if in_dtype == _dt.F64 and rd != _dt.F64 and not _dt.has_feature(dev or device(), "shader-f64"):
        return False  # float64 input, dtype=np.float32 asked, no float64 in the kernels
    return _gpu_can_read_dtypes(in_dtype, rd)


def _gpu_can_read_dtypes(in_dtype: np.dtype, rd: np.dtype) -> bool:
    if rd == _dt.B and in_dtype != _dt.B:
        return False  # numpy makes each element a bool first
    acc = _dt.acc_dtype(rd)
    return _dt.can_read(in_dtype, acc, True) and _dt.can_read(in_dtype, acc, False)


_CAN_READ: dict = {}  # (in_dtype, rd) -> _gpu_can_read's answer, for input other than float64


def _int_op(op: str, d) -> str:
    got = _INT_OPS.get((op, d))
    if got is None:
        got = op
        if np.dtype(d).kind in "iub" and op in ("fmin", "fmax"):
            got = op[1:]
        elif np.dtype(d) == _dt.B and op == "add":
            got = "or"  # numpy's add of bools
        if len(_INT_OPS) < 1024:
            _INT_OPS[(op, d)] = got
    return got


_INT_OPS: dict = {}  # (op, dtype) -> _int_op's answer


def _scan_lines(b, g: GpuArray, rd, op, exclusive, deterministic, primitive, dst_out=None) -> GpuArray:
    """Record into ``b`` the scan of the last axis of ``g`` into a new GpuArray of dtype ``rd`` (or
    into ``dst_out``) and return it: the single-pass kernels where input and result are the same
    32-bit dtype and the op is theirs, else the typed reduce-then-scan (then packed to 8 or 16 bits
    where ``rd`` is that narrow)."""
    dev = g.device
    if rd.__class__ not in _DTYPE_CLASSES:
        rd = np.dtype(rd)
    acc = _dt.acc_dtype(rd)
    op = _int_op(op, rd)
    dst = dst_out if dst_out is not None and acc == rd else GpuArray._new(g.shape, acc, dev)
    if g.size:
        g2 = g.reshape(-1, g.shape[-1]) if len(g.shape) > 2 else g
        d2 = dst if dst.shape == g2.shape else dst.reshape(g2.shape)
        if g.dtype == acc and op in _FAST_OPS.get(acc, ()):
            rts = deterministic == "rts" or (deterministic and acc == _dt.F32)  # a fixed order: bit-exact floats
            record_scan(b, g2, d2, op, exclusive, method="rts" if rts else None)
        else:
            record_typed_scan(b, g2, d2, op, exclusive, primitive, rd if rd != acc else None, deterministic)
        if acc != rd:
            nd = dst_out if dst_out is not None else GpuArray._new(g.shape, rd, dev)
            record_narrow(b, dst, nd)
            dst = nd
    elif acc != rd:
        dst = dst_out if dst_out is not None else GpuArray._new(g.shape, rd, dev)
    return dst


def _output_for(out, g: GpuArray, host, primitive: str) -> GpuArray:
    if out is None or isinstance(out, np.ndarray):
        if isinstance(out, np.ndarray) and (out.shape != g.shape or out.dtype != g.dtype):
            raise InputError(primitive, f"out has shape {out.shape} and dtype {out.dtype}; expected {g.shape} "
                             f"and {g.dtype}")
        return GpuArray.empty(g.shape, g.dtype, g.device)
    if not isinstance(out, GpuArray):
        raise InputError(primitive, "out must be a GpuArray or a numpy array")
    if out.shape != g.shape or out.dtype != g.dtype:
        raise InputError(primitive, f"out has shape {out.shape} and dtype {out.dtype}; "
                         f"expected {g.shape} and {g.dtype}")
    if out.buffer is g.buffer:
        raise InputError(primitive, "out must not alias the input (the fallback may re-read input after "
                         "another tile wrote output)")
    return out


def record_scan(b, g: GpuArray, dst: GpuArray, op: str, exclusive: bool, method: str | None = None,
                carry_in=None, carry_out=None) -> None:
    """Record a scan of ``g`` into ``dst`` (last axis) in batch ``b``; for use by other primitives.

    1-D scans may continue another one: ``carry_in`` (a ``(buffer, byte offset)`` pair) holds the
    value that enters before element 0, combined as the chunks of one long scan pass their carries
    on (``pywgpuprims.stream.scan``); ``carry_out`` (the same kind of pair) receives the inclusive
    total (the input's 4-byte dtype; needs ``carry_in``).
    """
    dev = g.device
    method = method or "single_pass"
    seeded = carry_in is not None
    if seeded and len(g.shape) != 1:
        raise InputError("scan", "a carry-in continues 1-D scans only")
    gbuf, dbuf = g.buffer, dst.buffer
    plan = dev.plan(("scan", g.shape, g.dtype, gbuf.size, dbuf.size, op, exclusive, method,
                     _vpt(dev, g.shape[-1]), seeded),
                    lambda: _scan_plan(dev, g, dst, op, exclusive, method, seeded))
    chunks, carry_bytes, scratch_bytes, max_tiles = plan
    # one scratch block: carries, then tile state (or partials); the repair's arguments apart (a
    # buffer read by an indirect dispatch may not be bound as storage in it). Both are the batch's
    # scratch: a repeated call takes the same buffers again (and so the same bind groups).
    at_state = -(-carry_bytes // dev.storage_align) * dev.storage_align
    scratch = b.scratch(at_state + scratch_bytes)
    carry = Binding(scratch, 0, carry_bytes)
    if seeded:  # carry slot 0 is the incoming value; chunk ci reads slot ci and writes slot ci + 1
        b.copy(carry_in[0], carry_in[1], scratch, 0, 4)
    partials = Binding(scratch, at_state, scratch_bytes) if method == "rts" else None  # single pass: for a repair
    state = Binding(scratch, at_state, scratch_bytes) if method == "single_pass" else None
    args = b.scratch(32) if method == "single_pass" else None
    stats = dev.hooks.scan_stats_buffer
    for ci, (k, groups, packed, src_range, out_range, state_bytes, repair, params) in enumerate(chunks):
        src = Binding(gbuf, *src_range)
        out = Binding(dbuf, *out_range)
        if method == "rts":
            _record_rts(b, dev, op, g.dtype, src, out, partials, carry, params, exclusive)
            continue
        b.clear(scratch, at_state, state_bytes)
        if repair:
            b.clear(args, 0, 32)
        b.dispatch(k, groups, packed, input=src, tile_state=state, carry=carry, output=out, repair_args=args)
        if stats is not None:
            b.copy(scratch, at_state, stats, 16 * ci, 16)
        if repair:
            if partials is None:
                partials = b.scratch(4 * max_tiles)
            _record_rts(b, dev, op, g.dtype, src, out, partials, carry, params, exclusive, indirect=args)
    if carry_out is not None:
        b.copy(scratch, carry_bytes - 4, carry_out[0], carry_out[1], 4)


def _scan_plan(dev: Device, g: GpuArray, dst: GpuArray, op: str, exclusive: bool, method: str,
               seeded: bool = False):
    """Kernels, packed params and binding ranges of each chunk of a scan of this shape (``seeded``:
    chunk 0 starts from carry slot 0 too, and chunk ci's carry slots move up by one)."""
    if method not in ("single_pass", "rts"):
        raise InputError("scan", f"unknown scan method {method!r}")
    rows, row_len = _as_2d(g.shape, -1)
    scalar = rows > 1 and row_len % 4 != 0
    itemsize = 4
    vpt = _vpt(dev, row_len)
    tile = _wg(dev) * vpt * 4
    row_chunks = list(_row_chunks(dev, rows, row_len, tile=tile))
    max_tiles = max(nr * -(-(ne // nr) // tile) for _, nr, _, ne in row_chunks)
    chunks = []
    for ci, (_, nr, e0, ne) in enumerate(row_chunks):
        seg = ne // nr
        tpr = -(-seg // tile)
        n_tiles = tpr * nr
        src_range = (e0 * itemsize, _padded(ne * itemsize, g, e0))
        out_range = (e0 * itemsize, _padded(ne * itemsize, dst, e0))
        params = {"row_len": seg, "tiles_per_row": tpr, "n_tiles": n_tiles,
                  "carry_in": int((ci > 0 or seeded) and rows == 1), "chunk": ci + seeded,
                  "withhold_period": dev.hooks.scan_withhold_period,
                  "max_steps": _steps(dev), "max_self": 0,
                  "n_groups": n_tiles}
        grid = dev.grid(n_tiles)
        params.update(repair_x=grid[0], repair_y=grid[1], rows=nr, scalar=scalar, vpt=vpt)
        k, packed, repair = None, None, False
        if method == "single_pass":
            defs = _defines(dev, op, g.dtype, scalar, vpt, SINGLE_PASS=True, EXCLUSIVE=exclusive)
            k = dev.kernel("scan/scan.wgsl", defines=defs)
            params["max_self"] = _max_self(dev, defs)
            # A lookback that may reduce its whole segment itself always finishes: the repair
            # (three indirect dispatches, 2.5% of a 2^28 scan on an H100 even when idle) is only
            # recorded where a segment has more tiles than that.
            repair = tpr > params["max_self"]
            packed = k.pack_params({n: v for n, v in params.items() if n not in ("scalar", "vpt")})
        chunks.append((k, n_tiles, packed, src_range, out_range, 16 + 8 * n_tiles, repair, params))
    scratch = 4 * max_tiles if method == "rts" else 16 + 8 * max_tiles
    return chunks, 4 * (len(row_chunks) + 1), scratch, max_tiles


def _padded(nbytes: int, arr: GpuArray, e0: int) -> int:
    """Bind whole vec4 words: up to the next 16 bytes, within the buffer."""
    start = e0 * arr.dtype.itemsize
    return min(arr.buffer.size - start, (nbytes + 15) // 16 * 16)


def _record_rts(b, dev, op, dtype, src, out, partials, carry, params, exclusive, indirect=None):
    scalar, vpt, rows = params["scalar"], params["vpt"], params["rows"]
    params = {n: v for n, v in params.items() if n not in ("scalar", "vpt")}
    red = dev.kernel("scan/scan.wgsl", defines=_defines(dev, op, dtype, scalar, vpt, RTS_REDUCE=True))
    spine = dev.kernel("scan/rts_spine.wgsl", defines=monoid_defines(op, dtype, "scan"))
    down = dev.kernel("scan/scan.wgsl", defines=_defines(dev, op, dtype, scalar, vpt, RTS_DOWNSWEEP=True,
                                                         EXCLUSIVE=exclusive))
    sp = {"tiles_per_row": params["tiles_per_row"], "rows": rows, "carry_in": params["carry_in"],
          "chunk": params["chunk"]}
    if indirect is None:
        b.dispatch(red, params["n_tiles"], params=params, input=src, partials=partials)
        b.dispatch(spine, rows, params=sp, partials=partials, carry=carry)
        b.dispatch(down, params["n_tiles"], params=params, input=src, partials=partials, output=out)
    else:
        b.dispatch_indirect(red, indirect, 0, params=params, input=src, partials=partials)
        b.dispatch_indirect(spine, indirect, 12, params=sp, partials=partials, carry=carry)
        b.dispatch_indirect(down, indirect, 0, params=params, input=src, partials=partials, output=out)


@takes_device
def reduce(x, op: str = "add", axis: int | None = None, dtype=None):
    """Reduce with ``op`` over all elements (``axis=None``) or along one axis, as ``np.sum`` /
    ``np.min`` / ``np.max`` / ``np.bitwise_*.reduce``.

    Parameters
    ----------
    x : array_like or GpuArray
        Any shape and any dtype :func:`scan` takes (lists and scalars too).
    op : {"add", "min", "max", "and", "or", "xor", "fmin", "fmax"}
        min / max propagate NaN as ``np.min`` / ``np.max``; fmin / fmax ignore it.
    axis : None or int
        None reduces everything; an int reduces that axis (negative counts from the end).
        GpuArrays reduce an axis with only length-1 axes after it; numpy input with another axis
        is moved on the host (a copy).
    dtype : numpy dtype, optional
        The dtype to accumulate in and return. Default as ``np.sum``: int64 for bool and signed
        integers below 64 bits, uint64 for unsigned ones (so ``reduce(np.full(2_000_000, 4000,
        np.uint32))`` is 8000000000), floats their own; min / max / bitwise keep the input's
        dtype. ``dtype=x.dtype`` for 32-bit input takes the fastest path (integers wrap).

    Returns
    -------
    numpy scalar / numpy.ndarray, or GpuArray
        GpuArray in gives a GpuArray (of shape () for ``axis=None``). Every path combines in a
        fixed order, so float results repeat bit for bit (deterministic). Reducing an empty array
        with min or max raises, as in numpy.

    Examples
    --------
    >>> import numpy as np, pywgpuprims as pp
    >>> int(pp.reduce(np.arange(10, dtype=np.int32)))
    45
    >>> int(pp.reduce(np.full(2_000_000, 4000, np.uint32)))
    8000000000
    >>> pp.reduce(np.array([[1, 5], [7, 2]], dtype=np.uint32), op="max", axis=-1)
    array([5, 7], dtype=uint32)
    >>> float(pp.reduce(np.array([1.0, np.nan, 3.0], np.float32), op="fmax"))
    3.0
    """
    return _reduce(x, op, axis, dtype, "reduce")


def _reduce(x, op, axis, dtype, primitive: str, nonzero: bool = False):
    if x.__class__ is GpuArray:
        g, host = x, None
    else:
        g, host = _host_or_gpu(x, primitive)
    arr = g if g is not None else host
    rd = _dt.I64 if nonzero else result_dtype(op, arr.dtype, dtype, None, primitive)
    shape = arr.shape
    if axis is None or len(shape) == 0:
        if axis not in (None, 0, -1):
            raise InputError(primitive, f"axis {axis!r} is out of range for an array of 0 dimensions")
        out_shape, rows, row_len = (), 1, math.prod(shape)
        lines = arr if len(shape) == 1 else arr.reshape(-1)
    else:
        ax = _check_op_axis(shape, axis, "reduce")
        out_shape = shape[:ax] + shape[ax + 1:]
        row_len = shape[ax]
        rows = math.prod(out_shape)
        if all(s == 1 for s in shape[ax + 1:]):
            lines = arr.reshape(rows, row_len)
        elif g is not None:
            raise InputError(primitive, f"a GpuArray is reduced along an axis with only length-1 axes after it "
                             f"(or entirely), not axis {axis} of shape {shape}; move the axis on the host")
        else:
            lines = np.moveaxis(host, ax, -1).reshape(rows, row_len)
    op = _int_op(op, rd)
    if rows * row_len == 0:
        ident = _dt.numpy_identity(op, rd)
        if ident is None and rows > 0:
            raise InputError(primitive, f"zero-size array to reduction with {op!r}, which has no identity")
        res = np.full(out_shape, 0 if ident is None else ident, dtype=rd)
        return (res[()] if out_shape == () else res) if host is not None else _upload(res, arr_device(g))
    if isinstance(lines, np.ndarray):
        lines = np.ascontiguousarray(lines)
        if not nonzero and not _gpu_can_read(lines.dtype, rd, op):
            lines = lines.astype(rd)  # conversions the kernels do not read: on the host
        gl = _upload_keep(lines)
    else:
        gl = lines
        if not nonzero and not _gpu_can_read(gl.dtype, rd, op, gl.device):
            raise InputError(primitive, f"{gl.dtype} input accumulated as {rd} is converted on the host only: "
                             "pass a numpy array, or another dtype")
    dev = gl.device
    acc = _dt.acc_dtype(rd)
    dst = GpuArray._new(out_shape, acc, dev)
    b = dev.batch()
    flat = gl.reshape(-1) if rows == 1 and len(gl.shape) != 1 else gl
    if gl.dtype == acc and op in _FAST_OPS.get(acc, ()) and not nonzero:
        defs = _REDUCE_DEFS.get((op, acc))
        if defs is None:
            defs = _REDUCE_DEFS[(op, acc)] = monoid_defines(op, acc, "reduce")
        record_reduce(b, flat, dst, op, defs, rows, row_len)
    else:
        record_typed_reduce(b, flat, dst, op, rows, row_len, primitive, nonzero)
    if acc != rd:
        nd = GpuArray._new(out_shape, rd, dev)
        record_narrow(b, dst, nd)
        dst = nd
    if host is None:
        if not out_shape:
            b.snapshot(dst)  # float(r) / int(r) / r.numpy(): one map round trip, no submission
        b.submit()
        return dst
    res = submit_to_host(b, dst)
    return res[()] if out_shape == () else res


_REDUCE_DEFS: dict = {}  # (op, accumulator dtype) -> monoid_defines for the 32-bit reduction (never mutated)


@takes_device
def count_nonzero(a, axis: int | None = None):
    """``np.count_nonzero`` on the GPU: the number of non-zero (True; NaN counts) elements of any
    dtype, in total or along ``axis`` (int64 counts, as numpy's ``intp``), in one reading pass.

    Examples
    --------
    >>> import numpy as np, pywgpuprims as pp
    >>> int(pp.count_nonzero(np.array([0, 3, 0, 7], np.uint8)))
    2
    """
    return _reduce(a, "add", axis, None, "count_nonzero", nonzero=True)


def arr_device(g):
    return g.device if g is not None else None


def _upload(a: np.ndarray, dev: Device) -> GpuArray:
    return asarray(a, dev=dev)


def record_reduce(b, g: GpuArray, dst: GpuArray, op: str, defs: dict, rows: int, row_len: int) -> None:
    """Record the reduction of ``rows`` segments of ``row_len`` elements of ``g`` into ``dst``."""
    dev = g.device
    steps, parts_bytes, firsts_bytes = dev.plan(
        ("reduce", g.dtype, g.buffer.size, op, rows, row_len),
        lambda: _reduce_plan(dev, g, op, defs, rows, row_len))
    if parts_bytes == 0:  # one chunk per segment: the first pass writes the results (one dispatch)
        k_part, groups, packed_part, src_range = steps[0][:4]
        b.dispatch(k_part, groups, packed_part, input=Binding(g.buffer, *src_range), partials=dst.buffer)
        return
    partials = b.scratch(parts_bytes)
    firsts = b.scratch(firsts_bytes) if firsts_bytes else None
    for k_part, groups, packed_part, src_range, k_final, nr, packed_final in steps:
        b.dispatch(k_part, groups, packed_part, input=Binding(g.buffer, *src_range), partials=partials)
        b.dispatch(k_final, nr, packed_final, partials=partials, output=firsts if firsts is not None else dst.buffer)
    if firsts is not None:
        k_final = steps[0][4]
        b.dispatch(k_final, 1, params={"row_len": len(steps), "chunks_per_row": len(steps), "n_groups": 1,
                                       "out_base": 0}, partials=firsts, output=dst.buffer)


def _reduce_plan(dev: Device, g: GpuArray, op: str, defs: dict, rows: int, row_len: int):
    scalar = rows > 1 and row_len % 4 != 0
    loads = dev.hooks.reduce_loads or REDUCE_LOADS
    base = dict(defs, WG=WG, LOADS=loads, FINAL_LOADS=FINAL_LOADS, SUBGROUPS=_use_subgroups(dev), SCALAR=scalar)
    k_part = dev.kernel("scan/reduce.wgsl", defines=dict(base, PARTIALS=True))
    k_final = dev.kernel("scan/reduce.wgsl", defines=dict(base, FINAL=True, SCALAR=False))
    chunk = WG * 4 * loads
    pieces = list(_row_chunks(dev, rows, row_len))
    one_d_split = rows == 1 and len(pieces) > 1
    total_parts = sum(nr * -(-(ne // nr) // chunk) for _, nr, _, ne in pieces)
    steps = []
    for pi, (r0, nr, e0, ne) in enumerate(pieces):
        seg = ne // nr
        cpr = -(-seg // chunk)
        groups = cpr * nr
        steps.append((k_part, groups, k_part.pack_params({"row_len": seg, "chunks_per_row": cpr, "n_groups": groups,
                                                          "out_base": 0}),
                      (e0 * 4, _padded(ne * 4, g, e0)), k_final, nr,
                      k_final.pack_params({"row_len": seg, "chunks_per_row": cpr, "n_groups": nr,
                                           "out_base": pi if one_d_split else r0})))
    if len(pieces) == 1 and total_parts == rows:  # partials[r] is segment r's result: no final pass
        return steps, 0, 0
    return steps, 4 * total_parts, 4 * len(pieces) if one_d_split else 0

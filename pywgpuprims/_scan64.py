"""The single-pass scan into a 64-bit accumulator (``wgsl/wide/scan.wgsl``, ``wide/lookback.wgsl``).

int64, uint64 and float64 results of 32- and 64-bit input (``np.cumsum`` of int64, of float64,
of int32 and uint32), every op: the chained scan of the 32-bit kernels (``wgsl/scan/``) with 64-bit
tile state in two write-once slots of three flagged words per tile, looked back one predecessor per
subgroup lane. Integer sums run in pairs of u32 words wherever it runs (faster than u64 on the
H100). It needs subgroups (and float64 ``shader-int64`` too, to move its bits); rows with
more tiles than a lookback may walk, float64 with ``deterministic=True`` and ``method="rts"`` take
the typed reduce-then-scan (``pywgpuprims/_typed.py``). Its float64 sums, as the float32 single
pass's, may differ in the last bits from run to run.

Test hooks (see ``pywgpuprims/scan.py``): ``scan_subgroups`` (False: reduce-then-scan),
``scan_withhold_period``, ``scan_max_steps``, ``scan_max_self``, ``scan_spin_limit``,
``scan_vec4_per_thread`` (vector loads per invocation), ``scan_stats_buffer`` (the four counter
words of each dispatch, 16 bytes apart), ``hide_shader_int64`` (word pairs).
"""

from __future__ import annotations

import numpy as np

from ._array import GpuArray
from ._device import Binding
from ._dtypes import F64, native_int64, typed_defines

WG = 256
# vector loads per invocation: 12 vec4 of 64-bit input (24 elements, a tile of 6,144 elements:
# 48 KiB in, as the 32-bit kernel's 13 vec4 of 4-byte elements), 6 of 32-bit input. Untuned:
# chosen by the 32-bit kernel's figures (2026-11-27); the bench's sweep rows try others.
ITEMS = 24
# input elements per vec4<u32> load, by common/typed_load.wgsl's input flag
_PER_VEC = {"IN_U32": 4, "IN_I32": 4, "IN_F32": 4, "IN_P64": 2, "IN_F64": 2}
# 64-bit accumulator (as _dtypes names it) to and from vec2<u32>(low, high)
_SPLIT = "vec2<u32>(u32({0} & 0xfffffffflu), u32({0} >> 32u))"
_JOIN = "((u64(w.y) << 32u) | u64(w.x))"
_WORDS = {"vec2<u32>": ("a", "w"), "f64": (_SPLIT.format("bitcast<u64>(a)"), f"bitcast<f64>{_JOIN}")}

__all__ = ["takes", "record_single_pass"]


def takes(dev, in_dtype, acc, deterministic) -> bool:
    """Whether the single pass takes a scan of ``in_dtype`` into ``acc``: a 64-bit accumulator of
    32- or 64-bit input, with subgroups; float64 needs shader-int64 and a non-deterministic scan
    (``deterministic=True`` keeps the reduce-then-scan's fixed order), ``method="rts"`` never."""
    acc, in_dtype = np.dtype(acc), np.dtype(in_dtype)
    if acc.itemsize != 8 or in_dtype.itemsize not in (4, 8) or in_dtype.kind not in "iuf":
        return False
    if deterministic == "rts" or not (dev.has_subgroups and dev.hooks.scan_subgroups):
        return False
    if acc == F64 or in_dtype == F64:
        return native_int64(dev) and not deterministic
    return True


def record_single_pass(b, g: GpuArray, dst: GpuArray, op: str, exclusive: bool, primitive: str,
                       rows: int, row_len: int) -> bool:
    """Record the single-pass scan of each last-axis segment of ``g`` into ``dst``; False (and
    nothing recorded) where a row has more tiles than a lookback may walk."""
    from ._typed import _chunks, _range
    from .scan import LOOP_BUDGET, _spin, _steps

    dev = g.device
    acc = np.dtype(dst.dtype)
    hooks = dev.hooks
    # integer sums in u32 word pairs even where shader-int64 exists: on the H100 the pairs' single
    # pass ran 2.2x the u64 one (int64 2^26: 0.545 vs 1.22 ms, bench scan, 2026-11-27); float64
    # keeps u64 to move its bits
    native = acc.kind == "f" and native_int64(dev)
    key = ("scan64", g.dtype, acc, op, exclusive, rows, row_len, native, dev.binding_limit)

    def build():
        defs = typed_defines(op, g.dtype, acc, native, primitive)
        flag = next(f for f in _PER_VEC if defs.get(f))
        per_vec = _PER_VEC[flag]
        to_w, from_w = _WORDS[defs["ACC"]]
        steps, spin = _steps(dev), _spin(dev)
        max_self = hooks.scan_max_self
        if max_self is None:  # the loop trips wide/lookback.wgsl counts, within lavapipe's cap
            max_self = max(0, LOOP_BUDGET - steps * (spin + 2 + WG // 4) - 2 * (WG // 4))
        nv = hooks.scan_vec4_per_thread or ITEMS // per_vec
        tile = WG * nv * per_vec
        defs.update(WG=WG, NV=nv, PER_VEC=per_vec, OUT_PER=per_vec // 2, MAX_NSG=WG // 4,
                    ALIGNED=rows == 1 or row_len % per_vec == 0, EXCLUSIVE=exclusive, SPIN_LIMIT=spin,
                    TO_WORDS=to_w, FROM_WORDS=from_w)
        k = dev.kernel("wide/scan.wgsl", defines=defs)
        if rows == 1:
            per = max(1, min(max_self, dev.binding_limit // (tile * 8))) * tile
            pieces = [(0, 1, s, min(per, row_len - s)) for s in range(0, row_len, per)]
        else:
            if -(-row_len // tile) > max_self:
                return None
            pieces = _chunks(dev, rows, row_len, (g.dtype.itemsize, acc.itemsize), tile, primitive)
        chunks = []
        for ci, (_, nr, e0, ne) in enumerate(pieces):
            seg = ne // nr
            tpr = -(-seg // tile)
            p = {"row_len": seg, "tiles_per_row": tpr, "n_tiles": tpr * nr, "carry_in": int(rows == 1 and ci > 0),
                 "chunk": ci, "withhold_period": hooks.scan_withhold_period, "max_steps": steps,
                 "max_self": max_self}
            chunks.append((e0, ne, tpr * nr, k.pack_params(p)))
        return k, chunks

    plan = dev.plan(key, build)
    if plan is None:
        return False
    k, chunks = plan
    max_tiles = max(c[2] for c in chunks)
    carry_bytes = 16 * -(-8 * (len(chunks) + 1) // 16)
    at_state = -(-carry_bytes // dev.storage_align) * dev.storage_align
    scratch = dev.alloc(at_state + 16 + 24 * max_tiles)
    carry = Binding(scratch, 0, carry_bytes)
    stats = hooks.scan_stats_buffer
    for ci, (e0, ne, n_tiles, packed) in enumerate(chunks):
        state_bytes = 16 + 24 * n_tiles
        b.clear(scratch, at_state, state_bytes)
        b.dispatch(k, n_tiles, packed, input=Binding(g.buffer, *_range(g, e0, ne)),
                   tile_state=Binding(scratch, at_state, state_bytes), carry=carry,
                   output=Binding(dst.buffer, *_range(dst, e0, ne)))
        if stats is not None:
            b.copy(scratch, at_state, stats, 16 * ci, 16)
    return True

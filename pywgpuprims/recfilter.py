"""Recursive (IIR) image filters: general order 1-3, recursive Gaussian, cubic B-spline prefilter.

Block-parallel algorithm after Nehab, Maximo, Lima and Hoppe (2011), "GPU-efficient recursive
filtering and summed-area tables". The image is cut into 64 x 64 tiles. Along one axis: a first
pass computes each block's incomplete causal epilogue and anticausal prologue (zero carries), a
fix-up pass chains them across blocks with precomputed 3 x 3 matrices (their Alg. 2), and a last
pass refilters each block from its complete carries. A column pass followed by a row pass of the
same filter is overlapped (their Alg. 5): the first pass also runs the row stage on the tile
filtered down its columns with zero carries, a small per-tile pass adds what the column carries
contribute to the row carries (six fixed column responses, so six 64-vectors per tile), and the
last pass filters down the columns then along the rows in workgroup memory: the image is read
twice and written once. Full tiles of those two overlapped passes run with the tile in registers
(``wgsl/filters/recfilter_reg.wgsl``: little workgroup memory, so many more workgroups per SM), the
tiles cut by the image's edges in ``recfilter_pass_a.wgsl`` / ``recfilter_pass_c.wgsl``.
``method="rt"`` is the readable baseline: one thread per row/column.

Latency: the fix-up cuts each line's blocks into segments, a thread per (line, segment), so that
many more carries load at once; each segment runs from a zero state, the segments' true incoming
states follow from their end states and transfer matrices (powers of the block matrices,
computed on the host in float64), and each segment reruns from its true state, its carries held
in registers when it has at most ``_FIX_REG_MAX`` blocks (one load and one store each; then both
recursions' chains run between one barrier pair, the causal states entering the anticausal chain
through host matrices). The tile passes give each tile line two threads, each filtering
half of it from a zero state and then adding what the other half's end state contributes, which
halves the serial chain per thread.

Arithmetic: the tile passes run the recursion with b0 = 1 on the input scaled by b0 to the number of
directions (linearity), the scale applied in the first direction's steps: one multiply per sample
and axis instead of one per step. For filters of order 2 or less the states' third component (the
first-order section's, which never reaches an output) is neither stored nor chained.

Boundary handling is exact for the infinitely extended image: the block method folds the
extension onto the line and gets each line's initial conditions as dot products with weights
computed on the host in float64 (truncated where the impulse response's tail is below 2**-27 of
its total; for the periodic and symmetric modes the folding sums every period up to there); the
RT baseline runs the recursion over the same length of extension instead.
Kernels: ``wgsl/filters/recfilter_*.wgsl`` (one file per pass; ``recfilter_tiles.wgsl`` describes them).

Test hooks (``device().using(...)``): ``recfilter_regtile`` (False: every tile of the overlapped
passes in workgroup memory, as images under 64 samples along an axis take them),
``recfilter_fix_seg`` (another segmenting of the fix-up) and ``recfilter_fix_reg_max`` (0: every
fix-up segment loops over its blocks, as lines past 8192 samples do).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import wgpu

from ._array import GpuArray, as_input
from ._errors import InputError

_B = 64  # block length (wgsl/filters/recfilter_tiles.wgsl)
_MODES = {"zero": 0, "nearest": 1, "reflect": 2, "mirror": 3, "wrap": 4}
_LOOP_CAP = 60_000  # lavapipe cuts an invocation's loops at 65,535 trips
@dataclass(frozen=True)
class RecfilterTuning:
    """The recursive filters' tuning (H100 80GB HBM3, Vulkan, driver 580, 4096^2 float32;
    ``python -m pywgpuprims.bench recursive_filter``)."""

    # fix-up (wgsl/filters/recfilter_fix.wgsl): lines per workgroup, segments per line, blocks loaded
    # at once; faster than a thread per line, 2026-11-22
    fix_seg: tuple[int, int, int] = (32, 16, 4)
    fix_reg_max: int = 8  # segments of at most this many blocks keep their carries in registers, 2026-11-22


TUNING = RecfilterTuning()
_FIX_SEG = TUNING.fix_seg
_FIX_REG_MAX = TUNING.fix_reg_max  # longer segments loop over FB blocks at a time
_TAIL = 2.0 ** -27  # boundary padding: impulse-response tail below this fraction of its total


# ------------------------------------------------------------------------------------- host maths
def _coefs(b0, a, primitive: str) -> tuple[float, tuple[float, float, float], float]:
    """Validated ``(b0, (c1, c2, q), rho)``: the denominator ``1 + a1 z^-1 + ...`` factored as
    ``(1 + c1 z^-1 + c2 z^-2)(1 + q z^-1)`` (the cascade form the kernels run; q = 0 below order 3),
    and the largest pole magnitude ``rho``. Computed once per coefficient set."""
    try:
        key = (float(b0), tuple(float(v) for v in np.atleast_1d(np.asarray(a, dtype=np.float64)).ravel()), primitive)
    except (TypeError, ValueError):
        return _coefs_checked(b0, a, primitive)
    return _coefs_cached(*key)


@lru_cache(maxsize=256)
def _coefs_cached(b0: float, a: tuple, primitive: str):
    return _coefs_checked(b0, a, primitive)


def _coefs_checked(b0, a, primitive: str) -> tuple[float, tuple[float, float, float], float]:
    a = np.atleast_1d(np.asarray(a, dtype=np.float64))
    if a.ndim != 1 or not 1 <= a.size <= 3:
        raise InputError(primitive, f"a must hold 1 to 3 feedback coefficients (a1, a2, a3), got {a.size}")
    if not np.all(np.isfinite(a)) or not np.isfinite(b0):
        raise InputError(primitive, "coefficients must be finite")
    poles = np.roots(np.concatenate([[1.0], a]))
    rho = float(np.max(np.abs(poles))) if poles.size else 0.0
    if rho >= 1.0 - 1e-7:
        raise InputError(primitive, f"unstable filter: a pole has magnitude {rho:.6g} >= 1 (poles {poles}); "
                         "the recursion must have all poles strictly inside the unit circle")
    if a.size < 3:
        c = (float(a[0]), float(a[1]) if a.size > 1 else 0.0, 0.0)
    else:
        real = poles[np.abs(poles.imag) <= 1e-9 * max(1.0, rho)]
        d = float(np.real(real[np.argmax(np.abs(real))])) if real.size else float(np.real(poles[0]))
        c1 = a[0] + d
        c2 = a[1] + d * c1
        c = (float(c1), float(c2), -d)
    return float(b0), c, rho


def _impulse(b0: float, c: tuple, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """First ``n`` samples of the impulse responses G (whole causal filter), g1 (first-order
    section 1 / (1 + q z^-1)) and g2 (second-order section 1 / (1 + c1 z^-1 + c2 z^-2)), by FFT
    (exact up to the aliased tail past 2 n)."""
    M = 1 << max(4, int(2 * n + 8).bit_length())
    a1 = np.fft.rfft([1.0, c[2]], M)
    a2 = np.fft.rfft([1.0, c[0], c[1]], M)
    g1 = np.fft.irfft(1.0 / a1, M)[:n]
    g2 = np.fft.irfft(1.0 / a2, M)[:n]
    G = b0 * np.fft.irfft(1.0 / (a1 * a2), M)[:n]
    return G, g1, g2


@lru_cache(maxsize=256)
def _padlen(b0: float, c: tuple, rho: float) -> int:
    """Samples of boundary extension after which the impulse response's tail (of G and g1) is
    below ``_TAIL`` of its total."""
    if rho == 0.0:
        return 4
    est = int(math.ceil(-40.0 * math.log(2.0) / math.log(rho))) + 16
    if est > 1 << 24:
        raise InputError("recursive_filter", f"poles too close to the unit circle (|pole| = {rho:.9g})")
    G, g1, _ = _impulse(b0, c, 2 * est)
    mag = np.abs(G) + np.abs(g1)
    tail = np.cumsum(mag[::-1])[::-1]
    over = np.nonzero(tail > _TAIL * tail[0])[0]
    return int(over[-1]) + 2 if over.size else 4


def _ext_index(i: np.ndarray, N: int, mode: str) -> np.ndarray:
    """Index into 0..N-1 of extended positions ``i`` (-1 where the extension is zero)."""
    if mode == "zero":
        return np.where((i >= 0) & (i < N), i, -1)
    if mode == "nearest":
        return np.clip(i, 0, N - 1)
    if mode == "wrap":
        return np.mod(i, N)
    if mode == "reflect":
        j = np.mod(i, 2 * N)
        return np.where(j >= N, 2 * N - 1 - j, j)
    if N == 1:  # mirror of one sample
        return np.zeros_like(i)
    j = np.mod(i, 2 * N - 2)
    return np.where(j >= N, 2 * N - 2 - j, j)


@lru_cache(maxsize=64)
def _boundary_weights(b0: float, c: tuple, rho: float, causal: bool, anti: bool, mode: str, N: int):
    """Exact initial conditions as linear functions of the line (block method).

    Returns ``(w, ranges, Mp)``: ``w`` (6 x N float32) holds the weights that give the causal
    state at position -1 (rows 0-2) and the input part of the anticausal state at N (rows 3-5) as
    dot products with the line, the infinite extension folded onto 0..N-1 (truncated where the
    impulse response's tail is below float32 rounding); ``ranges`` = (lo_L, hi_L, lo_R, hi_R)
    their supports; ``Mp`` (3 x 3) maps the causal state at N-1 to the rest of the anticausal state.
    """
    L = _padlen(b0, c, rho)
    G, g1, g2 = _impulse(b0, c, L)
    sh = np.concatenate([[0.0], G[:-1]])
    A = [G, sh, g1]  # weights of y[N+k] (x[-1-k]) in the three state components
    w = np.zeros((6, N))
    ranges = [0, 0, 0, 0]
    k = np.arange(L)
    if causal and mode != "zero":
        pos = _ext_index(-1 - k, N, mode)
        for j in range(3):
            w[j] = np.bincount(pos, weights=A[j], minlength=N)
        ranges[0:2] = [int(pos.min()), int(pos.max()) + 1]
    Mp = np.zeros((3, 3))
    if anti:
        M = 1 << int(2 * L + 8).bit_length()
        Gf = np.conj(np.fft.rfft(G, M)) if causal else None
        V = [np.fft.irfft(np.fft.rfft(a, M) * Gf, M)[:L] if causal else a for a in A]
        if causal:
            g2s = np.concatenate([[0.0], g2[:-1]])
            free = [-c[0] * g2 - c[1] * g2s, -c[1] * g2, -c[2] * G]
            for j in range(3):
                for i in range(3):
                    Mp[j, i] = float(np.dot(A[j], free[i]))
        if mode != "zero":
            pos = _ext_index(N + k, N, mode)
            for j in range(3):
                w[3 + j] = np.bincount(pos, weights=V[j], minlength=N)
            ranges[2:4] = [int(pos.min()), int(pos.max()) + 1]
    return w.astype(np.float32), tuple(ranges), Mp


def _step(s, x: float, b0: float, c) -> np.ndarray:
    u = x - c[2] * s[2]
    y = b0 * u - c[0] * s[0] - c[1] * s[1]
    return np.array([y, s[0], u])


def _run_causal(x: np.ndarray, s: np.ndarray, b0: float, c) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(s, dtype=np.float64)
    y = np.empty(len(x))
    for i, v in enumerate(x):
        s = _step(s, v, b0, c)
        y[i] = s[0]
    return y, s


def _run_anti(y: np.ndarray, e: np.ndarray, b0: float, a) -> np.ndarray:
    return _run_causal(y[::-1], e, b0, a)[1]


@lru_cache(maxsize=256)
def _matrices(n: int, b0: float, a: tuple) -> np.ndarray:
    """[T_FP, M, T_RE] (3 x 3 each, row-major) for a block of ``n`` samples."""
    eye = np.eye(3)
    tfp = np.zeros((3, 3))
    mm = np.zeros((3, 3))
    tre = np.zeros((3, 3))
    zeros = np.zeros(n)
    for j in range(3):
        y, s = _run_causal(zeros, eye[j], b0, a)
        tfp[:, j] = s
        mm[:, j] = _run_anti(y, np.zeros(3), b0, a)
        tre[:, j] = _run_anti(zeros, eye[j], b0, a)
    return np.concatenate([tfp.ravel(), mm.ravel(), tre.ravel()])


@lru_cache(maxsize=256)
def _segment_matrices(K: int, n_last: int, b0: float, a: tuple, segs: int) -> np.ndarray:
    """The segmented fix-up's transfer matrices (row-major, float64 products): the causal map over
    a full segment (Tf^SL) and over the last (Tl Tf^(n-1)), the anticausal ones (Rf^SL and
    Rf^(n-1) Rl), then what a segment's incoming causal state adds to the anticausal state leaving
    its left end, for a full segment (sum of Rf^j Mf Tf^j, j < SL) and the last (the same to n - 1,
    the last block's term Rf^(n-1) Ml Tf^(n-1)); identities and zeros when the fix-up is not
    segmented."""
    if segs == 0:
        return np.concatenate([np.tile(np.eye(3).ravel(), 4), np.zeros(18)])
    sl = -(-K // segs)
    n = K - (K - 1) // sl * sl  # blocks in the segment that holds the last block
    f = _matrices(_B, b0, a).reshape(3, 3, 3)
    last = _matrices(n_last, b0, a).reshape(3, 3, 3)
    mp = np.linalg.matrix_power
    tf, rf = mp(f[0], sl), mp(f[2], sl)
    tl = last[0] @ mp(f[0], n - 1)
    rl = mp(f[2], n - 1) @ last[2]
    qf = sum(mp(f[2], j) @ f[1] @ mp(f[0], j) for j in range(sl))
    ql = sum((mp(f[2], j) @ f[1] @ mp(f[0], j) for j in range(n - 1)), mp(f[2], n - 1) @ last[1] @ mp(f[0], n - 1))
    return np.concatenate([tf.ravel(), tl.ravel(), rf.ravel(), rl.ravel(), qf.ravel(), ql.ravel()])


@lru_cache(maxsize=256)
def _split_consts(b0: float, a: tuple) -> np.ndarray:
    """(35, 4) float32 for the split tile passes: rows 0-31 the first row of A^(j+1) (A the recursion's state
    matrix: what a state handed over adds to the j-th sample after it), rows 32-34 A^32."""
    out = np.zeros((35, 4))
    zeros = np.zeros(_B // 2)
    for j in range(3):
        y, s = _run_causal(zeros, np.eye(3)[j], b0, a)
        out[:32, j] = y
        out[32:35, j] = s
    return out.astype(np.float32)


@lru_cache(maxsize=256)
def _responses(n: int, b0: float, a: tuple, causal: bool, anti: bool) -> np.ndarray:
    """(64, 6): the column pass's output rows (0..n-1, zero below) for zero input from each unit
    causal prologue (columns 0-2) and anticausal epilogue (3-5)."""
    out = np.zeros((_B, 6))
    zeros = np.zeros(n)
    for c in range(3):
        e = np.eye(3)[c]
        if causal:
            y = _run_causal(zeros, e, b0, a)[0]
            if anti:
                y = _run_causal(y[::-1], np.zeros(3), b0, a)[0][::-1]
            out[:n, c] = y
        if anti:
            out[:n, 3 + c] = _run_causal(zeros, e, b0, a)[0][::-1]
    return out


@lru_cache(maxsize=256)
def _carry_weights(n: int, b0: float, a: tuple, causal: bool, anti: bool) -> np.ndarray:
    """(64, 6): pass A's carries of a line of ``n`` samples (zero below) as weights of its samples:
    row i holds the causal end state (3) and the anticausal start state (3) of a unit sample at i."""
    out = np.zeros((_B, 6))
    for i in range(n):
        y = np.zeros(n)
        y[i] = 1.0
        if causal:
            y, out[i, :3] = _run_causal(y, np.zeros(3), b0, a)
        if anti:
            out[i, 3:] = _run_anti(y, np.zeros(3), b0, a)
    return out


# ------------------------------------------------------------------------------------------ GPU
def _fix_seg(dev) -> tuple[int, int, int]:
    return dev.hooks.recfilter_fix_seg or _FIX_SEG


def _axis_geometry(shape: tuple[int, ...], axis: int) -> dict:
    H, W = shape[0], shape[1]
    C = shape[2] if len(shape) == 3 else 1
    if axis == 0:
        return {"N": H, "nlines": W, "C": C, "pos_stride": W * C, "line_stride": C}
    return {"N": W, "nlines": H, "C": C, "pos_stride": C, "line_stride": W * C}


def _axis_setup(dev, shape, axis: int, b0: float, a: tuple, rho: float, causal: bool, anti: bool, mode: str,
                method: str) -> dict:
    """Params and buffers for one axis pass: ``{"p": params, ...}`` (block: mats, weights, carries).

    Everything but the carries is computed once per shape and filter (:meth:`Device.plan`)."""
    st = dict(dev.plan(("recfilter axis", tuple(shape), axis, b0, tuple(a), rho, causal, anti, mode, method),
                       lambda: _axis_plan(dev, shape, axis, b0, a, rho, causal, anti, mode, method)))
    if method != "rt":
        st["carry"] = dev.alloc(st["carry_bytes"])
        st["bpart"] = dev.alloc(st["carry_bytes"])
    return st


def _axis_plan(dev, shape, axis: int, b0: float, a: tuple, rho: float, causal: bool, anti: bool, mode: str,
               method: str) -> dict:
    geo = _axis_geometry(shape, axis)
    N, nlines, C = geo["N"], geo["nlines"], geo["C"]
    L = _padlen(b0, a, rho) if (mode != "zero" or causal) else 0
    if mode == "zero" and not anti:
        L = 0
    K = -(-N // _B)
    p = {**geo, "K": K, "mode": _MODES[mode], "padlen": L, "causal": int(causal), "anti": int(anti),
         "lo_L": 0, "hi_L": 0, "lo_R": 0, "hi_R": 0, "K2": 0, "lo_L2": 0, "hi_L2": 0, "lo_R2": 0, "hi_R2": 0,
         "woff2": 0, "b0": b0, "a1": a[0], "a2": a[1], "a3": a[2], "gain": 1.0,
         "fr_w": 0, "fr_h": 0, "fr_llo": 0, "fr_lhi": 0, "fr_klo": 0, "fr_khi": 0}
    if method == "rt":
        if 2 * N + 2 * L > _LOOP_CAP:
            raise InputError("recursive_filter", f"method='rt' handles lines up to {_LOOP_CAP // 2 - L} samples "
                             f"with these coefficients (got {N}); use method='block'")
        return {"p": p}
    if 7 * K > _LOOP_CAP:  # the fix-up runs about 6.25 K loop trips per thread
        raise InputError("recursive_filter", f"lines of {N} samples are too long (at most {_LOOP_CAP // 7 * _B})")
    # The tile passes run the b0 = 1 filter on the input scaled by gain (wgsl/filters/recfilter_common.wgsl
    # gain_c, UNIT_B0): the matrices and weights below are those of b0 = 1, and the boundary weights
    # (dot products with the unscaled input) carry the gain.
    gain = b0 ** (int(causal) + int(anti))
    p.update(b0=1.0, gain=gain)
    b0 = 1.0
    w, ranges, Mp = _boundary_weights(b0, a, rho, causal, anti, mode, N)
    w = w * np.float32(gain)
    mats = np.concatenate([_matrices(_B, b0, a), _matrices(N - (K - 1) * _B, b0, a), Mp.ravel(),
                           _segment_matrices(K, N - (K - 1) * _B, b0, a, _fix_seg(dev)[1])])
    assert mats.size == 117  # recfilter_fix.wgsl: mats is a uniform array of 30 vec4 (120 floats)
    mats = np.concatenate([mats, np.zeros(3)])
    mbuf = dev.constant(mats.astype(np.float32), wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST,
                        "recfilter mats")
    p.update(lo_L=ranges[0], hi_L=ranges[1], lo_R=ranges[2], hi_R=ranges[3])
    # Workgroups along x take tiles along the image rows (wgsl/filters/recfilter_tiles.wgsl tile_k, tile_lb).
    tiles = (K, -(-nlines // _B), C) if axis == 1 else (-(-nlines // _B), K, C)
    # One channel with rows a multiple of 4 long: the tile kernels move the image as vec4s.
    vec4 = C == 1 and shape[1] % 4 == 0
    # tile passes: two threads per tile line, 32 samples each, joined through these constants
    hbuf = dev.constant(_split_consts(b0, a), label="recfilter split constants")
    return {"p": p, "carry_bytes": 4 * 6 * K * nlines * C, "mats": mbuf, "w": w, "tiles": tiles, "fast": axis == 1,
            "vec4": vec4, "split": hbuf}


def _tile_defines(st: dict) -> dict:
    return {"TROWS": 8, **_filter_defines(st)}


def _filter_defines(st: dict) -> dict:
    """Defines every block-method kernel of this axis takes (wgsl/filters/recfilter_common.wgsl)."""
    return {"UNIT_B0": True, "GAIN_ANTI": not st["p"]["causal"], "ORDER3": st["p"]["a3"] != 0.0}


def _tile_binds(st: dict) -> dict:
    return {"hbuf": st["split"]}


def _weights_buffer(dev, *ws: np.ndarray):
    return dev.constant(np.concatenate([w.ravel() for w in ws]).astype(np.float32), label="recfilter boundary weights")


def _record_rt(b, dev, st: dict, src: GpuArray, dst: GpuArray) -> None:
    p = st["p"]
    b.dispatch(dev.kernel("filters/recfilter_rt.wgsl", defines={"RT": True}), (-(-p["nlines"] // 64), p["C"]),
               params=p, src=src, dst=dst)


def _record_a_fix(b, dev, st: dict, src: GpuArray) -> None:
    p = st["p"]
    defines = {"BLOCK_A": True, "FAST_POS": st["fast"], "VEC4": st["vec4"], **_tile_defines(st)}
    b.dispatch(dev.kernel("filters/recfilter_pass_a.wgsl", defines=defines), st["tiles"], params=p, src=src,
               carry=st["carry"], wts=_weights_buffer(dev, st["w"]), bpart=st["bpart"], **_tile_binds(st))
    _record_fix(b, dev, st)


def _record_fix(b, dev, st: dict) -> None:
    p = st["p"]
    lpw, segs, fb = _fix_seg(dev)
    sl = -(-p["K"] // segs)
    reg = sl <= (_FIX_REG_MAX if dev.hooks.recfilter_fix_reg_max is None else dev.hooks.recfilter_fix_reg_max)
    defines = {"BLOCK_FIX": True, "REGSEG": reg, "LPW": lpw, "S": segs, "FB": sl if reg else fb,
               **_filter_defines(st)}
    b.dispatch(dev.kernel("filters/recfilter_fix.wgsl", defines=defines), (-(-p["nlines"] // lpw), p["C"]),
               params=p, carry=st["carry"], mats=st["mats"], bpart=st["bpart"])


def _record_c(b, dev, st: dict, src: GpuArray, dst: GpuArray) -> None:
    p = st["p"]
    defines = {"BLOCK_C": True, "FAST_POS": st["fast"], "IN_PLACE": src is dst, "VEC4": st["vec4"],
               **_tile_defines(st)}
    binds = {"dst": dst, "carry": st["carry"], **_tile_binds(st)}
    if src is not dst:
        binds["src"] = src
    b.dispatch(dev.kernel("filters/recfilter_pass_c.wgsl", defines=defines), st["tiles"], params=p, **binds)


def _record_overlapped(b, dev, st: dict, st2: dict, src: GpuArray, dst: GpuArray, job: tuple) -> None:
    """A column pass then a row pass of the same filter, overlapped (Nehab et al. 2011, Alg. 5):
    the image is read twice (stage A, stage C) and written once."""
    _, _, a, _, causal, anti = job
    p = dict(st["p"])
    q = st2["p"]
    b0 = p["b0"]  # 1 (UNIT_B0); row pass A meets its input unscaled, so its carry weights take the gain
    p.update(K2=q["K"], lo_L2=q["lo_L"], hi_L2=q["hi_L"], lo_R2=q["lo_R"], hi_R2=q["hi_R"], woff2=st["w"].size)
    wts = _weights_buffer(dev, st["w"], st2["w"])
    W, H, C = p["nlines"], p["N"], p["C"]
    rbuf = dev.plan(("recfilter responses", b0, tuple(a), causal, anti, H, W, p["K"], q["K"], q["gain"]),
                    lambda: dev.constant(np.concatenate([
                        _responses(_B, b0, a, causal, anti), _responses(H - (p["K"] - 1) * _B, b0, a, causal, anti),
                        q["gain"] * _carry_weights(_B, b0, a, causal, anti),
                        q["gain"] * _carry_weights(W - (q["K"] - 1) * _B, b0, a, causal, anti)]).astype(np.float32),
                        label="recfilter responses"))
    kern = dev.kernel
    td = _tile_defines(st)
    # Full tiles run with the tile in registers (recfilter_reg.wgsl: more workgroups per SM), the
    # tiles cut by the image's edges in recfilter_pass_a/c.wgsl (EDGES: one dispatch over every tile, full
    # ones return at once; two strip dispatches measured slower on the H100, 228 us against 214 at
    # 4100^2).
    full = (W // _B, H // _B, C)
    reg = full[0] * full[1] > 0 and dev.hooks.recfilter_regtile
    edge_grids = [] if reg and W % _B == 0 and H % _B == 0 else [st["tiles"]]
    io = {"dst": dst} if src is dst else {"src": src, "dst": dst}
    rd = _filter_defines(st)
    if reg:
        # Tiles meeting the boundary weights (slower: dot products) launch first (FRAME_FIRST).
        pa = dict(p, **_frame(full, (p["lo_L"], p["hi_L"], p["lo_R"], p["hi_R"]),
                              (q["lo_L"], q["hi_L"], q["lo_R"], q["hi_R"])))
        n = full[0] * full[1]
        interior = (pa["fr_lhi"] - pa["fr_llo"]) * (pa["fr_khi"] - pa["fr_klo"])
        ff = 0 < interior < n
        gx = min(n, dev.max_groups)
        # Without boundary weights (zero boundaries) the dot products' code is compiled out: even
        # never run, it cost the order-2 filter 1.6 us on the H100 (registers).
        nob = all(r[1] <= r[0] for r in ((p["lo_L"], p["hi_L"]), (p["lo_R"], p["hi_R"]),
                                         (q["lo_L"], q["hi_L"]), (q["lo_R"], q["hi_R"])))
        b.dispatch(kern("filters/recfilter_reg.wgsl", defines={"PASS_A": True, "FRAME_FIRST": ff, "NO_BOUNDARY": nob,
                                                           **rd}),
                   (gx, -(-n // gx), C) if ff else full, params=pa, src=src, carry=st["carry"], wts=wts,
                   bpart=st["bpart"], carry2=st2["carry"], bpart2=st2["bpart"])
    for groups in edge_grids:
        b.dispatch(kern("filters/recfilter_pass_a.wgsl", defines={"BLOCK_A": True, "OVERLAP": True, "VEC4": st["vec4"],
                                                          "EDGES": reg, **td}),
                   groups, params=p, src=src, carry=st["carry"], wts=wts, bpart=st["bpart"],
                   carry2=st2["carry"], bpart2=st2["bpart"], **_tile_binds(st))
    _record_fix(b, dev, st)
    b.dispatch(kern("filters/recfilter_row_corr.wgsl", defines={"ROW_CORR": True, **_filter_defines(st)}), st["tiles"],
               params=p, carry=st["carry"], carry2=st2["carry"], bpart2=st2["bpart"], wts=wts, resp=rbuf)
    _record_fix(b, dev, st2)
    if reg:
        b.dispatch(kern("filters/recfilter_reg.wgsl", defines={"PASS_C": True, "IN_PLACE": src is dst, **rd}), full,
                   params=p, **io, carry=st["carry"], carry2=st2["carry"])
    for groups in edge_grids:
        b.dispatch(kern("filters/recfilter_pass_c.wgsl", defines={"BLOCK_C": True, "OVERLAP": True,
                                                                  "IN_PLACE": src is dst, "VEC4": st["vec4"],
                                                                  "EDGES": reg, **td}),
                   groups, params=p, **io, carry=st["carry"], carry2=st2["carry"], **_tile_binds(st))


def _frame(full: tuple, rows: tuple, cols: tuple) -> dict:
    """Pass A's interior rectangle of full 64 x 64 tiles: the column blocks and row blocks whose
    tiles meet none of the boundary weights' supports (``rows``: the column stage's (lo_L, hi_L,
    lo_R, hi_R), ``cols``: the row stage's). Pass A launches the other tiles first
    (recfilter_reg.wgsl FRAME_FIRST, tile_of); an empty rectangle when the free blocks are not one run."""
    def free(n: int, rg: tuple) -> tuple[int, int]:
        hit = [(p < rg[1] and p + _B > rg[0]) or (p < rg[3] and p + _B > rg[2]) for p in range(0, n * _B, _B)]
        idx = [i for i, h in enumerate(hit) if not h]
        if not idx or idx[-1] - idx[0] + 1 != len(idx):
            return 0, 0  # none, or not one run: every tile goes to the frame
        return idx[0], idx[-1] + 1
    llo, lhi = free(full[0], cols)
    klo, khi = free(full[1], rows)
    if llo == lhi or klo == khi:
        llo = lhi = klo = khi = 0
    return {"fr_w": full[0], "fr_h": full[1], "fr_llo": llo, "fr_lhi": lhi, "fr_klo": klo, "fr_khi": khi}


def _filter_gpu(g: GpuArray, passes: list, axes, mode: str, method: str, primitive: str,
                out: GpuArray | None = None) -> GpuArray:
    """Run ``passes`` = [(b0, a, rho, causal, anti), ...] along each of ``axes`` in turn (into
    ``out``, a new array unless given: the benchmark reuses one)."""
    dev = g.device
    if out is None:
        out = GpuArray.empty(g.shape, np.float32, dev)
    if g.size == 0:
        return out
    jobs = [(ax, *ps) for ax in axes for ps in passes]
    if not jobs:
        b = dev.batch()
        b.copy(g, g.byte_offset, out, 0, g.nbytes)
        b.submit()
        return out
    b = dev.batch()
    sts = [_axis_setup(dev, g.shape, ax, b0, a, rho, causal, anti, mode, method)
           for ax, b0, a, rho, causal, anti in jobs]
    if method == "rt":
        # RT reads its input to the end (boundary), so it never runs in place: ping-pong
        # between out and tmp so that the last pass lands in out.
        tmp = None
        cur = g
        for i, st in enumerate(sts):
            if (len(jobs) - 1 - i) % 2 == 0:
                target = out
            else:
                tmp = tmp or GpuArray.empty(g.shape, np.float32, dev)
                target = tmp
            _record_rt(b, dev, st, cur, target)
            cur = target
    else:
        cur = g
        i = 0
        while i < len(sts):
            # Row-column overlap: a column pass followed by a row pass with the same filter.
            if (i + 1 < len(sts) and jobs[i][0] == 0 and jobs[i + 1][0] == 1
                    and jobs[i][1:] == jobs[i + 1][1:]):
                _record_overlapped(b, dev, sts[i], sts[i + 1], cur, out, jobs[i])
                i += 2
            else:
                _record_a_fix(b, dev, sts[i], cur)
                _record_c(b, dev, sts[i], cur, out)
                i += 1
            cur = out
    b.submit()
    return out


def _check_common(img, primitive: str, axes, mode: str, method: str):
    g, host = as_input(img, primitive, dtypes=(np.float32,), ndims=(2, 3))
    if mode not in _MODES:
        raise InputError(primitive, f"boundary must be one of {', '.join(_MODES)}, got {mode!r}")
    if method not in ("block", "rt"):
        raise InputError(primitive, f"method must be 'block' or 'rt', got {method!r}")
    axes = (axes,) if isinstance(axes, (int, np.integer)) else tuple(axes)
    if any(ax not in (0, 1) for ax in axes) or len(set(axes)) != len(axes):
        raise InputError(primitive, f"axes must be distinct values among 0 (columns) and 1 (rows), got {axes}")
    return g, host, axes


def recursive_filter(img: np.ndarray | GpuArray, b0: float, a: Sequence[float], axes: int | Sequence[int] = (0, 1),
                     causal: bool = True, anticausal: bool = True, boundary: str = "zero",
                     method: str = "block") -> np.ndarray | GpuArray:
    """Recursive filter of order 1 to 3 along image rows and/or columns (float32).

    Along each axis in ``axes`` (in that order) the causal recursion
    ``y[n] = b0 x[n] - a1 y[n-1] - a2 y[n-2] - a3 y[n-3]`` (``scipy.signal.lfilter([b0], [1, *a])``)
    runs left to right, then the same recursion runs right to left on its output (anticausal).

    Parameters
    ----------
    img : float32 numpy array or GpuArray, ``(H, W)`` or ``(H, W, C)`` (each channel alone)
    b0 : float
        Feedforward gain.
    a : sequence of 1 to 3 floats
        Feedback coefficients ``(a1, ...)``. All poles (roots of ``z^r + a1 z^(r-1) + ...``) must
        lie strictly inside the unit circle, else :class:`InputError`.
    axes : int or tuple of ints
        0 filters down the columns, 1 along the rows.
    causal, anticausal : bool
        Which directions to run (``anticausal`` alone runs right to left on the input).
    boundary : {"zero", "nearest", "reflect", "mirror", "wrap"}
        How the image extends past each end, as ``numpy.pad`` modes constant(0), edge, symmetric,
        reflect and wrap (scipy.ndimage's constant, nearest, reflect, mirror, wrap). The result is
        that of filtering the infinitely extended signal: the initial conditions come from running
        the extension folded onto the line, truncated where the impulse response's remaining
        tail is below 2**-27 of its total, so the truncation error is below float32 rounding
        (float64 weights on the host, applied as dot products on the GPU; the RT baseline runs
        the recursion over as many samples of the extension).
    method : {"block", "rt"}
        ``"block"``: block-parallel with fix-up matrices (Nehab et al. 2011, Alg. 2 per axis, and
        Alg. 5 row-column overlap for ``axes=(0, 1)``); lines up to 548,000 samples.
        ``"rt"``: one thread per row/column, the readable baseline (lines up to about 30,000).

    Returns
    -------
    float32 array of the input's shape (numpy for numpy input, GpuArray for GpuArray input).

    Raises
    ------
    InputError
        Bad dtype or shape, unstable coefficients, an unknown boundary, or poles so close to the
        unit circle that the boundary extension would exceed the per-thread loop budget.

    Examples
    --------
    >>> import numpy as np, pywgpuprims as pp
    >>> x = np.zeros((1, 5), np.float32); x[0, 0] = 1
    >>> pp.recursive_filter(x, 1.0, [-0.5], axes=1, anticausal=False)
    array([[1.    , 0.5   , 0.25  , 0.125 , 0.0625]], dtype=float32)
    """
    g, host, axes = _check_common(img, "recursive_filter", axes, boundary, method)
    b0, a3, rho = _coefs(b0, a, "recursive_filter")
    if not causal and not anticausal:
        axes = ()
    out = _filter_gpu(g, [(b0, a3, rho, bool(causal), bool(anticausal))], axes, boundary, method, "recursive_filter")
    return out.numpy() if host is not None else out


# ------------------------------------------------------------------------------------- Gaussian
# van Vliet, Young and Verbeek (1998), "Recursive Gaussian derivative filters": third-order poles
# for sigma = 2 (L2-optimal set), scaled to other sigmas by d -> d^(1/q) with q chosen so that the
# causal + anticausal cascade has variance sigma^2.
_VYV_POLES = np.array([1.40098 + 1.00236j, 1.40098 - 1.00236j, 1.85132 + 0j])


@lru_cache(maxsize=64)
def _gaussian_coefs(sigma: float) -> tuple[float, tuple[float, float, float]]:
    """(b0, (a1, a2, a3)) of the causal pass, as lfilter([b0], [1, a1, a2, a3])."""
    def variance(q: float) -> float:
        d = _VYV_POLES ** (1.0 / q)
        return float(np.real(np.sum(2.0 * d / (d - 1.0) ** 2)))

    lo, hi = 1e-3, 1e4
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if variance(mid) < sigma * sigma:
            lo = mid
        else:
            hi = mid
    d = _VYV_POLES ** (1.0 / math.sqrt(lo * hi))
    den = np.real(np.poly(1.0 / d))  # 1 + a1 z^-1 + a2 z^-2 + a3 z^-3
    a = tuple(float(v) for v in den[1:])
    return float(np.sum(den)), a  # type: ignore[return-value]


def gaussian_filter(img: np.ndarray | GpuArray, sigma: float, boundary: str = "reflect",
                    axes: int | Sequence[int] = (0, 1), method: str = "block") -> np.ndarray | GpuArray:
    """Gaussian blur by a third-order recursive filter (van Vliet, Young and Verbeek 1998).

    Causal plus anticausal third-order recursions along each axis, poles of the L2-optimal set
    scaled so that the impulse response has variance ``sigma**2`` and unit gain at DC. The cost
    does not depend on ``sigma``.

    Accuracy: the largest difference from ``scipy.ndimage.gaussian_filter(img, sigma,
    mode=...)`` (float64, truncate=4), relative to ``max |img|``, measured on random images and
    ``skimage.data.camera()`` with boundaries reflect, zero (scipy's constant) and wrap:

    ========  ======  ======  =====  =====  ===========
    sigma     0.5     0.75    1      1.5    2 ... 64
    error     11%     1.7%    2.3%   0.9%   below 0.8%
    ========  ======  ======  =====  =====  ===========

    The recursive kernel approximates the Gaussian (its error, not float32 rounding, dominates:
    the float32 result stays within about 1e-4 of the same recursion in float64 up to
    ``sigma = 64``). ``tests/test_sat.py`` checks 3% at ``sigma = 1`` and 1% from 2 to 16.
    Boundaries are exact for the infinitely extended image (see :func:`recursive_filter`), as
    scipy's are for its truncated kernel.

    Parameters
    ----------
    img : float32 numpy array or GpuArray, ``(H, W)`` or ``(H, W, C)`` (each channel alone)
    sigma : float
        Standard deviation in pixels, ``0.5 <= sigma <= 1000`` (0 returns a copy).
    boundary : {"reflect", "mirror", "nearest", "wrap", "zero"}
        As :func:`recursive_filter` (default ``"reflect"``, scipy.ndimage's default).
    axes, method : as :func:`recursive_filter`.

    Examples
    --------
    >>> import numpy as np, pywgpuprims as pp
    >>> y = pp.gaussian_filter(np.ones((8, 8), np.float32), 2.0)
    >>> bool(np.allclose(y, 1, atol=1e-5))
    True
    """
    g, host, axes = _check_common(img, "gaussian_filter", axes, boundary, method)
    if not np.isfinite(sigma) or sigma < 0 or (0 < sigma < 0.5) or sigma > 1000:
        raise InputError("gaussian_filter", f"sigma must be 0 or in [0.5, 1000], got {sigma!r}")
    if sigma == 0:
        axes = ()
        passes = []
    else:
        b0, a = _gaussian_coefs(float(sigma))
        b0, a3, rho = _coefs(b0, a, "gaussian_filter")
        passes = [(b0, a3, rho, True, True)]
    out = _filter_gpu(g, passes, axes, boundary, method, "gaussian_filter")
    return out.numpy() if host is not None else out


_SPLINE_Z = math.sqrt(3.0) - 2.0


def bspline_prefilter(img: np.ndarray | GpuArray, mode: str = "mirror", axes: int | Sequence[int] = (0, 1),
                      method: str = "block") -> np.ndarray | GpuArray:
    """Cubic B-spline interpolation coefficients (the prefilter of ``scipy.ndimage.map_coordinates``).

    Along each axis: causal and anticausal first-order recursions with the pole
    ``z = sqrt(3) - 2`` and overall gain ``(1 - z)**2`` (so a constant image is unchanged). Equal
    to ``scipy.ndimage.spline_filter(img, order=3, mode=mode)`` along those axes, float32
    rounding apart (about 3e-7 relative), for ``mode`` ``"mirror"``, ``"reflect"`` and
    ``"grid-wrap"`` (also spelled ``"wrap"``): the boundaries are exact for the infinitely
    extended image, as scipy's are for these modes (except scipy's ``"reflect"`` on lines
    shorter than about 10 samples, where its initialisation is truncated).

    Parameters
    ----------
    img : float32 numpy array or GpuArray, ``(H, W)`` or ``(H, W, C)`` (each channel alone, as
        ``spline_filter1d`` along axes 0 and 1)
    mode : {"mirror", "reflect", "grid-wrap", "wrap"}
    axes, method : as :func:`recursive_filter`.

    Examples
    --------
    >>> import numpy as np, pywgpuprims as pp
    >>> c = pp.bspline_prefilter(np.ones((4, 4), np.float32))
    >>> bool(np.allclose(c, 1, atol=1e-6))
    True
    """
    modes = {"mirror": "mirror", "reflect": "reflect", "grid-wrap": "wrap", "wrap": "wrap"}
    if mode not in modes:
        raise InputError("bspline_prefilter", f"mode must be one of {', '.join(modes)}, got {mode!r}")
    g, host, axes = _check_common(img, "bspline_prefilter", axes, modes[mode], method)
    z = _SPLINE_Z
    b0, a3, rho = _coefs(1.0 - z, [-z], "bspline_prefilter")
    out = _filter_gpu(g, [(b0, a3, rho, True, True)], axes, modes[mode], method, "bspline_prefilter")
    return out.numpy() if host is not None else out

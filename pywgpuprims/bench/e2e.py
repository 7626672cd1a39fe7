"""End-to-end wall time of pywgpuprims calls, beside numpy/scipy, torch on CUDA and the transfer bound.

Run::

    python -m pywgpuprims.bench --e2e [--quick] [--primitives scan fse ...] [--sizes 1e6 2^24]
        [--image-sides 1024] [--volume-sides 64] [--repeats N] [--json F] [--markdown F]

(or ``python -m pywgpuprims.bench.e2e`` with the same arguments).

For each primitive, variant and size, in one process (so every figure shares the machine's state):

1. ``np->np``: wall time of the call with numpy in and numpy out (``pp.scan(x)``): upload, kernels
   and read-back, as a user sees it. The first call (kernel compilation) is the warm-up and its
   result is checked against the CPU reference, so no wrong answer is ever timed; then the median
   of up to ``--repeats`` calls, stopping after ``--budget-s`` seconds (at least 3 calls).
2. ``chain``: the same call on GpuArrays uploaded once, called K times back to back (results
   discarded), then ``dev.sync()``; per call = total / K, with K chosen so that the loop lasts
   about ``--chain-s`` seconds (at least 3 calls; for large calls a sync after every few GiB of
   queued results, which the GPU holds until they have run); ``chain host``: the same loop's
   time without the syncs, per call (what recording and submitting cost the host: where the
   chain is well above it, the GPU or the driver is the limit). ``gpu``: the GPU time of one call
   from timestamp queries (``dev.timer()``, median of 5 back-to-back calls, right after the chain,
   so the GPU clock is where the chain brought it), where the adapter has ``timestamp-query``.
3. ``CPU``: numpy/scipy doing the same job (the legend names each); one call when it takes over
   1 s, else the median like 1.
4. torch on CUDA, when ``torch.cuda.is_available()``: ``np->np`` = ``torch.from_numpy(x).cuda()``,
   the op, ``.cpu().numpy()``; ``GPU`` = the op on resident CUDA tensors followed by
   ``torch.cuda.synchronize()``, wall time per call (TF32 off, as the library computes in fp32);
   the table sets it beside pp's chain (``chain x torch GPU`` = torch GPU / chain ms/call).
5. ``bound``: (bytes in + bytes out) / the host's memcpy speed at that size, i.e. the time of one
   ``np.copyto`` of that many bytes into a preallocated array, measured in the same run.

Targets (issue 37):

- ``np->np <= 1.25 * bound + 0.100 ms``; the table prints ``np->np / (1.25 * bound + 0.1 ms)``.
- ``chain <= 1.1 * gpu + 0.060 ms``; the table prints ``chain / (1.1 * gpu + 0.06 ms)``.
- ``pp.asarray`` and ``GpuArray.numpy()`` reach at least 0.8 x host memcpy from 64 MiB.

A second table gives the floors: a trivial dispatch + submit written directly with wgpu-py (cached
bind group), a 16-byte map round trip, the same two through the wgpu-native calls pywgpuprims
makes (``_native``), torch's ``.item()``, ``pp.reduce`` of 1e3 elements to a Python scalar, host
memcpy and the upload / read-back rates. Only the public API is used (``pp.*``, ``dev.sync()``,
``dev.timer()``, ``dev.adapter_summary``; the floors use ``dev.raw`` and ``_native``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import pywgpuprims as pp
from pywgpuprims import fse

SIZES = [10**3, 10**4, 10**5, 10**6, 10**7, 10**8]
IMAGE_SIDES = [256, 1024, 4096, 8192]
VOLUME_SIDES = [32, 64, 128, 256]
TRANSFER_MIB = [64, 256, 400]
QUICK_SIZES = [10**3, 10**4, 10**5]
QUICK_IMAGE_SIDES = [256]
QUICK_VOLUME_SIDES = [32]
QUICK_TRANSFER_MIB = [4, 16]

NP_SLOPE, NP_FLOOR_MS = 1.25, 0.100  # target: np->np <= 1.25 * bound + 0.100 ms
CHAIN_SLOPE, CHAIN_FLOOR_MS = 1.1, 0.060  # target: chain <= 1.1 * gpu + 0.060 ms
TRANSFER_TARGET = 0.8  # asarray / .numpy() >= 0.8 x host memcpy from 64 MiB
ONCE_S = 1.0  # CPU baselines slower than this run once
INFLIGHT_BYTES = 4 << 30  # chain: results queued on the GPU between syncs, at most about this much
SIGMA = 4.0  # gaussian_filter
N_KERNELS, KSIZE = 8, 7  # correlate: 8 kernels of 7^3, as in correlate's benchmark


class Skip(Exception):
    """Raised by a case's setup when it cannot run here (a missing package); the row says why."""


# ------------------------------------------------------------------------------------------ timing
def median_wall(fn: Callable[[], object], repeats: int, budget_s: float, min_repeats: int = 3,
                inner: int = 1) -> float:
    """Median wall seconds of ``fn()`` over up to ``repeats`` samples, stopping once ``budget_s``
    has passed (after ``min_repeats``); a sample times ``inner`` calls back to back (tiny calls)."""
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < max(repeats, min_repeats):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        times.append((time.perf_counter() - t0) / inner)
        if len(times) >= min_repeats and time.perf_counter() - start > budget_s:
            break
    return statistics.median(times)


def _inner_for(seconds: float) -> int:
    """Calls per sample so that a sample lasts about 0.2 ms (sub-microsecond calls time badly)."""
    return int(min(1000, max(1, 2e-4 / max(seconds, 1e-7))))


def cpu_wall(fn: Callable[[], Any], repeats: int, budget_s: float) -> tuple[float, Any]:
    """(seconds per call, the first call's result): one call when it takes over ``ONCE_S``."""
    t0 = time.perf_counter()
    res = fn()
    first = time.perf_counter() - t0
    if first > ONCE_S:
        return first, res
    return median_wall(fn, repeats, budget_s, inner=_inner_for(first)), res


def chain_wall(dev: pp.Device, fn: Callable[[], object], target_s: float, round_calls: int = 5000,
               max_calls: int = 5000) -> tuple[float, int, float]:
    """(seconds per call, K, host seconds per call): ``fn()`` called K times back to back, then
    ``dev.sync()``; the host figure leaves the syncs out (the time the calls themselves take to
    record and submit: where it is well below the first, the GPU or the driver is the limit).

    At most ``round_calls`` calls are queued between syncs: each queued call's result holds GPU
    memory until it has run (the caller sizes rounds to a few GiB of results; a sync per round of
    large calls adds one round trip per several milliseconds of GPU work).
    """
    dev.sync()
    t0 = time.perf_counter()
    fn()
    dev.sync()
    one = time.perf_counter() - t0
    k = int(min(max_calls, max(3, target_s / max(one, 1e-6))))
    while True:
        dev.sync()
        done = 0
        host = 0.0
        t0 = time.perf_counter()
        while done < k:
            m = min(max(1, round_calls), k - done)
            t1 = time.perf_counter()
            for _ in range(m):
                fn()
            host += time.perf_counter() - t1
            dev.sync()
            done += m
        total = time.perf_counter() - t0
        if total >= 0.5 * target_s or k >= max_calls:
            return total / k, k, host / k
        k = int(min(max_calls, max(2 * k, k * target_s / total + 1)))


def gpu_time(dev: pp.Device, fn: Callable[[], object], calls: int = 5) -> float | None:
    """Median GPU seconds of ``fn()`` from timestamp queries (None without ``timestamp-query``)."""
    if not dev.has_timestamps:
        return None
    with dev.timer() as t:
        for _ in range(calls):
            fn()
            t.mark()
    return statistics.median(t.laps) / 1e9


class Memcpy:
    """Host memcpy time by size: one ``np.copyto`` into a preallocated array (median), cached."""

    def __init__(self, repeats: int, budget_s: float):
        self.repeats, self.budget_s = repeats, budget_s
        self._s: dict[int, float] = {}

    def seconds(self, nbytes: int) -> float:
        nbytes = max(16, int(nbytes))
        if nbytes not in self._s:
            src = np.ones(nbytes, np.uint8)
            dst = np.zeros(nbytes, np.uint8)
            t0 = time.perf_counter()
            np.copyto(dst, src)  # warm-up
            first = time.perf_counter() - t0
            self._s[nbytes] = median_wall(lambda: np.copyto(dst, src), max(self.repeats, 5), self.budget_s,
                                          inner=_inner_for(first))
        return self._s[nbytes]


# ------------------------------------------------------------------------------------------ checks
def _equal(got: Any, want: Any, what: str = "result") -> None:
    if isinstance(want, tuple):
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _equal(g, w, f"{what}[{i}]")
        return
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or not np.array_equal(got, want):
        bad = "shape" if got.shape != want.shape else f"{int(np.count_nonzero(got != want))} elements"
        raise AssertionError(f"{what} differs from the reference ({bad}: {got.shape} vs {want.shape})")


def _close(got: Any, want: Any, atol: float, rtol: float = 0.0) -> None:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        raise AssertionError(f"shape {got.shape}, the reference's {want.shape}")
    err = np.abs(got - want) - rtol * np.abs(want)
    if not np.all(err <= atol):
        raise AssertionError(f"differs from the reference by up to {float(np.nanmax(np.abs(got - want))):.3g} "
                             f"(allowed {atol:.3g} + {rtol:.3g} |ref|)")


def _nbytes(obj: Any) -> int:
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return len(obj)
    if isinstance(obj, (tuple, list)):
        return sum(_nbytes(o) for o in obj)
    return int(np.asarray(obj).nbytes)


# ------------------------------------------------------------------------------------------ cases
@dataclass
class Job:
    """One primitive at one size: host inputs and what to run on them."""

    inputs: tuple  # what the numpy->numpy call takes (numpy arrays or bytes)
    pp: Callable[..., Any]  # the pywgpuprims call: numpy in -> numpy out
    cpu: Callable[[], Any] | None  # numpy/scipy doing the same job (None: not available here)
    check: Callable[[Any, Any], None]  # (pp result, CPU result or None): raises AssertionError if wrong
    chain: Callable[..., Any] | None = None  # the call on GPU inputs (default: ``pp``)
    gpu_inputs: Callable[[], tuple] | None = None  # default: pp.asarray of every input
    no_chain: str = ""  # why there is no GPU-resident form (then no chain row)
    torch_in: Callable[[Any], tuple] | None = None  # torch -> CUDA tensors of the inputs
    torch_op: Callable[..., Any] | None = None  # (torch, *tensors) -> tensor(s)
    note: str = ""


@dataclass(frozen=True)
class Case:
    """A primitive and variant, its size family, and how to set it up at a size."""

    primitive: str
    variant: str
    shape: str  # "1d" (n elements or bytes), "image" (side^2), "volume" (side^3)
    setup: Callable[[int, np.random.Generator], Job]
    cpu_name: str
    torch_name: str = ""


def _to_torch(t: Any, *arrays: np.ndarray) -> tuple:
    """CUDA tensors of ``arrays`` (uint32 as int32: torch has few uint32 ops; the bits are the same)."""
    return tuple(t.from_numpy(a.view(np.int32) if a.dtype == np.uint32 else a).cuda() for a in arrays)


def _numpy_rle(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    starts = np.concatenate(([0], np.flatnonzero(np.diff(x)) + 1))
    return x[starts], np.diff(np.append(starts, x.size))


def _runs(n: int, rng: np.random.Generator, mean: int = 8) -> np.ndarray:
    """int32 values in runs of 1 .. 2 mean - 1 elements."""
    lens = rng.integers(1, 2 * mean, n // (mean - 2) + 16)
    vals = rng.integers(0, 1 << 20, lens.size, dtype=np.int32)
    k = int(np.searchsorted(np.cumsum(lens), n)) + 1
    return np.repeat(vals[:k], lens[:k])[:n]


def _skewed_bytes(n: int, rng: np.random.Generator) -> np.ndarray:
    """Compressible bytes: geometric (p = 0.15), about 4 bits of entropy per byte."""
    out = np.empty(n, np.uint8)
    for i in range(0, n, 1 << 24):
        m = min(n - i, 1 << 24)
        out[i:i + m] = np.minimum(rng.geometric(0.15, m), 255)
    return out


def scan_case(dtype: type) -> Callable[[int, np.random.Generator], Job]:
    def setup(n: int, rng: np.random.Generator) -> Job:
        if dtype == np.float32:
            x = rng.random(n, dtype=np.float32)
            check = lambda got, want: _close(got, np.cumsum(x, dtype=np.float64), atol=1e-3, rtol=1e-3)  # noqa: E731
        else:
            x = rng.integers(0, 1000, n, dtype=np.uint32)
            check = _equal
        # dtype=x.dtype: the 32-bit single-pass path (np.cumsum's default would widen uint32 to uint64)
        return Job((x,), lambda a: pp.scan(a, dtype=x.dtype), lambda: np.cumsum(x, dtype=x.dtype), check,
                   torch_in=lambda t: _to_torch(t, x), torch_op=lambda t, a: t.cumsum(a, 0, dtype=a.dtype))
    return setup


def reduce_case(n: int, rng: np.random.Generator) -> Job:
    x = rng.random(n, dtype=np.float32)
    return Job((x,), pp.reduce, lambda: np.sum(x),
               lambda got, want: _close(got, np.sum(x, dtype=np.float64), atol=1e-3, rtol=1e-4),
               torch_in=lambda t: _to_torch(t, x), torch_op=lambda t, a: t.sum(a))


def compact_case(n: int, rng: np.random.Generator) -> Job:
    x = rng.random(n, dtype=np.float32)
    mask = rng.random(n) < 0.5
    return Job((x, mask), pp.compact, lambda: x[mask], _equal,
               torch_in=lambda t: _to_torch(t, x, mask), torch_op=lambda t, a, m: t.masked_select(a, m))


def nonzero_case(n: int, rng: np.random.Generator) -> Job:
    mask = rng.random(n) < 0.5
    return Job((mask,), pp.flatnonzero, lambda: np.flatnonzero(mask), _equal,
               torch_in=lambda t: _to_torch(t, mask), torch_op=lambda t, m: t.nonzero(m, as_tuple=True)[0])


def rle_encode_case(n: int, rng: np.random.Generator) -> Job:
    x = _runs(n, rng)
    return Job((x,), pp.rle_encode, lambda: _numpy_rle(x), _equal,
               torch_in=lambda t: _to_torch(t, x),
               torch_op=lambda t, a: t.unique_consecutive(a, return_counts=True))


def rle_decode_case(n: int, rng: np.random.Generator) -> Job:
    values, counts = _numpy_rle(_runs(n, rng))
    counts = counts.astype(np.uint32)
    return Job((values, counts), pp.rle_decode, lambda: np.repeat(values, counts), _equal,
               chain=lambda v, c: pp.rle_decode(v, c, size=n),
               torch_in=lambda t: _to_torch(t, values, counts),
               torch_op=lambda t, v, c: t.repeat_interleave(v, c, output_size=n))


def bracket_reference(is_open: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``pp.bracket_match``'s link and depth, vectorised in numpy (O(n log n)).

    ``B(i)``, the stack size before ``i``, is the running sum of +1 (open) / -1 (close) clamped at
    0; the link of ``i`` is the last open ``k < i`` with ``B(k) = B(i) - 1`` (the top of the stack),
    found by a search among the opens sorted by (B, index).
    """
    o = np.asarray(is_open) != 0
    n = o.size
    s = np.concatenate(([0], np.cumsum(np.where(o, 1, -1), dtype=np.int64)))
    b = s - np.minimum(np.minimum.accumulate(s), 0)
    before, after = b[:-1], b[1:]
    opens = np.flatnonzero(o)
    keys = before[o] * (n + 1) + opens
    order = np.argsort(keys, kind="stable")
    keys, opens = keys[order], opens[order]
    pos = np.searchsorted(keys, (before - 1) * (n + 1) + np.arange(n)) - 1
    cand = opens[np.maximum(pos, 0)] if keys.size else np.zeros(n, np.int64)
    link = np.where((before > 0) & (pos >= 0), cand, -1).astype(np.int32)
    return link, np.minimum(before, after).astype(np.int32)


def _torch_brackets(t: Any, xt: Any) -> tuple:
    """The README's CUDA equivalent: depth by cumsum, then a stable sort by depth pairs each open
    with its close."""
    after = t.cumsum(xt.to(t.int32) * 2 - 1, 0, dtype=t.int32)
    level = t.where(xt, after, after + 1)  # open: depth after it; close: depth before it
    return level, t.sort(level, stable=True)[1]


def bracket_case(n: int, rng: np.random.Generator) -> Job:
    x = rng.random(n) < 0.5

    def check(got: Any, want: Any) -> None:
        _equal(got, want)
        if n <= 10**4:  # the library's sequential reference agrees with the vectorised one
            _equal(want, pp.bracket_match_reference(x), "vectorised reference")

    return Job((x,), pp.bracket_match, lambda: bracket_reference(x), check,
               torch_in=lambda t: _to_torch(t, x), torch_op=_torch_brackets)


def _zstd() -> Any:
    try:
        import zstd  # noqa: PLC0415
    except ImportError:
        return None
    return zstd


def fse_compress_case(mode: str) -> Callable[[int, np.random.Generator], Job]:
    def setup(n: int, rng: np.random.Generator) -> Job:
        x = _skewed_bytes(n, rng)
        zstd = _zstd()
        raw = x.tobytes()

        def check(blob: bytes, zblob: Any) -> None:
            if fse.decompress(blob) != raw:
                raise AssertionError("fse.decompress(fse.compress(x)) != x")
            job.note += f"; ratio {n / len(blob):.2f}" + (f", zstd {n / len(zblob):.2f}" if zblob else "")

        job = Job((x,), lambda a: fse.compress(a, mode=mode),
                  (lambda: zstd.compress(raw, 3, 1)) if zstd else None, check, note="chain: GpuArray in, bytes out")
        return job
    return setup


def fse_decompress_case(mode: str) -> Callable[[int, np.random.Generator], Job]:
    def setup(n: int, rng: np.random.Generator) -> Job:
        raw = _skewed_bytes(n, rng).tobytes()
        blob = fse.compress(raw, mode=mode)
        zstd = _zstd()
        zblob = zstd.compress(raw, 3, 1) if zstd else b""

        def check(got: bytes, want: Any) -> None:
            if got != raw or (want is not None and want != raw):
                raise AssertionError("decompressed bytes differ from the input")

        return Job((blob,), fse.decompress, (lambda: zstd.decompress(zblob)) if zstd else None, check,
                   no_chain="bytes in, bytes out")
    return setup


def sat_case(side: int, rng: np.random.Generator) -> Job:
    img = rng.random((side, side), dtype=np.float32)

    def check(got: Any, want: Any) -> None:
        _close(got, np.cumsum(img, 0, dtype=np.float64).cumsum(1), atol=1e-3, rtol=1e-3)

    return Job((img,), pp.summed_area_table, lambda: img.cumsum(0).cumsum(1), check,
               torch_in=lambda t: _to_torch(t, img), torch_op=lambda t, a: a.cumsum(0).cumsum(1))


def _scipy(sub: str) -> Any:
    try:
        import importlib  # noqa: PLC0415

        return importlib.import_module(f"scipy.{sub}")
    except ImportError as exc:
        raise Skip("scipy is not importable") from exc


def _gaussian_kernel(sigma: float, truncate: float = 4.0) -> np.ndarray:
    """scipy.ndimage's 1-D Gaussian weights (radius ``int(truncate * sigma + 0.5)``)."""
    r = int(truncate * sigma + 0.5)
    w = np.exp(-0.5 * (np.arange(-r, r + 1) / sigma) ** 2)
    return (w / w.sum()).astype(np.float32)


def _torch_gaussian(t: Any, img: Any, k1: Any) -> Any:
    """Separable conv2d with scipy's truncated kernel; padding 'reflect' is scipy's 'mirror' (the
    edge sample not repeated): the same work, an edge convention one sample apart."""
    f = t.nn.functional
    r = (k1.numel() - 1) // 2
    x = f.pad(img[None, None], (r, r, r, r), mode="reflect")
    x = f.conv2d(x, k1.view(1, 1, 1, -1))
    return f.conv2d(x, k1.view(1, 1, -1, 1))[0, 0]


def gaussian_case(side: int, rng: np.random.Generator) -> Job:
    ndimage = _scipy("ndimage")
    img = rng.random((side, side), dtype=np.float32)
    k1 = _gaussian_kernel(SIGMA)
    # pp.gaussian_filter's default mode "reflect" is scipy's default; truncate 4 is scipy's default
    return Job((img,), lambda a: pp.gaussian_filter(a, SIGMA),
               lambda: ndimage.gaussian_filter(img, SIGMA, mode="reflect", truncate=4.0),
               lambda got, want: _close(got, want, atol=1e-2 * float(np.abs(img).max())),
               torch_in=lambda t: _to_torch(t, img, k1), torch_op=_torch_gaussian)


def correlate_case(side: int, rng: np.random.Generator) -> Job:
    signal = _scipy("signal")
    sfft = _scipy("fft")
    vol = rng.integers(0, 256, (side,) * 3, dtype=np.uint8)
    w = rng.standard_normal((N_KERNELS, KSIZE, KSIZE, KSIZE)).astype(np.float32)

    def cpu() -> np.ndarray:
        v = vol.astype(np.float32)
        with sfft.set_workers(os.cpu_count() or 1):
            return np.stack([signal.correlate(v, k, mode="valid") for k in w])

    return Job((vol, w), lambda v, k: pp.correlate(v, k, output_shape="valid"), cpu,
               lambda got, want: _close(got, want, atol=1e-3 * float(np.abs(want).max())),
               gpu_inputs=lambda: (pp.asarray(vol), w),  # the kernels are host arrays in every call
               torch_in=lambda t: _to_torch(t, vol, w),
               torch_op=lambda t, v, k: t.nn.functional.conv3d(v.float()[None, None], k[:, None])[0])


CASES: list[Case] = [
    Case("scan", "float32 add", "1d", scan_case(np.float32), "np.cumsum", "torch.cumsum"),
    Case("scan", "uint32 add", "1d", scan_case(np.uint32), "np.cumsum", "torch.cumsum (int32)"),
    Case("reduce", "float32 add", "1d", reduce_case, "np.sum", "torch.sum"),
    Case("compact", "float32, half kept", "1d", compact_case, "x[mask]", "torch.masked_select"),
    Case("nonzero", "bool, half set", "1d", nonzero_case, "np.flatnonzero", "torch.nonzero"),
    Case("rle_encode", "int32, runs of ~8", "1d", rle_encode_case, "flatnonzero(np.diff) + np.diff",
         "torch.unique_consecutive(return_counts=True)"),
    Case("rle_decode", "int32, runs of ~8", "1d", rle_decode_case, "np.repeat",
         "torch.repeat_interleave(output_size=n)"),
    Case("bracket_match", "random opens/closes", "1d", bracket_case,
         "numpy cumsum + stable argsort + searchsorted", "torch cumsum + stable sort by depth"),
    Case("fse.compress", "interleaved", "1d", fse_compress_case("interleaved"),
         "zstd level 3, 1 thread (another codec: LZ + entropy coding)"),
    Case("fse.compress", "reference", "1d", fse_compress_case("reference"),
         "zstd level 3, 1 thread (another codec: LZ + entropy coding)"),
    Case("fse.decompress", "interleaved", "1d", fse_decompress_case("interleaved"),
         "zstd decompress (another codec)"),
    Case("fse.decompress", "reference", "1d", fse_decompress_case("reference"), "zstd decompress (another codec)"),
    Case("summed_area_table", "float32", "image", sat_case, "cumsum(0).cumsum(1)", "torch cumsum(0).cumsum(1)"),
    Case("gaussian_filter", f"float32, sigma {SIGMA:g}", "image", gaussian_case,
         "scipy.ndimage.gaussian_filter (truncate 4, reflect)", "torch separable conv2d (fp32)"),
    Case("correlate", f"uint8, {N_KERNELS} kernels {KSIZE}^3, valid", "volume", correlate_case,
         f"scipy.signal.correlate x{N_KERNELS} (FFT, all cores)", "torch conv3d (fp32)"),
]


# ------------------------------------------------------------------------------------------ running
@dataclass
class Settings:
    repeats: int = 20
    budget_s: float = 1.0  # per measurement
    chain_s: float = 0.3  # target length of the chain loop
    use_torch: bool = True
    seed: int = 0
    rows: list[dict] = field(default_factory=list)


def _load_torch(enabled: bool) -> Any:
    if not enabled:
        return None
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    return torch


def _to_host(r: Any) -> Any:
    if isinstance(r, (tuple, list)):
        return tuple(_to_host(v) for v in r)
    return r.cpu().numpy()


def size_label(shape: str, n: int) -> str:
    if shape == "image":
        return f"{n}^2"
    if shape == "volume":
        return f"{n}^3"
    k = round(math.log10(n)) if n > 0 else 0
    if n >= 1000 and 10**k == n:
        return f"1e{k}"
    if n >= 1024 and n & (n - 1) == 0:
        return f"2^{n.bit_length() - 1}"
    return str(n)


def _elements(shape: str, n: int) -> int:
    return n * n if shape == "image" else n**3 if shape == "volume" else n


def measure(case: Case, n: int, st: Settings, memcpy: Memcpy, torch: Any) -> dict:
    """One table row: every figure for ``case`` at size ``n``."""
    dev = pp.device()
    row: dict[str, Any] = {"primitive": case.primitive, "variant": case.variant, "size": _elements(case.shape, n),
                           "size_label": size_label(case.shape, n), "cpu_name": case.cpu_name,
                           "torch_name": case.torch_name if torch is not None else "", "note": ""}
    rng = np.random.default_rng([st.seed, n])
    try:
        job = case.setup(n, rng)
    except Skip as exc:
        row["note"] = f"skipped: {exc}"
        return row
    # numpy -> numpy: the warm-up call's result is checked against the CPU reference
    got = job.pp(*job.inputs)
    want = None
    if job.cpu is not None:
        cpu_s, want = cpu_wall(job.cpu, st.repeats, st.budget_s)
        row["cpu_ms"] = cpu_s * 1e3
    job.check(got, want)
    row["bytes_in"], row["bytes_out"] = _nbytes(job.inputs), _nbytes(got)
    del got, want
    row["np_ms"] = 1e3 * median_wall(lambda: job.pp(*job.inputs), st.repeats, st.budget_s)
    row["bound_ms"] = 1e3 * memcpy.seconds(row["bytes_in"] + row["bytes_out"])
    row["np_ratio"] = row["np_ms"] / (NP_SLOPE * row["bound_ms"] + NP_FLOOR_MS)
    # the chain on GpuArrays, then the GPU time of one call while the clock is still up
    if job.no_chain:
        row["note"] = f"no chain: {job.no_chain}"
        gpu_fn = lambda: job.pp(*job.inputs)  # noqa: E731
    else:
        gin = job.gpu_inputs() if job.gpu_inputs else tuple(pp.asarray(a) for a in job.inputs)
        call = job.chain or job.pp
        gpu_fn = lambda: call(*gin)  # noqa: E731
        gpu_fn()
        result_bytes = max(2 * row["bytes_in"], row["bytes_out"])  # worst-case sized results included
        per_call, k, host = chain_wall(dev, gpu_fn, st.chain_s,
                                       round_calls=max(3, INFLIGHT_BYTES // max(1, result_bytes)))
        row["chain_ms"], row["chain_calls"], row["chain_host_ms"] = per_call * 1e3, k, host * 1e3
    gpu_s = gpu_time(dev, gpu_fn)
    if gpu_s is not None:
        row["gpu_ms"] = gpu_s * 1e3
        if "chain_ms" in row:
            row["chain_ratio"] = row["chain_ms"] / (CHAIN_SLOPE * row["gpu_ms"] + CHAIN_FLOOR_MS)
    gin = gpu_fn = None  # free the GPU inputs before torch runs
    # torch on CUDA
    if torch is not None and job.torch_op is not None:
        try:
            row.update(measure_torch(job, st, torch))
        except Exception as exc:  # an op this torch lacks, out of memory: the pp figures stand
            job.note = "; ".join(s for s in (job.note, f"torch: {type(exc).__name__}: {str(exc)[:120]}") if s)
        torch.cuda.empty_cache()
    if "cpu_ms" in row:
        row["x_cpu"] = row["cpu_ms"] / row["np_ms"]
    if "torch_np_ms" in row:
        row["x_torch"] = row["torch_np_ms"] / row["np_ms"]
    if "torch_gpu_ms" in row and "chain_ms" in row:
        row["x_torch_gpu"] = row["torch_gpu_ms"] / row["chain_ms"]
    row["note"] = "; ".join(s for s in (row["note"], job.note) if s)
    return row


def measure_torch(job: Job, st: Settings, torch: Any) -> dict:
    """torch np->np (upload, op, download) and the op on resident CUDA tensors, in ms per call."""
    op, tin = job.torch_op, job.torch_in
    assert op is not None and tin is not None

    def torch_np() -> Any:
        return _to_host(op(torch, *tin(torch)))

    torch_np()
    out = {"torch_np_ms": 1e3 * median_wall(torch_np, st.repeats, st.budget_s)}
    resident = tin(torch)

    def torch_gpu() -> None:
        op(torch, *resident)
        torch.cuda.synchronize()

    torch_gpu()
    out["torch_gpu_ms"] = 1e3 * median_wall(torch_gpu, st.repeats, st.budget_s)
    return out


# ------------------------------------------------------------------------------------------ floors
_TRIVIAL_WGSL = """
@group(0) @binding(0) var<storage, read_write> a: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) i: vec3<u32>) {
    if (i.x == 0u) { a[0] = a[0] + 1u; }
}
"""


def wgpu_floor(dev: pp.Device, calls: int = 1000) -> tuple[float, float]:
    """(median host seconds per dispatch + submit, seconds per call including the final sync) of a
    trivial kernel written directly with wgpu-py: pipeline and bind group made once."""
    import wgpu  # noqa: PLC0415

    raw = dev.raw
    module = raw.create_shader_module(code=_TRIVIAL_WGSL)
    pipeline = raw.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
    buf = raw.create_buffer(size=16, usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)
    bind = raw.create_bind_group(layout=pipeline.get_bind_group_layout(0),
                                 entries=[{"binding": 0, "resource": {"buffer": buf, "offset": 0, "size": 16}}])

    def one() -> None:
        enc = raw.create_command_encoder()
        cpass = enc.begin_compute_pass()
        cpass.set_pipeline(pipeline)
        cpass.set_bind_group(0, bind)
        cpass.dispatch_workgroups(1)
        cpass.end()
        raw.queue.submit([enc.finish()])

    for _ in range(10):
        one()
    dev.sync()
    times = []
    t_start = time.perf_counter()
    for _ in range(calls):
        t0 = time.perf_counter()
        one()
        times.append(time.perf_counter() - t0)
    dev.sync()
    return statistics.median(times), (time.perf_counter() - t_start) / calls


def map_round_trip(dev: pp.Device, calls: int = 200) -> float:
    """Median seconds of: copy 16 bytes into a MAP_READ buffer, submit, map_sync, read_mapped, unmap."""
    import wgpu  # noqa: PLC0415

    raw = dev.raw
    src = raw.create_buffer(size=16, usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)
    dst = raw.create_buffer(size=16, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)

    def one() -> None:
        enc = raw.create_command_encoder()
        enc.copy_buffer_to_buffer(src, 0, dst, 0, 16)
        raw.queue.submit([enc.finish()])
        dst.map_sync(wgpu.MapMode.READ)
        dst.read_mapped()
        dst.unmap()

    one()
    return median_wall(one, calls, budget_s=5.0)


def native_floors(dev: pp.Device, calls: int = 1000) -> tuple[float, float]:
    """(median seconds of one dispatch + submit, median seconds of a 16-byte map round trip) of the
    trivial kernel through the calls pywgpuprims itself makes (``_native``: wgpu-native directly)."""
    import wgpu  # noqa: PLC0415

    from .. import _native  # noqa: PLC0415

    raw = dev.raw
    module = raw.create_shader_module(code=_TRIVIAL_WGSL)
    pipeline = raw.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
    buf = raw.create_buffer(size=16, usage=wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC)
    dst = raw.create_buffer(size=16, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
    bind = raw.create_bind_group(layout=pipeline.get_bind_group_layout(0),
                                 entries=[{"binding": 0, "resource": {"buffer": buf, "offset": 0, "size": 16}}])

    def one() -> None:
        enc = _native.Encoder(raw)
        enc.begin_pass()
        enc.dispatch(pipeline, bind, (1, 1, 1))
        enc.submit(raw.queue)

    def round_trip() -> None:
        enc = _native.Encoder(raw)
        enc.copy(buf, 0, dst, 0, 16)
        enc.submit(raw.queue)
        m = _native.Mapping(dst, _native.MAP_READ, 0, 16)
        m.array().copy()
        m.unmap()

    for _ in range(10):
        one()
    dev.sync()
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        one()
        times.append(time.perf_counter() - t0)
    dev.sync()
    round_trip()
    return statistics.median(times), median_wall(round_trip, 200, budget_s=5.0)


def torch_item(torch: Any) -> float:
    """Median seconds of ``t.sum().item()`` on a resident CUDA tensor of 1e3 float32."""
    t = torch.rand(1000, device="cuda")
    t.sum().item()
    return median_wall(lambda: t.sum().item(), 200, budget_s=5.0)


def floors(st: Settings, memcpy: Memcpy, transfer_mib: Sequence[int], on_step: Callable[[str], None],
           torch: Any = None) -> list[dict]:
    """The second table: wgpu-py's and wgpu-native's floors (and torch's ``.item()``), pp.reduce to a
    scalar, host memcpy, upload and read-back rates."""
    dev = pp.device()
    out: list[dict] = []

    def add(name: str, value: float, unit: str, ratio: float | None = None, target: str = "", note: str = "") -> None:
        out.append({"measurement": name, "value": value, "unit": unit, "ratio": ratio, "target": target,
                    "note": note})

    on_step("wgpu-py floor")
    med, with_sync = wgpu_floor(dev)
    add("wgpu-py floor: dispatch(1) + submit, cached bind group", med * 1e3, "ms/call",
        note=f"median of 1000; {with_sync * 1e3:.4f} ms/call with the final sync")
    rt_ms = map_round_trip(dev) * 1e3
    add("wgpu-py map round trip: copy 16 B, submit, map_sync, read_mapped, unmap", rt_ms,
        "ms", note="median of 200")
    native_call, native_rt = native_floors(dev)
    add("wgpu-native floor as pywgpuprims calls it: dispatch(1) + submit", native_call * 1e3, "ms/call",
        note="median of 1000; the same kernel through _native")
    add("wgpu-native map round trip as pywgpuprims calls it: copy 16 B, submit, map, read, unmap",
        native_rt * 1e3, "ms", note="median of 200")
    if torch is not None:
        add("torch: t.sum().item() on a CUDA tensor of 1e3 float32", torch_item(torch) * 1e3, "ms",
            note="median of 200")
    on_step("pp.reduce -> scalar")
    x = np.random.default_rng(st.seed).random(1000, dtype=np.float32)
    g = pp.asarray(x)
    float(pp.reduce(g).numpy())
    scalar_ms = 1e3 * median_wall(lambda: float(pp.reduce(g).numpy()), 200, 5.0)
    add("pp.reduce(GpuArray of 1e3 float32) -> python float", scalar_ms, "ms", scalar_ms / rt_ms,
        "<= 1.2 x map round trip", "float(pp.reduce(g).numpy()), median of 200; ratio: to the map round trip")
    add("pp.reduce(numpy 1e3 float32) -> python float", 1e3 * median_wall(
        lambda: float(pp.reduce(x)), 200, 5.0), "ms", note="upload included, median of 200")
    for mib in transfer_mib:
        on_step(f"transfers {mib} MiB")
        nbytes = mib << 20
        copy_s = memcpy.seconds(nbytes)
        add(f"host memcpy {mib} MiB", nbytes / copy_s / 1e9, "GB/s", note="np.copyto into a preallocated array")
        a = np.random.default_rng(st.seed).random(nbytes // 4, dtype=np.float32)

        def upload(a: np.ndarray = a) -> None:
            pp.asarray(a)
            dev.sync()

        upload()
        up = median_wall(upload, st.repeats, st.budget_s)
        add(f"pp.asarray {mib} MiB float32 (+ dev.sync())", nbytes / up / 1e9, "GB/s", copy_s / up,
            f">= {TRANSFER_TARGET} x memcpy" if mib >= 64 else "", "ratio: to host memcpy of the same size")
        ga = pp.asarray(a)
        _equal(ga.numpy(), a, "GpuArray.numpy()")
        down = median_wall(ga.numpy, st.repeats, st.budget_s)
        add(f"GpuArray.numpy() {mib} MiB float32", nbytes / down / 1e9, "GB/s", copy_s / down,
            f">= {TRANSFER_TARGET} x memcpy" if mib >= 64 else "", "ratio: to host memcpy of the same size")
        ga = a = None
    return out


# ------------------------------------------------------------------------------------------ output
MAIN_COLUMNS = [
    ("primitive", "primitive"), ("variant", "variant"), ("size", "size_label"), ("np->np ms", "np_ms"),
    ("bound ms", "bound_ms"), ("np->np / target", "np_ratio"), ("chain ms/call", "chain_ms"),
    ("chain host ms/call", "chain_host_ms"), ("gpu ms", "gpu_ms"),
    ("chain / target", "chain_ratio"), ("CPU ms", "cpu_ms"), ("torch np->np ms", "torch_np_ms"),
    ("torch GPU ms", "torch_gpu_ms"), ("x CPU", "x_cpu"), ("x torch np->np", "x_torch"),
    ("chain x torch GPU", "x_torch_gpu"), ("note", "note"),
]
FLOOR_COLUMNS = [("measurement", "measurement"), ("value", "value"), ("unit", "unit"),
                 ("ratio", "ratio"), ("target", "target"), ("note", "note")]


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        if v == 0 or abs(v) >= 100:
            return f"{v:.0f}"
        if abs(v) >= 10:
            return f"{v:.1f}"
        if abs(v) >= 1:
            return f"{v:.2f}"
        return f"{v:.3g}"
    return str(v).replace("|", "/")


def _table(columns: list[tuple[str, str]], rows: list[dict]) -> str:
    cols = [(h, k) for h, k in columns if any(r.get(k) not in (None, "") for r in rows)]
    lines = ["| " + " | ".join(h for h, _ in cols) + " |", "|" + "|".join(" --- " for _ in cols) + "|"]
    lines += ["| " + " | ".join(_cell(r.get(k)) for _, k in cols) + " |" for r in rows]
    return "\n".join(lines)


def _git_rev() -> str:
    here = Path(__file__).resolve().parent
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True, text=True,
                             timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=here,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""
    return rev + (" (with uncommitted changes)" if rev and dirty else "")


def metadata(argv: Sequence[str], torch: Any) -> dict:
    dev = pp.device()
    meta = {"device": dev.adapter_summary, "timestamps": dev.has_timestamps,
            "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            "commit": _git_rev(), "command": "python -m pywgpuprims.bench --e2e " + shlex.join(argv),
            "host_cpus": os.cpu_count(), "python": sys.version.split()[0], "numpy": np.__version__}
    if torch is not None:
        meta["torch_device"] = torch.cuda.get_device_name()
        meta["torch"] = torch.__version__
    return meta


def markdown(meta: dict, rows: list[dict], extra: list[dict]) -> str:
    torch_line = f"; torch {meta['torch']} on {meta['torch_device']}" if "torch_device" in meta else "; torch: none"
    head = [
        "# pywgpuprims end-to-end wall time",
        "",
        f"- device: {meta['device']}{torch_line}; {meta['host_cpus']} host CPUs",
        f"- date: {meta['date']}; commit: {meta['commit'] or 'unknown'}",
        f"- command: `{meta['command']}`",
        f"- np->np / target = np->np / ({NP_SLOPE} x bound + {NP_FLOOR_MS:.3f} ms); chain / target = chain / "
        f"({CHAIN_SLOPE} x gpu + {CHAIN_FLOOR_MS:.3f} ms); <= 1 meets the target. bound = (bytes in + out) / "
        "host memcpy. x CPU, x torch: their time over pp's np->np (> 1: pp is faster); chain x torch GPU: "
        "torch's op on resident CUDA tensors + synchronize over pp's chain ms/call.",
    ]
    if not meta.get("timestamps"):
        head.append("- no timestamp-query on this adapter: no gpu ms or chain ratio")
    legend = {}
    for r in rows:
        legend.setdefault(r["primitive"], (r.get("cpu_name", ""), r.get("torch_name", "")))
    lines = head + ["", _table(MAIN_COLUMNS, rows), "", "References:", ""]
    lines += [f"- {p}: CPU {c}" + (f"; torch {t}" if t else "") for p, (c, t) in legend.items()]
    if extra:
        lines += ["", "## Floors and transfers", "", _table(FLOOR_COLUMNS, extra)]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------ CLI
def _parse_size(s: str) -> int:
    s = s.strip().lower().replace("**", "^")
    if s.startswith("2^"):
        return 1 << int(s[2:])
    return int(float(s))


def _selected(names: Sequence[str] | None) -> tuple[list[Case], bool]:
    """Cases named by ``--primitives`` (a name or its part before the dot: ``fse``), and whether the
    floors table ("floors") is wanted."""
    if not names:
        return list(CASES), True
    known = {c.primitive for c in CASES} | {c.primitive.split(".")[0] for c in CASES} | {"floors"}
    unknown = sorted(set(names) - known)
    if unknown:
        raise SystemExit(f"unknown primitive(s) {unknown}; choose from {sorted(known)}")
    cases = [c for c in CASES if c.primitive in names or c.primitive.split(".")[0] in names]
    return cases, "floors" in names


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m pywgpuprims.bench --e2e", description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true",
                   help="sizes up to 1e5, images 256^2, volumes 32^3, transfers of 4 and 16 MiB; shorter timings")
    p.add_argument("--primitives", nargs="+", metavar="NAME",
                   help="cases to run (e.g. scan rle_encode fse correlate floors); default: all")
    p.add_argument("--sizes", nargs="+", type=_parse_size, help="elements (bytes for fse) of the 1-D cases")
    p.add_argument("--image-sides", nargs="+", type=int, help="square image sides (summed_area_table, gaussian)")
    p.add_argument("--volume-sides", nargs="+", type=int, help="cube sides (correlate)")
    p.add_argument("--transfer-mib", nargs="+", type=int, help="sizes of the transfer rows in MiB")
    p.add_argument("--repeats", type=int, help="most calls per measurement (default 20; --quick 10)")
    p.add_argument("--budget-s", type=float, help="seconds after which a measurement stops (default 1; --quick 0.25)")
    p.add_argument("--chain-s", type=float, help="length of the chain loop in seconds (default 0.3; --quick 0.2)")
    p.add_argument("--no-torch", action="store_true", help="leave torch out even where CUDA is available")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", metavar="F", help="write the rows (and the header's facts) as JSON")
    p.add_argument("--markdown", metavar="F", help="write the markdown tables")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return p


class Progress:
    """A tqdm bar on stderr (a line per step without tqdm): ``start`` ends the step before."""

    def __init__(self, total: int, enabled: bool):
        self.enabled, self.started = enabled, False
        try:
            from tqdm import tqdm  # noqa: PLC0415

            self.bar: Any = tqdm(total=total, file=sys.stderr, disable=not enabled, dynamic_ncols=True)
        except ImportError:
            self.bar = None

    def start(self, desc: str) -> None:
        if self.bar is None:
            if self.enabled:
                print(f"... {desc}", file=sys.stderr, flush=True)
            return
        if self.started:
            self.bar.update(1)
        self.started = True
        self.bar.set_description(desc)

    def close(self) -> None:
        if self.bar is not None:
            if self.started:
                self.bar.update(1)
            self.bar.close()


def _failed_row(case: Case, n: int, note: str) -> dict:
    return {"primitive": case.primitive, "variant": case.variant, "size": _elements(case.shape, n),
            "size_label": size_label(case.shape, n), "cpu_name": case.cpu_name, "note": note}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    q = args.quick
    st = Settings(repeats=args.repeats or (10 if q else 20), budget_s=args.budget_s or (0.25 if q else 1.0),
                  chain_s=args.chain_s or (0.2 if q else 0.3), use_torch=not args.no_torch, seed=args.seed)
    sizes = {"1d": args.sizes or (QUICK_SIZES if q else SIZES),
             "image": args.image_sides or (QUICK_IMAGE_SIDES if q else IMAGE_SIDES),
             "volume": args.volume_sides or (QUICK_VOLUME_SIDES if q else VOLUME_SIDES)}
    transfer_mib = args.transfer_mib or (QUICK_TRANSFER_MIB if q else TRANSFER_MIB)
    cases, want_floors = _selected(args.primitives)
    torch = _load_torch(st.use_torch)
    dev = pp.device()
    meta = metadata(argv, torch)
    print(f"pywgpuprims e2e on {dev.adapter_summary}" + (f", torch on {meta['torch_device']}" if torch else ""),
          file=sys.stderr)
    memcpy = Memcpy(st.repeats, st.budget_s)
    jobs = [(c, n) for c in cases for n in sizes[c.shape]]
    progress = Progress(len(jobs) + (2 + len(transfer_mib) if want_floors else 0), not args.no_progress)
    rows: list[dict] = []
    failed = 0
    for case, n in jobs:
        progress.start(f"{case.primitive} {case.variant} {size_label(case.shape, n)}")
        try:
            rows.append(measure(case, n, st, memcpy, torch))
        except AssertionError as exc:
            failed += 1
            print(f"WRONG RESULT: {case.primitive} {case.variant} {n}: {exc}", file=sys.stderr)
            rows.append(_failed_row(case, n, f"WRONG RESULT, not timed: {exc}"))
        except Exception as exc:  # a size past the device's limits, out of memory, ...: note it, go on
            print(f"error: {case.primitive} {case.variant} {n}: {type(exc).__name__}: {exc}", file=sys.stderr)
            rows.append(_failed_row(case, n, f"error: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}"))
    extra = floors(st, memcpy, transfer_mib, progress.start, torch) if want_floors else []
    progress.close()
    text = markdown(meta, rows, extra)
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text)
    if args.json:
        Path(args.json).write_text(json.dumps({"meta": meta, "rows": rows, "floors": extra}, indent=1) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""Timing helpers and the registry that ``python -m pywgpuprims.bench`` runs.

Each primitive family's entry file in this package registers its entries with :func:`benchmark`;
an entry is a function ``entry(ctx, n) -> list[dict]`` returning table rows. :class:`BenchContext`
carries the device, the repeat count and the same-run baselines (WGSL copy and read passes,
torch/cupy, numpy). :func:`median_gpu_ns`, :func:`raise_gpu_clock` (``pywgpuprims._timing``, which
``conv.tune`` uses too) and :func:`copy_pass` (``pywgpuprims.device_copy``) are re-exported here.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import numpy as np

from .._array import GpuArray
from .._device import Device
from .._monoid import monoid_defines
from .._timing import median_gpu_ns, raise_gpu_clock
from ..device_copy import copy_pass

REGISTRY: dict[str, Callable] = {}


def benchmark(name: str):
    """Register a benchmark entry under ``name``."""

    def deco(fn):
        REGISTRY[name] = fn
        return fn

    return deco


def median_wall_ns(fn: Callable[[], None], repeats: int = 5, warmup: int = 1) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        fn()
        times.append(time.perf_counter_ns() - t0)
    return float(statistics.median(times))


def cuda_module():
    """``torch`` when it can use a CUDA device, else None."""
    try:
        import torch  # noqa: PLC0415

        return torch if torch.cuda.is_available() else None
    except Exception:
        return None


def median_cuda_ns(torch, fn: Callable[[], object], repeats: int = 10, warmup: int = 3) -> float:
    """Median time of ``fn`` on the CUDA device, measured with CUDA events."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e6)
    return float(statistics.median(times))


def median_replayed_ns(dev: Device, fn: Callable[[int], None], repeats: int = 7, replays: int = 20,
                       warmup_ns: int = 20_000_000) -> float:
    """Median over ``repeats`` runs of ``fn(i)`` of its GPU time with every batch it submits replayed
    ``replays`` times in one submission (the mean replay counts) after about ``warmup_ns`` of untimed
    replays, sized by a first timed run's durations (:meth:`Device.timer`'s ``replays``,
    ``warmup_ns``, ``learned``): a short, latency-bound batch then runs at a steady clock.
    """
    raise_gpu_clock(dev)
    fn(0)
    with dev.timer() as first:  # learns each batch's duration, for warmup_ns
        fn(1)
    with dev.timer(replays=replays, warmup_ns=warmup_ns, learned=first.durations) as t:
        for i in range(repeats):
            fn(2 + i)
            t.mark()
    return float(statistics.median(t.laps))


class BenchContext:
    """What an entry needs: device, repeat count, baselines and a row builder."""

    def __init__(self, dev: Device, repeats: int = 10, cpu: bool = True, cuda: bool = True):
        self.dev = dev
        self.repeats = repeats
        self.cpu = cpu
        self.torch = cuda_module() if cuda else None
        self.rng = np.random.default_rng(12345)
        self._baseline: dict = {}

    def gpu_ns(self, fn: Callable[[int], None]) -> float:
        return median_gpu_ns(self.dev, fn, self.repeats)

    def cuda_ns(self, fn: Callable[[], object]) -> float | None:
        return median_cuda_ns(self.torch, fn, self.repeats) if self.torch else None

    def cpu_ns(self, fn: Callable[[], object]) -> float | None:
        return median_wall_ns(fn, repeats=3) if self.cpu else None

    def copy_ns(self, nbytes: int, src=None, dst=None) -> float:
        """Same-run GPU time of the WGSL copy of ``nbytes`` (read nbytes, write nbytes).

        Pass the primitive's own input and output as ``src`` and ``dst`` where it has them: on an
        H100 the same kernel ran 1.8x slower on some fresh 1 GiB allocations than on others, so a
        yardstick should run over the very memory the primitive touches. Without them the copy runs
        over fresh buffers (cached per size).
        """
        if src is None:
            return self._pass_ns(nbytes, copy=True)
        return self.gpu_ns(lambda i: copy_pass(self.dev, src, dst, max(1, nbytes // 16), True))

    def read_ns(self, nbytes: int) -> float:
        """Same-run GPU time of a WGSL read-only pass over ``nbytes``."""
        return self._pass_ns(nbytes, copy=False)

    def _pass_ns(self, nbytes: int, copy: bool) -> float:
        key = (nbytes, copy)
        if key not in self._baseline:
            n_vec4 = max(1, (nbytes + 15) // 16)
            src = GpuArray.empty(n_vec4 * 4, np.uint32, self.dev)
            dst = GpuArray.empty(n_vec4 * 4 if copy else 1 << 16, np.uint32, self.dev)
            self.dev.write(src.buffer, self.rng.integers(0, 2**32, n_vec4 * 4, dtype=np.uint32).tobytes())
            self._baseline[key] = self.gpu_ns(lambda i: copy_pass(self.dev, src, dst, n_vec4, copy))
        return self._baseline[key]

    def row(self, primitive: str, variant: str, n: int, gpu_ns: float, *, bytes_moved: int,
            baseline_ns: float | None = None, baseline: str = "copy", cuda_ns: float | None = None,
            cuda_name: str = "", cpu_ns: float | None = None, cpu_name: str = "numpy",
            unit: str = "G el/s", work: float | None = None) -> dict:
        """A table row; rates are ``work / time`` (work defaults to n elements)."""
        work = float(n if work is None else work)
        r = {"primitive": primitive, "variant": variant, "n": n, "gpu_ms": gpu_ns / 1e6,
             "rate": work / gpu_ns, "unit": unit, "GB/s": bytes_moved / gpu_ns}
        if baseline_ns:
            r[f"{baseline}_GB/s"] = bytes_moved / baseline_ns
            r[f"%{baseline}"] = 100.0 * baseline_ns / gpu_ns
        if cuda_ns:
            r["cuda"] = cuda_name
            r["cuda_rate"] = work / cuda_ns
            r["x_cuda"] = cuda_ns / gpu_ns
        if cpu_ns:
            r["cpu"] = cpu_name
            r["cpu_rate"] = work / cpu_ns
        return r


def rle_traffic_pass(dev: Device, src, ends, values, counts, n_vec4: int, *, vpt: int = 13, vec4: bool = True,
                     round_words: int = 2048, stream: bool = False, lookback: bool = False,
                     hold: bool = False, check: bool = False) -> int:
    """Record and submit ``bench/rle_traffic.wgsl``: the memory traffic of run-length encoding
    alone (a ceiling for ``rle_encode``, not a primitive).

    Tiles of 1024 * ``vpt`` elements of ``src`` are read; tile t writes words ``ends[t - 1] ..
    ends[t] - 1`` of ``values`` and ``counts`` (aligned vec4 stores inside the range with ``vec4``,
    in rounds of ``round_words`` separated by workgroup barriers unless it is 0), or with
    ``stream`` every tile of 10240 elements writes 9216 words of each at its own aligned place
    (``ends`` bound but unused; ``vec4`` False then means single-word stores). With ``lookback``
    each tile takes its offset from the encoder's decoupled lookback instead of ``ends[t - 1]``
    (``hold``: the tile's loads stay live across it); with ``check`` it returns the number of tiles
    whose offset disagreed with ``ends`` (read back), else 0.
    """
    wg = 256
    defines = {"WG": wg, "VECS_PER_THREAD": vpt, "VEC4_STORES": vec4}
    params = {"n_vec4": n_vec4, "max_steps": 0, "zero": 0}
    extra = {}
    if stream:
        tiles = n_vec4 // (wg * 10)
        defines["STREAM"] = True
    else:
        tiles = ends.size
        defines.update(ROUNDS=round_words > 0, ROUND=round_words)
    if lookback:
        from ..scan import LOOKBACK_WINDOW, SPIN_LIMIT, lookback_steps  # noqa: PLC0415

        defines.update(monoid_defines("add", np.uint32, "rle"), LOOKBACK=True, HOLD=hold,
                       SUBGROUPS=dev.has_subgroups, SG_LOOKBACK=dev.has_subgroups, EARLY_PUBLISH=True,
                       SELF_REDUCE=False, SPIN_LIMIT=SPIN_LIMIT, LOOKBACK_WINDOW=LOOKBACK_WINDOW)
        params["max_steps"] = lookback_steps(SPIN_LIMIT)
        extra["tile_state"] = dev.alloc(16 + 8 * tiles)
    k = dev.kernel("bench/rle_traffic.wgsl", defines=defines)
    outs = {"values": values, "counts": counts}
    if vec4:
        outs.update(values4=values, counts4=counts)
    b = dev.batch()
    if lookback:
        b.clear(extra["tile_state"], 0, 16 + 8 * tiles)
    b.dispatch(k, tiles, params=dict(params, n_tiles=tiles), src=src, ends=ends, **outs, **extra)
    b.submit()
    if not lookback:
        return 0
    wrong = int(np.frombuffer(dev.read(extra["tile_state"], 0, 16), np.uint32)[3]) if check else 0
    return wrong

"""GPU timing with the clock raised first: what :func:`pywgpuprims.conv.tune` and the benchmarks
(``pywgpuprims.bench``) time with."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from ._device import Device
from .device_copy import copy_pass

_CLOCK_WARM_BYTES = 64 << 20
_last_clock_warm = [0.0]


def raise_gpu_clock(dev: Device, seconds: float | None = None) -> None:
    """Keep the GPU busy with copies for about ``seconds`` (untimed) before a timing.

    An idle H100 sits at 345 MHz and needs a few hundred milliseconds of steady load to reach
    1980 MHz (60 ms did not do it); timings taken before that ran at about half speed
    (memory-bound kernels) or a quarter (latency-bound ones). Skipped on CPU adapters, and when the
    last call was less than a second ago. The first call of a process keeps it busy for 2 s.
    """
    if time.monotonic() - _last_clock_warm[0] < 1.0 or dev.info.get("adapter_type") == "CPU":
        return
    src, dst = dev.alloc(_CLOCK_WARM_BYTES), dev.alloc(_CLOCK_WARM_BYTES)
    if seconds is None:
        seconds = 2.0 if _last_clock_warm[0] == 0.0 else 0.5
    start = time.monotonic()
    for _ in range(400):  # batches of 100 copies (5-8 ms of GPU time each), queued back to back
        copy_pass(dev, src, dst, _CLOCK_WARM_BYTES // 16, times=100)
        if time.monotonic() - start > seconds:
            break
    dev.sync()
    _last_clock_warm[0] = time.monotonic()


def median_gpu_ns(dev: Device, fn: Callable[[int], None], repeats: int = 10, warmup: int = 3) -> float:
    """Median GPU time in ns of ``fn(i)`` (``i`` numbers the run, to rotate fresh inputs).

    The runs are queued back to back and their timestamps read at the end, so the GPU does not
    idle (and change clocks) between them, as CUDA-event timing of torch does not either; the
    clock is raised first (:func:`raise_gpu_clock`).
    """
    raise_gpu_clock(dev)
    for i in range(warmup):
        fn(i)
    with dev.timer() as t:
        for i in range(repeats):
            fn(warmup + i)
            t.mark()
    return float(statistics.median(t.laps))

"""What each dispatch of the overlapped recursive filter (issue 6) costs inside the pipeline.

    python tools/research/recfilter_in_context.py

Timing one small dispatch alone misleads on an H100: a latency-bound kernel that barely loads the
GPU ran there 2-4x slower than inside the filter (the clock drops). This script times subsets of
the filter's dispatches instead (A and C always kept, so the GPU stays loaded: the difference is
what a dispatch adds in context; wrong results, timing only), interleaved over three rounds, each
timed batch replayed 20 times after 20 ms of untimed replays. Dispatches: 0 pass A, 1 column
fix-up, 2 row carries (ROW_CORR), 3 row fix-up, 4 pass C; "A + A + C" records pass A twice (what
a pass A costs once the GPU is busy), "A + C + C" likewise for pass C.
"""

import statistics

import numpy as np

import pywgpuprims as pp
from pywgpuprims import _device
from pywgpuprims import recfilter as rf
from pywgpuprims._array import GpuArray
from pywgpuprims.bench import median_replayed_ns

dev = pp.device()
side = 4096
g = GpuArray.empty((side, side), np.float32, dev)
dev.write(g.buffer, np.random.default_rng(1).standard_normal((side, side)).astype(np.float32).tobytes())
out = GpuArray.empty((side, side), np.float32, dev)
print(f"device: {dev.adapter_summary}")

keep = None  # indices of the dispatches to record, a repeated index recorded again (None: all)
original = _device.Batch.dispatch


def dispatch(self, kernel, groups, params=None, **bindings):
    self._count = getattr(self, "_count", 0) + 1
    for _ in range(1 if keep is None else keep.count(self._count - 1)):
        original(self, kernel, groups, params=params, **bindings)


_device.Batch.dispatch = dispatch
b0, a, rho = rf._coefs(0.25, [-1.2, 0.45], "bench")
gb0, ga = rf._gaussian_coefs(16.0)
gb0, ga, grho = rf._coefs(gb0, ga, "bench")
filters = {"order 2, zero": ([(b0, a, rho, True, True)], "zero"),
           "Gaussian 16, reflect": ([(gb0, ga, grho, True, True)], "reflect")}
subsets = [("whole filter", None, {}), ("whole, looping fix-up", None, {"_FIX_REG_MAX": 0}),
           ("A + C", (0, 4), {}), ("A + A + C", (0, 0, 4), {}), ("A + C + C", (0, 4, 4), {}),
           ("A + column fix-up + C", (0, 1, 4), {}), ("A + row carries + C", (0, 2, 4), {}),
           ("A + row fix-up + C", (0, 3, 4), {})]
times: dict = {}
for _ in range(3):
    for fname, (passes, mode) in filters.items():
        for label, k, attrs in subsets:
            keep = k
            saved = {name: getattr(rf, name) for name in attrs}
            for name, value in attrs.items():
                setattr(rf, name, value)
            ns = median_replayed_ns(dev, lambda i, p=passes, m=mode: rf._filter_gpu(g, p, (0, 1), m, "block", "bench",
                                                                                 out=out), repeats=7, replays=20,
                                    warmup_ns=20_000_000)
            times.setdefault((fname, label), []).append(ns)
            for name, value in saved.items():
                setattr(rf, name, value)
keep = None
for (fname, label), v in times.items():
    print(f"{fname:22s} {label:26s} {statistics.median(v) / 1e3:7.1f} us")

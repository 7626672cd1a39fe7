"""Per-pass times of the overlapped recursive filter (issue 6) on a 4096^2 float32 image.

    python tools/research/recfilter_passes.py

The full filter, then each dispatch alone (the others dropped from the batch: wrong results,
timing only): 0 pass A, 1 column fix-up, 2 row carries (ROW_CORR), 3 row fix-up, 4 pass C.
(The passes without their recursions, a define backdoor once, left the shipped shaders: issue 38.)
Each alone includes a few microseconds of fixed cost per measurement.
"""

import numpy as np

import pywgpuprims as pp
from pywgpuprims import _device
from pywgpuprims import recfilter as rf
from pywgpuprims._array import GpuArray
from pywgpuprims.bench import BenchContext

dev = pp.device()
ctx = BenchContext(dev, repeats=15, cpu=False)
side = 4096
n = side * side
g = GpuArray.empty((side, side), np.float32, dev)
dev.write(g.buffer, np.random.default_rng(1).standard_normal((side, side)).astype(np.float32).tobytes())
out = GpuArray.empty((side, side), np.float32, dev)
print(f"device: {dev.adapter_summary}")
print(f"copy of the image: {ctx.copy_ns(4 * n, g, out) / 1e3:.1f} us")

keep = None  # indices of the dispatches to record (None: all)
original = _device.Batch.dispatch


def dispatch(self, kernel, groups, params=None, **bindings):
    self._count = getattr(self, "_count", 0) + 1
    if keep is None or self._count - 1 in keep:
        original(self, kernel, groups, params=params, **bindings)


_device.Batch.dispatch = dispatch
b0, a, rho = rf._coefs(0.25, [-1.2, 0.45], "bench")
gb0, ga = rf._gaussian_coefs(16.0)
gb0, ga, grho = rf._coefs(gb0, ga, "bench")
cases = [("order 2, zero", [(b0, a, rho, True, True)], "zero"),
         ("Gaussian sigma 16, reflect", [(gb0, ga, grho, True, True)], "reflect")]
for name, passes, mode in cases:
    for label, k in [("whole filter", None), ("pass A", {0}), ("column fix-up", {1}), ("row carries", {2}),
                      ("row fix-up", {3}), ("pass C", {4})]:
        keep = k
        ns = ctx.gpu_ns(lambda i, p=passes, m=mode: rf._filter_gpu(g, p, (0, 1), m, "block", "bench", out=out))
        print(f"{name:28s} {label:22s} {ns / 1e3:7.1f} us" + (f"  {n / ns:.1f} G px/s" if k is None else ""))
keep = None

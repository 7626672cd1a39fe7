"""Per-dispatch GPU times of sat / recfilter (each dispatch submitted alone)."""
import statistics
import sys

import numpy as np

import pywgpuprims as pp
from pywgpuprims import _device
from pywgpuprims._array import GpuArray
from pywgpuprims.sat import _sat_gpu
from pywgpuprims import recfilter as rf

dev = pp.device()
_orig = _device.Batch.dispatch


def prof(fn, reps=5):
    _device.Batch.dispatch = lambda self, *a, **k: (_orig(self, *a, **k), self.submit())
    names = []
    try:
        fn()
        per = []
        for _ in range(reps):
            with dev.timer() as t:
                fn()
            per.append(t._each)
        # kernel names of the last call
    finally:
        _device.Batch.dispatch = _orig
    med = [statistics.median(x) for x in zip(*per)]
    return med


def tot(fn, reps=10):
    for _ in range(3):
        fn()
    with dev.timer() as t:
        for _ in range(reps):
            fn()
            t.mark()
    return statistics.median(t.laps)


rng = np.random.default_rng(0)
which = sys.argv[1:] or ["sat", "rf", "scan"]
if "sat" in which:
    side = 8192
    for w in (side, side - 4, side - 1):
      g = pp.asarray(rng.random((side, w), dtype=np.float32))
      for m in ("overlapped",):
        ms = prof(lambda: _sat_gpu(g, m))
        t = tot(lambda: _sat_gpu(g, m))
        print(f"sat {m} {side}x{w}: total {t/1e6:.3f} ms = {side*side/t:.1f} Gpx/s; per dispatch us:",
              [round(x / 1e3, 1) for x in ms], flush=True)
if "scan" in which:
    side = 8192
    g = pp.asarray(rng.random((side, side), dtype=np.float32))
    from pywgpuprims.scan import encode_scan
    out = GpuArray.empty((side, side), np.float32, dev)
    def f():
        b = dev.batch()
        encode_scan(b, g, out, "add", False)
        b.submit()
    t = tot(f)
    print(f"library row scan f32 {side}^2 (one direction): {t/1e6:.3f} ms = {side*side/t:.1f} Gpx/s", flush=True)
if "rf" in which:
    side = 4096
    g = pp.asarray(rng.random((side, side), dtype=np.float32))
    b0, a, rho = rf._coefs(0.25, [-1.2, 0.45], "bench")
    gb0, ga = rf._gaussian_coefs(16.0)
    gb0, ga, grho = rf._coefs(gb0, ga, "bench")
    for name, ps, mode in (("order2", [(b0, a, rho, True, True)], "zero"), ("gauss16", [(gb0, ga, grho, True, True)], "reflect")):
        for var, axes in (("overlapped", (0, 1)), ("per axis", (1, 0))):
            fn = lambda: rf._filter_gpu(g, ps, axes, mode, "block", "bench")
            ms = prof(fn)
            t = tot(fn)
            print(f"rf {name} {var} {side}^2: total {t/1e6:.3f} ms = {side*side/t:.1f} Gpx/s; per dispatch us:",
                  [round(x / 1e3, 1) for x in ms], flush=True)
if "rfx" in which:
    side = 4096
    g = pp.asarray(rng.random((side, side), dtype=np.float32))
    b0, a, rho = rf._coefs(0.25, [-1.2, 0.45], "bench")
    ps = [(b0, a, rho, True, True)]
    for axes in ((0, 1), (1, 0)):
        fn = lambda: rf._filter_gpu(g, ps, axes, "zero", "block", "bench")
        print(f"rfx {axes} base:", [round(x / 1e3, 1) for x in prof(fn)], flush=True)
        _d = _device.Batch.dispatch

        def io_only(self, kernel, groups, params=None, **b):
            if kernel.defines.get("BLOCK_A") or kernel.defines.get("BLOCK_C"):
                params = dict(params, causal=0, anti=0)
            return _d(self, kernel, groups, params, **b)
        _device.Batch.dispatch = io_only
        _orig = io_only
        print(f"rfx {axes} io only (A, C without the recursions):", [round(x / 1e3, 1) for x in prof(fn)], flush=True)
        _device.Batch.dispatch = _d
        _orig = _d
        rf._FIX_BATCH = 8
        print(f"rfx {axes} FB=8:", [round(x / 1e3, 1) for x in prof(fn)], flush=True)
        rf._FIX_BATCH = 16
if "rfy" in which:
    side = 4096
    g = pp.asarray(rng.random((side, side), dtype=np.float32))
    b0, a, rho = rf._coefs(0.25, [-1.2, 0.45], "bench")
    ps = [(b0, a, rho, True, True)]
    for axes in ((0, 1), (1, 0)):
        fn = lambda: rf._filter_gpu(g, ps, axes, "zero", "block", "bench")
        for wg in (64, 32, 16):
            rf._FIX_WG = wg
            print(f"rfy {axes} FIX_WG={wg}:", [round(x / 1e3, 1) for x in prof(fn)], flush=True)
        rf._FIX_WG = 64

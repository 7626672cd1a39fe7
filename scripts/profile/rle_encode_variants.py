"""Time ``rle_encode`` of 2^28 int32 (runs of ~16, then random 0..9) under device-option variants.

The numbers behind BENCHMARKS.md's sixth-session RLE table (issue 4). Run on a GPU machine:
``python scripts/profile/rle_encode_variants.py``. Each row is the median GPU time of the whole
call (clock raised first); ``rle_no_lookback`` gives wrong results and is there for timing only.
"""

import numpy as np

import pywgpuprims as pp
from pywgpuprims import rle
from pywgpuprims._array import GpuArray, asarray
from pywgpuprims._bench import BenchContext

VARIANTS = [{}, {"rle_no_lookback": True}, {"rle_lb_depth": 1}, {"rle_vpt": 12, "rle_prev_shuffle": False},
            {"rle_wg": 512, "rle_vpt": 6}, {"rle_wg": 512, "rle_vpt": 7},
            {"rle_wg": 512, "rle_vpt": 7, "rle_lb_depth": 1},
            {"rle_wg": 1024, "rle_vpt": 3}, {"rle_wg": 128, "rle_vpt": 13}, {"rle_compact_stage": 1024}]


def main(n: int = 1 << 28) -> None:
    dev = pp.device()
    ctx = BenchContext(dev, repeats=10, cpu=False)
    for runs in (True, False):
        x = rle._bench_input(ctx, n, runs)
        g = asarray(x, dev=dev)
        res = rle.RunLengths(GpuArray.empty((n,), np.int32, dev), GpuArray.empty((n,), np.uint32, dev),
                             rle._count_view(GpuArray.empty((16,), np.uint32, dev)), None, n)
        copy_ns = ctx.copy_ns(4 * n, g, res.values)
        print("runs of ~16" if runs else "random 0..9", f"copy {n / copy_ns:.0f} G el/s", flush=True)
        for v in VARIANTS:
            with dev.using(**v):
                ns = ctx.gpu_ns(lambda i, g=g, res=res: rle._run(
                    dev, lambda b, s: rle._record_rle(b, g, res, "fused", s)))
            print(f"  {v}: {ns / 1e3:.0f} us = {n / ns:.1f} G el/s", flush=True)


if __name__ == "__main__":
    main()

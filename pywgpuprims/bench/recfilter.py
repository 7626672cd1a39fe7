"""Benchmark entry ``recursive_filter`` (``recursive_filter``, ``gaussian_filter``)."""

from __future__ import annotations

import numpy as np

from .. import recfilter as rf
from .._array import GpuArray
from ._harness import BenchContext, benchmark
from .sat import bench_image


def _recfilter_entry(ctx: BenchContext, n: int) -> list[dict]:
    side, _, g, copy_ns = bench_image(ctx, n)
    n = side * side
    b0, a, rho = rf._coefs(0.25, [-1.2, 0.45], "bench")  # poles 0.6 +- 0.3i
    rows = []
    cuda_ns = None
    cuda_name = ""
    if ctx.torch:
        try:
            import torchaudio.functional as AF  # noqa: PLC0415

            t = ctx.torch
            x = t.rand((side, side), dtype=t.float32, device="cuda")
            ac = t.tensor([1.0, a[0], a[1]], device="cuda")
            bc = t.tensor([b0, 0.0, 0.0], device="cuda")
            cuda_ns = ctx.cuda_ns(lambda: AF.lfilter(x, ac, bc, clamp=False))
            cuda_name = "torchaudio lfilter, one direction, rows"
            del x
        except Exception:
            cuda_ns = None
    out = GpuArray.empty(g.shape, np.float32, g.device)
    gb0, ga = rf._gaussian_coefs(16.0)
    gb0, ga, grho = rf._coefs(gb0, ga, "bench")
    cases = [("order 2 c+a", [(b0, a, rho, True, True)], "zero", cuda_ns, cuda_name),
             ("gaussian sigma 16", [(gb0, ga, grho, True, True)], "reflect", None, "")]
    # (variant, axes, method): the overlapped block algorithm, the same per axis without the
    # row-column overlap (rows first), and the one-thread-per-line baseline.
    for name, passes, mode, c_ns, c_name in cases:
        for variant, axes, method in (("block overlapped", (0, 1), "block"),
                                      ("block per axis", (1, 0), "block"), ("rt", (0, 1), "rt")):
            ns = ctx.gpu_ns(lambda i, ax=axes, m=method, ps=passes, md=mode:
                            rf._filter_gpu(g, ps, ax, md, m, "bench", out=out))
            rows.append(ctx.row("recursive_filter", f"{variant} {name} rows+cols {side}^2", n, ns,
                                bytes_moved=8 * n, baseline_ns=copy_ns, cuda_ns=c_ns, cuda_name=c_name,
                                unit="G px/s"))
        # past one storage binding: the same image with the binding limit at half its size (two
        # bands of rows; down the columns the tile passes go band by band, the carries over the image)
        with g.device.using(max_binding=-(-4 * n // 2)):
            ns = ctx.gpu_ns(lambda i, ps=passes, md=mode: rf._filter_gpu(g, ps, (0, 1), md, "block", "bench", out=out))
        rows.append(ctx.row("recursive_filter", f"block {name} rows+cols {side}^2, binding = half", n, ns,
                            bytes_moved=8 * n, baseline_ns=copy_ns, unit="G px/s"))
    return rows


_recfilter_entry.default_sizes = [4096 * 4096]
benchmark("recursive_filter")(_recfilter_entry)

"""Benchmark entry ``sat`` (``summed_area_table``), and the test image the recursive filter's entry shares."""

from __future__ import annotations

import numpy as np

from .._array import GpuArray
from ..sat import _RT_MAX, _sat_gpu
from ._harness import BenchContext, benchmark


def bench_image(ctx: BenchContext, n: int):
    """A random float32 square image of about ``n`` pixels (512^2 at most on a CPU adapter), on the
    host and on the GPU, and the same-run copy time over its own buffer: ``(side, img, g, copy_ns)``."""
    dev = ctx.dev
    side = int(round(n ** 0.5))
    if dev.info.get("adapter_type") == "CPU":
        side = min(side, 512)  # lavapipe: keep it short
    img = ctx.rng.random((side, side), dtype=np.float32)
    g = GpuArray.empty((side, side), np.float32, dev)
    dev.write(g.buffer, img.tobytes())
    copy_ns = ctx.copy_ns(img.nbytes, g, GpuArray.empty((side, side), np.float32, dev))
    return side, img, g, copy_ns


def _sat_entry(ctx: BenchContext, n: int) -> list[dict]:
    dev = ctx.dev
    side, img, g, copy_ns = bench_image(ctx, n)
    n = side * side
    cuda_ns = None
    if ctx.torch:
        t = ctx.torch
        a = t.rand((side, side), dtype=t.float32, device="cuda")
        cuda_ns = ctx.cuda_ns(lambda: a.cumsum(0).cumsum(1))
        del a
    cpu_ns = ctx.cpu_ns(lambda: img.cumsum(0).cumsum(1)) if n <= 1 << 24 else None
    rows = []
    for method in ("overlapped", "rt"):
        if method == "rt" and side > _RT_MAX:
            continue
        ns = ctx.gpu_ns(lambda i, m=method: _sat_gpu(g, m))
        rows.append(ctx.row("sat", f"{method} f32 {side}^2", n, ns, bytes_moved=8 * n, baseline_ns=copy_ns,
                            cuda_ns=cuda_ns, cuda_name="torch cumsum(0).cumsum(1)", cpu_ns=cpu_ns,
                            cpu_name="numpy cumsum(0).cumsum(1)", unit="G px/s"))
    # past one storage binding: the same image with the binding limit at half its size (two bands)
    with dev.using(max_binding=-(-4 * n // 2)):
        ns = ctx.gpu_ns(lambda i: _sat_gpu(g))
    rows.append(ctx.row("sat", f"overlapped f32 {side}^2, binding = half", n, ns, bytes_moved=8 * n,
                        baseline_ns=copy_ns, unit="G px/s"))
    gu = GpuArray.empty((side, side), np.uint32, dev)
    dev.write(gu.buffer, ctx.rng.integers(0, 256, n, dtype=np.uint32).tobytes())
    ns = ctx.gpu_ns(lambda i: _sat_gpu(gu))
    rows.append(ctx.row("sat", f"overlapped u32 {side}^2", n, ns, bytes_moved=8 * n, baseline_ns=copy_ns,
                        unit="G px/s"))
    return rows


_sat_entry.default_sizes = [8192 * 8192]
benchmark("sat")(_sat_entry)

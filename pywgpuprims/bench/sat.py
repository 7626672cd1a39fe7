"""Benchmark entry ``sat`` (``summed_area_table``), and the test image the recursive filter's entry shares."""

from __future__ import annotations

import contextlib

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
    ns = ctx.gpu_ns(lambda i: _sat_gpu(gu, dtype=np.uint32))
    rows.append(ctx.row("sat", f"overlapped u32 {side}^2", n, ns, bytes_moved=8 * n, baseline_ns=copy_ns,
                        unit="G px/s"))
    g8 = GpuArray.empty((side, side), np.uint8, dev)  # a uint8 image read packed, a uint32 table
    dev.write(g8.buffer, ctx.rng.integers(0, 256, n, dtype=np.uint8).tobytes())
    ns = ctx.gpu_ns(lambda i: _sat_gpu(g8, dtype=np.uint32))
    rows.append(ctx.row("sat", f"overlapped u8->u32 {side}^2", n, ns, bytes_moved=5 * n,
                        baseline_ns=copy_ns * 5 / 8, unit="G px/s"))
    return rows + _wide_rows(ctx, side)


def _wide_rows(ctx: BenchContext, side: int) -> list[dict]:
    """64-bit tables (numpy's result dtypes): int64 through shader-int64 and through word pairs
    (forced), a uint8 image's uint64 table (input read packed), float64 where the adapter has
    shader-f64; torch's ``cumsum(0).cumsum(1)`` on the same dtypes, the copy over the 64-bit
    table's own buffers as the yardstick."""
    dev = ctx.dev
    n = side * side
    t = ctx.torch
    out = GpuArray.empty((side, side), np.int64, dev)
    cases = [("i64", np.int64, lambda: ctx.rng.integers(-2**40, 2**40, (side, side)),
              lambda: t.randint(-2**40, 2**40, (side, side), dtype=t.int64, device="cuda")),
             ("u8->u64", np.uint8, lambda: ctx.rng.integers(0, 256, (side, side)),
              lambda: t.randint(0, 256, (side, side), dtype=t.uint8, device="cuda"))]
    if "shader-f64" in dev.features:
        cases.append(("f64", np.float64, lambda: ctx.rng.standard_normal((side, side)),
                      lambda: t.randn((side, side), dtype=t.float64, device="cuda")))
    rows = []
    copy_ns = None
    fits = 8 * n <= dev.max_binding  # the copy yardstick binds the whole table
    for tag, dt, host, cuda in cases:
        g = GpuArray.empty((side, side), dt, dev)
        dev.write(g.buffer, np.ascontiguousarray(host(), dtype=dt).tobytes())
        if copy_ns is None and fits:
            copy_ns = ctx.copy_ns(8 * n, g, out)
        cuda_ns = None
        if t:
            a = cuda()
            cuda_ns = ctx.cuda_ns(lambda a=a: a.cumsum(0).cumsum(1))
            del a
        paths = [("", contextlib.nullcontext)]
        if dt != np.float64:
            if "shader-int64" in dev.features:
                paths = [(" shader-int64", contextlib.nullcontext),
                         (" pairs (forced)", lambda: dev.using(hide_shader_int64=True))]
            else:
                paths = [(" pairs", contextlib.nullcontext)]
        moved = (np.dtype(dt).itemsize + 8) * n
        for label, hook in paths:
            with hook():
                ns = ctx.gpu_ns(lambda i, g=g: _sat_gpu(g))
            rows.append(ctx.row("sat", f"overlapped {tag}{label} {side}^2", n, ns, bytes_moved=moved,
                                baseline_ns=copy_ns and copy_ns * moved / (16 * n), cuda_ns=cuda_ns,
                                cuda_name=f"torch cumsum(0).cumsum(1) {tag.split('->')[0]}", unit="G px/s"))
        del g
    if copy_ns:
        rows.append(ctx.row("copy", f"wgsl, same 64-bit buffers {side}^2", n, copy_ns, bytes_moved=16 * n))
    return rows


_sat_entry.default_sizes = [8192 * 8192]
benchmark("sat")(_sat_entry)

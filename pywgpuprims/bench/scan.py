"""Benchmark entry ``scan`` (scan and reduce): ``python -m pywgpuprims.bench scan``.

``PYWGPUPRIMS_SCAN_SWEEP=1`` adds tile shapes, lookback settings and reduce loads as rows."""

from __future__ import annotations

import contextlib
import os

import numpy as np

from .._array import GpuArray
from ..device_copy import copy_pass
from ..scan import reduce, scan
from ._harness import BenchContext, benchmark


def _scan_entry(ctx: BenchContext, n: int) -> list[dict]:
    dev = ctx.dev
    rows = []
    inputs = [GpuArray.empty((n,), np.uint32, dev) for _ in range(2)]
    for a in inputs:
        dev.write(a.buffer, ctx.rng.integers(0, 2**32, n, dtype=np.uint32).tobytes())
    out = GpuArray.empty((n,), np.uint32, dev)
    copy_ns = ctx.copy_ns(4 * n, inputs[0], out)
    copy8_ns = ctx.gpu_ns(lambda i: copy_pass(dev, inputs[0], out, n // 4, True, vpt=8))
    read_ns = ctx.gpu_ns(lambda i: copy_pass(dev, inputs[0], out, n // 4, copy=False))
    cuda_ns = cuda_red_ns = None
    if ctx.torch:
        t = ctx.torch
        a = t.randint(0, 2**31 - 1, (n,), dtype=t.int32, device="cuda")
        cuda_ns = ctx.cuda_ns(lambda: t.cumsum(a, 0, dtype=t.int32))
        cuda_red_ns = ctx.cuda_ns(lambda: a.sum(dtype=t.int32))
        del a
    host = ctx.rng.integers(0, 2**32, n, dtype=np.uint32)
    cpu_ns = ctx.cpu_ns(lambda: np.cumsum(host, dtype=np.uint32))
    variants = [("single-pass sg", "single_pass", {}), ("single-pass wgmem", "single_pass", {"scan_subgroups": False}),
                ("fallback forced (1/2 tiles)", "single_pass", {"scan_withhold_period": 2}),
                ("reduce-then-scan", "rts", {})]
    if os.environ.get("PYWGPUPRIMS_SCAN_SWEEP"):
        for wg, vpt in [(192, 12), (192, 16), (256, 11), (384, 8)]:
            variants.append((f"sweep wg{wg} vpt{vpt}", "single_pass", {"scan_wg": wg, "scan_vec4_per_thread": vpt}))
        variants.append(("sweep spin 8", "single_pass", {"scan_spin_limit": 8}))
    if not dev.has_subgroups:
        variants = variants[1:]
    stats = GpuArray.empty((4 * 64,), np.uint32, dev)
    for name, method, opts in variants:
        with dev.using(**opts):
            ns = ctx.gpu_ns(lambda i, m=method: scan(inputs[i % 2], out=out, method=m))
            fallbacks = None
        if method == "single_pass":
            with dev.using(**opts, scan_stats_buffer=stats.buffer):
                scan(inputs[0], out=out)
            fallbacks = int(stats.numpy()[2])
        rows.append(ctx.row("scan", name, n, ns, bytes_moved=8 * n, baseline_ns=copy_ns, cuda_ns=cuda_ns,
                            cuda_name="torch.cumsum", cpu_ns=cpu_ns))
        if fallbacks is not None:
            rows[-1]["fallbacks"] = fallbacks
    rows.append(ctx.row("copy", "wgsl, same buffers", n, copy_ns, bytes_moved=8 * n))
    rows.append(ctx.row("copy", "wgsl 8 vec4/inv, same buffers", n, copy8_ns, bytes_moved=8 * n))
    for loads in ([8, 24, 32] if os.environ.get("PYWGPUPRIMS_SCAN_SWEEP") else []):
        with dev.using(reduce_loads=loads):
            ns = ctx.gpu_ns(lambda i: reduce(inputs[i % 2], dtype=np.uint32))
        rows.append(ctx.row("reduce", f"sweep loads {loads}", n, ns, bytes_moved=4 * n, baseline_ns=read_ns,
                            baseline="read"))
    ns = ctx.gpu_ns(lambda i: reduce(inputs[i % 2], dtype=np.uint32))
    rows.append(ctx.row("reduce", "two-pass", n, ns, bytes_moved=4 * n, baseline_ns=read_ns, baseline="read",
                        cuda_ns=cuda_red_ns, cuda_name="torch.sum",
                        cpu_ns=ctx.cpu_ns(lambda: host.sum(dtype=np.uint32))))
    rows += _wide_rows(ctx, n)
    return rows


def _wide_rows(ctx: BenchContext, n: int) -> list[dict]:
    """int64 and float64 (numpy's default results) beside the copy over the same bytes and torch
    on the same dtype, the single pass beside reduce-then-scan; int64 also through word pairs
    (adapters without shader-int64); uint32 into uint64; float32 add with deterministic=True
    (reduce-then-scan) beside the default single pass."""
    rows = _deterministic_rows(ctx, n)
    dev = ctx.dev
    rows += _dtype_rows(ctx, n, np.int64)
    if "shader-f64" in dev.features:
        rows += _dtype_rows(ctx, n, np.float64)
    rows += _widening_rows(ctx, n)
    return rows


def _widening_rows(ctx: BenchContext, n: int) -> list[dict]:
    """uint32 input into numpy's default uint64 result (``np.cumsum`` of uint32), single pass and
    reduce-then-scan, beside a copy over the same bytes (read 4n, write 8n) and torch's int32 ->
    int64 cumsum."""
    dev = ctx.dev
    if 8 * n > dev.max_binding:
        return []
    inputs = [GpuArray.empty((n,), np.uint32, dev) for _ in range(2)]
    for a in inputs:
        dev.write(a.buffer, ctx.rng.integers(0, 2**32, n, dtype=np.uint32).tobytes())
    out = GpuArray.empty((n,), np.uint64, dev)
    other = GpuArray.empty((n,), np.uint64, dev)
    copy_ns = ctx.copy_ns(6 * n, other, out)
    cuda_scan = None
    if ctx.torch:
        t = ctx.torch
        a = t.randint(0, 2**31 - 1, (n,), dtype=t.int32, device="cuda")
        cuda_scan = ctx.cuda_ns(lambda: t.cumsum(a, 0, dtype=t.int64))
        del a
    rows = []
    for name, method in [("", "single_pass"), (" reduce-then-scan", "rts")]:
        ns = ctx.gpu_ns(lambda i, m=method: scan(inputs[i % 2], out=out, method=m))
        rows.append(ctx.row("scan", f"uint32 -> uint64{name}", n, ns, bytes_moved=12 * n, baseline_ns=copy_ns,
                            cuda_ns=cuda_scan, cuda_name="torch.cumsum int32 -> int64"))
    rows.append(ctx.row("copy", "wgsl, 12 bytes per element", n, copy_ns, bytes_moved=12 * n))
    return rows


def _deterministic_rows(ctx: BenchContext, n: int) -> list[dict]:
    dev = ctx.dev
    f32 = [GpuArray.empty((n,), np.float32, dev) for _ in range(2)]
    for a in f32:
        dev.write(a.buffer, ctx.rng.standard_normal(n).astype(np.float32).tobytes())
    out = GpuArray.empty((n,), np.float32, dev)
    copy_ns = ctx.copy_ns(4 * n, f32[0], out)
    rows = []
    for name, det in [("float32 add, single pass (default)", False), ("float32 add, deterministic=True", True)]:
        ns = ctx.gpu_ns(lambda i, det=det: scan(f32[i % 2], out=out, deterministic=det))
        rows.append(ctx.row("scan", name, n, ns, bytes_moved=8 * n, baseline_ns=copy_ns))
    return rows


def _dtype_rows(ctx: BenchContext, n: int, dt) -> list[dict]:
    dev = ctx.dev
    tag = np.dtype(dt).name
    if 8 * n > dev.max_binding:
        return []  # the copy yardstick binds the whole array: these rows stop at the binding limit
    inputs = [GpuArray.empty((n,), dt, dev) for _ in range(2)]
    for a in inputs:
        v = ctx.rng.integers(-2**40, 2**40, n) if dt == np.int64 else ctx.rng.standard_normal(n)
        dev.write(a.buffer, v.astype(dt).tobytes())
    out = GpuArray.empty((n,), dt, dev)
    copy_ns = ctx.copy_ns(8 * n, inputs[0], out)
    read_ns = ctx.gpu_ns(lambda i: copy_pass(dev, inputs[0], out, n // 2, copy=False))
    cuda_scan = cuda_red = None
    if ctx.torch:
        t = ctx.torch
        ta = t.randint(-2**40, 2**40, (n,), dtype=t.int64, device="cuda") if dt == np.int64 else \
            t.randn(n, dtype=t.float64, device="cuda")
        cuda_scan = ctx.cuda_ns(lambda: t.cumsum(ta, 0))
        cuda_red = ctx.cuda_ns(lambda: ta.sum())
        del ta
    paths = [("", contextlib.nullcontext)]
    if dt == np.int64:
        native = "shader-int64" in dev.features
        pairs = (" pairs (forced)", lambda: dev.using(hide_shader_int64=True))
        paths = [(" shader-int64", contextlib.nullcontext), pairs] if native else [(" pairs", contextlib.nullcontext)]
    rows = []
    stats = GpuArray.empty((4 * 64,), np.uint32, dev)
    # the single pass (the default), the reduce-then-scan beside it (method="rts"; float64's
    # deterministic=True), and with PYWGPUPRIMS_SCAN_SWEEP other tiles of the single pass
    scans = [("", {}, "single_pass"), (" reduce-then-scan", {}, "rts")]
    if os.environ.get("PYWGPUPRIMS_SCAN_SWEEP"):
        scans += [(f" sweep vec4/inv {v}", {"scan_vec4_per_thread": v}, "single_pass") for v in (8, 16)]
        scans.append((" sweep spin 8", {"scan_spin_limit": 8}, "single_pass"))
    for label, hook in paths:
        with hook():
            for name, opts, method in scans:
                with dev.using(**opts):
                    ns = ctx.gpu_ns(lambda i, m=method: scan(inputs[i % 2], out=out, method=m))
                rows.append(ctx.row("scan", f"{tag}{label}{name}", n, ns, bytes_moved=16 * n, baseline_ns=copy_ns,
                                    cuda_ns=cuda_scan, cuda_name=f"torch.cumsum {tag}"))
                if method == "single_pass":
                    dev.write(stats.buffer, np.zeros(4 * 64, np.uint32).tobytes())
                    with dev.using(**opts, scan_stats_buffer=stats.buffer):
                        scan(inputs[0], out=out)
                    st = stats.numpy().reshape(-1, 4)
                    rows[-1]["fallbacks"] = int(st[:, 2].sum())
            ns = ctx.gpu_ns(lambda i: reduce(inputs[i % 2]))
            rows.append(ctx.row("reduce", f"{tag}{label}", n, ns, bytes_moved=8 * n, baseline_ns=read_ns,
                                baseline="read", cuda_ns=cuda_red, cuda_name=f"torch.sum {tag}"))
    rows.append(ctx.row("copy", f"wgsl, same {tag} buffers", n, copy_ns, bytes_moved=16 * n))
    return rows


_scan_entry.default_sizes = [1 << 20, 1 << 24, 1 << 28]
benchmark("scan")(_scan_entry)

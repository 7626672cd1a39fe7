"""Benchmark entry ``copy``: the WGSL copy and read-only passes every other row is measured against."""

from __future__ import annotations

import numpy as np

from .._array import GpuArray
from ..device_copy import copy_pass
from ._harness import BenchContext, benchmark


def _copy_entry(ctx: BenchContext, n: int) -> list[dict]:
    nbytes = 4 * n
    rows = []
    copy_ns = ctx.copy_ns(nbytes)
    cuda_ns = None
    if ctx.torch:
        t = ctx.torch
        a = t.randint(0, 2**31 - 1, (n,), dtype=t.int32, device="cuda")
        b = t.empty_like(a)
        cuda_ns = ctx.cuda_ns(lambda: b.copy_(a))
        del a, b
    host = ctx.rng.integers(0, 2**32, n, dtype=np.uint32)
    cpu_ns = ctx.cpu_ns(lambda: host.copy())
    rows.append(ctx.row("copy", "wgsl", n, copy_ns, bytes_moved=2 * nbytes, cuda_ns=cuda_ns,
                        cuda_name="torch copy_", cpu_ns=cpu_ns))
    rows.append(ctx.row("read", "wgsl", n, ctx.read_ns(nbytes), bytes_moved=nbytes))
    src = GpuArray.empty((n,), np.uint32, ctx.dev)
    dst = GpuArray.empty((n,), np.uint32, ctx.dev)
    for vpt in (4, 8, 16):
        ns = ctx.gpu_ns(lambda i, v=vpt: copy_pass(ctx.dev, src, dst, n // 4, True, vpt=v))
        rows.append(ctx.row("copy", f"wgsl {vpt} vec4/invocation", n, ns, bytes_moved=2 * nbytes))
    return rows


_copy_entry.default_sizes = [1 << 20, 1 << 24, 1 << 28]
benchmark("copy")(_copy_entry)

"""Benchmark entry ``correlate``: ``python -m pywgpuprims.bench correlate``."""

from __future__ import annotations

import os

import numpy as np

from .._array import GpuArray
from ..conv import Config, _cached_config, _fit, _is_cpu, correlate, default_config, tune
from ._harness import BenchContext, benchmark


def _label(cfg: Config, ksize) -> str:
    loop = ksize[1] * ksize[2] * cfg.u * cfg.kb > cfg.unroll
    return f"{cfg.name} {'row-loop' if loop else 'plane-unrolled'}"


def _bench_cases(cpu: bool, sweep: bool) -> list[tuple[int, int]]:
    env = os.environ.get("PYWGPUPRIMS_CORRELATE_CASES")
    if env:  # e.g. "7:8,5:16": kernel size : K
        return [(int(a), int(b)) for a, b in (c.split(":") for c in env.split(","))]
    if sweep:
        return [(7, 8)] if cpu else [(7, 8), (7, 32), (5, 16), (3, 32), (7, 1)]
    if cpu:
        return [(3, 1), (3, 8), (5, 8), (7, 8)]
    return [(ks, kk) for ks in (3, 5, 7) for kk in (1, 8, 16, 32)]


def _bench_rows(ctx: BenchContext, n: int, sweep: bool) -> list[dict]:
    dev = ctx.dev
    cpu = _is_cpu(dev)
    if cpu:
        n = min(n, 40)
    vol = ctx.rng.integers(0, 256, (n, n, n), dtype=np.uint8)
    g = GpuArray.empty(vol.shape, np.uint8, dev)
    dev.write(g.buffer, vol.tobytes() + b"\0" * (-vol.nbytes % 4))
    copy_ns = ctx.copy_ns(vol.nbytes, g, GpuArray.empty(vol.shape, np.uint8, dev))  # over the volume's buffer
    rows = []
    for ks, kk in _bench_cases(cpu, sweep):
        w = ctx.rng.standard_normal((kk, ks, ks, ks)).astype(np.float32)
        o = n - ks + 1
        work = 2.0 * kk * ks ** 3 * o ** 3 / 1e3  # FLOP / 1e3, so that FLOP/ns / 1e3 reads as TFLOP/s
        cuda_ns = None
        if ctx.torch is not None:
            t = ctx.torch
            t.backends.cudnn.allow_tf32 = False
            t.backends.cuda.matmul.allow_tf32 = False
            tv = t.from_numpy(vol.astype(np.float32)).cuda()[None, None]
            tw = t.from_numpy(w).cuda()[:, None]
            cuda_ns = ctx.cuda_ns(lambda t=t, tv=tv, tw=tw: t.nn.functional.conv3d(tv, tw))
            del tv, tw

        def add(c: Config, ns: float, ks=ks, kk=kk, work=work, cuda_ns=cuda_ns) -> None:
            rows.append(ctx.row("correlate", f"{ks}^3 K{kk} {_label(c, (ks,) * 3)}", n ** 3, ns,
                                bytes_moved=vol.nbytes, baseline_ns=copy_ns, cuda_ns=cuda_ns,
                                cuda_name="torch conv3d fp32", unit="TFLOP/s", work=work))

        # One result buffer holds at most max_buffer bytes: larger K runs as several calls.
        kc = max(1, min(kk, dev.max_buffer // (4 * o ** 3)))
        if sweep:
            if kc < kk:
                print(f"correlate sweep: K={kk} does not fit one result buffer; tuning K={kc}")
            tune(g, w[:kc], save=bool(os.environ.get("PYWGPUPRIMS_SAVE_TUNING")), repeats=ctx.repeats,
                 on_result=lambda c, ns, kc=kc, kk=kk, work=work, cn=cuda_ns: add(
                     c, ns, kk=kc, work=work * kc / kk, cuda_ns=None if kc < kk else cn))
        else:
            c = _fit(dev, (ks,) * 3, kk, _cached_config(dev, (ks,) * 3, kk, np.uint8)
                     or default_config(dev, (ks,) * 3, kk))
            parts = [(s, min(kk, s + kc)) for s in range(0, kk, kc)]
            outs = [GpuArray.empty((b - a, o, o, o), np.float32, dev) for a, b in parts]

            def run_all(i, w=w, c=c, parts=parts, outs=outs) -> None:
                for (a, b), out in zip(parts, outs, strict=True):
                    correlate(g, w[a:b], output_shape="valid", config=c, out=out)

            add(c, ctx.gpu_ns(run_all))
            del outs
    return rows


def _band_rows(ctx: BenchContext) -> list[dict]:
    """A 2-D float32 image, 4 kernels of 5 x 5, 'same' reflect: in one binding, and with the binding
    limit at half the image (bands of rows, each read with the kernel's 4 rows of overlap)."""
    dev = ctx.dev
    side = 512 if dev.info.get("adapter_type") == "CPU" else 8192
    g = GpuArray.empty((side, side), np.float32, dev)
    dev.write(g.buffer, ctx.rng.random((side, side), dtype=np.float32).tobytes())
    w = ctx.rng.standard_normal((4, 5, 5)).astype(np.float32)
    out = GpuArray.empty((4, side, side), np.float32, dev)
    rows = []
    for label, limit in (("", None), (", binding = half", -(-4 * side * side // 2))):
        with dev.using(max_binding=limit):
            ns = ctx.gpu_ns(lambda i: correlate(g, w, "reflect", out=out))
        rows.append(ctx.row("correlate", f"2-D f32 {side}^2 5x5 K4 same{label}", side * side, ns,
                            bytes_moved=4 * side * side * 5, work=2 * 25 * 4 * side * side / 1e3, unit="TFLOP/s"))
    return rows


def _correlate_entry(ctx: BenchContext, n: int) -> list[dict]:
    """uint8 n^3 volume, 'valid' mode, K kernels of size k^3 (rate in TFLOP/s, 2 per multiply-add).

    Environment: ``PYWGPUPRIMS_CORRELATE_SWEEP=1`` sweeps launch configurations (outputs per
    invocation, kernel block, unrolling, output planes, workgroup shape, double buffering) instead,
    one row per variant; with ``PYWGPUPRIMS_SAVE_TUNING=1`` the best is cached for this device.
    ``PYWGPUPRIMS_CORRELATE_CASES="7:8,5:16"`` picks the (kernel size : K) cases.
    """
    rows = _bench_rows(ctx, n, sweep=bool(os.environ.get("PYWGPUPRIMS_CORRELATE_SWEEP")))
    if not os.environ.get("PYWGPUPRIMS_CORRELATE_SWEEP"):
        rows += _band_rows(ctx)
    if ctx.torch is not None:  # the same-machine float32 matrix product the target is set against
        t = ctx.torch
        t.backends.cuda.matmul.allow_tf32 = False
        m = 8192
        a = t.randn(m, m, device="cuda")
        b = t.randn(m, m, device="cuda")
        ns = ctx.cuda_ns(lambda: a @ b)
        rows.append({"primitive": "matmul", "variant": "torch fp32, TF32 off, 8192^3", "n": m,
                     "gpu_ms": ns / 1e6, "rate": 2 * m**3 / ns / 1e3, "unit": "TFLOP/s"})
        del a, b
    return rows


_correlate_entry.default_sizes = [256]
benchmark("correlate")(_correlate_entry)

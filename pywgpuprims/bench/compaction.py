"""Benchmark entries ``rle`` (``rle_encode``, ``rle_decode``) and ``compact`` (``compact``, ``nonzero``).

Rows "binding = half" force the chunked path past one storage binding on the same input (the
``max_binding`` hook at about half the input's bytes): issue 41's target is >= 90% of the
in-binding rate. Rows "int64" run 64-bit values (pairs of 32-bit words) through the public calls:
"fused int64" compact is one pass of rle/compact.wgsl; rle_encode one pass of rle/fused.wgsl
(run starts), then the values and lengths gathered.
"""

from __future__ import annotations

import numpy as np

from .._array import GpuArray, asarray
from .._device import Device
from ..compaction import (
    Compacted,
    RunLengths,
    _count_view,
    _record_compact,
    _record_compact_chunked,
    _record_decode,
    _record_decode_runlengths,
    _record_decode_windows,
    _record_rle,
    _record_rle_chunked,
    _run,
    _runs_fit,
    _tile,
    compact,
    flatnonzero,
    rle_decode,
    rle_encode,
)
from ..scan import record_scan
from ._harness import BenchContext, benchmark


def _bench_input(ctx: BenchContext, n: int, runs: bool) -> np.ndarray:
    """int32 values 0..9: independent per element, or in runs of 1..31 (mean 16)."""
    if not runs:
        return ctx.rng.integers(0, 10, n, dtype=np.int32)
    lens = ctx.rng.integers(1, 32, n // 15 + 256, dtype=np.int64)  # enough runs for n elements
    vals = ctx.rng.integers(0, 10, lens.size, dtype=np.int32)
    x = np.repeat(vals, lens)[:n]
    assert x.size == n
    return x


def _numpy_rle(x: np.ndarray):
    st = np.flatnonzero(x[1:] != x[:-1]) + 1
    st = np.concatenate([[0], st])
    return x[st], np.diff(np.append(st, x.size)).astype(np.uint32)


def _variants(dev: Device, primitive: str) -> list[tuple[str, str, dict]]:
    """(row name, method, test hooks) for the encode ("rle") or compact rows."""
    vpt_opt = "rle_vec4_per_thread" if primitive == "rle" else "rle_compact_vec4_per_thread"
    sweep = (6, 13) if primitive == "rle" else (4, 12)
    v = [("fused", "fused", {})] + [(f"fused vpt{k}", "fused", {vpt_opt: k}) for k in sweep]
    if dev.has_subgroups:
        v.append(("fused wgmem" + (" (staged)" if primitive == "rle" else ""), "fused", {"rle_subgroups": False}))
    v += [("fused, fallback forced 1/2", "fused", {"rle_withhold_period": 2}), ("parle", "parle", {})]
    return v


def _bench_size(ctx: BenchContext, n: int) -> int:
    return max(1 << 12, n >> 8) if ctx.dev.info.get("adapter_type") == "CPU" else n  # lavapipe: keep it short


def _rle_entry(ctx: BenchContext, n: int) -> list[dict]:
    n = _bench_size(ctx, n)
    return _rle_rows(ctx, n, False) + _rle_rows(ctx, n, True)


def _rle_rows(ctx: BenchContext, n: int, runs: bool) -> list[dict]:
    dev = ctx.dev
    rows = []
    t = ctx.torch
    label = "runs~16" if runs else "random 0..9"
    x = _bench_input(ctx, n, runs)
    g = asarray(x, dev=dev)
    starts = GpuArray.empty((n + 1,), np.uint32, dev) if 4 * (n + 1) <= dev.max_binding else None
    res = RunLengths(GpuArray.empty((n,), np.int32, dev), GpuArray.empty((n,), np.uint32, dev),
                     _count_view(GpuArray.empty((16,), np.uint32, dev)), starts, n)
    out = GpuArray.empty((n,), np.int32, dev)
    # the yardstick runs over this primitive's own memory (fresh 1 GiB buffers differ on an H100)
    copy_ns = ctx.copy_ns(4 * n, g, res.values)
    rows.append(ctx.row("copy", "wgsl, rle_encode buffers", n, copy_ns, bytes_moved=8 * n))
    dec_copy_ns = ctx.copy_ns(4 * n, res.values, out)
    cuda_ns = cuda_dec_ns = None
    if t:
        a = t.from_numpy(x).cuda()
        cuda_ns = ctx.cuda_ns(lambda: t.unique_consecutive(a, return_counts=True))
        uv, uc = t.unique_consecutive(a, return_counts=True)
        cuda_dec_ns = ctx.cuda_ns(lambda: t.repeat_interleave(uv, uc, output_size=n))
        del a, uv, uc
    cpu_ns = ctx.cpu_ns(lambda: _numpy_rle(x))
    for name, m, opts in _variants(dev, "rle"):
        if m == "parle" and res.starts is None:
            continue  # the run starts with their sentinel do not fit one binding
        with dev.using(**opts):
            ns = ctx.gpu_ns(lambda i, m=m: _run(dev, lambda b: _record_rle(b, g, res, m)))
            _run(dev, lambda b, m=m: _record_rle(b, g, res, m))
        rows.append(ctx.row("rle_encode", f"{name} int32 {label}", n, ns, bytes_moved=4 * n, baseline_ns=copy_ns,
                            cuda_ns=cuda_ns, cuda_name="torch.unique_consecutive", cpu_ns=cpu_ns,
                            cpu_name="numpy flatnonzero(diff)"))
        vals, cnts = res.numpy()
        assert np.array_equal(np.repeat(vals, cnts), x), f"rle_encode ({name}) bench result is wrong"
    # decoding as a user would after reading the number of runs: exact-length values and counts
    k = vals.size
    gv = GpuArray(dev, res.values.buffer, (k,), np.int32)
    gc = GpuArray(dev, res.counts.buffer, (k,), np.uint32)
    kmeta = asarray(np.array([k, 0, 0, 0], np.uint32), dev=dev)
    ends = GpuArray.empty((k,), np.uint32, dev)

    def decode(b):
        record_scan(b, gc, ends, "add", False)
        _record_decode(b, gv, ends, 0, kmeta, out)

    ns = ctx.gpu_ns(lambda i: _run(dev, decode))
    rows.append(ctx.row("rle_decode", f"int32 {label} (scan + expand)", n, ns, bytes_moved=4 * n,
                        baseline_ns=dec_copy_ns, cuda_ns=cuda_dec_ns, cuda_name="torch.repeat_interleave",
                        cpu_ns=ctx.cpu_ns(lambda: np.repeat(vals, cnts)), cpu_name="numpy repeat"))
    assert np.array_equal(out.numpy(), x), "rle_decode bench result is wrong"
    # decoding straight from the fused encoder's result (no read-back): per-tile run ends + expand
    head = GpuArray.empty((2 * -(-n // _tile(dev, np.int32)),), np.uint32, dev)
    fused = RunLengths(res.values, res.counts, res.n_runs, None, n, head, _tile(dev, np.int32))
    _run(dev, lambda b: _record_rle(b, g, fused, "fused"))
    ends_all = GpuArray.empty((n,), np.uint32, dev)
    ns = ctx.gpu_ns(lambda i: _run(dev, lambda b: _record_decode_runlengths(b, fused, out, ends_all)))
    rows.append(ctx.row("rle_decode", f"int32 {label} (from RunLengths)", n, ns, bytes_moved=4 * n,
                        baseline_ns=dec_copy_ns, cuda_ns=cuda_dec_ns, cuda_name="torch.repeat_interleave"))
    assert np.array_equal(out.numpy(), x), "rle_decode (RunLengths) bench result is wrong"
    # the same past one binding: two chunks joined, and decoding in two windows
    with dev.using(max_binding=_two_chunks(n)):
        chunked = RunLengths(res.values, res.counts, res.n_runs, None, n)
        ns = ctx.gpu_ns(lambda i: _run(dev, lambda b: _record_rle_chunked(b, g, chunked, "fused")))
        rows.append(ctx.row("rle_encode", f"fused int32 {label}, binding = half", n, ns, bytes_moved=4 * n,
                            baseline_ns=copy_ns))
        vals, cnts = chunked.numpy()
        assert np.array_equal(np.repeat(vals, cnts), x), "rle_encode (binding = half) bench result is wrong"
        if _runs_fit(dev, k):  # else rle_decode splits the runs on the host
            ns = ctx.gpu_ns(lambda i: _run(dev, lambda b: _record_decode_windows(b, gv, ends, 0, kmeta, out, k)))
            rows.append(ctx.row("rle_decode", f"int32 {label} (expand only), 2 windows", n, ns, bytes_moved=4 * n,
                                baseline_ns=dec_copy_ns))
            assert np.array_equal(out.numpy(), x), "rle_decode (2 windows) bench result is wrong"
    ns = ctx.gpu_ns(lambda i: _run(dev, lambda b: _record_decode(b, gv, ends, 0, kmeta, out)))
    rows.append(ctx.row("rle_decode", f"int32 {label} (expand only)", n, ns, bytes_moved=4 * n,
                        baseline_ns=dec_copy_ns))
    # 64-bit values through the public calls (pairs of 32-bit words)
    x64 = x.astype(np.int64) << 33 | 5
    g64 = asarray(x64, dev=dev)
    ns = ctx.gpu_ns(lambda i: rle_encode(g64))
    rows.append(ctx.row("rle_encode", f"fused int64 {label}", n, ns, bytes_moved=8 * n, baseline_ns=2 * copy_ns))
    rl64 = rle_encode(g64)
    assert np.array_equal(np.repeat(*rl64.numpy()), x64), "rle_encode (int64) bench result is wrong"
    with dev.using(max_binding=2 * _two_chunks(n)):  # the chunks of the int32 row above, 8-byte values
        ns = ctx.gpu_ns(lambda i: rle_encode(g64))
        rows.append(ctx.row("rle_encode", f"fused int64 {label}, binding = half", n, ns, bytes_moved=8 * n,
                            baseline_ns=2 * copy_ns))
        assert np.array_equal(np.repeat(*rle_encode(g64).numpy()), x64), \
            "rle_encode (int64, binding = half) bench result is wrong"
    ns = ctx.gpu_ns(lambda i: rle_decode(rl64))
    rows.append(ctx.row("rle_decode", f"int64 {label} (from RunLengths)", n, ns, bytes_moved=8 * n,
                        baseline_ns=2 * dec_copy_ns))
    assert np.array_equal(rle_decode(rl64).numpy(), x64), "rle_decode (int64) bench result is wrong"
    return rows


def _two_chunks(n: int) -> int:
    """A max_binding hook that splits an int32 input of ``n`` elements into two chunks."""
    return 2 * n + 4096


def _compact_entry(ctx: BenchContext, n: int) -> list[dict]:
    dev = ctx.dev
    n = _bench_size(ctx, n)
    rows = []
    x = ctx.rng.integers(-(2**31), 2**31, n, dtype=np.int64).astype(np.int32)
    mask = ctx.rng.integers(0, 2, n, dtype=np.uint8).astype(bool)
    g = asarray(x, dev=dev)
    gm = asarray(mask.view(np.uint8), dev=dev)  # the kernels take bool masks as uint8
    res = Compacted(GpuArray.empty((n,), np.int32, dev), _count_view(GpuArray.empty((16,), np.uint32, dev)))
    idx = Compacted(GpuArray.empty((n,), np.uint32, dev), _count_view(GpuArray.empty((16,), np.uint32, dev)))
    copy_ns = ctx.copy_ns(4 * n, g, res.data)  # over this primitive's own buffers
    rows.append(ctx.row("copy", "wgsl, compact buffers", n, copy_ns, bytes_moved=8 * n))
    t = ctx.torch
    cuda_ns = cuda_nz_ns = None
    if t:
        a = t.from_numpy(x).cuda()
        mk = t.from_numpy(mask).cuda()
        cuda_ns = ctx.cuda_ns(lambda: t.masked_select(a, mk))
        cuda_nz_ns = ctx.cuda_ns(lambda: t.nonzero(mk))
        del a, mk
    cpu_ns = ctx.cpu_ns(lambda: x[mask])
    for name, m, opts in _variants(dev, "compact"):
        with dev.using(**opts):
            ns = ctx.gpu_ns(lambda i, m=m: _run(dev, lambda b: _record_compact(b, "compact", g, gm, res, m)))
            _run(dev, lambda b, m=m: _record_compact(b, "compact", g, gm, res, m))
        rows.append(ctx.row("compact", f"{name} int32 half kept", n, ns, bytes_moved=5 * n + 2 * n,
                            baseline_ns=copy_ns, cuda_ns=cuda_ns, cuda_name="torch.masked_select", cpu_ns=cpu_ns,
                            cpu_name="numpy x[mask]"))
        assert np.array_equal(res.numpy(), x[mask]), f"compact ({name}) bench result is wrong"
    ns = ctx.gpu_ns(lambda i: _run(dev, lambda b: _record_compact(b, "nonzero", gm, None, idx, "fused")))
    rows.append(ctx.row("nonzero", "fused bool half set", n, ns, bytes_moved=n + 2 * n, baseline_ns=copy_ns,
                        cuda_ns=cuda_nz_ns, cuda_name="torch.nonzero", cpu_ns=ctx.cpu_ns(lambda: np.flatnonzero(mask)),
                        cpu_name="numpy flatnonzero"))
    assert np.array_equal(idx.numpy(), np.flatnonzero(mask)), "nonzero bench result is wrong"
    ns = ctx.gpu_ns(lambda i: flatnonzero(gm))  # int64 (the default): word pairs from the same pass
    rows.append(ctx.row("nonzero", "fused bool half set, int64", n, ns, bytes_moved=n + 4 * n, baseline_ns=copy_ns,
                        cuda_ns=cuda_nz_ns, cuda_name="torch.nonzero"))
    assert np.array_equal(flatnonzero(gm).numpy(), np.flatnonzero(mask)), "nonzero (int64) bench result is wrong"
    # the same past one binding: two chunks placed at the running offset
    with dev.using(max_binding=_two_chunks(n)):
        ns = ctx.gpu_ns(lambda i: _run(dev, lambda b: _record_compact_chunked(b, "compact", g, gm, res, "fused")))
        rows.append(ctx.row("compact", "fused int32 half kept, binding = half", n, ns, bytes_moved=5 * n + 2 * n,
                            baseline_ns=copy_ns))
        assert np.array_equal(res.numpy(), x[mask]), "compact (binding = half) bench result is wrong"
        ns = ctx.gpu_ns(lambda i: _run(dev, lambda b: _record_compact_chunked(b, "nonzero", gm, None, idx, "fused")))
        rows.append(ctx.row("nonzero", "fused bool half set, binding = half", n, ns, bytes_moved=n + 2 * n,
                            baseline_ns=copy_ns))
        assert np.array_equal(idx.numpy(), np.flatnonzero(mask)), "nonzero (binding = half) bench result is wrong"
    with dev.using(max_binding=2 * _two_chunks(n)):  # as many chunks, 8-byte indices
        ns = ctx.gpu_ns(lambda i: flatnonzero(gm))
        rows.append(ctx.row("nonzero", "fused bool half set, int64, binding = half", n, ns, bytes_moved=n + 4 * n,
                            baseline_ns=copy_ns))
        assert np.array_equal(flatnonzero(gm).numpy(), np.flatnonzero(mask)), \
            "nonzero (int64, binding = half) bench result is wrong"
    # 64-bit values through the public call (kept indices, then both words gathered)
    x64 = x.astype(np.int64) << 32 | 3
    g64 = asarray(x64, dev=dev)
    ns = ctx.gpu_ns(lambda i: compact(g64, gm))
    rows.append(ctx.row("compact", "fused int64 half kept", n, ns, bytes_moved=9 * n + 4 * n, baseline_ns=2 * copy_ns))
    assert np.array_equal(compact(g64, gm).numpy(), x64[mask]), "compact (int64) bench result is wrong"
    with dev.using(max_binding=2 * _two_chunks(n)):  # the chunks of the int32 row above, 8-byte values
        ns = ctx.gpu_ns(lambda i: compact(g64, gm))
        rows.append(ctx.row("compact", "fused int64 half kept, binding = half", n, ns, bytes_moved=9 * n + 4 * n,
                            baseline_ns=2 * copy_ns))
        assert np.array_equal(compact(g64, gm).numpy(), x64[mask]), "compact (int64, binding = half) result is wrong"
    return rows


_rle_entry.default_sizes = [1 << 20, 1 << 24, 1 << 28]
_compact_entry.default_sizes = [1 << 20, 1 << 24, 1 << 28]
benchmark("rle")(_rle_entry)
benchmark("compact")(_compact_entry)

"""The memory-traffic ceiling of ``rle_encode`` (issue 4) on this GPU.

    python tools/research/rle_ceiling.py [LOG2N] [ROUNDS]
    python tools/research/rle_ceiling.py LOG2N ROUNDS sweep [VEC4_PER_THREAD ...]
    python tools/research/rle_ceiling.py LOG2N ROUNDS lookback [VEC4_PER_THREAD ...]

For the benchmark's inputs (2^LOG2N int32, runs of ~16 and random values 0..9), times in one
process: ``rle_encode``; ``wgsl/bench/rle_traffic.wgsl``, which moves exactly the encoder's bytes
(reads every input tile, writes each tile's precomputed range of values and run lengths) and does
nothing else, with single-word stores, with aligned vec4 stores, and with those in rounds of 2048
words (the encoder's shape); the same traffic as a CUDA kernel through cupy; for random values the
same bytes as a plain aligned stream (WGSL and CUDA); the WGSL copy of the input; and
``torch.unique_consecutive(return_counts=True)``. Medians of 15, ROUNDS interleaved rounds. If the
traffic alone runs slower than a target, no encoder of that shape can meet it here. ``sweep``
times only the random input's traffic in the encoder's shape over tile sizes and store rounds,
beside ``torch.unique_consecutive`` (tiles of 8, 13 and 16 vec4 per invocation unless VEC4_PER_THREAD are given).
``lookback`` times, for both inputs, the encoder's shape with each tile's offset taken from the
encoder's own decoupled lookback instead of the host (checked against it), with and without the
tile's loads held across the lookback, beside the same without a lookback, ``rle_encode`` and torch
(tiles of 13 vec4 unless VEC4_PER_THREAD are given): what the lookback alone costs on top of the traffic.
"""

from __future__ import annotations

import sys

import numpy as np

import pywgpuprims as pp
from pywgpuprims import compaction as rle
from pywgpuprims._array import GpuArray, asarray
from pywgpuprims.bench import BenchContext, copy_pass, median_cuda_ns, rle_traffic_pass
from pywgpuprims.bench.compaction import _bench_input, _numpy_rle

WG, VEC4_PER_THREAD = 256, 13
POISON = 0xDEADBEEF

CUDA_SRC = r"""
extern "C" __global__ void traffic(const uint4* __restrict__ src, const unsigned* __restrict__ ends,
                                   unsigned* __restrict__ values, unsigned* __restrict__ counts,
                                   unsigned n_vec4, unsigned n_tiles) {
    unsigned tile = blockIdx.x;
    if (tile >= n_tiles) return;
    unsigned base = tile * 256u * 13u + threadIdx.x, last = n_vec4 - 1u;
    uint4 v[13];
#pragma unroll
    for (int k = 0; k < 13; k++) v[k] = src[min(base + k * 256u, last)];
    unsigned acc = 0;
#pragma unroll
    for (int k = 0; k < 13; k++) acc ^= v[k].x ^ v[k].y ^ v[k].z ^ v[k].w;
    unsigned start = tile ? ends[tile - 1] : 0u, stop = ends[tile];
    for (unsigned j = start + threadIdx.x; j < stop; j += 256u) {
        values[j] = acc ^ j;
        counts[j] = j - start;
    }
}

// The same bytes as a plain stream (rle_traffic.wgsl's STREAM): 10 * 256 uint4 read, 9 * 256
// written to each output per block, aligned.
extern "C" __global__ void stream(const uint4* __restrict__ src, uint4* __restrict__ values,
                                  uint4* __restrict__ counts) {
    unsigned base = blockIdx.x * 2560u + threadIdx.x, out = blockIdx.x * 2304u + threadIdx.x;
    uint4 v[10];
#pragma unroll
    for (int k = 0; k < 10; k++) v[k] = src[base + k * 256u];
    unsigned acc = 0;
#pragma unroll
    for (int k = 0; k < 10; k++) acc ^= v[k].x ^ v[k].y ^ v[k].z ^ v[k].w;
#pragma unroll
    for (int k = 0; k < 9; k++) {
        values[out + k * 256u] = make_uint4(acc, v[k].x, v[k].y, v[k].z);
        counts[out + k * 256u] = v[k];
    }
}
"""


def tile_ends(x: np.ndarray, vpt: int = VEC4_PER_THREAD) -> np.ndarray:
    """End of each tile's output range: the cumulative count of run starts per tile."""
    starts = np.concatenate([[True], x[1:] != x[:-1]])
    per_tile = np.add.reduceat(starts.astype(np.int64), np.arange(0, x.size, WG * vpt * 4))
    return np.cumsum(per_tile).astype(np.uint32)


def writes_exactly(counts: GpuArray, n_runs: int, run) -> bool:
    """``run`` writes every word of ``counts`` below n_runs and nothing past it."""
    counts.device.write(counts.buffer, np.full(counts.size, POISON, np.uint32).tobytes())
    run()
    got = counts.numpy()
    return bool((got[n_runs:] == POISON).all() and (got[:n_runs] != POISON).all())


def cuda_kernels():
    try:
        import cupy as cp  # noqa: PLC0415

        return cp, cp.RawKernel(CUDA_SRC, "traffic"), cp.RawKernel(CUDA_SRC, "stream")
    except Exception as e:  # the ceiling in WGSL alone is still worth having
        print(f"no cupy: {e}")
        return None, None, None


def encode_timer(ctx: BenchContext, g: GpuArray):
    """GPU time of ``rle_encode`` over ``g`` (outputs allocated once)."""
    dev, n = ctx.dev, g.size
    res = rle.RunLengths(GpuArray.empty((n,), np.int32, dev), GpuArray.empty((n,), np.uint32, dev),
                         rle._count_view(GpuArray.empty((16,), np.uint32, dev)), None, n)
    return lambda: ctx.gpu_ns(lambda i: rle._run(dev, lambda b: rle._record_rle(b, g, res, "fused")))


def torch_timer(ctx: BenchContext, x: np.ndarray):
    """CUDA time of ``torch.unique_consecutive(return_counts=True)`` over ``x``."""
    tx = ctx.torch.from_numpy(x).cuda()
    return lambda: ctx.cuda_ns(lambda: ctx.torch.unique_consecutive(tx, return_counts=True))


def main(log2n: int, rounds: int) -> None:
    dev = pp.device()
    n = 1 << log2n
    ctx = BenchContext(dev, repeats=15, cpu=False, cuda=True)
    torch = ctx.torch
    cp, cuda_traffic, cuda_stream = cuda_kernels()
    stream_tiles = n // (WG * 40)
    per_stream = stream_tiles * WG * 40 / n  # stream rates are per element read
    timed = []  # (input, what, timing function)
    for name, runs in (("runs~16", True), ("random", False)):
        x = _bench_input(ctx, n, runs)
        ends = tile_ends(x)
        n_runs = int(ends[-1])
        g, gends = asarray(x, dev=dev), asarray(ends, dev=dev)
        vals, cnts = GpuArray.empty((n,), np.uint32, dev), GpuArray.empty((n,), np.uint32, dev)
        want_v, want_c = _numpy_rle(x)
        got_v, got_c = pp.rle_encode(x)
        ok = np.array_equal(got_v, want_v) and np.array_equal(got_c, want_c)
        print(f"{name}: {n_runs} runs ({n_runs / n:.3f} per element, {4 + 8 * n_runs / n:.2f} B per element);"
              f" rle_encode checked: {ok}", flush=True)
        timed.append((name, "rle_encode", encode_timer(ctx, g)))
        for what, kw in (("traffic, word stores", {"vec4": False, "round_words": 0}),
                         ("traffic, vec4 stores", {"vec4": True, "round_words": 0}),
                         ("traffic, vec4, rounds 2048", {"vec4": True, "round_words": 2048})):
            def run(g=g, gends=gends, vals=vals, cnts=cnts, kw=kw):
                rle_traffic_pass(dev, g, gends, vals, cnts, n // 4, **kw)
            print(f"  {what}: writes checked: {writes_exactly(cnts, n_runs, run)}")
            timed.append((name, what, lambda run=run: ctx.gpu_ns(lambda i: run())))
        timed.append((name, "copy of the input", lambda g=g, vals=vals: ctx.gpu_ns(
            lambda i: copy_pass(dev, g, vals, n // 4, True))))
        if cp is not None:
            cu = (cp.asarray(x.view(np.uint32)), cp.asarray(ends), cp.empty(n, cp.uint32), cp.empty(n, cp.uint32))
            args = (cu[0], cu[1], cu[2], cu[3], np.uint32(n // 4), np.uint32(ends.size))
            cu[3][:] = POISON
            cuda_traffic((ends.size,), (WG,), args)
            got = cp.asnumpy(cu[3])
            ok = (got[n_runs:] == POISON).all() and (got[:n_runs] != POISON).all()
            print(f"  CUDA traffic: writes checked: {ok}")
            timed.append((name, "traffic, word stores (CUDA)", lambda args=args, n_tiles=ends.size: median_cuda_ns(
                torch, lambda: cuda_traffic((n_tiles,), (WG,), args), 15)))
        if not runs:  # a plain stream of the same bytes per element
            for what, v4 in (("stream, vec4 stores", True), ("stream, word stores", False)):
                timed.append((name, what, lambda g=g, gends=gends, vals=vals, cnts=cnts, v4=v4: ctx.gpu_ns(
                    lambda i: rle_traffic_pass(dev, g, gends, vals, cnts, n // 4, vec4=v4, stream=True)) / per_stream))
            if cp is not None:
                timed.append((name, "stream, vec4 stores (CUDA)", lambda cu=cu: median_cuda_ns(
                    torch, lambda: cuda_stream((stream_tiles,), (WG,), (cu[0], cu[2], cu[3])), 15) / per_stream))
        if torch is not None:
            timed.append((name, "torch.unique_consecutive", torch_timer(ctx, x)))
    report(timed, n, rounds)


def sweep(log2n: int, rounds: int, vpts: tuple[int, ...] = (8, 13, 16)) -> None:
    dev = pp.device()
    n = 1 << log2n
    ctx = BenchContext(dev, repeats=15, cpu=False, cuda=True)
    x = _bench_input(ctx, n, False)
    g = asarray(x, dev=dev)
    vals, cnts = GpuArray.empty((n,), np.uint32, dev), GpuArray.empty((n,), np.uint32, dev)
    timed = []
    for vpt in vpts:
        ends = tile_ends(x, vpt)
        gends = asarray(ends, dev=dev)
        for rnd in (0, 1024, 2048, 4096):
            def run(vpt=vpt, gends=gends, rnd=rnd):
                rle_traffic_pass(dev, g, gends, vals, cnts, n // 4, vpt=vpt, round_words=rnd)
            what = f"{vpt} vec4, rounds {rnd or 'none'}"
            print(f"{what}: writes checked: {writes_exactly(cnts, int(ends[-1]), run)}")
            timed.append(("random", what, lambda run=run: ctx.gpu_ns(lambda i: run())))
    if ctx.torch is not None:
        timed.append(("random", "torch.unique_consecutive", torch_timer(ctx, x)))
    report(timed, n, rounds)


def lookback(log2n: int, rounds: int, vpts: tuple[int, ...] = (VEC4_PER_THREAD,)) -> None:
    dev = pp.device()
    n = 1 << log2n
    ctx = BenchContext(dev, repeats=15, cpu=False, cuda=True)
    vals, cnts = GpuArray.empty((n,), np.uint32, dev), GpuArray.empty((n,), np.uint32, dev)
    timed = []
    for name, runs in (("runs~16", True), ("random", False)):
        x = _bench_input(ctx, n, runs)
        g = asarray(x, dev=dev)
        timed.append((name, "rle_encode", encode_timer(ctx, g)))
        for vpt in vpts:
            ends = tile_ends(x, vpt)
            gends = asarray(ends, dev=dev)
            for what, kw in (("", {}), (", lookback", {"lookback": True}),
                             (", lookback, loads held", {"lookback": True, "hold": True})):
                def run(g=g, vpt=vpt, gends=gends, kw=kw, check=False):
                    return rle_traffic_pass(dev, g, gends, vals, cnts, n // 4, vpt=vpt, check=check, **kw)
                wrong = []
                ok = writes_exactly(cnts, int(ends[-1]), lambda run=run, wrong=wrong: wrong.append(run(check=True)))
                label = f"traffic {vpt} vec4{what}"
                print(f"{name} {label}: writes checked: {ok}, offsets wrong: {wrong[0]}", flush=True)
                timed.append((name, label, lambda run=run: ctx.gpu_ns(lambda i: run())))
        if ctx.torch is not None:
            timed.append((name, "torch.unique_consecutive", torch_timer(ctx, x)))
    report(timed, n, rounds)


def report(timed, n: int, rounds: int) -> None:
    rates: dict[tuple[str, str], list[float]] = {}
    for _ in range(rounds):
        for name, what, ns in timed:
            rates.setdefault((name, what), []).append(n / ns())
    for (name, what), r in rates.items():
        print(f"{name:8s} {what:30s} {np.median(r):7.1f} G el/s  ({' '.join(f'{v:.1f}' for v in r)})")


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[2:3] == ["sweep"]:
        sweep(int(args[0]), int(args[1]), tuple(int(a) for a in args[3:]) or (8, 13, 16))
    elif args[2:3] == ["lookback"]:
        lookback(int(args[0]), int(args[1]), tuple(int(a) for a in args[3:]) or (VEC4_PER_THREAD,))
    else:
        main(int(args[0]) if args else 28, int(args[1]) if args[1:] else 3)

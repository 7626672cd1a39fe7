"""Is 2x ``torch.unique_consecutive`` on random values reachable by a single-pass encoder on this GPU
when workgroup memory is not capped at 48 KiB per SM? (issue 4)

    python tools/research/rle_cuda_encoder.py [LOG2N] [ROUNDS] [V4[,BLOCK[,SHARED[,REREAD]]] ...]

Vulkan gives this project's kernels about 48 KiB of workgroup memory per SM on an H100
(BENCHMARKS.md), so ``rle_encode`` re-reads each run's value from x, and those re-reads miss L1.
CUDA lets a kernel use up to 227 KiB per SM. This script times a CUDA encoder (through cupy) that
keeps its whole tile in shared memory: tiles by ticket; the tile's values staged in shared
memory; run starts flagged per invocation over 4 V4 consecutive elements; a block scan;
a warp-wide decoupled lookback over packed (status, value) words; the starts' positions scattered
by rank into shared memory; then aligned 16-byte stores of values and run lengths. Beside it in one
process: ``rle_encode`` and ``torch.unique_consecutive(return_counts=True)``, which is CUB's
DeviceRunLengthEncode writing int64 counts.

It is a ceiling probe, not an encoder: the length of a tile's last run stops at the tile's end (no
fix-up for runs that continue into the next tile). The check is therefore exact for values and run
count, and counts may differ only at the last run of a tile. Inputs are the benchmark's 2^LOG2N
int32: runs of ~16 and random values 0..9. Times are medians of 15 over ROUNDS interleaved rounds.
V4 (16-byte words per invocation; default 4 6 8) sets the tile size: 4 V4 BLOCK elements (BLOCK 256
unless given), and twice that in 4-byte words of shared memory. SHARED asks for that many bytes of
shared memory per block instead, to hold fewer blocks per SM: Vulkan's budget of about 48 KiB per
SM, say, emulated. REREAD 1 stages only the run starts' positions (TILE words) and reads the values
again from x at the store, as ``rle_encode`` does: that design, free of Vulkan's limits.
"""

from __future__ import annotations

import sys

import numpy as np
from rle_ceiling import encode_timer, report, torch_timer  # this folder's: the same timings and report as there

import pywgpuprims as pp
from pywgpuprims._array import asarray
from pywgpuprims.bench import BenchContext
from pywgpuprims.bench.compaction import _bench_input, _numpy_rle

CUDA_SRC = r"""
#define IPT (4 * V4)
#define TILE (BLOCK * IPT)

__device__ __forceinline__ unsigned long long load_state(unsigned long long* p) {
    return *(volatile unsigned long long*)p;
}

extern "C" __global__ void __launch_bounds__(BLOCK) encode(
        const int* __restrict__ x, int* __restrict__ vals, unsigned* __restrict__ cnts,
        unsigned long long* state, unsigned* total_out, unsigned n, unsigned n_tiles) {
    extern __shared__ int4 smem4[];
#ifdef REREAD
    unsigned* spos = (unsigned*)smem4;       // tile-local position of the start of each rank, and the end
    __shared__ unsigned s_wk[V4][BLOCK / 32];
#else
    int* sx = (int*)smem4;                   // the tile's values
    unsigned* spos = (unsigned*)(sx + TILE); // tile-local position of the start of each rank, and the end
    __shared__ unsigned s_warp[BLOCK / 32];
#endif
    __shared__ unsigned s_tile, s_offset;
    const unsigned t = threadIdx.x, lane = t & 31u, warp = t >> 5;
    if (t == 0) s_tile = (unsigned)atomicAdd(state, 1ull);  // tiles by ticket: lookback needs no forward progress
    __syncthreads();
    const unsigned tile = s_tile;
    if (tile >= n_tiles) return;
    const unsigned e0 = tile * TILE;
    const unsigned len = min((unsigned)TILE, n - e0);
#ifdef REREAD
    // No staging: the tile's vec4 k * BLOCK + t stays in registers, run starts are flagged in that
    // (slot-major) order with the previous element from the lane before, and values are read again
    // from x at the store, as rle_encode does.
    const int4* x4 = (const int4*)(x + e0);
    unsigned fl[V4], cnt[V4], incl[V4], base[V4];
#pragma unroll
    for (int k = 0; k < V4; k++) {
        const unsigned i0 = 4u * (k * BLOCK + t);
        int4 q = make_int4(0, 0, 0, 0);
        if (i0 + 4u <= len) {
            q = x4[k * BLOCK + t];
        } else if (i0 < len) {
            q.x = x[e0 + i0];
            if (i0 + 1u < len) q.y = x[e0 + i0 + 1u];
            if (i0 + 2u < len) q.z = x[e0 + i0 + 2u];
        }
        int prev = __shfl_up_sync(0xffffffffu, q.w, 1);
        if (lane == 0) prev = e0 + i0 == 0u ? ~q.x : (i0 < len ? x[e0 + i0 - 1u] : 0);
        unsigned f = (unsigned)(q.x != prev) | ((unsigned)(q.y != q.x) << 1) | ((unsigned)(q.z != q.y) << 2) |
                     ((unsigned)(q.w != q.z) << 3);
        f &= i0 >= len ? 0u : (len - i0 >= 4u ? 15u : (1u << (len - i0)) - 1u);
        fl[k] = f;
        cnt[k] = __popc(f);
        incl[k] = cnt[k];
    }
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
#pragma unroll
        for (int k = 0; k < V4; k++) {
            const unsigned y = __shfl_up_sync(0xffffffffu, incl[k], d);
            if (lane >= (unsigned)d) incl[k] += y;
        }
    }
    if (lane == 31) {
#pragma unroll
        for (int k = 0; k < V4; k++) s_wk[k][warp] = incl[k];
    }
    __syncthreads();
    unsigned total = 0;
#pragma unroll
    for (int k = 0; k < V4; k++) {
        unsigned before = 0, slot = 0;
#pragma unroll
        for (int w = 0; w < BLOCK / 32; w++) {
            const unsigned s = s_wk[k][w];
            before += (unsigned)w < warp ? s : 0u;
            slot += s;
        }
        base[k] = total + before + incl[k] - cnt[k];
        total += slot;
    }
#else
    if (len == TILE) {
        const int4* x4 = (const int4*)(x + e0);
        int4 v[V4];
#pragma unroll
        for (int k = 0; k < V4; k++) v[k] = x4[k * BLOCK + t];
#pragma unroll
        for (int k = 0; k < V4; k++) smem4[k * BLOCK + t] = v[k];
    } else {
        for (unsigned i = t; i < len; i += BLOCK) sx[i] = x[e0 + i];
    }
    __syncthreads();
    // run starts among this invocation's IPT consecutive elements, one bit each
    const unsigned b0 = t * IPT;
    int p = b0 > 0 ? sx[b0 - 1] : (e0 > 0 ? x[e0 - 1] : 0);
    unsigned flags = 0;
#pragma unroll
    for (int j = 0; j < V4; j++) {
        const int4 q = smem4[t * V4 + j];
        const int e[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
        for (int c = 0; c < 4; c++) {
            const unsigned i = b0 + 4 * j + c;
            const bool f = i < len && (e[c] != p || e0 + i == 0);
            flags |= (unsigned)f << (4 * j + c);
            p = e[c];
        }
    }
    const unsigned c = __popc(flags);
    unsigned incl = c;
#pragma unroll
    for (int d = 1; d < 32; d <<= 1) {
        const unsigned y = __shfl_up_sync(0xffffffffu, incl, d);
        if (lane >= (unsigned)d) incl += y;
    }
    if (lane == 31) s_warp[warp] = incl;
    __syncthreads();
    unsigned wbase = 0, total = 0;
#pragma unroll
    for (int w = 0; w < BLOCK / 32; w++) {
        const unsigned s = s_warp[w];
        wbase += (unsigned)w < warp ? s : 0u;
        total += s;
    }
#endif
    if (warp == 0) {
        unsigned excl = 0;
        if (tile == 0) {
            if (lane == 0) atomicExch(&state[1], (2ull << 32) | total);
        } else {
            if (lane == 0) atomicExch(&state[1 + tile], (1ull << 32) | total);
            int pred = (int)tile - 1;
            while (true) {
                const int idx = pred - (int)lane;
                unsigned long long s = idx >= 0 ? load_state(&state[1 + idx]) : (2ull << 32);
                while (__any_sync(0xffffffffu, (s >> 32) == 0)) {
                    if ((s >> 32) == 0) s = load_state(&state[1 + idx]);
                }
                const unsigned inclusive = __ballot_sync(0xffffffffu, (s >> 32) == 2);
                const int stop = inclusive ? __ffs(inclusive) - 1 : 31;
                unsigned part = (int)lane <= stop ? (unsigned)s : 0u;
#pragma unroll
                for (int d = 16; d > 0; d >>= 1) part += __shfl_xor_sync(0xffffffffu, part, d);
                excl += part;
                if (inclusive) break;
                pred -= 32;
            }
            if (lane == 0) atomicExch(&state[1 + tile], (2ull << 32) | (excl + total));
        }
        if (lane == 0) s_offset = excl;
    }
    // the starts' positions by rank
#ifdef REREAD
#pragma unroll
    for (int k = 0; k < V4; k++) {
        unsigned r = base[k];
        for (unsigned f = fl[k]; f; f &= f - 1u) spos[r++] = 4u * (k * BLOCK + t) + (unsigned)(__ffs(f) - 1);
    }
#define VALUE(p) x[e0 + (p)]
#else
    unsigned r = wbase + incl - c;
    for (unsigned f = flags; f; f &= f - 1u) spos[r++] = b0 + (unsigned)(__ffs(f) - 1);
#define VALUE(p) sx[p]
#endif
    if (t == 0) spos[total] = len;  // ceiling probe: a run continuing into the next tile stops here
    __syncthreads();
    const unsigned lo = s_offset, hi = lo + total;
    for (unsigned q = lo / 4u + t; q < (hi + 3u) / 4u; q += BLOCK) {
        const unsigned w = 4u * q;
        if (w >= lo && w + 4u <= hi) {
            const unsigned rr = w - lo;
            const unsigned p0 = spos[rr], p1 = spos[rr + 1], p2 = spos[rr + 2], p3 = spos[rr + 3], p4 = spos[rr + 4];
            ((int4*)vals)[q] = make_int4(VALUE(p0), VALUE(p1), VALUE(p2), VALUE(p3));
            ((uint4*)cnts)[q] = make_uint4(p1 - p0, p2 - p1, p3 - p2, p4 - p3);
        } else {
            for (unsigned j = 0; j < 4u; j++) {
                const unsigned k = w + j;
                if (k >= lo && k < hi) {
                    const unsigned rr = k - lo;
                    vals[k] = VALUE(spos[rr]);
                    cnts[k] = spos[rr + 1] - spos[rr];
                }
            }
        }
    }
    if (t == 0 && tile == n_tiles - 1) *total_out = hi;
}
"""


def main(log2n: int, rounds: int, specs: list[str]) -> None:
    import cupy as cp  # noqa: PLC0415

    dev = pp.device()
    n = 1 << log2n
    ctx = BenchContext(dev, repeats=15, cpu=False, cuda=True)
    kernels = {}
    for spec in specs:
        v4, block, smem, reread = ([int(v) for v in spec.split(",")] + [256, 0, 0])[:4]
        k = cp.RawKernel(CUDA_SRC, "encode", options=(f"-DV4={v4}", f"-DBLOCK={block}")
                         + (("-DREREAD",) if reread else ()))
        smem = max(smem, (1 if reread else 2) * block * 4 * v4 * 4 + 16)
        k.max_dynamic_shared_size_bytes = smem
        kernels[spec] = (k, v4, block, smem, reread)
    timers = []
    for name, runs in (("runs~16", True), ("random", False)):
        x = _bench_input(ctx, n, runs)
        want_v, want_c = _numpy_rle(x)
        cx = cp.asarray(x)
        vals, cnts = cp.empty(n, cp.int32), cp.empty(n, cp.uint32)
        total = cp.zeros(1, cp.uint32)
        for k, v4, block, smem, reread in kernels.values():
            tile = block * 4 * v4
            n_tiles = (n + tile - 1) // tile
            state = cp.zeros(n_tiles + 1, cp.uint64)

            def run(k=k, block=block, smem=smem, n_tiles=n_tiles, state=state, cx=cx, vals=vals, cnts=cnts,
                    total=total):
                state.fill(0)
                k((n_tiles,), (block,), (cx, vals, cnts, state, total, np.uint32(n), np.uint32(n_tiles)),
                  shared_mem=smem)

            vals.fill(-1)
            run()
            m = int(total.get()[0])
            got_v, got_c = vals[:m].get(), cnts[:m].get()
            ok_v = m == want_v.size and np.array_equal(got_v, want_v)
            bad_c = int((got_c != want_c).sum()) if ok_v else -1
            print(f"{name} V4={v4} block={block} reread={reread}: {m} runs (want {want_v.size}); values exact: {ok_v}; "
                  f"counts differing {bad_c} (allowed: at most {n_tiles}, a tile's last run)", flush=True)
            what = "values read again from x" if reread else "tile in shared memory"
            timers.append((name, f"CUDA encoder, {what}, {v4} x 16 B per thread, blocks of {block}, {smem} B "
                                 f"shared, {k.num_regs} registers", lambda run=run: ctx.cuda_ns(run)))
        timers.append((name, "rle_encode (WGSL)", encode_timer(ctx, asarray(x, dev=dev))))
        timers.append((name, "torch.unique_consecutive", torch_timer(ctx, x)))
    report(timers, n, rounds)


if __name__ == "__main__":
    a = sys.argv[1:]
    main(int(a[0]) if a else 28, int(a[1]) if len(a) > 1 else 2, a[2:] or ["4", "6", "8"])

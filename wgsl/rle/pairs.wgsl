// 64-bit values (int64, uint64, float64) as pairs of 32-bit words, low word first, for run-length
// coding and compaction on any adapter (no shader-int64 needed: a value is only compared, as
// both words, and moved).
//   FLAGS:  flags[i] = 1 where a run starts (i == 0, or pair i differs from pair i - 1), else 0;
//           the run starts are then compacted as NONZERO (method="parle"; the fused pipeline
//           flags and compacts them in one pass, rle/fused.wgsl PAIRS).
//   GATHER: for items r < info[0] with element indices idx[r] (the compaction of the flags, or of
//           a mask): values[r] = x[idx[r]] (both words); COUNTS: counts[r] = the next item's
//           index (params.n after the last) - idx[r]. Four items per invocation, dispatched
//           indirectly on the grid the compaction wrote (info[4..6]).
//   SPLIT:  lo[i], hi[i] = the low and high words of x[i];  MERGE: x[i] = (lo[i], hi[i]).
//   WIDEN:  for i < info[0] - e0: x[i] = lo[i] + the 64-bit base (int64 indices from uint32 ones,
//           output window at element e0 of the result).
//   UNRAVEL: for i < info[0] - e0: dst[i] = (src[i] / stride) % dim, one axis of np.unravel_index
//           (IDX64: src and dst are int64 word pairs whose high words are 0 below 2^32).
// Defines: FLAGS | GATHER (with COUNTS) | SPLIT | MERGE | WIDEN | UNRAVEL (IDX64).

struct Params {
    n: u32,  // elements
#if WIDEN
    e0: u32,
    base_lo: u32,
    base_hi: u32,
#endif
#if UNRAVEL
    e0: u32,
    stride: u32,
    dim: u32,
#endif
}

@group(0) @binding(0) var<uniform> params: Params;
#if FLAGS
@group(0) @binding(1) var<storage, read> x: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read_write> flags: array<u32>;
#elif GATHER
@group(0) @binding(1) var<storage, read> x: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> info: array<u32>;
@group(0) @binding(3) var<storage, read> idx: array<u32>;
@group(0) @binding(4) var<storage, read_write> values: array<vec2<u32>>;
#if COUNTS
@group(0) @binding(5) var<storage, read_write> counts: array<u32>;
#endif
#elif UNRAVEL
@group(0) @binding(2) var<storage, read> info: array<u32>;
#if IDX64
@group(0) @binding(1) var<storage, read> src: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read_write> dst: array<vec2<u32>>;
#else
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(3) var<storage, read_write> dst: array<u32>;
#endif
#elif WIDEN
@group(0) @binding(1) var<storage, read_write> x: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> info: array<u32>;
@group(0) @binding(3) var<storage, read> lo: array<u32>;
#elif SPLIT
@group(0) @binding(1) var<storage, read> x: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read_write> lo: array<u32>;
@group(0) @binding(3) var<storage, read_write> hi: array<u32>;
#else
@group(0) @binding(1) var<storage, read_write> x: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read> lo: array<u32>;
@group(0) @binding(3) var<storage, read> hi: array<u32>;
#endif

const WG: u32 = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * WG;
#if GATHER
    let total = info[0];
    for (var k = 0u; k < 4u; k++) {
        let r = 4u * i + k;
        if (r >= total) {
            return;
        }
        let s = idx[r];
        values[r] = x[s];
#if COUNTS
        counts[r] = select(params.n, idx[min(r + 1u, total - 1u)], r + 1u < total) - s;
#endif
    }
#else
    if (i >= params.n) {
        return;
    }
#if UNRAVEL
    if (i + params.e0 < info[0]) {
#if IDX64
        dst[i] = vec2<u32>((src[i].x / params.stride) % params.dim, 0u);
#else
        dst[i] = (src[i] / params.stride) % params.dim;
#endif
    }
#elif WIDEN
    if (i + params.e0 < info[0]) {
        let w = lo[i] + params.base_lo;
        x[i] = vec2<u32>(w, params.base_hi + select(0u, 1u, w < lo[i]));
    }
#elif FLAGS
    flags[i] = select(u32(any(x[i] != x[max(i, 1u) - 1u])), 1u, i == 0u);
#elif SPLIT
    let v = x[i];
    lo[i] = v.x;
    hi[i] = v.y;
#else
    x[i] = vec2<u32>(lo[i], hi[i]);
#endif
#endif
}

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
// Defines: FLAGS | GATHER (with COUNTS) | SPLIT | MERGE.

struct Params {
    n: u32,  // elements
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
#if FLAGS
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

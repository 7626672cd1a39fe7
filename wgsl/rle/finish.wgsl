// Finishing pass after the compaction of indices (fused or PARLE): for items r < info[0],
//   COUNTS: counts[r] = idx[r + 1] - idx[r]   (RLE: run starts with the sentinel n after the last)
//   GATHER: values[r] = x[idx[r]]             (uint8 with EB8: four items packed per word)
// One invocation handles 4 items (one packed uint8 word). Dispatched indirectly on the grid the
// compaction pass wrote, so only the items that exist are visited.

struct Params {
    dummy: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> info: array<u32>;
@group(0) @binding(2) var<storage, read> idx: array<u32>;
#if GATHER
@group(0) @binding(3) var<storage, read> x: array<u32>;
@group(0) @binding(4) var<storage, read_write> values: array<u32>;
#endif
#if COUNTS
@group(0) @binding(5) var<storage, read_write> counts: array<u32>;
#endif

const WG: u32 = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let inv = gid.x + gid.y * nwg.x * WG;
    let total = info[0];
    let r0 = inv * 4u;
    if (r0 >= total) {
        return;
    }
#if GATHER
#if EB8
    var packed = 0u;
#endif
#endif
    for (var k = 0u; k < 4u; k++) {
        let r = r0 + k;
        if (r >= total) {
            break;
        }
        let i = idx[r];
#if COUNTS
        counts[r] = idx[r + 1u] - i;
#endif
#if GATHER
#if EB8
        packed |= ((x[i / 4u] >> (8u * (i % 4u))) & 0xffu) << (8u * k);
#else
        values[r] = x[i];
#endif
#endif
    }
#if GATHER
#if EB8
    values[inv] = packed;
#endif
#endif
}

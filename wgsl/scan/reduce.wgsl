// Two-pass reduction over a monoid, deterministic (a fixed combination order, no float atomics).
// PARTIALS: workgroup g reduces chunk g % chunks_per_row of segment g / chunks_per_row
// (CHUNK = WG * 4 * LOADS elements, read with coalesced vec4 loads) into partials[g].
// FINAL: workgroup r reduces the chunks_per_row partials of segment r into output[r].
// Defines: the monoid, WG, LOADS, SUBGROUPS, SCALAR, one of PARTIALS / FINAL.

#include "common/monoid.wgsl"

struct Params {
    row_len: u32,
    chunks_per_row: u32,
    n_groups: u32,   // workgroups asked for
    out_base: u32,   // FINAL writes output[out_base + segment]
}

@group(0) @binding(0) var<uniform> params: Params;
#if PARTIALS
#if SCALAR
@group(0) @binding(1) var<storage, read> input: array<Elem>;
#else
@group(0) @binding(1) var<storage, read> input: array<vec4<Elem>>;
#endif
@group(0) @binding(2) var<storage, read_write> partials: array<u32>;
#else
@group(0) @binding(2) var<storage, read_write> partials: array<u32>;
@group(0) @binding(3) var<storage, read_write> output: array<u32>;
#endif
#if SUBGROUPS
#include "common/subgroup_scan.wgsl"
#endif

const WG: u32 = {{WG}}u;
const CHUNK: u32 = WG * 4u * {{LOADS}}u;  // elements per workgroup
const FINAL_LOADS: u32 = {{FINAL_LOADS}}u;

var<workgroup> wg_red: array<Elem, WG>;

fn workgroup_reduce(x: Elem, lid: u32, sg_size: u32) -> Elem {
#if SUBGROUPS
    let r = sg_reduce(x);
    if (lid % sg_size == 0u) {
        wg_red[lid / sg_size] = r;
    }
    workgroupBarrier();
    var acc = identity();
    for (var s = 0u; s < WG / sg_size; s++) {
        acc = combine(acc, wg_red[s]);
    }
    return acc;
#else
    wg_red[lid] = x;
    workgroupBarrier();
    for (var d = WG / 2u; d > 0u; d = d >> 1u) {
        if (lid < d) {
            wg_red[lid] = combine(wg_red[lid], wg_red[lid + d]);
        }
        workgroupBarrier();
    }
    return wg_red[0];
#endif
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32,
#if SUBGROUPS
        @builtin(subgroup_size) sg_size: u32,
#endif
        @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
#if !SUBGROUPS
    let sg_size = 1u;
#endif
    let g = wid.x + wid.y * nwg.x;
    if (g >= params.n_groups) {
        return;
    }
    var acc = identity();
#if PARTIALS
    let row = g / params.chunks_per_row;
    let start = (g - row * params.chunks_per_row) * CHUNK;
    let count = min(CHUNK, params.row_len - start);
    let base = row * params.row_len + start;
#if SCALAR
    for (var e = lid; e < count; e += WG) {
        acc = combine(acc, input[base + e]);
    }
#else
    // Unrolled so every load of the chunk is in flight before the first combine; indices are
    // clamped and the excess masked (no divergent branch before the subgroup reduction).
    let id = vec4<Elem>(identity());
    let last = base + count - 1u;
    var acc4 = id;
#unroll K LOADS
    {
        let e = ({{K}}u * WG + lid) * 4u;
        let x = input[min(base + e, last) / 4u];
        let past = vec4<u32>(e) + vec4<u32>(0u, 1u, 2u, 3u) >= vec4<u32>(count);
        let y = select(x, id, past);
        acc4 = vec4<Elem>(combine(acc4.x, y.x), combine(acc4.y, y.y), combine(acc4.z, y.z), combine(acc4.w, y.w));
    }
#endunroll
    acc = combine(combine(acc4.x, acc4.y), combine(acc4.z, acc4.w));
#endif
    let total = workgroup_reduce(acc, lid, sg_size);
    if (lid == 0u) {
        partials[g] = to_bits(total);
    }
#else
    // FINAL_LOADS independent loads per round keep the lone workgroup from paying a memory
    // latency per partial (8192 partials: 32 dependent loads were about 6% of a 2^28 reduce).
    let n = params.chunks_per_row;
    let last = g * n + n - 1u;
    for (var i0 = lid; i0 < n; i0 += WG * FINAL_LOADS) {
        var p: array<Elem, FINAL_LOADS>;
#unroll K FINAL_LOADS
        p[{{K}}] = select(identity(), from_bits(partials[min(g * n + i0 + {{K}}u * WG, last)]), i0 + {{K}}u * WG < n);
#endunroll
#unroll K FINAL_LOADS
        acc = combine(acc, p[{{K}}]);
#endunroll
    }
    let total = workgroup_reduce(acc, lid, sg_size);
    if (lid == 0u) {
        output[params.out_base + g] = to_bits(total);
    }
#endif
}

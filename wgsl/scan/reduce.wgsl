// Two-pass reduction over a monoid, deterministic (a fixed combination order, no float atomics).
// PARTIALS: workgroup g reduces chunk g % chunks_per_row of segment g / chunks_per_row
// (CHUNK_TILES tiles of WG * VPT * 4 elements, read with coalesced loads) into partials[g].
// FINAL: workgroup r reduces the chunks_per_row partials of segment r into output[r].
// Defines: the monoid, WG, VPT, CHUNK_TILES, SUBGROUPS, SCALAR, one of PARTIALS / FINAL.

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
const VPT: u32 = {{VPT}}u;
const CHUNK: u32 = WG * VPT * 4u * {{CHUNK_TILES}}u;

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
    for (var k = 0u; k < CHUNK / (4u * WG); k++) {
        let e = (k * WG + lid) * 4u;
        if (e < count) {
            let x = input[(base + e) / 4u];
            acc = combine(acc, x.x);
            if (e + 1u < count) { acc = combine(acc, x.y); }
            if (e + 2u < count) { acc = combine(acc, x.z); }
            if (e + 3u < count) { acc = combine(acc, x.w); }
        }
    }
#endif
    let total = workgroup_reduce(acc, lid, sg_size);
    if (lid == 0u) {
        partials[g] = to_bits(total);
    }
#else
    let n = params.chunks_per_row;
    for (var i = lid; i < n; i += WG) {
        acc = combine(acc, from_bits(partials[g * n + i]));
    }
    let total = workgroup_reduce(acc, lid, sg_size);
    if (lid == 0u) {
        output[params.out_base + g] = to_bits(total);
    }
#endif
}

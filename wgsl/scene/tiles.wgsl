// Bin elements into 16x16 tiles by their clipped bbox: one bit per (tile, element) in masks,
// each tile's words contiguous, so a tile walks its elements in painter's order.
// summary has one bit per mask word (set when the word is non-zero), so a tile skips empty words.
// One invocation per (element, tile row) pair: at most tiles_x trips each.

struct Params {
    n_pairs: u32,    // a bound; totals[0] pairs were written
    n_words: u32,
    tiles_x: u32,
    n_sum: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> pairs: array<vec2<u32>>;       // element, tile row
@group(0) @binding(2) var<storage, read> rects: array<vec4<u32>>;       // tx0, ty0, tx1, ty1
@group(0) @binding(3) var<storage, read_write> masks: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read_write> summary: array<atomic<u32>>;
@group(0) @binding(5) var<storage, read> totals: array<u32>;            // pairs, cells

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x) * 256u + lid;
    if (i >= min(params.n_pairs, totals[0])) {
        return;
    }
    let pr = pairs[i];
    let e = pr.x;
    let r = rects[e];
    let bit = 1u << (e & 31u);
    let word = e >> 5u;
    let sbit = 1u << (word & 31u);
    for (var tx = r.x; tx < r.z; tx++) {
        let t = pr.y * params.tiles_x + tx;
        let old = atomicOr(&masks[t * params.n_words + word], bit);
        if (old == 0u) {
            atomicOr(&summary[t * params.n_sum + (word >> 5u)], sbit);
        }
    }
}

// Typed reduce-then-scan, first pass: workgroup t reduces tile t % tiles_per_row of segment
// t / tiles_per_row (TILE = WG * ITEMS elements, striped: invocation i reads i, i + WG, ...) into
// partials[t], in a fixed order (deterministic for floats too).
// Defines: common/typed_monoid.wgsl's and common/typed_load.wgsl's, WG, ITEMS, IN_STORE (the input array's element type).

#include "common/typed_monoid.wgsl"
#include "common/typed_load.wgsl"

struct Params {
    row_len: u32,
    tiles_per_row: u32,
    n_tiles: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> input: array<{{IN_STORE}}>;
@group(0) @binding(2) var<storage, read_write> partials: array<Acc>;

const WG: u32 = {{WG}}u;
const ITEMS: u32 = {{ITEMS}}u;
const TILE: u32 = WG * ITEMS;

var<workgroup> red: array<Acc, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = wid.x + wid.y * nwg.x;
    if (t >= params.n_tiles) {  // uniform: the whole workgroup leaves
        return;
    }
    let row = t / params.tiles_per_row;
    let tile_start = (t - row * params.tiles_per_row) * TILE;
    let base = row * params.row_len + tile_start;
    // Striped: load k of every invocation reads WG consecutive elements (coalesced); only the
    // tile's total is needed here, so the order within the tile is free (but fixed).
    var acc = identity();
    if (tile_start + TILE <= params.row_len) {
        for (var k = 0u; k < ITEMS; k++) {
            acc = combine(acc, load_acc(base + k * WG + lid));
        }
    } else {
        for (var k = 0u; k < ITEMS; k++) {
            if (tile_start + k * WG + lid < params.row_len) {
                acc = combine(acc, load_acc(base + k * WG + lid));
            }
        }
    }
    red[lid] = acc;
    workgroupBarrier();
    for (var d = WG / 2u; d > 0u; d = d >> 1u) {
        if (lid < d) {
            red[lid] = combine(red[lid], red[lid + d]);
        }
        workgroupBarrier();
    }
    if (lid == 0u) {
        partials[t] = red[0];
    }
}

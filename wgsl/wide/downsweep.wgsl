// Typed reduce-then-scan, last pass: workgroup t rescans its tile (ITEMS consecutive elements per
// invocation, then a workgroup scan of the invocations' totals) seeded with the tile's exclusive
// prefix from the spine, and writes the inclusive or exclusive (EXCLUSIVE) result. Fixed
// combination order: float results repeat bit for bit.
// Defines: common/typed_monoid.wgsl's and common/typed_load.wgsl's, WG, ITEMS, IN_STORE, EXCLUSIVE.

#include "common/typed_monoid.wgsl"
#include "common/typed_load.wgsl"

struct Params {
    row_len: u32,
    tiles_per_row: u32,
    n_tiles: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> input: array<{{IN_STORE}}>;
@group(0) @binding(2) var<storage, read> partials: array<Acc>;
@group(0) @binding(3) var<storage, read_write> output: array<Acc>;

const WG: u32 = {{WG}}u;
const ITEMS: u32 = {{ITEMS}}u;
const TILE: u32 = WG * ITEMS;

var<workgroup> sums: array<Acc, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = wid.x + wid.y * nwg.x;
    if (t >= params.n_tiles) {  // uniform: the whole workgroup leaves
        return;
    }
    let row = t / params.tiles_per_row;
    let first = (t - row * params.tiles_per_row) * TILE + lid * ITEMS;
    let base = row * params.row_len;
    let full = first + ITEMS <= params.row_len;
    var vals: array<Acc, ITEMS>;
    var acc = identity();
#unroll K ITEMS
    if (full || first + {{K}}u < params.row_len) {
        acc = combine(acc, load_acc(base + first + {{K}}u));
    }
    vals[{{K}}u] = acc;
#endunroll
    sums[lid] = acc;
    workgroupBarrier();
    for (var d = 1u; d < WG; d = d << 1u) {
        var s = sums[lid];
        if (lid >= d) {
            s = combine(sums[lid - d], s);
        }
        workgroupBarrier();
        sums[lid] = s;
        workgroupBarrier();
    }
    var run = partials[t];
    if (lid > 0u) {
        run = combine(run, sums[lid - 1u]);
    }
#if EXCLUSIVE
    var prev = run;
#unroll K ITEMS
    if (full || first + {{K}}u < params.row_len) {
        output[base + first + {{K}}u] = prev;
    }
    prev = combine(run, vals[{{K}}u]);
#endunroll
#else
#unroll K ITEMS
    if (full || first + {{K}}u < params.row_len) {
        output[base + first + {{K}}u] = combine(run, vals[{{K}}u]);
    }
#endunroll
#endif
}

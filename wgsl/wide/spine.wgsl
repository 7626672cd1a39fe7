// Typed reduce-then-scan, middle pass: workgroup r turns the tile aggregates of segment r in
// `partials` into exclusive prefixes in place (PREFIXES; a reduce skips that) and writes the
// segment's total, combined after the previous chunk's total when carry_in is set, to
// totals[total_base + r]. Fixed combination order; plain workgroup memory.
// Defines: common/typed_monoid.wgsl's, WG, PREFIXES.

#include "common/typed_monoid.wgsl"

struct Params {
    tiles_per_row: u32,
    rows: u32,
    carry_in: u32,
    total_base: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> partials: array<Acc>;
@group(0) @binding(2) var<storage, read_write> totals: array<Acc>;

const WG: u32 = {{WG}}u;
var<workgroup> sums: array<Acc, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let row = wid.x;
    if (row >= params.rows) {
        return;
    }
    let n = params.tiles_per_row;
    let per = (n + WG - 1u) / WG;
    let first = row * n + min(lid * per, n);
    let last = row * n + min(lid * per + per, n);
    var acc = identity();
    for (var i = first; i < last; i++) {
        acc = combine(acc, partials[i]);
    }
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
    var seed = identity();
    if (params.carry_in != 0u) {
        seed = totals[params.total_base - 1u];
    }
#if PREFIXES
    var run = seed;
    if (lid > 0u) {
        run = combine(run, sums[lid - 1u]);
    }
    for (var i = first; i < last; i++) {
        let p = partials[i];
        partials[i] = run;
        run = combine(run, p);
    }
#endif
    if (lid == 0u) {
        totals[params.total_base + row] = combine(seed, sums[WG - 1u]);
    }
}

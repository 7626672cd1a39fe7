// Reduce-then-scan, middle pass: one workgroup per segment turns the tile aggregates in
// `partials` into exclusive prefixes in place (seeded by the carry of the previous chunk), and
// records the segment's total as the carry of this chunk. Plain workgroup memory, no subgroups.

#include "common/monoid.wgsl"

struct Params {
    tiles_per_row: u32,
    rows: u32,
    carry_in: u32,
    chunk: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> partials: array<u32>;
@group(0) @binding(2) var<storage, read_write> carry: array<u32>;

const WG: u32 = 256u;
var<workgroup> totals: array<Elem, WG>;

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
        acc = combine(acc, from_bits(partials[i]));
    }
    totals[lid] = acc;
    workgroupBarrier();
    for (var d = 1u; d < WG; d = d << 1u) {
        var t = totals[lid];
        if (lid >= d) {
            t = combine(totals[lid - d], t);
        }
        workgroupBarrier();
        totals[lid] = t;
        workgroupBarrier();
    }
    var run = identity();
    if (params.carry_in != 0u) {
        run = from_bits(carry[params.chunk - 1u]);
    }
    let seed = run;
    if (lid > 0u) {
        run = combine(run, totals[lid - 1u]);
    }
    for (var i = first; i < last; i++) {
        let t = from_bits(partials[i]);
        partials[i] = to_bits(run);
        run = combine(run, t);
    }
    if (lid == 0u && params.rows == 1u) {
        carry[params.chunk] = to_bits(combine(seed, totals[WG - 1u]));
    }
}

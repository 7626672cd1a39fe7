// Summed-area table past one storage binding (pywgpuprims/sat.py _record_sat_bands): a band's
// table, computed alone, gets the column carry (the last row of the table above the band) added
// to each of its rows. Row prefixes are local to a row, so this is the only fix-up a band needs.
// Defines: T and the typed monoid's (sat/sat_common.wgsl); integer sums wrap as the unchunked
// table's do.

#include "common/typed_monoid.wgsl"

struct Params {
    n: u32,       // elements of the band's table
    rowlen: u32,  // elements of one row (W * C)
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> carry: array<{{T}}>;
@group(0) @binding(2) var<storage, read_write> dst: array<{{T}}>;

// One invocation per element; a 1-D grid split over x and y.
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let e = (wid.x + wid.y * nwg.x) * 256u + lid;
    if (e >= params.n) {
        return;
    }
    dst[e] = combine(dst[e], carry[e % params.rowlen]);
}

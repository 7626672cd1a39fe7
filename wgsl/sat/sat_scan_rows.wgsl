// Summed-area table, stage S.3: the row prefixes scanned across the tiles (SCAN_ROWS). See sat/sat_common.wgsl.

#include "sat/sat_common.wgsl"
@group(0) @binding(1) var<storage, read_write> rowpref: array<{{T}}>;
@group(0) @binding(2) var<storage, read> blocktot: array<{{T}}>;

var<workgroup> part: array<{{T}}, 256>;

// Per image row y: L(n, y) = S(y, 64 n - 1), an exclusive scan over tile columns n of
// (sum of the tiles above) + (row prefix); 32 rows per workgroup, 8 threads per row as above.
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let rl = t % 32u;
    let sg = t / 32u;
    let y = wid.x * 32u + rl;
    let ch = wid.y;
    let nbx = params.nbx;
    let seg = (nbx + 7u) / 8u;
    let n0 = min(sg * seg, nbx);
    let n1 = min(n0 + seg, nbx);
    let valid = y < params.H;
    let m = y / TS;
    let base = ch * nbx * params.H + y;
    let tb = (ch * params.nby + m) * nbx;
    var acc = {{T}}(0);
    if (valid) {
        for (var n = n0; n < n1; n++) {
            acc = combine(acc, combine(rowpref[base + n * params.H], blocktot[tb + n]));
        }
    }
    part[t] = acc;
    workgroupBarrier();
    var off = {{T}}(0);
    for (var k = 0u; k < sg; k++) {
        off = combine(off, part[k * 32u + rl]);
    }
    if (valid) {
        for (var n = n0; n < n1; n++) {
            let i = base + n * params.H;
            let v = combine(rowpref[i], blocktot[tb + n]);
            rowpref[i] = off;
            off = combine(off, v);
        }
    }
}

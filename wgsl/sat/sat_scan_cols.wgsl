// Summed-area table, stage S.2: the column sums and tile totals scanned down the tiles (SCAN_COLS). See sat/sat_common.wgsl.

#include "sat/sat_common.wgsl"
@group(0) @binding(1) var<storage, read_write> colsum: array<{{T}}>;
@group(0) @binding(2) var<storage, read_write> blocktot: array<{{T}}>;
#if CARRY
// A band of rows of a larger table (pywgpuprims/sat.py _record_sat_bands): every column (and tile
// column) starts from the totals of the rows above the band (cin) and leaves its own (cout), so
// the band's table is the whole table's rows.
@group(0) @binding(3) var<storage, read> cin: array<{{T}}>;
@group(0) @binding(4) var<storage, read_write> cout: array<{{T}}>;
#endif

var<workgroup> part: array<{{T}}, 256>;

// Exclusive scan over tile rows m, for 32 columns per workgroup: 8 threads per column each take a
// contiguous eighth of the m range (independent loads, so their latencies overlap), then the 8
// partial sums are scanned in workgroup memory. Columns 0..W-1 are colsum's, W..W+nbx-1 blocktot's.
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let cl = t % 32u;
    let sg = t / 32u;
    let col = wid.x * 32u + cl;
    let ch = wid.y;
    let nby = params.nby;
    let seg = (nby + 7u) / 8u;
    let m0 = min(sg * seg, nby);
    let m1 = min(m0 + seg, nby);
    var base = 0u;
    var stride = 0u;
    let valid = col < params.W + params.nbx;
    let is_col = col < params.W;
    if (is_col) {
        base = ch * nby * params.W + col;
        stride = params.W;
    } else {
        base = ch * nby * params.nbx + (col - params.W);
        stride = params.nbx;
    }
    var acc = {{T}}(0);
    if (valid) {
        for (var m = m0; m < m1; m++) {
            if (is_col) {
                acc = combine(acc, colsum[base + m * stride]);
            } else {
                acc = combine(acc, blocktot[base + m * stride]);
            }
        }
    }
    part[t] = acc;
    workgroupBarrier();
    var off = {{T}}(0);
#if CARRY
    if (valid) {
        off = cin[ch * (params.W + params.nbx) + col];
    }
#endif
    for (var k = 0u; k < sg; k++) {
        off = combine(off, part[k * 32u + cl]);
    }
    if (valid) {
        for (var m = m0; m < m1; m++) {
            let i = base + m * stride;
            if (is_col) {
                let v = colsum[i];
                colsum[i] = off;
                off = combine(off, v);
            } else {
                let v = blocktot[i];
                blocktot[i] = off;
                off = combine(off, v);
            }
        }
    }
#if CARRY
    if (valid && sg == 7u) {  // the last segment ends at nby: off is the column's total
        cout[ch * (params.W + params.nbx) + col] = off;
    }
#endif
}

// Summed-area table, the baseline, columns: one thread per (column, channel) (RT_COLS). See sat/sat_common.wgsl.

#include "sat/sat_common.wgsl"
@group(0) @binding(1) var<storage, read_write> dst: array<{{T}}>;

// One thread per (column, channel): inclusive prefix down the column, in place.
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let x = gid.x;
    let ch = gid.y;
    if (x >= params.W) {
        return;
    }
    var acc = {{T}}(0);
    for (var y = 0u; y < params.H; y++) {
        let e = (y * params.W + x) * params.C + ch;
        acc = combine(acc, dst[e]);
        dst[e] = acc;
    }
}

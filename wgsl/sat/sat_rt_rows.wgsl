// Summed-area table, the baseline, rows: one thread per (row, channel) (RT_ROWS). See sat/sat_common.wgsl.

#include "sat/sat_common.wgsl"
@group(0) @binding(1) var<storage, read> input: array<{{IN_STORE}}>;
@group(0) @binding(2) var<storage, read_write> dst: array<{{T}}>;

// One thread per (row, channel): inclusive prefix along the row.
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let y = gid.x;
    let ch = gid.y;
    if (y >= params.H) {
        return;
    }
    var acc = {{T}}(0);
    for (var x = 0u; x < params.W; x++) {
        acc = combine(acc, load(y, x, ch));
        dst[(y * params.W + x) * params.C + ch] = acc;
    }
}

// Run-length decoding past one storage binding: the run ends seen from one output window
// [lo, lo + len): out[r] = clamp(ends[r + shift], lo, lo + len) - lo for r < n, so runs before the
// window have length zero at its start and runs after it length zero at its end, and the
// unchunked decoder (rle/decode.wgsl, rle/expand.wgsl) fills the window bound at its offset.

struct Params {
    n: u32,      // runs
    shift: u32,  // 1: `ends` are run starts with the sentinel after them (end(r) = ends[r + 1])
    lo: u32,
    len: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> ends: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

const WG: u32 = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let r = gid.x + gid.y * nwg.x * WG;
    if (r >= params.n) {
        return;
    }
    out[r] = min(max(ends[r + params.shift], params.lo), params.lo + params.len) - params.lo;
}

// Run lengths of the runs that cross tiles (fused RLE of 32-bit values). The fused pass leaves in
// each tile's last count slot the start position of that run; the run ends where the next run
// starts, which is the first run start of the next tile that has one (its output index R is the
// run after it), or n after the last run. Invocation t < n_tiles handles tile t's first run; the
// invocation t == n_tiles handles the end. Each placeholder is fixed by exactly one invocation.
// `counts` is bound at the output window [lo, lo + len): placeholders outside it are left to the
// dispatch of their own window (chained chunks past one binding: `head` then holds every chunk's
// tiles, with global run indices and positions; rle/chain.wgsl).

struct Params {
    n: u32,
    n_tiles: u32,
    lo: u32,
    len: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> info: array<u32>;
@group(0) @binding(2) var<storage, read> head: array<u32>;
@group(0) @binding(3) var<storage, read_write> counts: array<u32>;

const WG: u32 = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = gid.x + gid.y * nwg.x * WG;
    if (t > params.n_tiles) {
        return;
    }
    var r = info[0];
    var p = params.n;
    if (t < params.n_tiles) {
        r = head[2u * t];
        p = head[2u * t + 1u];
    }
    if (p != 0xffffffffu && r > params.lo && r - 1u - params.lo < params.len) {
        let k = r - 1u - params.lo;
        counts[k] = p - counts[k];
    }
}

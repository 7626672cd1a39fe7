// Run lengths of the runs that cross tiles (fused RLE of 32-bit values). The fused pass leaves in
// each tile's last count slot the start position of that run; the run ends where the next run
// starts, which is the first run start of the next tile that has one (its output index R is the
// run after it), or n after the last run. Invocation t < n_tiles handles tile t's first run; the
// invocation t == n_tiles handles the end. Each placeholder is fixed by exactly one invocation.
// `counts` is bound at the output window [lo, lo + len): placeholders outside it are left to the
// dispatch of their own window (chained chunks past one binding: `head` then holds every chunk's
// tiles, with global run indices and positions; rle/chain.wgsl). PAIR: the next window too,
// [lo + len, lo + len + len_hi), bound as `counts_hi` (one dispatch for two windows).

struct Params {
    n: u32,
    n_tiles: u32,
    lo: u32,
    len: u32,
    len_hi: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> info: array<u32>;
@group(0) @binding(2) var<storage, read> head: array<u32>;
@group(0) @binding(3) var<storage, read_write> counts: array<u32>;
#if PAIR
@group(0) @binding(4) var<storage, read_write> counts_hi: array<u32>;
#endif

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
    if (p != 0xffffffffu && r > params.lo) {
        let k = r - 1u - params.lo;
        if (k < params.len) {
            counts[k] = p - counts[k];
        }
#if PAIR
        else if (k - params.len < params.len_hi) {
            counts_hi[k - params.len] = p - counts_hi[k - params.len];
        }
#endif
    }
}

// Per tile: an upper bound of the clip depth reached while walking its element bits (the
// clip-stack levels its pixels need). Words [w0, w1) per dispatch; the running depth and maximum
// are carried in dstate between dispatches so that no invocation loops long.

struct Params {
    n_tiles: u32,
    n_words: u32,
    w0: u32,
    w1: u32,
    first: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> masks: array<u32>;
@group(0) @binding(2) var<storage, read> kind_bits: array<vec2<u32>>;   // begin bits, end bits per word
@group(0) @binding(3) var<storage, read_write> dstate: array<vec2<u32>>; // depth, max depth
@group(0) @binding(4) var<storage, read_write> need: array<u32>;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let t = (wid.x + wid.y * nwg.x) * 64u + lid;
    if (t >= params.n_tiles) {
        return;
    }
    var st = vec2<u32>(0u, 0u);
    if (params.first == 0u) {
        st = dstate[t];
    }
    for (var w = params.w0; w < params.w1; w++) {
        let m = masks[t * params.n_words + w];
        let kb = kind_bits[w];
        let b = countOneBits(m & kb.x);
        let e = countOneBits(m & kb.y);
        st.y = max(st.y, st.x + b);
        st.x = st.x + b - e;
    }
    dstate[t] = st;
    need[t] = st.y;
}

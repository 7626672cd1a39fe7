// Per tile (one workgroup): an upper bound of the clip depth reached while walking its element
// bits, i.e. the clip-stack levels its pixels need. Each invocation reduces a contiguous run of
// mask words to (net depth change, highest prefix depth); the runs are combined in order in
// workgroup memory: (a then b) = (a.net + b.net, max(a.top, a.net + b.top)).

struct Params {
    n_tiles: u32,
    n_words: u32,
    chunk: u32,      // mask words per invocation: ceil(n_words / 256)
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> masks: array<u32>;
@group(0) @binding(2) var<storage, read> kind_bits: array<vec2<u32>>;   // begin bits, end bits per word
@group(0) @binding(3) var<storage, read_write> need: array<u32>;

var<workgroup> sh: array<vec2<i32>, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let t = wid.x + wid.y * nwg.x;
    if (t >= params.n_tiles) {
        return;
    }
    var net = 0;
    var hi = 0;
    let w0 = lid * params.chunk;
    let w1 = min(w0 + params.chunk, params.n_words);
    for (var w = w0; w < w1; w++) {
        let m = masks[t * params.n_words + w];
        if (m != 0u) {
            let kb = kind_bits[w];
            let b = i32(countOneBits(m & kb.x));
            let e = i32(countOneBits(m & kb.y));
            hi = max(hi, net + b);
            net = net + b - e;
        }
    }
    sh[lid] = vec2<i32>(net, hi);
    for (var off = 1u; off < 256u; off = off * 2u) {
        workgroupBarrier();
        if ((lid & (2u * off - 1u)) == 0u) {
            let a = sh[lid];
            let b = sh[lid + off];
            sh[lid] = vec2<i32>(a.x + b.x, max(a.y, a.x + b.y));
        }
    }
    if (lid == 0u) {
        need[t] = u32(max(sh[0].y, 0));
    }
}

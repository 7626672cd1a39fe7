// Per tile (one workgroup): the clip depth reached while walking its element bits, i.e. the
// clip-stack levels its pixels need. Each invocation reduces a contiguous run of
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
            let bm = m & kb.x;
            let em = m & kb.y;
            if (em == 0u || bm == 0u) {
                let b = i32(countOneBits(bm));
                hi = max(hi, net + b);
                net = net + b - i32(countOneBits(em));
            } else {
                // Both kinds in the word: walk its clip bits in order (at most 32 trips).
                var cm = bm | em;
                loop {
                    if (cm == 0u) {
                        break;
                    }
                    let bit = cm & (~cm + 1u);
                    cm ^= bit;
                    if ((bm & bit) != 0u) {
                        net += 1;
                        hi = max(hi, net);
                    } else {
                        net -= 1;
                    }
                }
            }
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

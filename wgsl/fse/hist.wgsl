// Per-block byte histograms (HIST true; otherwise only the checksums) (workgroup-memory atomics, NSUB sub-histograms to spread contention)
// and a per-block checksum. One workgroup per block; block b covers bytes
// [b * block_size, min((b + 1) * block_size, n_bytes)) of src (bytes packed 4 per u32 word).
// out[b * 257 + s] = count of byte s; out[b * 257 + 256] = checksum (see fse/__init__.py).

struct Params {
    n_bytes: u32,
    block_size: u32,   // multiple of 4
    n_blocks: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> hist: array<u32>;

const WG: u32 = 256u;
const NSUB: u32 = 4u;

var<workgroup> h: array<atomic<u32>, 1024>;
var<workgroup> ck: atomic<u32>;

fn fmix(x: u32) -> u32 {
    var v = x;
    v ^= v >> 16u;
    v *= 0x85ebca6bu;
    v ^= v >> 13u;
    v *= 0xc2b2ae35u;
    v ^= v >> 16u;
    return v;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let b = wid.x + wid.y * nwg.x;
    if (b >= params.n_blocks) {
        return;
    }
    for (var i = lid; i < 256u * NSUB; i += WG) {
        atomicStore(&h[i], 0u);
    }
    if (lid == 0u) {
        atomicStore(&ck, 0u);
    }
    workgroupBarrier();
    let start = b * params.block_size;
    let len = min(params.block_size, params.n_bytes - start);
    let nw = (len + 3u) / 4u;
    let w0 = start / 4u;
    let sub = (lid % NSUB) * 256u;
    var c = 0u;
    for (var i = lid; i < nw; i += WG) {
        var w = src[w0 + i];
        let rem = len - 4u * i;
        if (rem < 4u) {
            w &= (1u << (8u * rem)) - 1u;
#if HIST
            for (var k = 0u; k < rem; k++) {
                atomicAdd(&h[sub + ((w >> (8u * k)) & 255u)], 1u);
            }
#endif
        }
#if HIST
        else {
            atomicAdd(&h[sub + (w & 255u)], 1u);
            atomicAdd(&h[sub + ((w >> 8u) & 255u)], 1u);
            atomicAdd(&h[sub + ((w >> 16u) & 255u)], 1u);
            atomicAdd(&h[sub + (w >> 24u)], 1u);
        }
#endif
        c += fmix(w ^ (i * 0x9e3779b9u));
    }
    atomicAdd(&ck, c);
    workgroupBarrier();
    for (var s = lid; s < 256u; s += WG) {
        var t = 0u;
        for (var q = 0u; q < NSUB; q++) {
            t += atomicLoad(&h[q * 256u + s]);
        }
        hist[b * 257u + s] = t;
    }
    if (lid == 0u) {
        hist[b * 257u + 256u] = fmix(atomicLoad(&ck) + len);
    }
}

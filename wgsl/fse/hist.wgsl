// Per-block byte histograms (HIST true; otherwise only the checksums) (workgroup-memory atomics,
// NSUB sub-histograms to spread contention) and a per-block checksum sum. Block b covers bytes
// [b * block_size, min((b + 1) * block_size, n_bytes)) of src (bytes packed 4 per u32 word); each
// block is split into params.slices slices of params.slice_words words, one workgroup each (a
// large block is not one workgroup's latency), which add their counts to the (zeroed) output.
// Each invocation loads 4 words per trip (independent loads in flight).
// HIST: out[b * 257 + s] += count of byte s, out[b * 257 + 256] += checksum sum; otherwise
// out[b] += checksum sum (a compact array, read back beside decoding's status words). The block
// checksum is fmix32(sum + block bytes) (see fse/__init__.py), applied by the reader.

struct Params {
    n_bytes: u32,
    block_size: u32,   // multiple of 4
    n_blocks: u32,
    slices: u32,       // workgroups per block
    slice_words: u32,  // words per workgroup
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> hist: array<atomic<u32>>;

const WG: u32 = 256u;
const NSUB: u32 = 8u;

var<workgroup> h: array<atomic<u32>, 2048>;
var<workgroup> ck: atomic<u32>;

#include "fse/fmix.wgsl"

fn count_word(sub: u32, w: u32) {
#if HIST
    atomicAdd(&h[sub + (w & 255u)], 1u);
    atomicAdd(&h[sub + ((w >> 8u) & 255u)], 1u);
    atomicAdd(&h[sub + ((w >> 16u) & 255u)], 1u);
    atomicAdd(&h[sub + (w >> 24u)], 1u);
#endif
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let wg = wid.x + wid.y * nwg.x;
    let b = wg / params.slices;
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
    let nfull = len / 4u;
    let w0 = start / 4u;
    // this workgroup's words: [lo, hi) of the block's; the last slice takes the partial word
    let lo = (wg % params.slices) * params.slice_words;
    let hi = min(nfull, lo + params.slice_words);
    let sub = (lid % NSUB) * 256u;
    var c = 0u;
    var i = lo + lid;
    for (; i + 3u * WG < hi; i += 4u * WG) {
        let a0 = src[w0 + i];
        let a1 = src[w0 + i + WG];
        let a2 = src[w0 + i + 2u * WG];
        let a3 = src[w0 + i + 3u * WG];
        count_word(sub, a0);
        count_word(sub, a1);
        count_word(sub, a2);
        count_word(sub, a3);
        c += fmix(a0 ^ (i * 0x9e3779b9u)) + fmix(a1 ^ ((i + WG) * 0x9e3779b9u))
           + fmix(a2 ^ ((i + 2u * WG) * 0x9e3779b9u)) + fmix(a3 ^ ((i + 3u * WG) * 0x9e3779b9u));
    }
    for (; i < hi; i += WG) {
        let a = src[w0 + i];
        count_word(sub, a);
        c += fmix(a ^ (i * 0x9e3779b9u));
    }
    let rem = len - 4u * nfull;
    if (lid == 0u && rem > 0u && wg % params.slices == params.slices - 1u) {
        let w = src[w0 + nfull] & ((1u << (8u * rem)) - 1u);
#if HIST
        for (var k = 0u; k < rem; k++) {
            atomicAdd(&h[(w >> (8u * k)) & 255u], 1u);
        }
#endif
        c += fmix(w ^ (nfull * 0x9e3779b9u));
    }
    atomicAdd(&ck, c);
    workgroupBarrier();
#if HIST
    for (var s = lid; s < 256u; s += WG) {
        var t = 0u;
        for (var q = 0u; q < NSUB; q++) {
            t += atomicLoad(&h[q * 256u + s]);
        }
        if (t != 0u) {
            atomicAdd(&hist[b * 257u + s], t);
        }
    }
    if (lid == 0u) {
        atomicAdd(&hist[b * 257u + 256u], atomicLoad(&ck));
    }
#else
    if (lid == 0u) {
        atomicAdd(&hist[b], atomicLoad(&ck));
    }
#endif
}

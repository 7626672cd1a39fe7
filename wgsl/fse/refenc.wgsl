// Reference mode, encoding, phase 2: each workgroup codes WG blocks, one per invocation, with
// the tables phase 1 (reftab.wgsl) built. Invocation t codes block
// wid * WG + t exactly as the reference block compressor: two interleaved states, the block
// read backwards, the bitstream appended to the NCount header that phase 1 wrote.
// status[2b]: in: header bytes; status[2b + 1]: out: header + stream bytes, 0xffffffff = ran past
// the slot (a separate word, so that a batch replayed for timing reads the same input).

struct Params {
    n_bytes: u32,
    block_size: u32,
    n_blocks: u32,
    stage_words: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read> plan: array<u32>;
@group(0) @binding(3) var<storage, read> tabs: array<u32>;
@group(0) @binding(4) var<storage, read_write> stage: array<u32>;
@group(0) @binding(5) var<storage, read_write> status: array<u32>;

const WG: u32 = {{WG}}u;
const TSIZE: u32 = {{TSIZE}}u;
const TW: u32 = 256u + TSIZE / 2u;
const PLAN: u32 = 129u;

// Tables are read from `tabs` through the cache hierarchy: the NVIDIA Vulkan driver gives
// workgroup memory a carve-out of about 48 KiB per SM, so per-block tables (5 KiB) held there let
// only ~10 coders run per SM; from global memory every block of the chunk is a coder in flight.

#include "fse/bitwriter.wgsl"

fn next_state(tb: u32, i: u32) -> u32 {
    return (tabs[tb + 256u + (i >> 1u)] >> (16u * (i & 1u))) & 0xffffu;
}

fn init_state(tb: u32, tmask: u32, s: u32) -> u32 {
    let t = tabs[tb + s];
    let mbo = t & 15u;
    let thr = (t >> 4u) & 0x3fffu;
    return next_state(tb, ((thr >> mbo) + (t >> 18u)) & tmask);
}

fn enc(w: ptr<function, Bw>, tb: u32, tmask: u32, state: u32, s: u32) -> u32 {
    return enc_t(w, tb, tmask, state, tabs[tb + s]);
}

// t = the symbol's entry, loaded ahead by the caller (it does not depend on the state)
fn enc_t(w: ptr<function, Bw>, tb: u32, tmask: u32, state: u32, t: u32) -> u32 {
    let nb = (t & 15u) - select(0u, 1u, state < ((t >> 4u) & 0x3fffu));
    bw_put(w, state, nb);
    return next_state(tb, ((state >> nb) + (t >> 18u)) & tmask);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = wid.x + wid.y * nwg.x;
    let b = g * WG + lid;
    if (b >= params.n_blocks) {
        return;
    }
    let p0 = plan[b * PLAN];
    let hbytes = status[2u * b];
    if (p0 == 0u || hbytes == 0xffffffffu) {
        status[2u * b + 1u] = 0xffffffffu;
        return;
    }
    let tl = clamp(p0 & 255u, 5u, countTrailingZeros(TSIZE));
    let tmask = (1u << tl) - 1u;
    let tb = b * TW;
    let base = b * params.stage_words;
    var w: Bw;
    w.base = base;
    w.cap = params.stage_words;
    w.over = 0u;
    w.wpos = hbytes / 4u;
    w.nacc = 8u * (hbytes & 3u);
    w.acc = select(0u, stage[base + w.wpos] & ((1u << w.nacc) - 1u), w.nacc > 0u);

    let start = b * params.block_size;
    let len = min(params.block_size, params.n_bytes - start);
    let w0 = start / 4u;
    var s1 = 0u;
    var s2 = 0u;
    let xl = (src[w0 + ((len - 1u) >> 2u)] >> (8u * ((len - 1u) & 3u))) & 255u;
    let xm = (src[w0 + ((len - 2u) >> 2u)] >> (8u * ((len - 2u) & 3u))) & 255u;
    if (((len - 1u) & 1u) == 0u) {
        s1 = init_state(tb, tmask, xl);
        s2 = init_state(tb, tmask, xm);
    } else {
        s2 = init_state(tb, tmask, xl);
        s1 = init_state(tb, tmask, xm);
    }
    var i = i32(len) - 3;
    loop {
        if (i < 0 || (i & 3) == 3) {
            break;
        }
        let x = (src[w0 + (u32(i) >> 2u)] >> (8u * (u32(i) & 3u))) & 255u;
        if ((i & 1) == 1) {
            s2 = enc(&w, tb, tmask, s2, x);
        } else {
            s1 = enc(&w, tb, tmask, s1, x);
        }
        i -= 1;
    }
    // whole words, top byte first; eight words (one 32-byte sector) loaded a group ahead
    var q = (i + 1) / 4 - 1;
    loop {
        if (q < 0 || (q & 7) == 7) {
            break;
        }
        let x4 = src[w0 + u32(q)];
        s2 = enc(&w, tb, tmask, s2, x4 >> 24u);
        s1 = enc(&w, tb, tmask, s1, (x4 >> 16u) & 255u);
        s2 = enc(&w, tb, tmask, s2, (x4 >> 8u) & 255u);
        s1 = enc(&w, tb, tmask, s1, x4 & 255u);
        q -= 1;
    }
    var nx: array<u32, 8>;
    if (q >= 7) {
        let g = w0 + u32(q) - 7u;
#unroll K 8
        nx[{{K}}] = src[g + {{K}}u];
#endunroll
    }
    loop {
        if (q < 7) {
            break;
        }
        let cur = nx;
        if (q >= 15) {
            let g = w0 + u32(q) - 15u;
#unroll K 8
            nx[{{K}}] = src[g + {{K}}u];
#endunroll
        }
        // the symbol entries of a whole sector first: none of them waits on a state
        var te: array<u32, 32>;
#unroll K 8
        te[4 * {{K}}] = tabs[tb + (cur[7 - {{K}}] >> 24u)];
        te[4 * {{K}} + 1] = tabs[tb + ((cur[7 - {{K}}] >> 16u) & 255u)];
        te[4 * {{K}} + 2] = tabs[tb + ((cur[7 - {{K}}] >> 8u) & 255u)];
        te[4 * {{K}} + 3] = tabs[tb + (cur[7 - {{K}}] & 255u)];
#endunroll
#unroll K 8
        s2 = enc_t(&w, tb, tmask, s2, te[4 * {{K}}]);
        s1 = enc_t(&w, tb, tmask, s1, te[4 * {{K}} + 1]);
        s2 = enc_t(&w, tb, tmask, s2, te[4 * {{K}} + 2]);
        s1 = enc_t(&w, tb, tmask, s1, te[4 * {{K}} + 3]);
#endunroll
        q -= 8;
    }
    bw_put(&w, s2, tl);
    bw_put(&w, s1, tl);
    bw_put(&w, 1u, 1u);
    let bits = bw_finish(&w);
    status[2u * b + 1u] = select((bits + 7u) / 8u, 0xffffffffu, w.over != 0u);
}

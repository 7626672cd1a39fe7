// FSE block encoder, interleaved mode (reference mode: reftab.wgsl + refenc.wgsl). One
// workgroup of LANES invocations per block, lane j codes the bytes of words j, j + LANES, ... of
// the block with its own state into its own word-aligned stream.
//
// plan[b * 129]: 0 = skip, else table_log | max_symbol << 8; plan[b * 129 + 1 + k] holds the
// normalised counts of symbols 2k, 2k+1 as (norm + 1) u16 pairs.
// stage: per block stage_words words: [0, 128) header, [128, 128 + LANES) lane word counts, then LANES slots of lane_cap.
// status[2b] = header bytes; status[2b+1] = payload bytes;
// 0xffffffff = a stream ran past its slot (the host stores the block raw).

struct Params {
    n_bytes: u32,
    block_size: u32,
    n_blocks: u32,
    stage_words: u32,
    lane_cap: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read> plan: array<u32>;
@group(0) @binding(3) var<storage, read_write> stage: array<u32>;
@group(0) @binding(4) var<storage, read_write> status: array<u32>;

const WG: u32 = {{WG}}u;
const TSIZE: u32 = {{TSIZE}}u;
const PLAN: u32 = 129u;
const HDR_WORDS: u32 = 128u;

#include "fse/ctable.wgsl"

var<workgroup> sh_p0: u32;
var<workgroup> tot_words: atomic<u32>;
var<workgroup> ovf: atomic<u32>;

#include "fse/bitwriter.wgsl"

var<private> tmask: u32;

fn init_state(s: u32) -> u32 {
    let t = tt[s];
    let nb = (t.x + 32768u) >> 16u;
    let v = (nb << 16u) - t.x;
    return get16(((v >> nb) + t.y) & tmask);
}

fn enc_l(w: ptr<function, Bw>, tmask: u32, state: u32, s: u32) -> u32 {
    let t = tt[s];
    let nb = (state + t.x) >> 16u;
    bw_put(w, state, nb);
    return get16(((state >> nb) + t.y) & tmask);
}

// The four bytes of a word, last byte first (the coder runs backwards).
fn enc_word(w: ptr<function, Bw>, tm: u32, st0: u32, x: u32) -> u32 {
    var st = enc_l(w, tm, st0, x >> 24u);
    st = enc_l(w, tm, st, (x >> 16u) & 255u);
    st = enc_l(w, tm, st, (x >> 8u) & 255u);
    return enc_l(w, tm, st, x & 255u);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let b = wid.x + wid.y * nwg.x;
    if (b >= params.n_blocks) {
        return;
    }
    if (lid == 0u) {
        sh_p0 = plan[b * PLAN];
        atomicStore(&tot_words, 0u);
        atomicStore(&ovf, 0u);
    }
    let p0 = workgroupUniformLoad(&sh_p0);
    if (p0 == 0u) {
        return;
    }
    let tl = clamp(p0 & 255u, 5u, countTrailingZeros(TSIZE));
    let maxsv = (p0 >> 8u) & 255u;
    tmask = (1u << tl) - 1u;
    for (var k = lid; k < 128u; k += WG) {
        let w = plan[b * PLAN + 1u + k];
        normv[2u * k] = i32(w & 0xffffu) - 1;
        normv[2u * k + 1u] = i32(w >> 16u) - 1;
    }
    workgroupBarrier();
    build_ctable(lid, tl, maxsv);

    let start = b * params.block_size;
    let len = min(params.block_size, params.n_bytes - start);
    let w0 = start / 4u;
    let base = b * params.stage_words;
    if (lid == 0u) {
        writer(base, HDR_WORDS);
        write_ncount(tl, maxsv);
        status[2u * b] = select((finish() + 7u) / 8u, 0xffffffffu, over);
    }
    let j = lid;
    var bw: Bw;
    bw.acc = 0u;
    bw.nacc = 0u;
    bw.wpos = 0u;
    bw.base = base + HDR_WORDS + WG + j * params.lane_cap;
    bw.cap = params.lane_cap;
    bw.over = 0u;
    let tm = tmask;
    let nw = (len + 3u) / 4u;
    var kw = 0u;
    if (j < nw) {
        kw = (nw - 1u - j) / WG + 1u;
    }
    if (kw > 0u) {
        // the lane's last word (maybe the block's partial last word): first state from its last byte
        let wl = j + WG * (kw - 1u);
        let w = src[w0 + wl];
        let nv = min(4u, len - 4u * wl);
        var st = init_state((w >> (8u * (nv - 1u))) & 255u);
        for (var q = 1u; q < nv; q++) {
            st = enc_l(&bw, tm, st, (w >> (8u * (nv - 1u - q))) & 255u);
        }
        // four words loaded ahead of the four being coded (H200: 10% faster than one ahead)
        let top = i32(kw) - 2;
        let lw = w0 + j;
        var x0 = src[lw + WG * u32(max(top, 0))];
        var x1 = src[lw + WG * u32(max(top - 1, 0))];
        var x2 = src[lw + WG * u32(max(top - 2, 0))];
        var x3 = src[lw + WG * u32(max(top - 3, 0))];
        for (var k = top; k >= 0; k -= 4) {
            let y0 = src[lw + WG * u32(max(k - 4, 0))];
            let y1 = src[lw + WG * u32(max(k - 5, 0))];
            let y2 = src[lw + WG * u32(max(k - 6, 0))];
            let y3 = src[lw + WG * u32(max(k - 7, 0))];
            st = enc_word(&bw, tm, st, x0);
            if (k >= 1) {
                st = enc_word(&bw, tm, st, x1);
            }
            if (k >= 2) {
                st = enc_word(&bw, tm, st, x2);
            }
            if (k >= 3) {
                st = enc_word(&bw, tm, st, x3);
            }
            x0 = y0;
            x1 = y1;
            x2 = y2;
            x3 = y3;
        }
        bw_put(&bw, st, tl);
        bw_put(&bw, 1u, 1u);
        bw_finish(&bw);
    }
    stage[base + HDR_WORDS + j] = bw.wpos;
    atomicAdd(&tot_words, bw.wpos);
    if (bw.over != 0u) {
        atomicOr(&ovf, 1u);
    }
    workgroupBarrier();
    if (lid == 0u) {
        let h = status[2u * b];
        var total = 0xffffffffu;
        if (atomicLoad(&ovf) == 0u && h != 0xffffffffu) {
            total = 4u * ((h + 3u) / 4u + WG / 2u + atomicLoad(&tot_words));
        }
        status[2u * b + 1u] = total;
    }
}

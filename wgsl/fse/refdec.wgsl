// Reference mode, decoding, phase 2: each workgroup decodes NBLK blocks, one per invocation, with
// the decoding tables phase 1 (decode.wgsl, REF) built and checked, copied into workgroup
// memory. Invocation t decodes block wid * NBLK + t: two states, the bitstream read backwards.
// info[b] = tl | header bytes << 8 | ok << 31 (phase 1); status[b] = 8 when the stream does not
// end exactly at the header (the host raises CorruptDataError). Every read and write is bounded.

struct Params {
    n_bytes: u32,
    block_size: u32,
    n_blocks: u32,
    comp_words: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> comp: array<u32>;
@group(0) @binding(2) var<storage, read> plan: array<u32>;
@group(0) @binding(3) var<storage, read> dtabs: array<u32>;
@group(0) @binding(4) var<storage, read> info: array<u32>;
@group(0) @binding(5) var<storage, read_write> dst: array<u32>;
@group(0) @binding(6) var<storage, read_write> status: array<u32>;

const WG: u32 = {{WG}}u;
const NBLK: u32 = {{NBLK}}u;
const TSIZE: u32 = {{TSIZE}}u;
const TP: u32 = TSIZE + 1u;   // odd stride: different blocks' equal states fall in different banks

var<workgroup> dtab: array<u32, NBLK * TP>;   // new_state | symbol << 16 | nb_bits << 24

#include "fse/bitreader.wgsl"

fn highbit(x: u32) -> u32 {
    return 31u - countLeadingZeros(max(x, 1u));
}

fn sym(rb: ptr<function, Rb>, s1: ptr<function, u32>, s2: ptr<function, u32>, tb: u32, tmask: u32,
       i: u32, n: u32) -> u32 {
    if (i >= n) {
        return 0u;
    }
    if ((i & 1u) == 0u) {
        let e = dtab[tb + (*s1 & tmask)];
        if (i + 2u < n) {
            *s1 = (e & 0xffffu) + rb_read(rb, e >> 24u);
        }
        return (e >> 16u) & 255u;
    }
    let e = dtab[tb + (*s2 & tmask)];
    if (i + 2u < n) {
        *s2 = (e & 0xffffu) + rb_read(rb, e >> 24u);
    }
    return (e >> 16u) & 255u;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let g = wid.x + wid.y * nwg.x;
    let b0 = g * NBLK;
    if (b0 >= params.n_blocks) {
        return;
    }
    let nt = min(NBLK, params.n_blocks - b0) * TSIZE;
    for (var i = lid; i < nt; i += WG) {
        dtab[(i / TSIZE) * TP + i % TSIZE] = dtabs[b0 * TSIZE + i];
    }
    workgroupBarrier();
    let b = b0 + lid;
    if (lid >= NBLK || b >= params.n_blocks) {
        return;
    }
    let inf = info[b];
    if (plan[3u * b] != 2u || (inf >> 31u) == 0u) {
        return;
    }
    let tl = clamp(inf & 255u, 5u, countTrailingZeros(TSIZE));
    let hb = (inf >> 8u) & 0xffffu;
    let bw = plan[3u * b + 1u];
    let csize = plan[3u * b + 2u];
    let start = b * params.block_size;
    let len = min(params.block_size, params.n_bytes - start);
    let ow = start / 4u;
    let nd = arrayLength(&dst);
    let lb = max((cw(bw + (csize - 1u) / 4u) >> (8u * ((csize - 1u) & 3u))) & 255u, 1u);
    let tb = lid * TP;
    let tmask = (1u << tl) - 1u;
    var rb = rb_init(bw, (csize - 1u) * 8u + highbit(lb), hb * 8u);
    var s1 = rb_read(&rb, tl);
    var s2 = rb_read(&rb, tl);
    let nw = (len + 3u) / 4u;
    // words whose 4 symbols are all followed by a state update (4q + 5 < len): no tests
    let nfast = select(0u, (len - 2u) / 4u, len >= 6u);
    for (var q = 0u; q < nfast; q++) {
        let e1 = dtab[tb + (s1 & tmask)];
        s1 = (e1 & 0xffffu) + rb_read(&rb, e1 >> 24u);
        let e2 = dtab[tb + (s2 & tmask)];
        s2 = (e2 & 0xffffu) + rb_read(&rb, e2 >> 24u);
        let e3 = dtab[tb + (s1 & tmask)];
        s1 = (e3 & 0xffffu) + rb_read(&rb, e3 >> 24u);
        let e4 = dtab[tb + (s2 & tmask)];
        s2 = (e4 & 0xffffu) + rb_read(&rb, e4 >> 24u);
        let w = ((e1 >> 16u) & 255u) | (((e2 >> 16u) & 255u) << 8u) | (((e3 >> 16u) & 255u) << 16u)
              | (((e4 >> 16u) & 255u) << 24u);
        if (ow + q < nd) {
            dst[ow + q] = w;
        }
    }
    for (var q = nfast; q < nw; q++) {
        let i = 4u * q;
        var w = sym(&rb, &s1, &s2, tb, tmask, i, len);
        w |= sym(&rb, &s1, &s2, tb, tmask, i + 1u, len) << 8u;
        w |= sym(&rb, &s1, &s2, tb, tmask, i + 2u, len) << 16u;
        w |= sym(&rb, &s1, &s2, tb, tmask, i + 3u, len) << 24u;
        if (ow + q < nd) {
            dst[ow + q] = w;
        }
    }
    if (rb.pos != rb.sb) {
        status[b] = 8u;
    }
}

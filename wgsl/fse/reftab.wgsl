// Reference mode, encoding, phase 1: one workgroup of WG invocations per block builds the
// block's encoding table (the parallel build of ctable.wgsl) compactly into `tabs` (TW words per
// block), and writes the NCount header at the start of the block's stage slot, for phase 2
// (refenc.wgsl), which codes one block per invocation. Needs CTABLE_OUT.
//
// tabs[b * TW + s], s < 256: mbo | thr << 4 | (dfs mod 8192) << 18, where the reference's
//   deltaNbBits = (mbo << 16) - thr, so nbBits(state) = mbo - (state < thr), and dfs is
//   deltaFindState (taken mod the table size when used).
// tabs[b * TW + 256 + i]: next states of slots 2i, 2i + 1 as u16 pairs.
// status[2b] = header bytes (byte-padded), read by phase 2.

struct Params {
    n_blocks: u32,
    stage_words: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> plan: array<u32>;
@group(0) @binding(2) var<storage, read_write> stage: array<u32>;
@group(0) @binding(3) var<storage, read_write> status: array<u32>;
@group(0) @binding(4) var<storage, read_write> tabs: array<atomic<u32>>;

const WG: u32 = {{WG}}u;
const TSIZE: u32 = {{TSIZE}}u;
const TW: u32 = 256u + TSIZE / 2u;
const PLAN: u32 = 129u;

// The table goes straight to `tabs`: held in workgroup memory (10 KiB) it let only 3 workgroups
// run per SM (the NVIDIA Vulkan driver's carve-out is about 48 KiB per SM).
var<private> tab_base: u32;

fn put_tt(s: u32, dnb: u32, dfs: u32) {
    // deltaNbBits = (mbo << 16) - thr with 0 < thr <= 2 * size: recover mbo and thr
    let mbo = (dnb + 0xffffu) >> 16u;
    let thr = (mbo << 16u) - dnb;
    atomicStore(&tabs[tab_base + s], (mbo & 15u) | ((thr & 0x3fffu) << 4u) | ((dfs & 0x1fffu) << 18u));
}

fn put_stab(i: u32, state: u32) {
    atomicOr(&tabs[tab_base + 256u + (i >> 1u)], (state & 0xffffu) << (16u * (i & 1u)));
}

#include "fse/ctable.wgsl"
#include "fse/bitwriter.wgsl"

var<workgroup> sh_p0: u32;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let b = wid.x + wid.y * nwg.x;
    if (b >= params.n_blocks) {
        return;
    }
    if (lid == 0u) {
        sh_p0 = plan[b * PLAN];
    }
    let p0 = workgroupUniformLoad(&sh_p0);
    if (p0 == 0u) {
        return;
    }
    let tl = clamp(p0 & 255u, 5u, countTrailingZeros(TSIZE));
    let maxsv = (p0 >> 8u) & 255u;
    for (var k = lid; k < 128u; k += WG) {
        let w = plan[b * PLAN + 1u + k];
        normv[2u * k] = i32(w & 0xffffu) - 1;
        normv[2u * k + 1u] = i32(w >> 16u) - 1;
    }
    workgroupBarrier();
    tab_base = b * TW;
    for (var i = lid; i < (1u << tl) / 2u; i += WG) {   // put_stab ORs u16 halves in
        atomicStore(&tabs[tab_base + 256u + i], 0u);
    }
    storageBarrier();
    build_ctable(lid, tl, maxsv);
    if (lid == 0u) {
        writer(b * params.stage_words, params.stage_words);
        write_ncount(tl, maxsv);
        put(0u, (8u - (nacc & 7u)) & 7u);
        status[2u * b] = select((finish() + 7u) / 8u, 0xffffffffu, over);
    }
}

// Stream compaction of 32-bit values by a mask (COMPACT), or run-length encoding of 32-bit values
// (RLE: the kept items are the run starts; values and run lengths are written), built like the
// scan (scan/scan.wgsl): the input is read once, each invocation holds VEC4_PER_THREAD vec4 words of its tile
// in registers (#unroll'd, so the private arrays are indexed by constants; subgroup-contiguous
// slots, so every load instruction of a subgroup reads one span), the kept counts are scanned
// with subgroup inclusive adds (the carry from the last lane), the tile's output offset comes from
// the single-pass decoupled lookback over u32 counts (common/lookback.wgsl), and the items are
// written without data-dependent loops. COMPACT: each vec4's kept components go, by their rank,
// straight to the output (workgroup memory costs occupancy: on an H100 these direct stores beat
// every staged variant).
//
// RLE: values and run lengths are written as aligned vec4 words inside the tile's output range
// (single words at its two ends). A run's length is the distance to the next start in the same
// tile, so the run starts are kept, with BITMASK (subgroups), as one bit per element with the
// position of every fourth start, from which each output vec4 finds its starts after the lookback
// (no staging rounds; values read again from x); without subgroups (STAGED) values and starts are
// staged in workgroup memory, STAGE items a round, then written contiguously. The tile's
// last run, which may cross into later tiles, leaves its start in its count slot and
// rle/fixup.wgsl finishes it from the per-tile record `head`.
//
// Modes (exactly one): SINGLE_PASS, RTS_REDUCE (per-tile counts into `partials`), RTS_DOWNSWEEP
// (offsets from `partials`, after scan/rts_spine.wgsl): the last two are the repair that the single
// pass arms on the GPU (indirect dispatch) when a lookback exhausted its step budget.
// Defines: WG, VEC4_PER_THREAD, SUBGROUPS, COMPACT | RLE, MASK_U8 (one mask byte per element, else one word),
// PAIRS (COMPACT of 64-bit values: x and out_val are their 32-bit words, n counts words),
// STAGED, STAGE, BITMASK (with SLOT_MAJOR), SPIN_LIMIT, LOOKBACK_WINDOW, the u32 add monoid.
// Bindings and parameters are those of rle/fused.wgsl, plus the values `out_val` and, with RLE, the
// run lengths `counts`, the per-tile record `head`, the values and lengths again as vec4 words
// (`out_vec`, `counts_vec`), and with BITMASK x again as single words (`x_u32`).

#include "common/monoid.wgsl"

struct Params {
    n: u32,               // elements
    n_vec4: u32,          // vec4 words holding them
    n_mask_words: u32,    // 32-bit words of the mask buffer
    n_tiles: u32,
    n_groups: u32,
    withhold_period: u32, // test switch: tiles t with t % period == period - 1 withhold their state
    max_steps: u32,
    max_self: u32,        // predecessors a lookback past its step budget may walk (lookback.wgsl)
    repair_x: u32,
    repair_y: u32,
    fin_per_group: u32,
    max_groups: u32,
#if CHAINED
    win_base: u32,        // rle/chain.wgsl: the output window's first element
    pos_base: u32,        // the chunk's first element
    tile_base: u32,       // tiles of the chunks before
    has_prev: u32,        // 1 past the first chunk
    win_len: u32,         // elements of the output window; past it the next window (the _hi bindings)
#endif
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<u32>>;
#if BITMASK
@group(0) @binding(13) var<storage, read> x_u32: array<u32>;  // x again: run values read at the store
#endif
#if COMPACT
@group(0) @binding(2) var<storage, read> mask: array<u32>;
#endif
#if SINGLE_PASS
@group(0) @binding(3) var<storage, read_write> tile_state: array<atomic<u32>>;
@group(0) @binding(8) var<storage, read_write> repair_args: array<u32>;
#else
@group(0) @binding(5) var<storage, read_write> partials: array<u32>;
#endif
#if !RTS_REDUCE
@group(0) @binding(4) var<storage, read_write> info: array<u32>;
@group(0) @binding(7) var<storage, read_write> out_val: array<u32>;
#if RLE
@group(0) @binding(11) var<storage, read_write> out_vec: array<vec4<u32>>;
@group(0) @binding(9) var<storage, read_write> counts: array<u32>;
@group(0) @binding(10) var<storage, read_write> head: array<u32>;
@group(0) @binding(12) var<storage, read_write> counts_vec: array<vec4<u32>>;
#endif
#endif

#include "rle/chain.wgsl"

#if !RTS_REDUCE
#if CHAINED
// rle/chain.wgsl: a chunk's items run on from the window at win_base into the next one
@group(0) @binding(15) var<storage, read_write> out_val_hi: array<u32>;
#if RLE
@group(0) @binding(16) var<storage, read_write> out_vec_hi: array<vec4<u32>>;
@group(0) @binding(17) var<storage, read_write> counts_hi: array<u32>;
@group(0) @binding(18) var<storage, read_write> counts_vec_hi: array<vec4<u32>>;
#endif
#endif

// Stores at window-relative positions (rle/chain.wgsl; unchained the result itself).
fn put_val(k: u32, v: u32) {
#if CHAINED
    if (k >= params.win_len) {
        out_val_hi[k - params.win_len] = v;
        return;
    }
#endif
    out_val[k] = v;
}

#if RLE
fn put_count(k: u32, v: u32) {
#if CHAINED
    if (k >= params.win_len) {
        counts_hi[k - params.win_len] = v;
        return;
    }
#endif
    counts[k] = v;
}

fn put_vec(q: u32, v: vec4<u32>, c: vec4<u32>) {
#if CHAINED
    if (q >= params.win_len / 4u) {
        out_vec_hi[q - params.win_len / 4u] = v;
        counts_vec_hi[q - params.win_len / 4u] = c;
        return;
    }
#endif
    out_vec[q] = v;
    counts_vec[q] = c;
}
#endif
#endif

const WG: u32 = {{WG}}u;
const VEC4_PER_THREAD: u32 = {{VEC4_PER_THREAD}}u;
const TILE_V: u32 = WG * VEC4_PER_THREAD;

#include "common/tile_slots.wgsl"
#if SUBGROUPS
#include "common/subgroup_scan.wgsl"
#endif
#if SINGLE_PASS
#include "common/lookback.wgsl"
#endif

var<workgroup> wg_scan: array<u32, WG>;
var<workgroup> wg_aggregate: u32;
#if STAGED
const STAGE: u32 = {{STAGE}}u;
var<workgroup> stage: array<u32, STAGE>;
var<workgroup> stage_pos: array<u32, STAGE + 1u>;  // tile-local start of item k (and of the next)
#endif
#if BITMASK
// BITMASK (RLE with subgroups): the tile's run starts as one bit per element (word w: elements
// 32 w .. 32 w + 31), and the position of every fourth start (ranks 0, 4, 8, ...); the store finds
// a run's start from the nearest of those and reads its value again from x (x_u32). Both are
// written by the kernel (the bitmask zeroed first).
const NW: u32 = VEC4_PER_THREAD * WG / 8u;
var<workgroup> bm: array<atomic<u32>, NW>;
var<workgroup> pos4: array<u32, VEC4_PER_THREAD * WG>;  // pos4[i]: tile-local position of the (4 i)-th start
#endif

fn load_x(gv: u32) -> vec4<u32> {
    return x[min(gv, max(params.n_vec4, 1u) - 1u)];
}

// Bit j set where component j is nonzero.
fn nonzero_bits(d: vec4<u32>) -> u32 {
    return select(0u, 1u, d.x != 0u) | select(0u, 2u, d.y != 0u) | select(0u, 4u, d.z != 0u)
        | select(0u, 8u, d.w != 0u);
}

// Item flags of vec4 `gv` holding `v` (bit j: element 4 gv + j is kept / starts a run). With
// `clamp` (a partial tile) the indices read are clamped (branch-free: subgroup operations follow)
// and elements past n cleared; a whole tile (every element below n) needs neither, and its
// clamps and masks held registers (callers pass a constant, so each call compiles to one form).
fn item_flags(gv: u32, v: vec4<u32>, clamp: bool) -> u32 {
#if RLE
    // the word before this vec4; at the very start one that differs from the first element
    let hi = select(0xffffffffu, max(params.n_vec4, 1u) - 1u, clamp);
#if SUBGROUPS
    // A lane's previous word is the lane before's last one (the slots of one load are
    // consecutive); lane 0's is the word before the span, one broadcast load for the subgroup.
    let bw = x[max(min(gv - g_lane, hi), 1u) - 1u].w;
    let up = subgroupShuffleUp(v.w, 1u);
    let pw = select(select(bw, chain_prev(v.x), gv == 0u), up, g_lane > 0u);
#else
    let pw = select(x[max(min(gv, hi), 1u) - 1u].w, chain_prev(v.x), gv == 0u);
#endif
    let bits = nonzero_bits(v ^ vec4<u32>(pw, v.x, v.y, v.z));
#else
    let hi = select(0xffffffffu, max(params.n_mask_words, 1u) - 1u, clamp);
#if PAIRS
    // 64-bit values as word pairs: vec4 gv holds elements 2 gv and 2 gv + 1, each flag set on both
    // of its words (counts, offsets and stores are in words; finish_total halves the total)
#if MASK_U8
    let mw = mask[min(gv / 2u, hi)] >> ((gv & 1u) * 16u);
    let m2 = vec2<u32>(mw & 0xffu, mw & 0xff00u);
#else
    let m2 = vec2<u32>(mask[min(gv * 2u, hi)], mask[min(gv * 2u + 1u, hi)]);
#endif
    let bits = select(0u, 3u, m2.x != 0u) | select(0u, 12u, m2.y != 0u);
#elif MASK_U8
    let bits = nonzero_bits(vec4<u32>(mask[min(gv, hi)]) & vec4<u32>(0xffu, 0xff00u, 0xff0000u, 0xff000000u));
#else
    let b = min(gv * 4u, hi);
    let bits = nonzero_bits(vec4<u32>(mask[b], mask[min(b + 1u, hi)], mask[min(b + 2u, hi)], mask[min(b + 3u, hi)]));
#endif
#endif
    let e0 = gv * 4u;
    let valid = select((1u << min(params.n - min(e0, params.n), 4u)) - 1u, 0u, e0 >= params.n);
    return select(bits, bits & valid, clamp);
}

// Combines the invocations' (subgroups') partial counts across the workgroup: (before, total).
// Called by the whole workgroup; ends with a barrier, so wg_scan may be rewritten afterwards.
fn workgroup_prefix(run: u32) -> vec2<u32> {
#if SUBGROUPS
    let sgid = g_lid / g_sg_size;
    if (g_lane == 0u) {
        wg_scan[sgid] = run;
    }
    workgroupBarrier();
    if (g_lid == 0u) {
        var acc = 0u;
        for (var s = 0u; s < WG / g_sg_size; s++) {
            let t = wg_scan[s];
            wg_scan[s] = acc;
            acc += t;
        }
        wg_aggregate = acc;
#if SINGLE_PASS
        publish_own_aggregate(acc);
#endif
    }
    workgroupBarrier();
    let before = wg_scan[sgid];
#else
    wg_scan[g_lid] = run;
    workgroupBarrier();
    for (var d = 1u; d < WG; d = d << 1u) {
        var t = wg_scan[g_lid];
        if (g_lid >= d) {
            t += wg_scan[g_lid - d];
        }
        workgroupBarrier();
        wg_scan[g_lid] = t;
        workgroupBarrier();
    }
    let before = wg_scan[g_lid] - run;
    if (g_lid == WG - 1u) {
        wg_aggregate = wg_scan[WG - 1u];
#if SINGLE_PASS
        publish_own_aggregate(wg_scan[WG - 1u]);
#endif
    }
#endif
    let agg = workgroupUniformLoad(&wg_aggregate);
    workgroupBarrier();
    return vec2<u32>(before, agg);
}

// The partial count of this invocation (subgroup) from its flags; with `pre`, the exclusive count
// before each of its vec4 within the invocation's subgroup (invocation).
fn partial_counts(f: ptr<function, array<u32, VEC4_PER_THREAD>>, pre: ptr<function, array<u32, VEC4_PER_THREAD>>) -> u32 {
    var run = 0u;
#unroll I VEC4_PER_THREAD
    {
        let c = countOneBits((*f)[{{I}}]);
#if SUBGROUPS
        let incl = subgroupInclusiveAdd(c);
        (*pre)[{{I}}] = run + incl - c;
        run += subgroupShuffle(incl, g_sg_size - 1u);
#else
        (*pre)[{{I}}] = run;
        run += c;
#endif
    }
#endunroll
    return run;
}

#if BITMASK
#include "rle/bitmask.wgsl"
#endif

// This invocation's (subgroup's) share of a tile's count, recounted from its input or mask.
fn tile_run(tile: u32) -> u32 {
    let t0 = tile * TILE_V;
    var f: array<u32, VEC4_PER_THREAD>;
    var pre: array<u32, VEC4_PER_THREAD>;
#unroll I VEC4_PER_THREAD
    {
        let gv = t0 + vec_slot({{I}}u);
#if RLE
        f[{{I}}] = item_flags(gv, load_x(gv), true);
#else
        f[{{I}}] = item_flags(gv, vec4<u32>(), true);
#endif
    }
#endunroll
    return partial_counts(&f, &pre);
}

fn runs_total(run: u32) -> u32 {
    return workgroup_prefix(run).y;
}

// A predecessor tile's count, recounted (the decoupled fallback).
fn fallback_aggregate(tile: u32) -> u32 {
    return runs_total(tile_run(tile));
}

#if !RTS_REDUCE
#if STAGED
#include "rle/staged.wgsl"
#endif
// Writes the tile's kept values to output positions offset .. offset + count - 1. Called by the
// whole workgroup, in uniform control flow (count is uniform).
fn store_tile(tile: u32, v: ptr<function, array<vec4<u32>, VEC4_PER_THREAD>>, f: ptr<function, array<u32, VEC4_PER_THREAD>>,
              pre: ptr<function, array<u32, VEC4_PER_THREAD>>, offset: u32, count: u32) {
#if BITMASK
    bitmask_store_tile(tile, offset, count);
#endif
#if COMPACT
#unroll I VEC4_PER_THREAD
    {
        let m = (*f)[{{I}}];
        let vv = (*v)[{{I}}];
        var p = offset + (*pre)[{{I}}];
        if ((m & 1u) != 0u) { put_val(p, vv.x); }
        p += m & 1u;
        if ((m & 2u) != 0u) { put_val(p, vv.y); }
        p += (m >> 1u) & 1u;
        if ((m & 4u) != 0u) { put_val(p, vv.z); }
        p += (m >> 2u) & 1u;
        if ((m & 8u) != 0u) { put_val(p, vv.w); }
    }
#endunroll
#endif
#if STAGED
    if (count <= STAGE) {
        // one round (or no skipping), taken apart: the single-round code then stays branch-free
        for (var base = 0u; base < count; base += STAGE) {
            stage_round(tile, v, f, pre, offset, count, base, false);
        }
    } else {
        for (var base = 0u; base < count; base += STAGE) {
            stage_round(tile, v, f, pre, offset, count, base, true);
        }
    }
    if (g_lid == 0u && count == 0u) {
        head[2u * (tile + chain_tile())] = offset + chain_win();
        head[2u * (tile + chain_tile()) + 1u] = 0xffffffffu;
    }
#endif
}

fn finish_total(total: u32) {
#if PAIRS
    info[0] = total / 2u;  // words to elements
#else
    info[0] = total;
#endif
    let groups = (total + params.fin_per_group - 1u) / params.fin_per_group;
    let gy = (groups + params.max_groups - 1u) / params.max_groups;
    info[4] = select((groups + gy - 1u) / max(gy, 1u), 0u, groups == 0u);
    info[5] = select(gy, 0u, groups == 0u);
    info[6] = select(1u, 0u, groups == 0u);
}
#endif

#include "rle/end_tile.wgsl"

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32,
#if SUBGROUPS
        @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) sg_size: u32,
#endif
        @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    g_lid = lid;
#if SUBGROUPS
    g_lane = lane;
    g_sg_size = sg_size;
#endif
#if BITMASK
    // not left to WGSL's zeroing of workgroup memory, which not every implementation does per workgroup
    for (var i = lid; i < NW; i += WG) {
        atomicStore(&bm[i], 0u);
    }
#endif
#if SINGLE_PASS
    let tile = take_ticket(lid);  // its broadcast is a barrier
#else
    let tile = wid.x + wid.y * nwg.x;
#if BITMASK
    workgroupBarrier();
#endif
#endif
    if (tile >= params.n_tiles) {
        return;
    }
    let t0 = tile * TILE_V;
    var f: array<u32, VEC4_PER_THREAD>;
    var pre: array<u32, VEC4_PER_THREAD>;
    var v: array<vec4<u32>, VEC4_PER_THREAD>;
#if RTS_REDUCE
#if RLE
#unroll I VEC4_PER_THREAD
    v[{{I}}] = load_x(t0 + vec_slot({{I}}u));
#endunroll
#endif
#else
    if (t0 + TILE_V <= params.n / 4u) {  // uniform: a whole tile, no clamps or masks
#unroll I VEC4_PER_THREAD
        v[{{I}}] = x[t0 + vec_slot({{I}}u)];
#endunroll
#unroll I VEC4_PER_THREAD
        f[{{I}}] = item_flags(t0 + vec_slot({{I}}u), v[{{I}}], false);
#endunroll
    } else {
#unroll I VEC4_PER_THREAD
        v[{{I}}] = load_x(t0 + vec_slot({{I}}u));
#endunroll
#unroll I VEC4_PER_THREAD
        f[{{I}}] = item_flags(t0 + vec_slot({{I}}u), v[{{I}}], true);
#endunroll
    }
#endif
#if RTS_REDUCE
#unroll I VEC4_PER_THREAD
    f[{{I}}] = item_flags(t0 + vec_slot({{I}}u), v[{{I}}], true);
#endunroll
#endif
#if SINGLE_PASS
    if (tile != 0u && !withholds(tile, params.withhold_period)) {
        g_agg_tile = tile;
    }
#endif
#if BITMASK
    let aggregate = bitmask_prefix(&f);
#else
    let wp = workgroup_prefix(partial_counts(&f, &pre));
    let aggregate = wp.y;
#unroll I VEC4_PER_THREAD
    pre[{{I}}] += wp.x;
#endunroll
#endif
#if SINGLE_PASS
    g_agg_tile = NO_TILE;
#endif

    end_tile(tile, &v, &f, &pre, aggregate);
}

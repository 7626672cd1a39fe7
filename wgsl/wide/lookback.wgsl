// Decoupled lookback with decoupled fallback for 64-bit values (wide/scan.wgsl), under the
// contract of common/lookback.wgsl (which carries 32 bits), subgroup-parallel as its SG_LOOKBACK
// path with EARLY_PUBLISH.
//
// `tile_state: array<atomic<u32>>`, cleared to zero before the dispatch: words 0..3 are counters
// ([0] tile ticket, [1] failure status, [2] fallbacks taken, [3] lookbacks that walked past their
// step budget). Tile t owns two write-once slots of three words, AGGREGATE at STATE_BASE + 6t and
// INCLUSIVE at STATE_BASE + 6t + 3, each word VALID | 22 bits of the value (22 + 22 + 20 bits).
// Only relaxed atomics are assumed: every word carries its own valid bit, and a slot is taken only
// when all three words have it. A slot is written once with one value, so a reader never sees a
// mix of two values: the INCLUSIVE only by the tile's owner, the AGGREGATE by the owner or by a
// fallback that recomputes the tile with the owner's exact code (the same bits, floats included).
// A poll reads both slots and takes the INCLUSIVE where it is complete.
//
// Each step, the first subgroup polls one predecessor per lane (at most SPIN_LIMIT polls while
// any is silent) and combines them with a ballot and a subgroup scan, with no barrier inside the
// step; lane 0 publishes the tile's inclusive value the moment its step finds the prefix. A silent
// predecessor is reduced by the whole workgroup (fallback_aggregate) and published. When the step
// budget runs out (a pathological schedule), the walk goes on one predecessor per loop trip,
// taking published values and reducing silent tiles on the spot (tile_run, runs_total), up to
// `max_self` tiles; the host keeps every segment of a dispatch within that, so the lookback always
// finishes. Loop trips: at most max_steps * (SPIN_LIMIT + 1 + MAX_NSG) + max_self + MAX_NSG (a
// workgroup combine takes one per subgroup; tile_run and the subgroup scans take none), within
// lavapipe's cap of 65,535 per invocation.
// The subgroup scan combines predecessors in lane order (nearest first): the ops here commute.
// Expects: Acc, identity, combine, to_words, from_words, g_lane, g_sg_size, sg_inclusive,
// sg_last, fallback_aggregate, tile_run, runs_total, SPIN_LIMIT.

#include "common/ballot.wgsl"

const STATE_BASE: u32 = 4u;
const FLAG_AGGREGATE: u32 = 1u;
const FLAG_INCLUSIVE: u32 = 2u;
const VALID: u32 = 0x80000000u;
const SPIN_LIMIT: u32 = {{SPIN_LIMIT}}u;
const LB_CONTINUE: u32 = 0u;
const LB_DONE: u32 = 1u;
const LB_STALL: u32 = 2u;

var<workgroup> lb_ticket: u32;
var<workgroup> lb_step: vec4<u32>;   // (LB_*, lanes taken before a stall, combined words)
var<workgroup> lb_walk: vec3<u32>;   // (flag, words) of the tile the walk reads
var<private> g_publish: bool;        // set by the caller: publish the inclusive value from the lookback
var<private> g_aggregate: Acc;       // the tile's own aggregate, for that
var<private> g_published: bool;      // set by the lookback (uniform): it published the inclusive value

fn publish_state(tile: u32, flag: u32, value: Acc) {
    let w = to_words(value);
    let i = STATE_BASE + 6u * tile + 3u * (flag - 1u);
    atomicStore(&tile_state[i], VALID | (w.x & 0x3fffffu));
    atomicStore(&tile_state[i + 1u], VALID | (w.x >> 22u) | ((w.y & 0xfffu) << 10u));
    atomicStore(&tile_state[i + 2u], VALID | (w.y >> 12u));
}

// (flag, low word, high word) of a tile: INCLUSIVE where that slot is complete, else AGGREGATE
// where that one is, else flag 0.
fn poll_state(tile: u32) -> vec3<u32> {
    let i = STATE_BASE + 6u * tile;
    let a = vec3<u32>(atomicLoad(&tile_state[i]), atomicLoad(&tile_state[i + 1u]), atomicLoad(&tile_state[i + 2u]));
    let c = vec3<u32>(atomicLoad(&tile_state[i + 3u]), atomicLoad(&tile_state[i + 4u]),
                      atomicLoad(&tile_state[i + 5u]));
    let inc = (c.x & c.y & c.z & VALID) != 0u;
    let agg = (a.x & a.y & a.z & VALID) != 0u;
    // select, not if: subgroup operations follow (a divergent branch before them has miscompiled
    // on NVIDIA)
    let s = select(a, c, inc);
    let lo = (s.x & 0x3fffffu) | (s.y << 22u);
    let hi = ((s.y >> 10u) & 0xfffu) | ((s.z & 0xfffffu) << 12u);
    return vec3<u32>(select(select(0u, FLAG_AGGREGATE, agg), FLAG_INCLUSIVE, inc), lo, hi);
}

// The workgroup's tile, taken from an atomic ticket so that predecessors started earlier
// (workgroup ids say nothing about launch order). Uniform across the workgroup.
fn take_ticket(lid: u32) -> u32 {
    if (lid == 0u) {
        lb_ticket = atomicAdd(&tile_state[0], 1u);
    }
    return workgroupUniformLoad(&lb_ticket);
}

// One step by the first subgroup, a predecessor per lane (lane k: tile look - k): the nearest lane
// that stops the walk (silent, inclusive, or the segment start) by a ballot, the lanes before it
// (and it, unless silent) combined by a subgroup scan. Returns (LB_*, that lane, combined words).
fn sg_lookback_step(look: u32, seg_first: u32, seed: Acc) -> vec4<u32> {
    let lane = g_lane;
    let size = g_sg_size;
    let valid = look >= seg_first + lane;
    let t = select(seg_first, look - lane, valid);
    var st = poll_state(t);
    for (var s = 1u; s < SPIN_LIMIT; s++) {
        if (subgroupAll(st.x != 0u || !valid)) {
            break;
        }
        st = poll_state(t);
    }
    let at_start = valid && t == seg_first;
    let stop = valid && (st.x != FLAG_AGGREGATE || at_start);
    let first = first_lane(subgroupBallot(stop), size);
    let first_flag = subgroupShuffle(st.x, min(first, size - 1u));
    var result = LB_CONTINUE;
    var upto = size;  // lanes below this are combined
    if (first < size) {
        if (first_flag == 0u) {
            result = LB_STALL;
            upto = first;
        } else {
            result = LB_DONE;
            upto = first + 1u;
        }
    }
    let mine = select(identity(), from_words(st.yz), lane < upto && valid);
    // select, not if, before the subgroup scan
    let seeded = result == LB_DONE && lane == first && at_start && st.x != FLAG_INCLUSIVE;
    let total = sg_last(sg_inclusive(select(mine, combine(seed, mine), seeded)));
    return vec4<u32>(result, first, to_words(total));
}

// Exclusive prefix of `tile` (> seg_first) within its segment, which starts at tile `seg_first`;
// `seed` is combined in front of the segment. Called by the whole workgroup; uniform result.
fn decoupled_lookback(tile: u32, seg_first: u32, seed: Acc, lid: u32, max_steps: u32, max_self: u32) -> Acc {
    var prefix = identity();
    var look = tile - 1u;  // nearest tile not yet combined
    var done = false;
    for (var step = 0u; step < max_steps; step++) {
        if (lid < g_sg_size) {
            let r = sg_lookback_step(look, seg_first, seed);
            if (lid == 0u) {
                lb_step = r;
                // the tile's inclusive value goes out as soon as lane 0 knows it, not after the
                // broadcast's barrier: successors' lookbacks wait on it
                if (r.x == LB_DONE && g_publish) {
                    publish_state(tile, FLAG_INCLUSIVE, combine(combine(from_words(r.zw), prefix), g_aggregate));
                }
            }
        }
        let r = workgroupUniformLoad(&lb_step);
        prefix = combine(from_words(r.zw), prefix);
        if (r.x == LB_DONE) {
            done = true;
            g_published = g_publish;
            break;  // nothing of the lookback's workgroup memory is written again
        }
        if (r.x == LB_CONTINUE) {
            look -= g_sg_size;
        } else {
            // Decoupled fallback: reduce the silent predecessor ourselves and publish it, so the
            // scan never waits on a workgroup that may never be scheduled.
            look -= r.y;
            let value = fallback_aggregate(look);
            if (lid == 0u) {
                publish_state(look, FLAG_AGGREGATE, value);
                atomicAdd(&tile_state[2], 1u);
            }
            prefix = combine(value, prefix);
            if (look == seg_first) {
                prefix = combine(seed, prefix);
                done = true;
                break;
            }
            look -= 1u;
        }
        workgroupBarrier();  // lb_step is rewritten next step
    }
    if (!done && look - seg_first < max_self) {  // uniform: the step budget ran out
        var acc = identity();  // published values met on the way (uniform)
        var run = identity();  // this invocation's shares of the silent tiles reduced here
        for (var k = 0u; k < max_self; k++) {
            if (lid == 0u) {
                lb_walk = poll_state(look);
            }
            let st = workgroupUniformLoad(&lb_walk);
            if (st.x != 0u) {
                acc = combine(from_words(st.yz), acc);
            } else {
                run = combine(tile_run(look), run);
            }
            if (st.x == FLAG_INCLUSIVE) {
                break;
            }
            if (look == seg_first) {
                acc = combine(seed, acc);
                break;
            }
            look -= 1u;
        }
        prefix = combine(combine(runs_total(run), acc), prefix);
        done = true;
        if (lid == 0u) {
            atomicAdd(&tile_state[3], 1u);
        }
    }
    if (!done && lid == 0u) {
        atomicMax(&tile_state[1], 1u);  // cannot happen while segments stay within max_self tiles
    }
    return prefix;
}

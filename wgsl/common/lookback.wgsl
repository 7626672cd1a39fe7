// Decoupled lookback with decoupled fallback (Merrill & Garland 2016; Smith, Levien & Owens 2025).
//
// Tile state lives in `tile_state: array<atomic<u32>>`, which the including kernel declares.
// Words 0..3 are counters: [0] tile ticket, [1] failure status, [2] fallbacks taken, [3] with
// SELF_COUNT, tiles whose lookback went past its step budget (otherwise the kernel's own).
// Tile t owns words STATE_BASE + 2t (low 16 bits of its value) and + 2t + 1 (high 16 bits).
// Each word holds (flag << 16) | half, so a flag and the bits it guards share one atomic word:
// only relaxed atomics are assumed. Flags only grow (atomicMax): NOT_READY < AGGREGATE < INCLUSIVE,
// so a fallback's late AGGREGATE can never overwrite an INCLUSIVE. Two writers of one flag always
// write the same bits: the fallback recomputes a tile's aggregate with the owner's exact code.
//
// Two ways to walk back, both bounded: WINDOW invocations poll a window of predecessors and
// invocation 0 combines them through workgroup memory (any device), or, with SG_LOOKBACK (needs
// subgroups: g_lane, g_sg_size, sg_inclusive), the first subgroup polls one predecessor per lane and
// combines them with a ballot and a subgroup scan, with no barrier inside a step. With EARLY_PUBLISH (subgroup lookback), lane 0 publishes
// the tile's inclusive value the moment its step finds the prefix, before the broadcast to the
// workgroup (the caller sets g_publish and g_aggregate, and reads g_published).
//
// The including kernel provides `fn fallback_aggregate(tile: u32) -> Elem`, called by the whole
// workgroup, which reduces a predecessor's input itself when that tile has not published, and,
// with SELF_REDUCE, `fn tile_run(tile: u32) -> Elem` (this invocation's share of a tile's total,
// as workgroup_prefix takes it) and `fn runs_total(run: Elem) -> Elem` (their workgroup total,
// called by the whole workgroup). Every loop is bounded: lavapipe silently cuts loops past 65,535
// trips per invocation. When the step budget runs out (a pathological schedule: hundreds of
// silent predecessors in a row), the walk goes on one predecessor per loop trip, without spinning
// or publishing: a published value is taken, a silent tile's input is reduced on the spot; this
// covers up to `max_self` predecessors, and only past that does the tile give up (`ok` false: the
// including kernel arms the repair pass). A host that keeps segments within max_self tiles knows
// that the lookback always finishes, and need not record the repair at all.

const STATE_BASE: u32 = 4u;
const FLAG_AGGREGATE: u32 = 1u;
const FLAG_INCLUSIVE: u32 = 2u;
const SPIN_LIMIT: u32 = {{SPIN_LIMIT}}u;

var<workgroup> lb_ticket: u32;
#if EARLY_PUBLISH
var<private> g_publish: bool;      // set by the caller: publish the inclusive value from the lookback
var<private> g_aggregate: Elem;    // the tile's own aggregate, for that
var<private> g_published: bool;    // set by the lookback (uniform): it published the inclusive value
#endif

#if EARLY_AGGREGATE
// The tile whose aggregate the including kernel's workgroup combine publishes the moment it is
// combined (its successors' lookbacks wait on it): set around the tile's own local scan, NO_TILE
// otherwise (a fallback reducing a predecessor goes through the same combine).
const NO_TILE: u32 = 0xffffffffu;
var<private> g_agg_tile: u32 = NO_TILE;

fn publish_own_aggregate(value: Elem) {
    if (g_agg_tile != NO_TILE) {
        publish_state(g_agg_tile, FLAG_AGGREGATE, value);
    }
}
#endif

#include "common/withhold.wgsl"

fn publish_state(tile: u32, flag: u32, value: Elem) {
    let bits = to_bits(value);
    let w = STATE_BASE + 2u * tile;
    atomicMax(&tile_state[w], (flag << 16u) | (bits & 0xffffu));
    atomicMax(&tile_state[w + 1u], (flag << 16u) | (bits >> 16u));
}

// (flag, bits) of a tile; flag 0 while it has not published or its two words disagree.
fn poll_state(tile: u32) -> vec2<u32> {
    let w = STATE_BASE + 2u * tile;
    let lo = atomicLoad(&tile_state[w]);
    let hi = atomicLoad(&tile_state[w + 1u]);
    let flag = lo >> 16u;
    // select, not if: subgroup operations follow in the subgroup lookback, and a divergent branch
    // before them has miscompiled on NVIDIA.
    return select(vec2<u32>(flag, (lo & 0xffffu) | (hi << 16u)), vec2<u32>(0u, 0u), flag != (hi >> 16u));
}

// The workgroup's tile, taken from an atomic ticket so that predecessors started earlier
// (workgroup ids say nothing about launch order). Uniform across the workgroup.
fn take_ticket(lid: u32) -> u32 {
    if (lid == 0u) {
        lb_ticket = atomicAdd(&tile_state[0], 1u);
    }
    return workgroupUniformLoad(&lb_ticket);
}

struct Lookback {
    prefix: Elem,   // combined value of every tile from seg_first to tile - 1 (and the seed)
    ok: bool,       // false when the step budget ran out: the repair pass takes over
}

const WINDOW: u32 = {{LOOKBACK_WINDOW}}u;
const LB_CONTINUE: u32 = 0u;
const LB_DONE: u32 = 1u;
const LB_STALL: u32 = 2u;

var<workgroup> lb_flags: array<u32, WINDOW>;
var<workgroup> lb_values: array<u32, WINDOW>;
var<workgroup> lb_result: vec2<u32>;  // (LB_*, tiles consumed before a stall)
var<workgroup> lb_self_state: vec2<u32>;
var<workgroup> lb_acc: u32;

// Exclusive prefix of `tile` (> seg_first) within its segment, which starts at tile `seg_first`;
// `seed` is combined in front of the segment. Each step, WINDOW invocations poll WINDOW
// predecessors at once (spinning at most SPIN_LIMIT times each); invocation 0 combines them
// nearest first until an INCLUSIVE, the segment start, or a tile that has published nothing, which
// the whole workgroup then reduces itself (the decoupled fallback) before going on.
#if SG_LOOKBACK
#include "common/ballot.wgsl"

// One group of polled predecessors, a lane each: the nearest lane that stops the walk (silent,
// inclusive, or the segment start) by a ballot, the lanes before it (and it, when inclusive)
// combined by a subgroup scan. Returns (LB_*, that lane or size, combined bits).
fn sg_group(st: vec2<u32>, valid: bool, at_start: bool, seed: Elem, lane: u32, size: u32) -> vec3<u32> {
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
    var mine = select(identity(), from_bits(st.y), lane < upto && valid);
    if (result == LB_DONE && lane == first && at_start && st.x != FLAG_INCLUSIVE) {
        mine = combine(seed, mine);
    }
    // The total from the inclusive scan's last lane, as the tile scan takes it (a subgroup
    // reduction there gave wrong carries on an H100).
    let total = subgroupShuffle(sg_inclusive(mine, lane, size), size - 1u);
    return vec3<u32>(result, first, to_bits(total));
}

// One step of the lookback by the first subgroup alone, a predecessor per lane, evaluated by
// sg_group (the monoids here are commutative). Returns (LB_*, tiles consumed before a stall,
// combined bits) from lane 0's point of view.
fn sg_lookback_step(look: u32, seg_first: u32, seed: Elem, lane: u32, size: u32) -> vec3<u32> {
    let valid = look >= seg_first + lane;
    let t = select(seg_first, look - lane, valid);
    var st = poll_state(t);
    for (var s = 1u; s < SPIN_LIMIT; s++) {
        if (subgroupAll(st.x != 0u || !valid)) {
            break;
        }
        st = poll_state(t);
#if LB_STATS_SPINS
        if (lane == 0u) {
            atomicAdd(&tile_state[3], 1u);  // diagnostics only: polls past a step's first
        }
#endif
    }
    return sg_group(st, valid, valid && t == seg_first, seed, lane, size);
}

var<workgroup> lb_step: vec3<u32>;
#endif

fn decoupled_lookback(tile: u32, seg_first: u32, seed: Elem, lid: u32, max_steps: u32, max_self: u32) -> Lookback {
    var prefix = identity();
    var look = tile - 1u;  // nearest tile not yet combined
    var done = false;
    for (var step = 0u; step < max_steps; step++) {
#if SG_LOOKBACK
        if (lid < g_sg_size) {
            let r = sg_lookback_step(look, seg_first, seed, g_lane, g_sg_size);
            if (lid == 0u) {
                lb_step = r;
#if LB_STATS_STEPS
                atomicAdd(&tile_state[3], 1u);  // diagnostics only: lookback steps taken
#endif
#if EARLY_PUBLISH
                // the tile's inclusive value goes out as soon as lane 0 knows it, not after the
                // broadcast's barriers: successors' lookbacks wait on it
                if (r.x == LB_DONE && g_publish) {
                    publish_state(tile, FLAG_INCLUSIVE, combine(combine(from_bits(r.z), prefix), g_aggregate));
                }
#endif
            }
        }
        let r3 = workgroupUniformLoad(&lb_step);
        let r = r3.xy;
        prefix = combine(from_bits(r3.z), prefix);
        if (r.x == LB_DONE) {
            done = true;
#if EARLY_PUBLISH
            g_published = g_publish;
#endif
        } else if (r.x == LB_CONTINUE) {
            look -= g_sg_size;
        } else {
#else
        if (lid < WINDOW) {
            var st = vec2<u32>(0u, 0u);
            if (look >= seg_first + lid) {
                for (var s = 0u; s < SPIN_LIMIT; s++) {
                    st = poll_state(look - lid);
                    if (st.x != 0u) {
                        break;
                    }
                }
            }
            lb_flags[lid] = st.x;
            lb_values[lid] = st.y;
        }
        workgroupBarrier();
        if (lid == 0u) {
            var acc = identity();
            var result = LB_CONTINUE;
            var j = 0u;
            for (; j < WINDOW; j++) {
                let f = lb_flags[j];
                if (f == 0u) {
                    result = LB_STALL;
                    break;
                }
                acc = combine(from_bits(lb_values[j]), acc);
                if (f == FLAG_INCLUSIVE) {
                    result = LB_DONE;
                    break;
                }
                if (look - j == seg_first) {
                    acc = combine(seed, acc);
                    result = LB_DONE;
                    break;
                }
            }
            lb_acc = to_bits(acc);
            lb_result = vec2<u32>(result, j);
        }
        let r = workgroupUniformLoad(&lb_result);
        prefix = combine(from_bits(lb_acc), prefix);
        if (r.x == LB_DONE) {
            done = true;
        } else if (r.x == LB_CONTINUE) {
            look -= WINDOW;
        } else {
#endif
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
            } else {
                look -= 1u;
            }
        }
#if EARLY_PUBLISH
        if (done) {
            break;  // nothing of the lookback's workgroup memory is written again
        }
        workgroupBarrier();  // the window's workgroup memory is rewritten next step
#else
        workgroupBarrier();  // the window's workgroup memory is rewritten next step
        if (done) {
            break;
        }
#endif
    }
#if SELF_REDUCE
    if (!done && look - seg_first < max_self) {  // uniform
        var acc = identity();  // published values met on the way (uniform)
        var run = identity();  // this invocation's shares of the silent tiles reduced here
        for (var k = 0u; k < max_self; k++) {
            if (lid == 0u) {
                lb_self_state = poll_state(look);
            }
            let st = workgroupUniformLoad(&lb_self_state);
            if (st.x != 0u) {
                acc = combine(from_bits(st.y), acc);
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
#if SELF_COUNT
        if (lid == 0u) {
            atomicAdd(&tile_state[3], 1u);
        }
#endif
    }
#endif
    if (!done && lid == 0u) {
        atomicMax(&tile_state[1], 1u);
    }
    return Lookback(prefix, done);
}

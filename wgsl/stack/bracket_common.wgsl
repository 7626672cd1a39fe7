// Bracket matching / stack monoid: the prologue every kernel of it includes (parameters, bindings,
// masks, the bicyclic summaries' scans, write_list). The stages, one entry file each:
// bracket_reduce.wgsl, spine.wgsl, bracket_chain.wgsl, bracket_leaf.wgsl (the multi-pass method)
// and single_pass.wgsl (with single_pass_state.wgsl and single_pass_walk.wgsl).
//
// Bracket matching over partitions of P = WG * 16 elements (with stack/spine.wgsl):
//   REDUCE: each partition's bicyclic summary (a = closes it pops from outside, b = opens it leaves
//           open) and, scattered directly by height, the global indices of those b unmatched opens.
//   stack/spine.wgsl: the stack size at each partition start, each partition's minimum M[q], and a
//           min segment tree over M.
//   CHAIN:  per partition q: M[q], parent(q) (nearest earlier partition with a smaller minimum),
//           first(q) (nearest earlier partition with a minimum below q's start size), start size.
//   LEAF:   each partition recomputes its stack sizes B(i) (stack size before element i) and finds,
//           for every element, the nearest k < i with B(k) < B(i): in the invocation's registers (a
//           stack of 4-bit offsets), else from the nearest earlier invocation whose minimum is below
//           B(i) (workgroup memory), else from the owner partition reached along the chain.
// In these four no workgroup waits on another (no lookback), so nothing depends on forward
// progress; every loop has a constant or small bound. Depth is unbounded (u32 stack sizes).
//   SINGLE_PASS: the same in one dispatch (opt-in: slower on an H100, see BENCHMARKS.md): partitions of
//           CHUNKS chunks of P elements, by ticket, publish their summaries (all chunks' loads at
//           once), write their lists (REDUCE's code, per chunk), find their start size by decoupled
//           lookback with decoupled fallback and publish it, find the owners of the heights they
//           need as the records of M going back (the lookback's window first, then windows of WG
//           partitions, jumping along published parent links where they can), publish their own
//           parent link, then per chunk fetch the opens it needs from the owners' lists (the
//           earlier chunks' own sub-lists, then the partitions') and run the leaf. Budgets bound
//           every loop; a partition past one gives up and arms the four passes above (recorded
//           indirect, partitions of P) as the repair.
// List entries carry the call's epoch (epoch << LOCAL_BITS | offset in the partition): a single-pass
// reader tells an entry whose store it cannot see yet (plain stores are not ordered by relaxed
// atomics) and rebuilds it from the input.
// Defines: WG (invocations; P = 16 * WG), LOCAL_BITS, MODE_U8 | MODE_U32 | MODE_KIND, REDUCE | CHAIN |
// LEAF | SINGLE_PASS, with REDUCE_FNS (REDUCE, SINGLE_PASS), LEAF_FNS (LEAF, SINGLE_PASS), TREE (CHAIN, LEAF);
// SUBGROUPS (scans by subgroup shuffles; else Hillis-Steele in workgroup memory), ELEMS_PER_VEC,
// NO_DEPTH (the leaf stores links only), CHUNK_OUT (the leaf of one chunk past one binding: global
// heights, carried opens, its unclosed opens pushed; stack.py _BracketChunks);
// SINGLE_PASS: CHUNKS (1: the code holds for 2 and 4, which ran slower on an H100),
// SPIN_LIMIT, LIST_SPIN, CHAIN_CAP; with subgroups SEG_TOTALS (write_list's scans from the summary's
// segment sums), BLOCK_MIN_LANES (the leaf's block minima by lanes) and, with one chunk, SHARED_WALK
// (each invocation's walk summarised once: the summary combined by every invocation, and write_list
// hands the leaf its masks and exclusive summary, so the body has no barrier it can do without);
// the test-only STALE_LISTS
// (no entry carries the epoch: every read rebuilds) and NO_SIZES (no partition publishes its size:
// every lookback goes back to partition 0), the diagnostic ROUND_STATS / LOOK_STATS.

struct Params {
    n: u32,          // elements
    n_parts: u32,    // partitions
    n_groups: u32,   // workgroups asked for (the grid may round up)
    tree_size: u32,  // leaves of the global min tree (a power of two >= n_parts)
    epoch: u32,      // tag of this call's list entries (entry = epoch << LOCAL_BITS | offset in the partition)
#if CHUNK_OUT
    out_base: u32,   // past one binding (stack.py _BracketChunks): the chunk's first global index
    push_opens: u32, // 1: store the opens the chunk leaves unclosed in `segment` (not the last chunk)
#endif
#if SINGLE_PASS
    withhold_period: u32,  // test switch: partitions q with q % period == period - 1 publish nothing
    max_steps: u32,        // lookback steps (of WG predecessors) before the partition gives up
    max_hops: u32,         // owner-walk rounds per partition before it gives up
    arm: u32,              // 1: a partition that gives up arms the repair dispatches
    red_x: u32,            // the repair's grids (REDUCE and LEAF, UP and DOWN, CHAIN)
    red_y: u32,
    up_x: u32,
    up_y: u32,
    chain_x: u32,
    chain_y: u32,
#endif
}

const WG: u32 = {{WG}}u;
const EPT: u32 = 16u;
const P: u32 = WG * EPT;
const INF: u32 = 0xffffffffu;
const LOCAL_BITS: u32 = {{LOCAL_BITS}}u;  // list entries: epoch << LOCAL_BITS | the open's offset in its partition
const LOCAL_MASK: u32 = (1u << LOCAL_BITS) - 1u;
#if SINGLE_PASS
const CHUNKS: u32 = {{CHUNKS}}u;  // the single pass: partitions of CHUNKS chunks of P elements, one leaf each
#else
const CHUNKS: u32 = 1u;
#endif
const PP: u32 = P * CHUNKS;        // elements per partition

@group(0) @binding(0) var<uniform> params: Params;
#if REDUCE
@group(0) @binding(1) var<storage, read> input: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> part_bic: array<vec2<u32>>;
@group(0) @binding(3) var<storage, read_write> opens_out: array<u32>;
#endif
#if CHAIN
@group(0) @binding(2) var<storage, read> part_start: array<u32>;
@group(0) @binding(4) var<storage, read> tree: array<u32>;
@group(0) @binding(7) var<storage, read_write> chain: array<vec4<u32>>;
#if CHUNK_OUT
@group(0) @binding(10) var<storage, read_write> tails: array<u32>;  // the lowest height after each partition
#endif
#endif
#if SINGLE_PASS
@group(0) @binding(1) var<storage, read> input: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> lists: array<atomic<u32>>;
@group(0) @binding(11) var<storage, read_write> sublists: array<u32>;  // the chunks' own lists (all but the last)
@group(0) @binding(5) var<storage, read_write> link: array<vec4<i32>>;
@group(0) @binding(6) var<storage, read_write> depth: array<vec4<i32>>;
@group(0) @binding(8) var<storage, read_write> state: array<atomic<u32>>;
@group(0) @binding(9) var<storage, read_write> info: array<atomic<u32>>;
@group(0) @binding(10) var<storage, read_write> repair_args: array<u32>;
#include "common/withhold.wgsl"
#endif
#if LEAF
@group(0) @binding(1) var<storage, read> input: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> opens_out: array<u32>;
@group(0) @binding(4) var<storage, read> tree: array<u32>;
@group(0) @binding(5) var<storage, read_write> link: array<vec4<i32>>;
@group(0) @binding(6) var<storage, read_write> depth: array<vec4<i32>>;
@group(0) @binding(7) var<storage, read> chain: array<vec4<u32>>;
#if CHUNK_OUT
// Past one binding: the carried stack's slots from the run's lowest height minus 1 up (gathered by
// carry.wgsl), and this chunk's segment of it (the opens it leaves unclosed, from its lowest height).
@group(0) @binding(8) var<storage, read> carried: array<i32>;
@group(0) @binding(9) var<storage, read_write> segment: array<i32>;
@group(0) @binding(10) var<storage, read> tails: array<u32>;  // the lowest height after each partition (CHAIN)
#endif
#endif

#if !CHAIN
// (open mask, close mask) of one element word: MODE_U8 bytes (nonzero = open), MODE_U32 words
// (nonzero = open), MODE_KIND words (1 = open, 2 = close, anything else = neither).
fn word_bits(w: u32) -> vec2<u32> {
#if MODE_KIND
    return vec2<u32>(select(0u, 1u, w == 1u), select(0u, 1u, w == 2u));
#else
    let o = select(0u, 1u, w != 0u);
    return vec2<u32>(o, 1u - o);
#endif
}

// The 16 elements of invocation `t` of partition `p` as two 16-bit masks; elements >= n are neither.
// Branch-free (clamped indices, masks): no divergence before the subgroup scans.
fn load_masks(p: u32, t: u32) -> vec2<u32> {
    let first = p * P + t * EPT;
    var om = 0u;
    var cm = 0u;
    let last_vec = (params.n - 1u) / {{ELEMS_PER_VEC}}u;
#if MODE_U8
    let v = input[min(first / 16u, last_vec)];
#unroll W 4
    {
        let w = v[{{W}}];
#unroll B 4
        {
            let o = select(0u, 1u, ((w >> ({{B}}u * 8u)) & 0xffu) != 0u);
            om |= o << ({{W}}u * 4u + {{B}}u);
            cm |= (1u - o) << ({{W}}u * 4u + {{B}}u);
        }
#endunroll
    }
#endunroll
#else
#unroll V 4
    {
        let v = input[min(first / 4u + {{V}}u, last_vec)];
#unroll W 4
        {
            let b = word_bits(v[{{W}}]);
            om |= b.x << ({{V}}u * 4u + {{W}}u);
            cm |= b.y << ({{V}}u * 4u + {{W}}u);
        }
#endunroll
    }
#endunroll
#endif
    let valid = select(0u, params.n - first, first < params.n);
    let keep = select((1u << valid) - 1u, 0xffffu, valid >= 16u);
    return vec2<u32>(om & keep, cm & keep);
}

#endif

// Bicyclic monoid: (a, b) = (closes popped from before, opens left open); x then y.
fn bic_combine(x: vec2<u32>, y: vec2<u32>) -> vec2<u32> {
    let m = min(x.y, y.x);
    return vec2<u32>(x.x + y.x - m, x.y + y.y - m);
}

var<workgroup> sh_a: array<u32, WG>;
var<workgroup> sh_b: array<u32, WG>;

#if SUBGROUPS
var<private> g_lane: u32;
var<private> g_sg: u32;
#endif

#if REDUCE_FNS
// (exclusive sum of the invocations' walk totals, minimum over the partition, minimum over the
// later invocations) for an invocation whose walk has total `tsum` and minimum `tmin` (from 0).
fn reduce_scans(lid: u32, tsum: i32, tmin: i32) -> vec3<i32> {
#if SUBGROUPS
    let sgid = lid / g_sg;
    let n_sg = WG / g_sg;
    let incl = subgroupInclusiveAdd(tsum);
    if (g_lane == g_sg - 1u) {
        sh_a[sgid] = bitcast<u32>(incl);
    }
    workgroupBarrier();
    var start = incl - tsum;
    for (var k = 0u; k < sgid; k++) {
        start += bitcast<i32>(sh_a[k]);
    }
    // suffix minimum within the subgroup (shuffles down), then over later subgroups
    let own = start + tmin;
    var suf = own;
    for (var d = 1u; d < g_sg; d = d << 1u) {
        let y = subgroupShuffleDown(suf, d);
        suf = select(suf, min(suf, y), g_lane + d < g_sg);
    }
    let later_in_sg = select(subgroupShuffleDown(suf, 1u), 0x7fffffff, g_lane + 1u >= g_sg);
    if (g_lane == 0u) {
        sh_b[sgid] = bitcast<u32>(suf);
    }
    workgroupBarrier();
    var later = later_in_sg;
    var all = 0x7fffffff;
    for (var k = 0u; k < n_sg; k++) {
        let m = bitcast<i32>(sh_b[k]);
        all = min(all, m);
        if (k > sgid) {
            later = min(later, m);
        }
    }
    return vec3<i32>(start, all, later);
#else
    sh_a[lid] = bitcast<u32>(tsum);
    workgroupBarrier();
    for (var d = 1u; d < WG; d = d << 1u) {
        var v = bitcast<i32>(sh_a[lid]);
        if (lid >= d) {
            v += bitcast<i32>(sh_a[lid - d]);
        }
        workgroupBarrier();
        sh_a[lid] = bitcast<u32>(v);
        workgroupBarrier();
    }
    let start = bitcast<i32>(sh_a[lid]) - tsum;
    sh_b[lid] = bitcast<u32>(start + tmin);
    workgroupBarrier();
    for (var d = 1u; d < WG; d = d << 1u) {
        var v = bitcast<i32>(sh_b[lid]);
        if (lid + d < WG) {
            v = min(v, bitcast<i32>(sh_b[lid + d]));
        }
        workgroupBarrier();
        sh_b[lid] = bitcast<u32>(v);
        workgroupBarrier();
    }
    var later = 0x7fffffff;
    if (lid + 1u < WG) {
        later = bitcast<i32>(sh_b[lid + 1u]);
    }
    return vec3<i32>(start, bitcast<i32>(sh_b[0]), later);
#endif
}
#endif

#if SEG_TOTALS
// The single pass with subgroups: write_list's scans from the segments' (subgroups') walk totals
// and minima that the partition's summary left (put_chunk_sum), without reduce_scans' barriers.
struct SegCarry {
    start: i32,    // the walk at segment sgid's start
    all: i32,      // the chunk's minimum
    earlier: i32,  // the minimum before the segment (0 included: the chunk's start)
    later: i32,    // the minimum after it
    total: i32,    // the walk at the chunk's end
}

// From the segments' (sum, minimum) of chunk k (put_chunk_sum), for segment sgid.
fn seg_carry(sgid: u32, k: u32) -> SegCarry {
    var c = SegCarry(0, 0x7fffffff, 0, 0x7fffffff, 0);
    for (var j = 0u; j < WG / g_sg; j++) {
        let v = chunk_sum(j, k);
        let lo = c.total + v.y;
        c.all = min(c.all, lo);
        if (j < sgid) {
            c.earlier = min(c.earlier, lo);
        }
        if (j > sgid) {
            c.later = min(c.later, lo);
        }
        if (j == sgid) {
            c.start = c.total;
        }
        c.total += v.x;
    }
    return c;
}

// reduce_scans' (start, minimum, minimum over the later invocations) for chunk k, and with
// SHARED_WALK the closes the earlier invocations pop from before the partition (for the leaf).
fn scans_from_segs(lid: u32, k: u32, tsum: i32, tmin: i32) -> vec4<i32> {
#if SHARED_WALK
    let c = g_carry;
    let start = c.start + g_excl;
#else
    let c = seg_carry(lid / g_sg, k);
    let start = c.start + subgroupExclusiveAdd(tsum);
#endif
    let all = c.all;
    var later = c.later;
    var earlier = c.earlier;
    let own = start + tmin;
    var suf = own;
#if SHARED_WALK
    var pmin = own;  // prefix minimum within the subgroup
#endif
    for (var d = 1u; d < g_sg; d = d << 1u) {
        let y = subgroupShuffleDown(suf, d);
        suf = select(suf, min(suf, y), g_lane + d < g_sg);
#if SHARED_WALK
        let z = subgroupShuffleUp(pmin, d);
        pmin = select(pmin, min(pmin, z), g_lane >= d);
#endif
    }
    later = min(later, select(subgroupShuffleDown(suf, 1u), 0x7fffffff, g_lane + 1u >= g_sg));
#if SHARED_WALK
    earlier = min(earlier, select(subgroupShuffleUp(pmin, 1u), 0x7fffffff, g_lane == 0u));
#endif
    return vec4<i32>(start, all, later, -earlier);
}
#endif

#if LEAF_FNS
// Exclusive bicyclic scan over the workgroup's invocations.
fn bic_exclusive(lid: u32, bic: vec2<u32>) -> vec2<u32> {
#if SUBGROUPS
    let sgid = lid / g_sg;
    var v = bic;
    for (var d = 1u; d < g_sg; d = d << 1u) {
        let y = subgroupShuffleUp(v, d);
        v = select(v, bic_combine(y, v), g_lane >= d);
    }
    let ex = select(subgroupShuffleUp(v, 1u), vec2<u32>(0u), g_lane == 0u);
    if (g_lane == g_sg - 1u) {
        sh_a[sgid] = v.x;
        sh_b[sgid] = v.y;
    }
    workgroupBarrier();
    var pre = vec2<u32>(0u);
    for (var k = 0u; k < sgid; k++) {
        pre = bic_combine(pre, vec2<u32>(sh_a[k], sh_b[k]));
    }
    return bic_combine(pre, ex);
#else
    sh_a[lid] = bic.x;
    sh_b[lid] = bic.y;
    workgroupBarrier();
    for (var d = 1u; d < WG; d = d << 1u) {
        var v = vec2<u32>(sh_a[lid], sh_b[lid]);
        if (lid >= d) {
            v = bic_combine(vec2<u32>(sh_a[lid - d], sh_b[lid - d]), v);
        }
        workgroupBarrier();
        sh_a[lid] = v.x;
        sh_b[lid] = v.y;
        workgroupBarrier();
    }
    var pre = vec2<u32>(0u, 0u);
    if (lid > 0u) {
        pre = vec2<u32>(sh_a[lid - 1u], sh_b[lid - 1u]);
    }
    return pre;
#endif
}
#endif

#if REDUCE_FNS
// Writes the list of chunk c (P elements; partition p = c / CHUNKS, chunk k = c % CHUNKS of it): the
// tagged offsets (within the partition) of the opens the partition leaves open, each at slot = its
// height above the partition's minimum (no compaction needed). The single pass also writes the
// chunk's own sub-list (for the partition's later chunks): the offsets within the chunk of the opens
// the chunk leaves open, at slot = height above the chunk's minimum. `ctx` places the chunk in its
// partition: (its start, the minimum over the later chunks (relative to its start, BIG_RUN: none),
// the partition's minimum), walk values relative to the partition's start. Returns the chunk's
// bicyclic summary (valid in the last invocation only).
const BIG_RUN: i32 = 0x7fffffff;
fn write_list(c: u32, lid: u32, m: vec2<u32>, ctx: vec3<i32>) -> vec2<u32> {
    // s[e]: unclamped walk (+1 open, -1 close) relative to the invocation's start.
    var s: array<i32, 17>;
    s[0] = 0;
    var tmin = 0;
#unroll E 16
    s[{{E}} + 1] = s[{{E}}] + i32((m.x >> {{E}}u) & 1u) - i32((m.y >> {{E}}u) & 1u);
    tmin = min(tmin, s[{{E}} + 1]);
#endunroll
#if SEG_TOTALS
    let sc = scans_from_segs(lid, c % CHUNKS, s[16], tmin);
#else
    let sc = reduce_scans(lid, s[16], tmin);
#endif
    let start = sc.x;   // walk value at the invocation's start (from the chunk's)
#if SHARED_WALK
    // For the leaf (one chunk per partition): the invocation's masks and its exclusive summary in
    // the partition (a = sc.w, b = start + a), in sh_surv until the leaf's share_invocations.
    sh_surv[lid] = vec4<u32>(m.x | (m.y << 16u), u32(sc.w), bitcast<u32>(start), 0u);
#endif
    let cmin = sc.y;    // the chunk's minimum, <= 0 (its start is 0)
    var run = sc.z;     // minimum over every later invocation (ends included)
    let k = c % CHUNKS;
    let tag = (params.epoch << LOCAL_BITS) | (k * P + lid * EPT);
    let list_at = (c - k) * P;  // the partition's list
#if SINGLE_PASS
    let off = ctx.x - ctx.z;
    let sub_at = (c - k) / CHUNKS * (CHUNKS - 1u) * P + k * P;  // its sub-list (not the last chunk)
    let sub = k + 1u < CHUNKS;
#else
    let off = -cmin;
#endif
    // An open survives a range iff it is below every later value in it; its height above the
    // range's minimum is its slot.
#unroll E 16
    {
        const e: i32 = 15 - {{E}};
        run = min(run, start + s[e + 1]);
        let v = start + s[e];
        if (((m.x >> u32(e)) & 1u) != 0u && v < run) {
#if SINGLE_PASS
            if (sub) {
                sublists[sub_at + u32(v - cmin)] = lid * EPT + u32(e);
            }
#endif
            if (v < ctx.y) {
                store_entry(list_at + u32(v + off), tag + u32(e));
            }
        }
    }
#endunroll
    return vec2<u32>(u32(-cmin), u32(start + s[16] - cmin));
}
#endif

// Bracket matching / stack monoid over partitions of P = WG * 16 elements (with stack/spine.wgsl):
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
// SUBGROUPS (scans by subgroup shuffles; else Hillis-Steele in workgroup memory), ELEMS_PER_VEC;
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

#if REDUCE
fn store_entry(i: u32, v: u32) {
    opens_out[i] = v;
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
#if SUBGROUPS
        @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) sg_size: u32,
#endif
        @builtin(num_workgroups) nwg: vec3<u32>) {
#if SUBGROUPS
    g_lane = lane;
    g_sg = min(sg_size, WG);  // a workgroup smaller than the subgroup fills only part of it
#endif
    let p = wid.x + wid.y * nwg.x;
    if (p >= params.n_parts) {
        return;
    }
    let bic = write_list(p, lid, load_masks(p, lid), vec3<i32>(0, BIG_RUN, 0));
    if (lid == WG - 1u) {
        part_bic[p] = bic;
    }
}
#endif

#if TREE
// Largest leaf index q < start with leaf value < h in a min tree (leaves at [size, 2 size)), or -1.
// The prefix [0, start) is covered by at most one node per level, (y >> k) - 1 where y >> k is odd
// (y = size + start): all of them are loaded at once (independent loads, one round trip), the
// nearest qualifying one is taken, then the descent costs one load per level below it.
const GT_LEVELS: u32 = 21u;  // tree_size <= 2^20 partitions
fn gtree_query(start: u32, h: u32) -> i32 {
    let size = params.tree_size;
    let y = size + start;
    var v: array<u32, GT_LEVELS>;
#unroll K 21
    {
        let r = y >> {{K}}u;
        let ok = r > 1u && (r & 1u) == 1u && start > 0u;
        v[{{K}}] = select(INF, tree[select(1u, r - 1u, ok)], ok);
    }
#endunroll
    var node = 0u;
#unroll K 21
    if (node == 0u && v[{{K}}] < h) {
        node = (y >> {{K}}u) - 1u;
    }
#endunroll
    if (node == 0u) {
        return -1;
    }
    for (var it = 0u; it < 40u; it++) {
        if (node >= size) {
            break;
        }
        let r = 2u * node + 1u;
        node = select(2u * node, r, tree[r] < h);
    }
    return i32(node - size);
}
#endif

#if CHAIN
// Per partition q: (M[q] = its minimum stack size, parent(q) = nearest earlier partition with a
// smaller minimum, first(q) = nearest earlier partition with a minimum below q's start height,
// q's start height); INF for "none". The leaf walks first(p), parent(first(p)), ... to find the
// owner of each height of the incoming stack it needs: heights only decrease along a partition.
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = gid.x + gid.y * nwg.x * WG;
    if (q >= params.n_parts) {
        return;
    }
    let m = tree[params.tree_size + q];
    let bp = part_start[q];
    chain[q] = vec4<u32>(m, bitcast<u32>(gtree_query(q, m)), bitcast<u32>(gtree_query(q, bp)), bp);
}
#endif

#if LEAF_FNS
const NBLK: u32 = WG / 32u;                           // blocks of 32 invocations (any subgroup size)
var<workgroup> sh_tmin: array<vec4<u32>, WG / 4u>;    // each invocation's minimum of B[0..16]
var<workgroup> sh_surv: array<vec4<u32>, WG>;         // its unmatched opens (element offsets, 4 bits each, top first), B[16], parent
#if BLOCK_MIN_LANES
var<workgroup> sh_bmin: array<atomic<u32>, NBLK>;     // minimum of sh_tmin over each block (INF before)
fn bmin_at(k: u32) -> u32 {
    return atomicLoad(&sh_bmin[k]);
}
#else
var<workgroup> sh_bmin: array<u32, NBLK>;             // minimum of sh_tmin over each block
fn bmin_at(k: u32) -> u32 {
    return sh_bmin[k];
}
#endif

// Last invocation l < limit of block `blk` with minimum < h (as an invocation index), or -1:
// the block's 32 minima in 8 vector loads, then constant-indexed compares.
fn block_last_below(blk: u32, limit: u32, h: u32) -> i32 {
    var best = -1;
#unroll K 8
    {
        let v = sh_tmin[blk * 8u + {{K}}u];
#unroll C 4
        if ({{K}}u * 4u + {{C}}u < limit && v[{{C}}] < h) {
            best = i32(blk * 32u + {{K}}u * 4u + {{C}}u);
        }
#endunroll
    }
#endunroll
    return best;
}

// Nearest invocation j < before whose elements hold a stack size below h, or -1.
fn owner_search(before: u32, h: u32) -> i32 {
    if (before == 0u) {
        return -1;
    }
    let blk = (before - 1u) / 32u;
    let j = block_last_below(blk, before - blk * 32u, h);
    if (j >= 0) {
        return j;
    }
    var b = -1;
    for (var k = 0u; k < blk; k++) {
        if (bmin_at(k) < h) {
            b = i32(k);
        }
    }
    if (b < 0) {
        return -1;
    }
    return block_last_below(u32(b), 32u, h);
}

// The invocation's bicyclic summary: (closes it pops from before it, opens it leaves open).
fn inv_summary(m: vec2<u32>) -> vec2<u32> {
    var s = 0;
    var smin = 0;
#unroll E 16
    s += i32((m.x >> {{E}}u) & 1u) - i32((m.y >> {{E}}u) & 1u);
    smin = min(smin, s);
#endunroll
    return vec2<u32>(u32(-smin), u32(s - smin));
}

// Stack sizes: B[e] before element e (B[16] after the last) from B[0] = b0; returns their minimum.
fn inv_heights(m: vec2<u32>, b0: u32, B: ptr<function, array<u32, 17>>) -> u32 {
    (*B)[0] = b0;
    var tmin = b0;
#unroll E 16
    {
        let cur = (*B)[{{E}}];
        let o = (m.x >> {{E}}u) & 1u;
        let c = (m.y >> {{E}}u) & 1u;
        (*B)[{{E}} + 1] = select(select(cur, max(cur, 1u) - 1u, c != 0u), cur + 1u, o != 0u);
        tmin = min(tmin, (*B)[{{E}} + 1]);
    }
#endunroll
    return tmin;
}

// Links within the invocation: an element stack of offsets, 4 bits each (top in the low bits of a
// 64-bit shift register in two words). Returns (mask of the elements that found that stack empty,
// lo, hi, size): what is left are the invocation's unmatched opens, top first. An element that
// found the stack empty is pending when B[e] > 0: its target is the open at height B[e] of the
// stack on entry.
fn inv_links(m: vec2<u32>, base: u32, lk: ptr<function, array<i32, 16>>) -> vec4<u32> {
    var empty = 0u;
    var lo = 0u;
    var hi = 0u;
    var sz = 0u;
#unroll E 16
    {
        let o = ((m.x >> {{E}}u) & 1u) != 0u;
        let popped = ((m.y >> {{E}}u) & 1u) != 0u && sz > 0u;
        (*lk)[{{E}}] = select(-1, i32(base + (lo & 15u)), sz > 0u);
        empty |= select(0u, 1u << {{E}}u, sz == 0u);
        let nlo = select(select(lo, (lo >> 4u) | (hi << 28u), popped), (lo << 4u) | {{E}}u, o);
        hi = select(select(hi, hi >> 4u, popped), (hi << 4u) | (lo >> 28u), o);
        lo = nlo;
        sz = select(select(sz, sz - 1u, popped), sz + 1u, o);
    }
#endunroll
    return vec4<u32>(empty, lo, hi, sz);
}

fn positive_mask(B: ptr<function, array<u32, 17>>) -> u32 {
    var mask = 0u;
#unroll E 16
    mask |= select(0u, 1u << {{E}}u, (*B)[{{E}}] > 0u);
#endunroll
    return mask;
}

// Publishes the invocation's minimum and unmatched opens to the workgroup, then the block minima.
fn share_invocations(lid: u32, tmin: u32, st: vec4<u32>, b16: u32) {
    sh_tmin[lid / 4u][lid % 4u] = tmin;
    sh_surv[lid] = vec4<u32>(st.y, st.z, b16, 0u);
#if BLOCK_MIN_LANES
    // The block minima by the lanes (groups of min(subgroup, 32)) before the one barrier.
    let group = min(g_sg, 32u);
    var bm = tmin;
    for (var d = 1u; d < group; d = d << 1u) {
        bm = min(bm, subgroupShuffleXor(bm, d));
    }
    if (lid % group == 0u) {
        atomicMin(&sh_bmin[lid / 32u], bm);
    }
    workgroupBarrier();
#else
    workgroupBarrier();
    if (NBLK > 1u) {  // (one block: owner_search reads no block minimum)
        if (lid < NBLK) {
            var bm = INF;
#unroll K 8
            {
                let v = sh_tmin[lid * 8u + {{K}}u];
                bm = min(bm, min(min(v.x, v.y), min(v.z, v.w)));
            }
#endunroll
            sh_bmin[lid] = bm;
        }
        workgroupBarrier();
    }
#endif
}

// Hands every pending height above invocation jo's minimum to jo (whose minimum is below the
// current height): the open at height t is jo's unmatched open number B_jo[16] - t from the top.
// Returns jo's minimum.
fn serve_from_invocation(p: u32, jo: u32, B: ptr<function, array<u32, 17>>, lk: ptr<function, array<i32, 16>>,
                         pending: ptr<function, u32>) -> u32 {
    let js = sh_surv[jo];
    let jmin = sh_tmin[jo / 4u][jo % 4u];
    let jbase = i32(p * P + jo * EPT);
#unroll E 16
    {
        let k = js.z - (*B)[{{E}}];
        if ((((*pending) >> {{E}}u) & 1u) != 0u && (*B)[{{E}}] > jmin) {
            (*lk)[{{E}}] = jbase + i32((select(js.x, js.y, k >= 8u) >> (4u * (k & 7u))) & 15u);
            *pending &= ~(1u << {{E}}u);
        }
    }
#endunroll
    return jmin;
}

// Each invocation's own 16 links, then its 16 depths (depth = min(B[e], B[e + 1])).
fn store_direct(base: u32, lk: ptr<function, array<i32, 16>>, B: ptr<function, array<u32, 17>>) {
    let n_vec = (params.n + 3u) / 4u;
#unroll V 4
    {
        let vi = base / 4u + {{V}}u;
        if (vi < n_vec) {
            link[vi] = vec4<i32>((*lk)[{{V}} * 4], (*lk)[{{V}} * 4 + 1], (*lk)[{{V}} * 4 + 2], (*lk)[{{V}} * 4 + 3]);
        }
    }
#endunroll
#unroll V 4
    {
        let vi = base / 4u + {{V}}u;
        if (vi < n_vec) {
            depth[vi] = vec4<i32>(i32(min((*B)[{{V}} * 4], (*B)[{{V}} * 4 + 1])),
                                  i32(min((*B)[{{V}} * 4 + 1], (*B)[{{V}} * 4 + 2])),
                                  i32(min((*B)[{{V}} * 4 + 2], (*B)[{{V}} * 4 + 3])),
                                  i32(min((*B)[{{V}} * 4 + 3], (*B)[{{V}} * 4 + 4])));
        }
    }
#endunroll
}

// The leaf, in two parts. The owners of the pending heights, highest first: an owner invocation j
// serves every height in (its minimum, h], an owner partition q every height in (M[q], h]; each
// round hands a whole range to its elements. Heights only decrease, so owners only move left.

// The part inside the partition: each element's link in lk and the stack sizes B of invocation lid
// of partition p (elements m, stack size b0 before the invocation), as far as the partition's own
// opens serve them. Returns (the elements left for the incoming stack, the height h they start
// from). The pending heights are B's prefix minima, every height from B[0] down to the lowest, and
// each round serves at least the highest left: 16 rounds suffice.
fn leaf_local(p: u32, lid: u32, m: vec2<u32>, b0: u32, lk: ptr<function, array<i32, 16>>,
              B: ptr<function, array<u32, 17>>) -> vec2<u32> {
    let tmin = inv_heights(m, b0, B);
    let st = inv_links(m, p * P + lid * EPT, lk);
    var pending = st.x & positive_mask(B);
    share_invocations(lid, tmin, st, (*B)[16]);
    // Each invocation's parent (the nearest earlier one with a smaller minimum), one search each,
    // next to its unmatched opens: after an owner j has served down to its minimum, the next owner
    // is j's parent, so the rounds themselves search nothing.
    sh_surv[lid].w = bitcast<u32>(owner_search(lid, tmin));
    workgroupBarrier();
    var h = (*B)[0];
    // h = B[0] is where invocation lid - 1 ended, so its minimum is at most h: it is the first
    // owner if below h, else its parent is (no search).
    var jo = -1;  // owner invocation, -1: before the partition
    if (lid > 0u) {
        let k = lid - 1u;
        jo = select(bitcast<i32>(sh_surv[k].w), i32(k), sh_tmin[k / 4u][k % 4u] < h);
    }
    for (var round = 0u; round < 16u && pending != 0u && h > 0u && jo >= 0; round++) {
        h = serve_from_invocation(p, u32(jo), B, lk, &pending);
        jo = bitcast<i32>(sh_surv[jo].w);
    }
    return vec2<u32>(pending, h);
}

// The part before the partition: the pending elements' links from the incoming stack (the open at
// height t in the list of the nearest earlier partition whose minimum is below t), starting below
// height h. Partition owners come from the mode's partition_owner and owner_open. Returns true when
// an element was left without an owner (the single pass: a budget ran out; otherwise it cannot
// happen).
fn leaf_incoming(pending_in: u32, h_in: u32, lk: ptr<function, array<i32, 16>>,
                 B: ptr<function, array<u32, 17>>) -> bool {
    var pending = pending_in;
#if SINGLE_PASS
    if (g_tab_lo != INF) {
        // Every height left is in fetch_incoming's table: one pass, no owner rounds.
#unroll E 16
        if (((pending >> {{E}}u) & 1u) != 0u) {
            (*lk)[{{E}}] = incoming_open((*B)[{{E}}]);
        }
#endunroll
        return false;
    }
#endif
    var h = h_in;
    for (var round = 0u; round < 17u && pending != 0u && h > 0u; round++) {
        let o = partition_owner(h);
        if (o.x == INF) {
            return true;
        }
#unroll E 16
        if (((pending >> {{E}}u) & 1u) != 0u && (*B)[{{E}}] > o.y) {
            (*lk)[{{E}}] = owner_open(o.x, (*B)[{{E}}] - 1u - o.y);
            pending &= ~(1u << {{E}}u);
        }
#endunroll
        h = o.y;
    }
    return false;
}

// Each element's link in lk and the stack sizes B of invocation lid of partition p (elements m,
// exclusive summary pre within the partition, stack size bp before the partition): both parts.
// Returns true when an element was left without an owner (see leaf_incoming).
fn leaf_links(p: u32, lid: u32, m: vec2<u32>, pre: vec2<u32>, bp: u32, lk: ptr<function, array<i32, 16>>,
              B: ptr<function, array<u32, 17>>) -> bool {
    let left = leaf_local(p, lid, m, max(bp, pre.x) - pre.x + pre.y, lk, B);
    return leaf_incoming(left.x, left.y, lk, B);
}

#endif

#if LEAF
// Partition q's (minimum M[q], parent(q)); (INF, INF) for none (q < 0).
fn chain_entry(q: i32) -> vec2<u32> {
    if (q < 0) {
        return vec2<u32>(INF);
    }
    return chain[u32(q)].xy;
}

// The owner partition walk (leaf_links): first(p), then parent links (up to 8 hops, then the tree).
var<private> g_q: i32 = -2;            // -2: not looked up yet, -1: none
var<private> g_qc: vec2<u32>;          // its (minimum, parent)
var<private> g_first: i32;

// (q, M[q]) of the nearest earlier partition q with M[q] < h; x = INF for none.
fn partition_owner(h: u32) -> vec2<u32> {
    if (g_q == -2) {
        g_q = g_first;
        g_qc = chain_entry(g_q);
    }
    for (var hop = 0u; hop < 8u; hop++) {
        if (g_q < 0 || g_qc.x < h) {
            break;
        }
        g_q = bitcast<i32>(g_qc.y);
        g_qc = chain_entry(g_q);
    }
    if (g_q >= 0 && g_qc.x >= h) {  // a long chain: the tree instead
        g_q = gtree_query(u32(g_q), h);
        g_qc = chain_entry(g_q);
    }
    return vec2<u32>(select(u32(g_q), INF, g_q < 0), g_qc.x);
}

// The open at `slot` of partition q's list (global index).
fn owner_open(q: u32, slot: u32) -> i32 {
    return i32(q * P + (opens_out[q * P + slot] & LOCAL_MASK));
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
#if SUBGROUPS
        @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) sg_size: u32,
#endif
        @builtin(num_workgroups) nwg: vec3<u32>) {
#if SUBGROUPS
    g_lane = lane;
    g_sg = min(sg_size, WG);  // a workgroup smaller than the subgroup fills only part of it
#endif
    let p = wid.x + wid.y * nwg.x;
    if (p >= params.n_groups) {
        return;
    }
    let m = load_masks(p, lid);
    let own = chain[p];
    g_first = bitcast<i32>(own.z);
    var B: array<u32, 17>;
    var lk: array<i32, 16>;
    _ = leaf_links(p, lid, m, bic_exclusive(lid, inv_summary(m)), own.w, &lk, &B);
    let base = p * P + lid * EPT;
    store_direct(base, &lk, &B);
}

#endif

#if SINGLE_PASS
// The single pass. State words: [0] ticket, [1] invocations that gave up, [2] predecessors reduced
// by a successor (fallbacks); partition q owns words ST_BASE + 4q + (0: summary, 1 and 2: stack
// size after it in 16-bit halves, 3: parent + 1). Each word carries its own flag, so only relaxed
// atomics are assumed; a summary written twice (owner and fallback) has the same bits.
const ST_BASE: u32 = 4u;
const AGG_FLAG: u32 = 0x80000000u;
const SPIN_LIMIT: u32 = {{SPIN_LIMIT}}u;
const LIST_SPIN: u32 = {{LIST_SPIN}}u;  // polls of an untagged list entry before it is rebuilt
const FAIL: u32 = 0xffffffffu;
const CHAIN_CAP: u32 = {{CHAIN_CAP}}u; // owners a partition may need before it gives up

var<workgroup> op_ticket: u32;
var<workgroup> op_total: vec2<u32>;

fn store_entry(i: u32, v: u32) {
#if STALE_LISTS
    atomicStore(&lists[i], 0u);
#else
    atomicStore(&lists[i], v);
#endif
}

fn bic_apply(stack: u32, s: vec2<u32>) -> u32 {
    return max(stack, s.x) - s.x + s.y;
}

// The per-partition words (summary, size, parent link), one array each: a window's polls of one
// word are contiguous (interleaved records took 0.02 ms more at 2^28 on an H100).
fn st_at(field: u32, q: u32) -> u32 {
    return ST_BASE + field * params.n_parts + q;
}

fn publish_agg(q: u32, s: vec2<u32>) {
    atomicMax(&state[st_at(0u, q)], AGG_FLAG | (s.x << 16u) | s.y);
}

// (published, a, b)
fn poll_agg(q: u32) -> vec3<u32> {
    let w = atomicLoad(&state[st_at(0u, q)]);
    return vec3<u32>(w >> 31u, (w >> 16u) & 0x7fffu, w & 0xffffu);
}

// One word (flag, size): sizes are below 2^31.
fn publish_size(q: u32, s: u32) {
#if !NO_SIZES
    atomicStore(&state[st_at(1u, q)], AGG_FLAG | s);
#endif
}

// (published, stack size after partition q)
fn poll_size(q: u32) -> vec2<u32> {
    let w = atomicLoad(&state[st_at(1u, q)]);
    return vec2<u32>(w >> 31u, w & 0x7fffffffu);
}

fn publish_parent(q: u32, parent_plus1: u32) {
    atomicStore(&state[st_at(2u, q)], AGG_FLAG | parent_plus1);
}

// (published, parent + 1; 0: no earlier partition has a smaller minimum)
fn poll_parent(q: u32) -> vec2<u32> {
    let w = atomicLoad(&state[st_at(2u, q)]);
    return vec2<u32>(w >> 31u, w & 0x7fffffffu);
}

// Kinds of a polled predecessor: nothing yet, its summary only, its size only (the summary's
// store not visible yet), both; and, for the window's entries before partition 0, none.
const K_NONE: u32 = 0u;
const K_AGG: u32 = 1u;
const K_SIZE: u32 = 2u;
const K_BOTH: u32 = 3u;
const K_PAST: u32 = 4u;

// (kind, a, b, size after it) of a predecessor.
fn poll_pred(t: u32) -> vec4<u32> {
    let sz = poll_size(t);
    let g = poll_agg(t);
    let kind = select(g.x, select(K_SIZE, K_BOTH, g.x != 0u), sz.x != 0u);
    return vec4<u32>(kind, g.y, g.z, sz.y);
}

// Partition q's summary reduced by the whole workgroup: its own at the start (own: each chunk's
// summary also goes to op_ctot), or a silent predecessor's (the decoupled fallback). All chunks'
// loads are issued at once; per segment (subgroup) and chunk the (sum, minimum) of the walk go to
// put_chunk_sum (write_list's scans read them too).
var<workgroup> op_ctot: array<vec2<u32>, CHUNKS>;
fn partition_summary(q: u32, lid: u32, own: bool) -> vec2<u32> {
#if SUBGROUPS
    let sgid = lid / g_sg;
    let n_seg = WG / g_sg;
#unroll K CHUNKS
    let s{{K}} = inv_summary(load_masks(q * CHUNKS + {{K}}u, lid));
#endunroll
#unroll K CHUNKS
    {
        let d = i32(s{{K}}.y) - i32(s{{K}}.x);
        let lo = subgroupMin(subgroupExclusiveAdd(d) - i32(s{{K}}.x));
        let sum = subgroupAdd(d);
        if (g_lane == 0u) {
            put_chunk_sum(sgid, {{K}}u, vec2<i32>(sum, lo));
        }
    }
#endunroll
    workgroupBarrier();
#else
    let n_seg = 1u;
#unroll K CHUNKS
    {
        let s = inv_summary(load_masks(q * CHUNKS + {{K}}u, lid));
        let pre = bic_exclusive(lid, s);
        if (lid == WG - 1u) {
            let t = bic_combine(pre, s);
            put_chunk_sum(0u, {{K}}u, vec2<i32>(i32(t.y) - i32(t.x), -i32(t.x)));
        }
        workgroupBarrier();
    }
#endunroll
#endif
    if (lid == 0u) {
        var tot = vec2<u32>(0u);
        for (var k = 0u; k < CHUNKS; k++) {
            var d = 0;
            var lo = 0;
            for (var j = 0u; j < n_seg; j++) {
                let v = chunk_sum(j, k);
                lo = min(lo, d + v.y);
                d += v.x;
            }
            let t = vec2<u32>(u32(-lo), u32(d - lo));
            if (own) {
                op_ctot[k] = t;
            }
            tot = bic_combine(tot, t);
        }
        op_total = tot;
    }
    return workgroupUniformLoad(&op_total);
}

#if SHARED_WALK
var<private> g_excl: i32;        // own_summary's exclusive sum of the walk over the subgroup
var<private> g_carry: SegCarry;  // and its segment carries, for write_list's scans

// partition_summary of a partition of one chunk (masks m), with subgroups: every invocation
// combines the segments' sums itself (no second barrier, no broadcast), and keeps what write_list's
// scans need of them. (Its first lines repeat partition_summary's per-chunk block on purpose: one
// helper for both made the single pass 0.09 ms slower on an H100, 2.594 -> 2.681 ms at 2^28.)
fn own_summary(m: vec2<u32>, lid: u32) -> vec2<u32> {
    let s = inv_summary(m);
    let d = i32(s.y) - i32(s.x);
    let ex = subgroupExclusiveAdd(d);
    g_excl = ex;
    let lo = subgroupMin(ex - i32(s.x));
    let sum = subgroupAdd(d);
    if (g_lane == 0u) {
        put_chunk_sum(lid / g_sg, 0u, vec2<i32>(sum, lo));
    }
    workgroupBarrier();
    let c = seg_carry(lid / g_sg, 0u);
    g_carry = c;
    let t = vec2<u32>(u32(-c.all), u32(c.total - c.all));
    if (lid == 0u) {
        op_ctot[0] = t;
    }
    return t;
}
#endif

// With subgroups in sh_a / sh_b (free until fetch_incoming): write_list reads them, with no barrier
// before the first round's stores to the window's arrays. Without, the scans use sh_a / sh_b.
fn put_chunk_sum(seg: u32, k: u32, v: vec2<i32>) {
#if SUBGROUPS
    sh_a[seg * CHUNKS + k] = bitcast<u32>(v.x);
    sh_b[seg * CHUNKS + k] = bitcast<u32>(v.y);
#else
    if (k < 2u) {
        segs_sum[seg][2u * k] = v.x;
        segs_sum[seg][2u * k + 1u] = v.y;
    } else {
        segs_stop[seg][2u * k - 4u] = v.x;
        segs_stop[seg][2u * k - 3u] = v.y;
    }
#endif
}

fn chunk_sum(seg: u32, k: u32) -> vec2<i32> {
#if SUBGROUPS
    return vec2<i32>(bitcast<i32>(sh_a[seg * CHUNKS + k]), bitcast<i32>(sh_b[seg * CHUNKS + k]));
#else
    let v = select(segs_stop[seg], segs_sum[seg], k < 2u);
    let i = 2u * (k % 2u);
    return vec2<i32>(v[i], v[i + 1u]);
#endif
}

// The stack size before the partition and the owners of the incoming stack's heights, found in
// rounds over windows of WG predecessors (wide_round), one poll per invocation.
//
// Per window entry l (partition t = start - l, nearest first) with its summary (a, b) known:
// d = b - a, D = the sum of d over the nearer entries, v = D + b. Applied in order, the summaries
// between t and the partition map a stack size s to max(s + sum d, max v), so
//   the lookback: bp = max(size after the stop entry + D[stop], max of v before the stop);
//   the walk: M[t] = (stack size after the window's start) - v, exact up to the first owner
//   with M = 0 (no clamping before it).
// The owners of the heights still needed are the records of M (the entries whose M is below every
// nearer one and below the chain's threshold): ranked by a scan, written to op_chain directly.
// So a partition needs no other partition's parent link, only summaries and sizes, which every
// partition publishes as soon as it has them. An entry without a usable summary stops the window:
// a silent predecessor is reduced by the whole workgroup (the decoupled fallback) and taken in place.
const BIG: i32 = 0x20000000;
const PH_LOOK: u32 = 0u;    // the lookback: stack size before the partition
const PH_OWNERS: u32 = 1u;  // the owner walk
const PH_DONE: u32 = 2u;
const PH_FAILED: u32 = 3u;

struct Walk {
    phase: u32,
    look: u32,       // PH_LOOK: the next window starts at look - 1
    acc_d: i32,      // PH_LOOK: sum of d over the passed predecessors
    acc_v: i32,      // PH_LOOK: maximum of v over them (-BIG: none)
    bp: u32,         // the stack size before the partition
    q0: i32,         // PH_OWNERS: the next window starts at q0
    send: u32,       // PH_OWNERS: the stack size after q0
    thresh: u32,     // PH_OWNERS: heights below it still need owners
    len: u32,        // owners in op_chain
    parent1: u32,    // parent(p) + 1 (0: none)
    steps: u32,      // lookback windows left
    hops: u32,       // walk windows left
    fallback: u32,   // a predecessor for the workgroup to reduce (INF: none)
    reuse: u32,      // 1: the lookback is in its first window, which the walk's first one can reuse
    lb_done: u32,    // 1: bp is known (and published)
}
var<workgroup> op_walk: Walk;
var<workgroup> op_chain: array<vec2<u32>, CHAIN_CAP>;

// Segment operations (a segment: a subgroup, or without subgroups the workgroup through workgroup
// memory). Call them in segment-uniform control flow with no divergent branch since the last
// barrier (see common/subgroup_scan.wgsl).
#if SUBGROUPS
#include "common/ballot.wgsl"

fn seg_size() -> u32 {
    return g_sg;
}
fn seg_lane() -> u32 {
    return g_lane;
}
fn seg_incl_add(x: i32) -> i32 {
    return subgroupInclusiveAdd(x);
}
fn seg_incl_max(x: i32) -> i32 {
    var v = x;
    for (var d = 1u; d < g_sg; d = d << 1u) {
        let y = subgroupShuffleUp(v, d);
        v = select(v, max(v, y), g_lane >= d);
    }
    return v;
}
fn seg_up(x: i32, none: i32) -> i32 {  // the previous lane's x (none in lane 0)
    return select(subgroupShuffleUp(x, 1u), none, g_lane == 0u);
}
fn seg_at(x: i32, lane: u32) -> i32 {
    return subgroupShuffle(x, lane);
}
fn seg_first(pred: bool) -> u32 {
    return first_lane(subgroupBallot(pred), g_sg);
}
fn seg_all(pred: bool) -> bool {
    return subgroupAll(pred);
}
fn seg_count_incl(pred: bool) -> i32 {  // lanes up to this one where pred holds
    return i32(count_through(subgroupBallot(pred), g_lane));
}
#else
var<private> g_lid: u32;
var<workgroup> op_seg: array<i32, WG>;
var<workgroup> op_seg_min: atomic<u32>;
var<workgroup> op_seg_first: u32;
fn seg_size() -> u32 {
    return WG;
}
fn seg_lane() -> u32 {
    return g_lid;
}
// Inclusive sum (or maximum) over the workgroup, Hillis-Steele.
fn seg_inclusive(x: i32, take_max: bool) -> i32 {
    workgroupBarrier();
    op_seg[g_lid] = x;
    workgroupBarrier();
    for (var d = 1u; d < WG; d = d << 1u) {
        var v = op_seg[g_lid];
        if (g_lid >= d) {
            let y = op_seg[g_lid - d];
            v = select(v + y, max(v, y), take_max);
        }
        workgroupBarrier();
        op_seg[g_lid] = v;
        workgroupBarrier();
    }
    return op_seg[g_lid];
}
fn seg_incl_add(x: i32) -> i32 {
    return seg_inclusive(x, false);
}
fn seg_incl_max(x: i32) -> i32 {
    return seg_inclusive(x, true);
}
fn seg_at(x: i32, lane: u32) -> i32 {
    workgroupBarrier();
    op_seg[g_lid] = x;
    workgroupBarrier();
    return op_seg[lane];
}
fn seg_up(x: i32, none: i32) -> i32 {
    let y = seg_at(x, max(g_lid, 1u) - 1u);
    return select(y, none, g_lid == 0u);
}
fn seg_first(pred: bool) -> u32 {
    workgroupBarrier();
    if (g_lid == 0u) {
        atomicStore(&op_seg_min, WG);
    }
    workgroupBarrier();
    if (pred) {
        atomicMin(&op_seg_min, g_lid);
    }
    workgroupBarrier();
    if (g_lid == 0u) {
        op_seg_first = atomicLoad(&op_seg_min);
    }
    return workgroupUniformLoad(&op_seg_first);
}
fn seg_all(pred: bool) -> bool {
    return seg_first(!pred) == WG;
}
fn seg_count_incl(pred: bool) -> i32 {
    return seg_incl_add(select(0, 1, pred));
}
#endif

// One round of the lookback or the owner walk over a window of entries, entry l = partition
// t0 - l (nearest first), one poll each. A segment (subgroup, or the workgroup without subgroups)
// scans its own entries with shuffles (seg_scan) and leaves a summary in workgroup memory; after
// one barrier every invocation combines the summaries before its segment (carries) and the whole
// window's; the records are ranked after a second; the next state goes out through a third. When
// the lookback ends in its first window, the same polls serve the walk's first window.
const N_SEG: u32 = {{N_SEG}}u;  // segments per workgroup at most

// A segment's scan of its entries: per entry the window values (has: a usable summary for the
// lookback; usable: for the walk), and the segment's summary: sum = (sum of d, maximum of v, first
// lookback stop, first unusable entry), stop = at the first stop (kind, size after it, D, exclusive
// maximum of v), unus = at the first unusable entry (D, exclusive maximum of v, partition, kind).
struct SegScan {
    usable: bool,
    dx: i32,
    v: i32,
    pex: i32,
    sum: vec4<i32>,
    stop: vec4<i32>,
    unus: vec4<i32>,
}
fn seg_scan(st: vec4<u32>, t: u32) -> SegScan {
    let size = seg_size();
    // A withheld partition's summary (test switch) is never trusted by the walk.
    let has = st.x == K_AGG || st.x == K_BOTH;
    let usable = has && !withholds(t, params.withhold_period);
    let d = select(0, i32(st.z) - i32(st.y), has);
    let incl_d = seg_incl_add(d);
    let dx = incl_d - d;
    let v = select(BIG, dx + i32(st.z), has);
    let pin = seg_incl_max(v);
    let pex = seg_up(pin, -BIG);
    let fs = seg_first(st.x != K_AGG);
    let fu = seg_first(!usable);
    let fsc = min(fs, size - 1u);
    let fuc = min(fu, size - 1u);
    return SegScan(usable, dx, v, pex,
                   vec4<i32>(seg_at(incl_d, size - 1u), seg_at(pin, size - 1u), i32(fs), i32(fu)),
                   vec4<i32>(seg_at(i32(st.x), fsc), seg_at(i32(st.w), fsc), seg_at(dx, fsc), seg_at(pex, fsc)),
                   vec4<i32>(seg_at(dx, fuc), seg_at(pex, fuc), seg_at(i32(t), fuc), seg_at(i32(st.x), fuc)));
}

// A whole window's totals: (sum of d, maximum of v), and at its first lookback stop and first
// unusable entry: the entry's index (WG if there is none), the carries (D, maximum of v) into
// its segment, and its segment's stop / unus summary.
struct WinTot {
    tot_d: i32,
    tot_v: i32,
    stop_at: u32,
    stop_carry: vec2<i32>,
    stop: vec4<i32>,
    unus_at: u32,
    unus_carry: vec2<i32>,
    unus: vec4<i32>,
}

// The lookback's step from a window's totals: past the window, or to a silent predecessor for the
// workgroup to reduce, or bp. Returns whether the walk's records are to be taken from this window.
fn lookback_step(nw: ptr<function, Walk>, wt: WinTot, t0: i32, p: u32) -> bool {
    if (wt.stop_at == WG) {
        (*nw).acc_v = max((*nw).acc_v, (*nw).acc_d + wt.tot_v);
        (*nw).acc_d += wt.tot_d;
        (*nw).look = u32(t0 + 1) - WG;
        (*nw).reuse = 0u;
        return false;
    }
    let dd = (*nw).acc_d + wt.stop_carry.x + wt.stop.z;
    let vv = max((*nw).acc_v, max((*nw).acc_d + wt.stop_carry.y, (*nw).acc_d + wt.stop_carry.x + wt.stop.w));
    if (u32(wt.stop.x) == K_NONE) {
        (*nw).acc_d = dd;
        (*nw).acc_v = vv;
        (*nw).look = u32(t0) - wt.stop_at;
        (*nw).fallback = (*nw).look;
        (*nw).reuse = 0u;
        return false;
    }
    let bp = u32(max(i32(select(u32(wt.stop.y), 0u, u32(wt.stop.x) == K_PAST)) + dd, vv));
    (*nw).bp = bp;
    (*nw).lb_done = 1u;
    (*nw).phase = select(PH_OWNERS, PH_DONE, bp == 0u);
    (*nw).q0 = i32(p) - 1;
    (*nw).send = bp;
    (*nw).thresh = bp;
    let reuse = (*nw).phase == PH_OWNERS && (*nw).reuse == 1u;
    (*nw).reuse = 0u;
    return reuse;
}

// The walk's step after a window's records (count of them, and rec = (first that ends the chain
// (WG: none), its partition, its M)): done, failed, or on to the unusable entry (for the
// workgroup to reduce) or past the window (to its parent-link jump j where that is safe).
fn walk_step(nw: ptr<function, Walk>, wt: WinTot, count: u32, rec: vec4<i32>, t0: i32, mp: u32, j: u32) {
    let send = i32((*nw).send);
    if ((*nw).len + count > CHAIN_CAP) {
        (*nw).phase = PH_FAILED;
        return;
    }
    (*nw).len += count;
    if (u32(rec.x) != WG) {
        (*nw).phase = PH_DONE;
        (*nw).parent1 = select(0u, u32(rec.y) + 1u, rec.z < i32(mp));
        return;
    }
    if (count > 0u) {  // the last record's M: the minimum before the unusable entry
        (*nw).thresh = u32(send - select(wt.tot_v, max(wt.unus_carry.y, wt.unus_carry.x + wt.unus.y),
                                         wt.unus_at != WG));
    }
    if (wt.unus_at != WG) {
        // (a partition past 0 cannot be reached: partition 0's minimum is 0, an owner that ends
        // the chain)
        (*nw).q0 = wt.unus.z;
        (*nw).send = u32(send - (wt.unus_carry.x + wt.unus.x));
        (*nw).fallback = u32(wt.unus.z);
        return;
    }
    (*nw).q0 = t0 - i32(WG);
    (*nw).send = u32(send - wt.tot_d);
    // Every entry has M >= the threshold, and so does every partition between an entry and its
    // parent: the farthest published parent link is a safe jump.
    if (j != INF && i32(j) <= (*nw).q0) {
        let ps = poll_size(j);
        if (ps.x != 0u) {
            (*nw).q0 = i32(j);
            (*nw).send = ps.y;
        }
    }
}

// Entry l of a window: (kind, a, b, size after it) of partition t0 - l (K_PAST before partition 0),
// spinning (bounded) while the segment has an entry that has published nothing.
fn poll_entry(t0: i32, l: u32) -> vec4<u32> {
    let valid = t0 >= i32(l);
    let t = u32(select(0, t0 - i32(l), valid));
    var st = select(vec4<u32>(K_PAST, 0u, 0u, 0u), poll_pred(t), valid);
    for (var s = 1u; s < SPIN_LIMIT; s++) {
        if (seg_all(st.x != K_NONE)) {
            break;
        }
        st = select(st, poll_pred(t), st.x == K_NONE);
    }
    return st;
}

// Per segment: sum, stop and unus of seg_scan; rec = (records, first that ends the chain, its
// partition, its M).
var<workgroup> segs_sum: array<vec4<i32>, N_SEG>;
var<workgroup> segs_stop: array<vec4<i32>, N_SEG>;
var<workgroup> segs_unus: array<vec4<i32>, N_SEG>;
var<workgroup> segs_rec: array<vec4<i32>, N_SEG>;
var<workgroup> op_jump: atomic<u32>;  // the farthest published parent link in the window

#if SUBGROUPS
// With one lane per segment (lane j's entry position `at` in its segment, size: none there, and
// the carries (ed, ev) into it): (the first segment with such an entry, the entry's window
// position, the carries into its segment); x = the subgroup's size when no segment has one.
fn first_entry(in_win: bool, at: i32, ed: i32, ev: i32, size: u32, nseg: u32) -> vec4<i32> {
    let f = first_lane(subgroupBallot(in_win && u32(at) < size), size);
    let fc = min(f, nseg - 1u);
    let pos = f * size + u32(subgroupShuffle(at, fc));
    return vec4<i32>(i32(f), i32(pos), subgroupShuffle(ed, fc), subgroupShuffle(ev, fc));
}

// The window's totals and the carries into segment `seg`, with one lane per segment (nseg at most
// the subgroup's size): scans across the lanes instead of every invocation looping over the
// segments' summaries.
fn win_lanes(seg: u32, size: u32, nseg: u32, wt: ptr<function, WinTot>) -> vec2<i32> {
    let j = g_lane;
    let in_win = j < nseg;
    let sj = select(vec4<i32>(0, -BIG, i32(size), i32(size)), segs_sum[min(j, nseg - 1u)], in_win);
    // inclusive scan of (sum of d, maximum of v): x then y = (x.d + y.d, max(x.v, x.d + y.v))
    var d = sj.x;
    var v = sj.y;
    for (var k = 1u; k < nseg; k = k << 1u) {
        let pd = subgroupShuffleUp(d, k);
        let pv = subgroupShuffleUp(v, k);
        if (j >= k) {
            v = max(pv, pd + v);
            d += pd;
        }
    }
    let ed = select(subgroupShuffleUp(d, 1u), 0, j == 0u);
    let ev = select(subgroupShuffleUp(v, 1u), -BIG, j == 0u);
    (*wt).tot_d = subgroupShuffle(d, nseg - 1u);
    (*wt).tot_v = subgroupShuffle(v, nseg - 1u);
    let fs = first_entry(in_win, sj.z, ed, ev, size, nseg);
    if (fs.x < i32(nseg)) {
        (*wt).stop_at = u32(fs.y);
        (*wt).stop_carry = fs.zw;
        (*wt).stop = segs_stop[fs.x];
    }
    let fu = first_entry(in_win, sj.w, ed, ev, size, nseg);
    if (fu.x < i32(nseg)) {
        (*wt).unus_at = u32(fu.y);
        (*wt).unus_carry = fu.zw;
        (*wt).unus = segs_unus[fu.x];
    }
    return vec2<i32>(subgroupShuffle(ed, seg), subgroupShuffle(ev, seg));
}

// The records' totals with one lane per segment: (records before segment `seg`, records in the
// window), and rt as in wide_round.
fn rec_lanes(seg: u32, size: u32, nseg: u32, rt: ptr<function, vec4<i32>>) -> vec2<i32> {
    let j = g_lane;
    let in_win = j < nseg;
    let rj = select(vec4<i32>(0, i32(size), 0, 0), segs_rec[min(j, nseg - 1u)], in_win);
    let incl = subgroupInclusiveAdd(rj.x);
    let fr = first_lane(subgroupBallot(in_win && u32(rj.y) < size), size);
    let frc = min(fr, nseg - 1u);
    let rz = subgroupShuffle(rj.z, frc);
    let rw = subgroupShuffle(rj.w, frc);
    if (fr < nseg) {
        *rt = vec4<i32>(0, rz, rw, 0);
    }
    return vec2<i32>(subgroupShuffle(incl - rj.x, seg), subgroupShuffle(incl, nseg - 1u));
}
#endif

fn wide_round(w: ptr<function, Walk>, lid: u32, p: u32, agg: vec2<u32>) {
    let size = seg_size();
    let seg = lid / size;
    let nseg = WG / size;
    let look_phase = (*w).phase == PH_LOOK;
    let t0 = select((*w).q0, i32((*w).look) - 1, look_phase);
    let valid = t0 >= i32(lid);
    let t = u32(select(0, t0 - i32(lid), valid));
    let st = poll_entry(t0, lid);
    var par = vec2<u32>(0u);
    if (!look_phase) {
        par = poll_parent(t);
    }
    let sc = seg_scan(st, t);
    if (seg_lane() == 0u) {
        segs_sum[seg] = sc.sum;
        segs_stop[seg] = sc.stop;
        segs_unus[seg] = sc.unus;
    }
    workgroupBarrier();
    // Carries into this segment, and the whole window (every invocation the same values).
    var carry = vec2<i32>(0, -BIG);
    var wt = WinTot(0, -BIG, WG, vec2<i32>(0), vec4<i32>(0), WG, vec2<i32>(0), vec4<i32>(0));
#if SUBGROUPS
    let lanes = nseg <= size;
    if (lanes) {
        carry = win_lanes(seg, size, nseg, &wt);
    }
#else
    let lanes = false;
#endif
    for (var j = 0u; j < nseg && !lanes; j++) {
        let sj = segs_sum[j];
        if (j == seg) {
            carry = vec2<i32>(wt.tot_d, wt.tot_v);
        }
        if (wt.stop_at == WG && u32(sj.z) < size) {
            wt.stop_at = j * size + u32(sj.z);
            wt.stop_carry = vec2<i32>(wt.tot_d, wt.tot_v);
            wt.stop = segs_stop[j];
        }
        if (wt.unus_at == WG && u32(sj.w) < size) {
            wt.unus_at = j * size + u32(sj.w);
            wt.unus_carry = vec2<i32>(wt.tot_d, wt.tot_v);
            wt.unus = segs_unus[j];
        }
        wt.tot_v = max(wt.tot_v, wt.tot_d + sj.y);
        wt.tot_d += sj.x;
    }
    var nw = *w;
    var records = !look_phase;
    if (look_phase) {
        records = lookback_step(&nw, wt, t0, p);
    }
    // The records: owners of the heights below the threshold, in order.
    let send = i32(nw.send);
    let mp = max(nw.bp, agg.x) - agg.x;
    let m = send - (carry.x + sc.v);
    let th = min(i32(nw.thresh), send - max(carry.y, carry.x + sc.pex));  // the last owner's M before it
    let rec = records && lid < wt.unus_at && m < th && th >= i32(max(mp, 1u));
    let r_incl = seg_count_incl(rec);
    let term = rec && (m < i32(mp) || m == 0);
    let ft = seg_first(term);
    let ftc = min(ft, size - 1u);
    let s_rec = vec4<i32>(seg_at(r_incl, size - 1u), i32(ft), seg_at(i32(t), ftc), seg_at(m, ftc));
    if (seg_lane() == 0u) {
        segs_rec[seg] = s_rec;
    }
    if (records && valid && par.x != 0u && par.y != 0u) {
        atomicMin(&op_jump, par.y - 1u);
    }
    workgroupBarrier();
    var before = 0;
    var count = 0;
    var rt = vec4<i32>(i32(WG), 0, 0, 0);
#if SUBGROUPS
    if (lanes) {
        let bc = rec_lanes(seg, size, nseg, &rt);
        before = bc.x;
        count = bc.y;
    }
#endif
    for (var j = 0u; j < nseg && !lanes; j++) {
        let rj = segs_rec[j];
        if (j < seg) {
            before += rj.x;
        }
        count += rj.x;
        if (u32(rt.x) == WG && u32(rj.y) < size) {
            rt = vec4<i32>(0, rj.z, rj.w, 0);
        }
    }
    let rank = nw.len + u32(before + r_incl) - 1u;
    if (rec && rank < CHAIN_CAP) {
        op_chain[rank] = vec2<u32>(t, u32(max(m, 0)));
    }
    if (lid == 0u) {
        if (records) {
            walk_step(&nw, wt, u32(count), rt, t0, mp, atomicLoad(&op_jump));
        }
        atomicStore(&op_jump, INF);  // for the next round (after its first barrier)
        op_walk = nw;
    }
    *w = workgroupUniformLoad(&op_walk);
}

// The stack size before partition p and its owner chain (op_chain): (bp, entries, parent + 1,
// status: 0 the lookback's budget ran out, 1 the walk's, 2 done). Rounds of wide_round; the
// workgroup reduces the silent predecessors met and takes them in place: in the lookback as the
// next entry, in the walk as one entry (an owner if its minimum is below the threshold).
fn find_owners(p: u32, lid: u32, mp_of: vec2<u32>, silent: bool) -> vec4<u32> {
    var w = Walk(PH_LOOK, p, 0, -BIG, 0u, 0, 0u, 0u, 0u, 0u, params.max_steps, params.max_hops, INF, 1u, 0u);
    if (p == 0u) {
        w.phase = PH_DONE;
        w.lb_done = 1u;
    }
    for (var round = 0u; round <= params.max_steps + params.max_hops; round++) {
        if (w.phase == PH_LOOK) {
            if (w.steps == 0u) {
                w.phase = PH_FAILED;
                break;
            }
            w.steps -= 1u;
        } else if (w.phase == PH_OWNERS) {
            if (w.hops == 0u) {
                w.phase = PH_FAILED;
                break;
            }
            w.hops -= 1u;
        } else {
            break;
        }
        let was_look = w.phase == PH_LOOK;
#if ROUND_STATS
        if (lid == 0u && select(0u, 1u, was_look) == {{LOOK_STATS}}u) {
            atomicAdd(&state[3], 1u);  // diagnostics: lookback (LOOK_STATS) or walk rounds
        }
#endif
        wide_round(&w, lid, p, mp_of);
        if (was_look && w.lb_done == 1u && !silent && lid == 0u) {
            publish_size(p, bic_apply(w.bp, mp_of));
        }
        if (w.fallback == INF) {
            continue;
        }
        let q = w.fallback;
        w.fallback = INF;
        let sum = partition_summary(q, lid, false);
        if (lid == 0u) {
            publish_agg(q, sum);
            atomicAdd(&state[2], 1u);
        }
        if (w.phase == PH_LOOK) {
            w.acc_v = max(w.acc_v, w.acc_d + i32(sum.y));
            w.acc_d += i32(sum.y) - i32(sum.x);
            continue;
        }
        let mp = max(w.bp, mp_of.x) - mp_of.x;
        let mq = i32(w.send) - i32(sum.y);
        if (mq < i32(w.thresh)) {
            if (w.len == CHAIN_CAP) {
                w.phase = PH_FAILED;
                break;
            }
            if (lid == 0u) {
                op_chain[w.len] = vec2<u32>(q, u32(max(mq, 0)));
            }
            workgroupBarrier();  // (the leaf reads op_chain with no barrier of its own)
            w.len += 1u;
            w.thresh = u32(max(mq, 0));
            if (mq < i32(mp) || mq <= 0) {
                w.phase = PH_DONE;
                w.parent1 = select(0u, q + 1u, mq < i32(mp));
                break;
            }
        }
        w.send = u32(mq + i32(sum.x));  // mq >= the threshold > 0: no clamping
        w.q0 = i32(q) - 1;
    }
    if (w.phase == PH_DONE && p == 0u && !silent && lid == 0u) {
        publish_size(p, bic_apply(0u, mp_of));
    }
    return vec4<u32>(w.bp, w.len, w.parent1, select(w.lb_done, 2u, w.phase == PH_DONE));
}

// A chunk's owner chain: the owners inside the partition (earlier chunks, op_sub), then the
// partition's owner chain (op_chain) from entry g_c0. Entries: (owner, its minimum M), owner =
// a partition, or CHUNK_FLAG | a chunk.
const CHUNK_FLAG: u32 = 0x80000000u;
var<workgroup> op_sub: array<vec2<u32>, CHUNKS>;
var<workgroup> op_cinfo: vec4<u32>;  // chunk_chain's result for the chunk at hand
var<private> g_nsub: u32;
var<private> g_c0: u32;
var<private> g_ci: u32;           // chain entry: owners only move left as heights fall
var<private> g_chain_len: u32;
var<private> g_tab_lo: u32 = INF; // the incoming stack's opens at heights g_tab_lo.. in sh_a, sh_b

fn chain_at(i: u32) -> vec2<u32> {
    if (i < g_nsub) {
        return op_sub[i];
    }
    return op_chain[g_c0 + i - g_nsub];
}

// For chunk k of partition p (bp: the stack size before the partition; len entries in op_chain),
// by one invocation: the records of the earlier chunks' minima below the chunk's start size into
// op_sub. Returns (their count, the first op_chain entry still needed, the chunk's start size bk,
// its minimum mk).
fn chunk_chain(p: u32, k: u32, bp: u32, len: u32) -> vec4<u32> {
    var mins: array<u32, CHUNKS>;
    var b = bp;
    var bk = bp;
#unroll J CHUNKS
    {
        let t = op_ctot[{{J}}];
        mins[{{J}}] = max(b, t.x) - t.x;
        if ({{J}}u == k) {
            bk = b;
        }
        b = bic_apply(b, t);
    }
#endunroll
    let mk = max(bk, op_ctot[k].x) - op_ctot[k].x;
    var th = bk;
    var ns = 0u;
    var done = false;
#unroll J CHUNKS
    {
        const j: u32 = CHUNKS - 1u - {{J}}u;
        if (!done && j < k && mins[j] < th) {
            op_sub[ns] = vec2<u32>(CHUNK_FLAG | (p * CHUNKS + j), mins[j]);
            ns += 1u;
            th = mins[j];
            done = th < mk || th == 0u;
        }
    }
#endunroll
    var c0 = len;
    if (!done) {
        c0 = 0u;
        for (; c0 < len && op_chain[c0].y >= th; c0++) {
        }
    }
    return vec4<u32>(ns, c0, bk, mk);
}

// (owner, M) of the nearest earlier chunk or partition whose minimum M is below h, from the chunk's
// owner chain; x = INF for none (past the chain).
fn partition_owner(h: u32) -> vec2<u32> {
    for (; g_ci < g_chain_len && chain_at(g_ci).y >= h; g_ci++) {
    }
    if (g_ci == g_chain_len) {
        return vec2<u32>(INF, 0u);
    }
    return chain_at(g_ci);
}

// The open at `slot` of an owner's list (global index): a chunk's sub-list (written by this
// workgroup before a storage barrier) or a partition's list.
fn owner_open(w: u32, slot: u32) -> i32 {
    if (w >= CHUNK_FLAG) {
        let c = w - CHUNK_FLAG;
        let k = c % CHUNKS;
        return i32(c * P + sublists[(c - k) / CHUNKS * (CHUNKS - 1u) * P + k * P + slot]);
    }
    return list_entry(w, slot);
}

// Up to 2 WG opens of the incoming stack a partition's leaf needs (heights max(mp, 1) .. bp), read
// from their owners' lists at once by the whole workgroup into sh_a, sh_b (free after the scans):
// one round trip, and the leaf then serves them in one pass instead of a round per owner.
fn fetch_incoming(lid: u32, bp: u32, mp: u32) {
    let lo = max(mp, 1u);
    if (bp < lo || bp - lo >= 2u * WG) {
        return;
    }
    for (var i = lid; i <= bp - lo; i += WG) {
        let h = lo + i;
        var c = 0u;
        for (; c < g_chain_len && chain_at(c).y >= h; c++) {
        }
        if (c < g_chain_len) {
            let o = chain_at(c);
            let e = u32(owner_open(o.x, h - 1u - o.y));
            if (i < WG) {
                sh_a[i] = e;
            } else {
                sh_b[i - WG] = e;
            }
        }
    }
    g_tab_lo = lo;
    workgroupBarrier();  // (the leaf's first barrier would do, but this one is faster on an H100)
}

// The incoming stack's open at height h (global index), from fetch_incoming's table.
fn incoming_open(h: u32) -> i32 {
    let i = h - g_tab_lo;
    return i32(select(sh_b[max(i, WG) - WG], sh_a[min(i, WG - 1u)], i < WG));
}

// The open at `slot` of partition q's list (global index). An entry without this call's tag was
// not visible yet (plain stores and flags are not ordered): rebuilt from q's input instead, as
// the last open at that height of q's unclamped walk.
fn list_entry(q: u32, slot: u32) -> i32 {
    var v = atomicLoad(&lists[q * PP + slot]);
    // An entry without the tag is mostly one whose writer is still storing its lists (it published
    // its summary first): polled a while before the rebuild, which is far dearer (bounded: nothing
    // waits on another workgroup's progress).
    for (var spin = 0u; spin < LIST_SPIN && (v >> LOCAL_BITS) != params.epoch; spin++) {
        v = atomicLoad(&lists[q * PP + slot]);
    }
    if ((v >> LOCAL_BITS) == params.epoch) {
        return i32(q * PP + (v & LOCAL_MASK));
    }
#if ROUND_STATS
    if ({{LOOK_STATS}}u == 2u) {
        atomicAdd(&state[3], 1u);  // diagnostics: entries rebuilt
    }
#endif
    let height = i32(slot) - i32(poll_agg(q).y);  // q's summary is published: the walk read it
    var h = 0;
    var last = 0u;
    for (var t = 0u; t < WG * CHUNKS; t++) {
        let m = load_masks(q * CHUNKS, t);
#unroll E 16
        {
            if (((m.x >> {{E}}u) & 1u) != 0u) {
                if (h == height) {
                    last = t * EPT + {{E}}u;
                }
                h += 1;
            } else if (((m.y >> {{E}}u) & 1u) != 0u) {
                h -= 1;
            }
        }
#endunroll
    }
    return i32(q * PP + last);
}

// A budget ran out: counted, and the repair (the six dispatches, recorded indirect with zero
// grids) armed. Every writer writes the same values.
fn give_up() {
    atomicAdd(&state[1], 1u);
    if (params.arm != 0u) {
        repair_args[0] = params.red_x;
        repair_args[1] = params.red_y;
        repair_args[2] = 1u;
        repair_args[3] = params.up_x;
        repair_args[4] = params.up_y;
        repair_args[5] = 1u;
        repair_args[6] = 1u;
        repair_args[7] = 1u;
        repair_args[8] = 1u;
        repair_args[9] = params.up_x;
        repair_args[10] = params.up_y;
        repair_args[11] = 1u;
        repair_args[12] = params.chain_x;
        repair_args[13] = params.chain_y;
        repair_args[14] = 1u;
        repair_args[15] = params.red_x;
        repair_args[16] = params.red_y;
        repair_args[17] = 1u;
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32,
#if SUBGROUPS
        @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) sg_size: u32,
#endif
        ) {
#if SUBGROUPS
    g_lane = lane;
    g_sg = min(sg_size, WG);
#else
    g_lid = lid;
#endif
    // Partitions by ticket: a predecessor has always started.
    if (lid == 0u) {
        op_ticket = atomicAdd(&state[0], 1u);
    }
#if BLOCK_MIN_LANES
    if (lid < NBLK) {
        atomicStore(&sh_bmin[lid], INF);  // (the first chunk's leaf is many barriers later)
    }
#endif
    let p = workgroupUniformLoad(&op_ticket);
    if (p >= params.n_parts) {
        return;
    }
    let silent = withholds(p, params.withhold_period);
    // The partition's summary first (all chunks' loads at once), published before its lists.
#if SHARED_WALK
    let m0 = load_masks(p, lid);  // (one chunk: also write_list's)
    let agg = own_summary(m0, lid);
#else
    let agg = partition_summary(p, lid, true);  // (no divergent branch before the walk's subgroups)
#endif
    if (lid == 0u) {
        if (!silent) {
            publish_agg(p, agg);
        }
        atomicStore(&op_jump, INF);
    }
    // Each chunk's lists: the partition's list (for later partitions) and, but for the last chunk,
    // its own sub-list (for this partition's later chunks; read after the storage barrier).
    var cstart = 0;  // the chunk's start, walk relative to the partition's
    for (var k = 0u; k < CHUNKS; k++) {
        let c = p * CHUNKS + k;
        if (c * P >= params.n) {
            break;
        }
        var later = BIG_RUN;
        var d = 0;
        // (one chunk: no op_ctot read, which lid 0 of own_summary may still be writing)
        for (var j = k + 1u; j < CHUNKS; j++) {
            d += i32(op_ctot[j - 1u].y) - i32(op_ctot[j - 1u].x);
            later = min(later, d - i32(op_ctot[j].x));
        }
#if SHARED_WALK
        let m = m0;
#else
        let m = load_masks(c, lid);
#endif
        write_list(c, lid, m, vec3<i32>(cstart, later, -i32(agg.x)));
        if (k + 1u < CHUNKS) {
            cstart += i32(op_ctot[k].y) - i32(op_ctot[k].x);
        }
    }
    // Only the partition's own later chunks read its sub-lists here; other partitions' reads of its
    // list check each entry's tag, so one chunk needs no barrier (H100: 0.056 ms less at 2^28).
    if (CHUNKS > 1u) {
        storageBarrier();
    }
    // The stack size before the partition (published inside), the owners of the incoming stack's
    // heights it needs, and parent(p) (published for later walks).
    let chain = find_owners(p, lid, agg, silent);
    if (chain.w == 0u) {  // the lookback's budget ran out: nothing published but the summary
        if (lid == 0u) {
            give_up();
        }
        return;
    }
    let bp = chain.x;
    if (lid == 0u) {
        if (chain.w == 2u && !silent) {
            publish_parent(p, chain.z);
        }
        if (agg.x > bp) {
            atomicAdd(&info[0], agg.x - bp);
        }
        if (p == params.n_parts - 1u) {
            atomicStore(&info[1], bic_apply(bp, agg));
        }
    }

    // The leaf of each chunk, with owners from the earlier chunks and then from the partition's
    // chain. An element left without one: the chain stopped short because a budget ran out.
    for (var k = 0u; k < CHUNKS; k++) {
        let c = p * CHUNKS + k;
        if (c * P >= params.n) {
            break;
        }
#if SHARED_WALK
        // One chunk: no earlier chunks' owners, and op_chain's first entry is below bp already
        // (find_owners' last barrier is after its stores).
        let ci = vec4<u32>(0u, 0u, bp, max(bp, agg.x) - agg.x);
        let sv = sh_surv[lid];  // from write_list
        let m = vec2<u32>(sv.x & 0xffffu, sv.x >> 16u);
        let pre = vec2<u32>(sv.y, sv.y + sv.z);
#else
        workgroupBarrier();  // the last chunk's leaf is done with the shared arrays and op_sub
#if BLOCK_MIN_LANES
        if (lid < NBLK) {
            atomicStore(&sh_bmin[lid], INF);
        }
#endif
        if (lid == 0u) {
            op_cinfo = chunk_chain(p, k, bp, chain.y);
        }
        let m = load_masks(c, lid);
        let pre = bic_exclusive(lid, inv_summary(m));
        let ci = workgroupUniformLoad(&op_cinfo);  // (also: bic_exclusive's reads of sh_a / sh_b are done)
#endif
        let bk = ci.z;  // the stack size before the chunk
        let mk = ci.w;  // its minimum
        g_nsub = ci.x;
        g_c0 = ci.y;
        g_chain_len = ci.x + chain.y - ci.y;
        g_ci = 0u;
        g_tab_lo = INF;
        if (chain.w == 2u) {
            fetch_incoming(lid, bk, mk);
        }
        var B: array<u32, 17>;
        var lk: array<i32, 16>;
        let gave = leaf_links(c, lid, m, pre, bk, &lk, &B) && chain.w != 2u;
        if (gave) {
            give_up();
        }
        store_direct(c * P + lid * EPT, &lk, &B);
    }
}
#endif

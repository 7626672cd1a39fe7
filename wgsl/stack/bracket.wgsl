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
//   ONEPASS: the same in one dispatch (opt-in: slower on an H100, see BENCHMARKS.md): partitions by
//           ticket write their lists (REDUCE's code) and publish their summaries, find their start
//           size by decoupled lookback with decoupled fallback, publish it, find the owners of the
//           heights they need as the records of M going back (owner_chain: the lookback's window
//           first, then windows of WG partitions, jumping along published parent links), publish
//           their own parent link, and run the leaf. Budgets bound every loop; a partition past
//           one gives up and arms the four passes above (recorded indirect) as the repair.
// List entries carry the call's epoch (epoch << LOCAL_BITS | offset in the partition): a single-pass
// reader tells an entry whose store it cannot see yet (plain stores are not ordered by relaxed
// atomics) and rebuilds it from the input.
// Defines: WG (invocations; P = 16 * WG), MODE_U8 | MODE_U32 | MODE_KIND, REDUCE | CHAIN | LEAF |
// ONEPASS, with REDUCE_FNS (REDUCE, ONEPASS), LEAF_FNS (LEAF, ONEPASS), TREE (CHAIN, LEAF);
// SUBGROUPS (scans by subgroup shuffles; else Hillis-Steele in workgroup memory), ELEMS_PER_VEC,
// STAGE_STORES (outputs through workgroup memory, for contiguous stores); ONEPASS: SPIN_LIMIT, LB_D,
// CHAIN_CAP, and the timing-only NO_LOOKBACK_TIMING / NO_WALKS_TIMING (wrong results), the test-only
// STALE_LISTS (no entry carries the epoch: every read rebuilds).

struct Params {
    n: u32,          // elements
    n_parts: u32,    // partitions
    n_groups: u32,   // workgroups asked for (the grid may round up)
    tree_size: u32,  // leaves of the global min tree (a power of two >= n_parts)
    epoch: u32,      // tag of this call's list entries (entry = epoch << LOCAL_BITS | offset in the partition)
#if ONEPASS
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
const LOCAL_BITS: u32 = 12u;  // list entries: epoch << LOCAL_BITS | the open's offset in its partition (P <= 4096)
const LOCAL_MASK: u32 = (1u << LOCAL_BITS) - 1u;

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
#if ONEPASS
@group(0) @binding(1) var<storage, read> input: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> lists: array<atomic<u32>>;
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
// Writes partition p's list: the tagged offsets of the opens it leaves open, each at
// slot = its height above the partition's minimum (no compaction needed). Returns the partition's
// bicyclic summary (valid in the last invocation only).
fn write_list(p: u32, lid: u32, m: vec2<u32>) -> vec2<u32> {
    // s[e]: unclamped walk (+1 open, -1 close) relative to the invocation's start.
    var s: array<i32, 17>;
    s[0] = 0;
    var tmin = 0;
#unroll E 16
    s[{{E}} + 1] = s[{{E}}] + i32((m.x >> {{E}}u) & 1u) - i32((m.y >> {{E}}u) & 1u);
    tmin = min(tmin, s[{{E}} + 1]);
#endunroll
    let sc = reduce_scans(lid, s[16], tmin);
    let start = sc.x;   // walk value at the invocation's start
    let pmin = sc.y;    // partition minimum, <= 0 (its start is 0)
    var run = sc.z;     // minimum over every later invocation (ends included)
    // An open survives the partition iff it is below every later value; its height above the
    // partition minimum is its slot in the partition's list.
    let tag = (params.epoch << LOCAL_BITS) | (lid * EPT);
#unroll E 16
    {
        const e: i32 = 15 - {{E}};
        run = min(run, start + s[e + 1]);
        let v = start + s[e];
        if (((m.x >> u32(e)) & 1u) != 0u && v < run) {
            store_entry(p * P + u32(v - pmin), tag + u32(e));
        }
    }
#endunroll
    let total = start + s[16];
    return vec2<u32>(u32(-pmin), u32(total - pmin));
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
    let bic = write_list(p, lid, load_masks(p, lid));
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
var<workgroup> sh_surv: array<vec4<u32>, WG>;         // its unmatched opens (element offsets, 4 bits each, top first), B[16]
var<workgroup> sh_bmin: array<u32, NBLK>;             // minimum of sh_tmin over each block
#if STAGE_STORES
var<workgroup> sh_stage: array<u32, P>;
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
        if (sh_bmin[k] < h) {
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
    workgroupBarrier();
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

// Each invocation's own 16 links and depths (depth = min(B[e], B[e + 1])).
fn store_direct(base: u32, lk: ptr<function, array<i32, 16>>, B: ptr<function, array<u32, 17>>) {
    let n_vec = (params.n + 3u) / 4u;
#unroll V 4
    {
        let vi = base / 4u + {{V}}u;
        if (vi < n_vec) {
            link[vi] = vec4<i32>((*lk)[{{V}} * 4], (*lk)[{{V}} * 4 + 1], (*lk)[{{V}} * 4 + 2], (*lk)[{{V}} * 4 + 3]);
            depth[vi] = vec4<i32>(i32(min((*B)[{{V}} * 4], (*B)[{{V}} * 4 + 1])),
                                  i32(min((*B)[{{V}} * 4 + 1], (*B)[{{V}} * 4 + 2])),
                                  i32(min((*B)[{{V}} * 4 + 2], (*B)[{{V}} * 4 + 3])),
                                  i32(min((*B)[{{V}} * 4 + 3], (*B)[{{V}} * 4 + 4])));
        }
    }
#endunroll
}

// Each element's link in lk and the stack sizes B of invocation lid of partition p (elements m,
// exclusive summary pre within the partition, stack size bp before the partition). The owners of
// the pending heights, highest first: an owner invocation j serves every height in (its minimum,
// h], an owner partition q every height in (M[q], h]; each round hands a whole range to its
// elements. Heights only decrease, so owners only move left. Partition owners come from the
// mode's partition_owner and list_entry. Returns true when an element was left without an owner
// (the single pass: a budget ran out; otherwise it cannot happen).
fn leaf_links(p: u32, lid: u32, m: vec2<u32>, pre: vec2<u32>, bp: u32, lk: ptr<function, array<i32, 16>>,
              B: ptr<function, array<u32, 17>>) -> bool {
    let tmin = inv_heights(m, max(bp, pre.x) - pre.x + pre.y, B);
    let st = inv_links(m, p * P + lid * EPT, lk);
    var pending = st.x & positive_mask(B);
    share_invocations(lid, tmin, st, (*B)[16]);
    var h = (*B)[0];
    var jo = -2;  // owner invocation: -2 not searched yet, -1 before the partition
    for (var round = 0u; round < 17u && pending != 0u && h > 0u; round++) {
        if (jo != -1) {
            jo = owner_search(select(lid, u32(jo), jo >= 0), h);
        }
        if (jo >= 0) {
            h = serve_from_invocation(p, u32(jo), B, lk, &pending);
        } else {
            // Before the partition: the open at height t of the incoming stack, in the list of the
            // nearest earlier partition whose minimum is below t.
            let o = partition_owner(h);
            if (o.x == 0u) {
                return true;
            }
            let q = o.x - 1u;
#unroll E 16
            if (((pending >> {{E}}u) & 1u) != 0u && (*B)[{{E}}] > o.y) {
                (*lk)[{{E}}] = list_entry(q, (*B)[{{E}}] - 1u - o.y);
                pending &= ~(1u << {{E}}u);
            }
#endunroll
            h = o.y;
        }
    }
    return false;
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

// (q + 1, M[q]) of the nearest earlier partition q with M[q] < h; x = 0 for none.
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
    return vec2<u32>(u32(g_q + 1), g_qc.x);
}

// The open at `slot` of partition q's list (global index).
fn list_entry(q: u32, slot: u32) -> i32 {
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
    leaf_links(p, lid, m, bic_exclusive(lid, inv_summary(m)), own.w, &lk, &B);
    let base = p * P + lid * EPT;
#if !STAGE_STORES
    store_direct(base, &lk, &B);
#endif
#if STAGE_STORES
    // Through workgroup memory, so that each store instruction of a subgroup writes one contiguous
    // span. Element w sits at w ^ ((w >> 4) & 15) (low 4 bits): at most 2-way bank conflicts on the
    // invocation-major writes.
    let n_vec = (params.n + 3u) / 4u;
    var v: array<i32, 16>;
#unroll E 16
    v[{{E}}] = i32(min(B[{{E}}], B[{{E}} + 1]));
#endunroll
    stage_store(lid, lk, p, n_vec, true);
    stage_store(lid, v, p, n_vec, false);
#endif
}

#if STAGE_STORES
fn stage_store(lid: u32, v: array<i32, 16>, p: u32, n_vec: u32, is_link: bool) {
#unroll E 16
    sh_stage[lid * 16u + ({{E}}u ^ (lid & 15u))] = bitcast<u32>(v[{{E}}]);
#endunroll
    workgroupBarrier();
#unroll K 4
    {
        let q = {{K}}u * WG + lid;  // vec4 slot within the partition
        var o: vec4<i32>;
#unroll C 4
        {
            let w = 4u * q + {{C}}u;
            o[{{C}}] = bitcast<i32>(sh_stage[(w & ~15u) | ((w & 15u) ^ ((w >> 4u) & 15u))]);
        }
#endunroll
        let vi = p * (P / 4u) + q;
        if (vi < n_vec) {
            if (is_link) {
                link[vi] = o;
            } else {
                depth[vi] = o;
            }
        }
    }
#endunroll
    workgroupBarrier();
}
#endif
#endif

#if ONEPASS
// The single pass. State words: [0] ticket, [1] invocations that gave up, [2] predecessors reduced
// by a successor (fallbacks); partition q owns words ST_BASE + 4q + (0: summary, 1 and 2: stack
// size after it in 16-bit halves, 3: parent + 1). Each word carries its own flag, so only relaxed
// atomics are assumed; a summary written twice (owner and fallback) has the same bits.
const ST_BASE: u32 = 4u;
const AGG_FLAG: u32 = 0x80000000u;
const HALF_FLAG: u32 = 0x10000u;
const SPIN_LIMIT: u32 = {{SPIN_LIMIT}}u;
const FAIL: u32 = 0xffffffffu;
const LB_D: u32 = {{LB_D}}u;           // predecessors polled per invocation and lookback step
const CHAIN_CAP: u32 = {{CHAIN_CAP}}u; // owners a partition may need before it gives up

var<workgroup> op_ticket: u32;
var<workgroup> op_total: vec2<u32>;
var<workgroup> op_res: vec4<u32>;
var<workgroup> op_chain: array<vec2<u32>, CHAIN_CAP>;
var<workgroup> op_win: array<vec4<u32>, WG * LB_D>;
var<workgroup> op_part: array<vec2<u32>, WG>;
var<workgroup> op_stop: atomic<u32>;
var<workgroup> op_sum: array<i32, WG>;
var<workgroup> op_min: array<atomic<u32>, 4>;  // take_records: 0-2 in turn; owner_chain's jumps: 3

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

fn publish_agg(q: u32, s: vec2<u32>) {
    atomicMax(&state[ST_BASE + 4u * q], AGG_FLAG | (s.x << 16u) | s.y);
}

// (published, a, b)
fn poll_agg(q: u32) -> vec3<u32> {
    let w = atomicLoad(&state[ST_BASE + 4u * q]);
    return vec3<u32>(w >> 31u, (w >> 16u) & 0x7fffu, w & 0xffffu);
}

fn publish_size(q: u32, s: u32) {
    atomicStore(&state[ST_BASE + 4u * q + 1u], HALF_FLAG | (s & 0xffffu));
    atomicStore(&state[ST_BASE + 4u * q + 2u], HALF_FLAG | (s >> 16u));
}

// (published, stack size after partition q)
fn poll_size(q: u32) -> vec2<u32> {
    let lo = atomicLoad(&state[ST_BASE + 4u * q + 1u]);
    let hi = atomicLoad(&state[ST_BASE + 4u * q + 2u]);
    let ok = (lo >> 16u) == 1u && (hi >> 16u) == 1u;
    return vec2<u32>(select(0u, 1u, ok), (lo & 0xffffu) | ((hi & 0xffffu) << 16u));
}

fn publish_parent(q: u32, parent_plus1: u32) {
    atomicStore(&state[ST_BASE + 4u * q + 3u], AGG_FLAG | parent_plus1);
}

// (published, parent + 1; 0: no earlier partition has a smaller minimum)
fn poll_parent(q: u32) -> vec2<u32> {
    let w = atomicLoad(&state[ST_BASE + 4u * q + 3u]);
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

// Partition q's summary reduced by the whole workgroup (the decoupled fallback).
fn part_summary(q: u32, lid: u32) -> vec2<u32> {
    let s = inv_summary(load_masks(q, lid));
    let pre = bic_exclusive(lid, s);
    if (lid == WG - 1u) {
        op_total = bic_combine(pre, s);
    }
    return workgroupUniformLoad(&op_total);
}

// The stack size before partition p (> 0): decoupled lookback over the predecessors' summaries,
// WG * LB_D predecessors polled per step (invocation l: entries l LB_D .. l LB_D + LB_D - 1, entry k
// = predecessor look - 1 - k); the nearest entry that stops the walk (a published size, or
// silence: decoupled fallback) found with an atomic minimum, the entries before it combined by
// each invocation over its own entries, then a tree over the invocations. Returns (ok, size, look,
// stop): ok = 0 when max_steps steps did not reach a published size; else the last step's window
// (entry k = predecessor look - 1 - k, in op_win) ended at entry stop, which owner_chain reads.
fn lookback(p: u32, lid: u32) -> vec4<u32> {
    var look = p;
    var acc = vec2<u32>(0u);  // partitions look .. p - 1, combined (uniform: every invocation keeps it)
    for (var step = 0u; step < params.max_steps; step++) {
        if (lid == 0u) {
            atomicStore(&op_stop, INF);
        }
        var mine = INF;
        for (var d = 0u; d < LB_D; d++) {
            let k = lid * LB_D + d;
            let valid = look > k;
            let t = select(0u, look - 1u - k, valid);
            var st = vec4<u32>(K_PAST, 0u, 0u, 0u);
            if (valid) {
                st = poll_pred(t);
                for (var s = 1u; s < SPIN_LIMIT && st.x == K_NONE; s++) {
                    st = poll_pred(t);
                }
            }
            op_win[k] = st;
            if (st.x != K_AGG) {
                mine = min(mine, k);
            }
        }
        workgroupBarrier();
        if (mine != INF) {
            atomicMin(&op_stop, mine);
        }
        workgroupBarrier();
        let stop = atomicLoad(&op_stop);  // uniform after the barrier
        var part = vec2<u32>(0u);
        for (var d = 0u; d < LB_D; d++) {
            let k = lid * LB_D + d;
            if (k < stop) {
                part = bic_combine(op_win[k].yz, part);  // entry k precedes entries < k
            }
        }
        op_part[lid] = part;
        workgroupBarrier();
        for (var w = 1u; w < WG; w = w << 1u) {
            if ((lid & (2u * w - 1u)) == 0u && lid + w < WG) {
                op_part[lid] = bic_combine(op_part[lid + w], op_part[lid]);
            }
            workgroupBarrier();
        }
        acc = bic_combine(op_part[0], acc);
        if (lid == 0u) {
            op_res.x = stop;
        }
        let stop_u = workgroupUniformLoad(&op_res).x;
        if (stop_u == INF) {
            look -= min(look, WG * LB_D);
            continue;
        }
        let e = op_win[stop_u];
        if (e.x != K_NONE) {
            return vec4<u32>(1u, bic_apply(select(0u, e.w, e.x != K_PAST), acc), look, stop_u);
        }
        let q = look - 1u - stop_u;
        let sum = part_summary(q, lid);
        if (lid == 0u) {
            publish_agg(q, sum);
            atomicAdd(&state[2], 1u);
        }
        acc = bic_combine(sum, acc);
        look = q;
    }
    return vec4<u32>(0u);
}

// Exclusive sum over the workgroup's invocations and the total (Hillis-Steele in workgroup memory).
fn wg_exclusive_sum(lid: u32, v: i32) -> vec2<i32> {
    op_sum[lid] = v;
    workgroupBarrier();
    for (var d = 1u; d < WG; d = d << 1u) {
        var x = op_sum[lid];
        if (lid >= d) {
            x += op_sum[lid - d];
        }
        workgroupBarrier();
        op_sum[lid] = x;
        workgroupBarrier();
    }
    let r = vec2<i32>(op_sum[lid] - v, op_sum[WG - 1u]);
    workgroupBarrier();
    return r;
}

// The owner chain being built (uniform): heights below `thresh` still need owners; status
// C_GOING, C_DONE (parent1 = parent(p) + 1, 0 for none) or C_FAILED (a budget ran out).
struct Chain {
    thresh: u32,
    len: u32,
    status: u32,
    parent1: u32,
}
const C_GOING: u32 = 0u;
const C_DONE: u32 = 1u;
const C_FAILED: u32 = 2u;

// Round results (op_res.x): the window had no stop, a record (a new owner), an unusable entry.
const R_NONE: u32 = 0u;
const R_RECORD: u32 = 1u;
const R_STOP: u32 = 2u;

// One window of the owner walk, entry lid = partition t (usable: its minimum m = M[t] is known; an
// unusable entry stops the window). Takes every record in order (the nearest entry whose minimum
// is below the chain's threshold, which becomes its minimum: exactly the owners of the heights
// still needed) into op_chain, each found with an atomic minimum over the invocations (the first
// unusable entry competes too). mp is the partition's own minimum: an owner below it is parent(p)
// and ends the chain. Returns (R_NONE, 0), or (R_STOP, entry index) at an unusable entry; the
// caller reads op_sb for the stack size before an entry (after the window's last barrier).
var<workgroup> op_sb: array<u32, WG>;
fn take_records(lid: u32, usable: bool, t: u32, m: i32, mp: u32, ch: ptr<function, Chain>) -> vec2<u32> {
    if (lid == 0u) {
        atomicStore(&op_min[0], INF);
        atomicStore(&op_min[1], INF);
    }
    workgroupBarrier();
    var last = -1;
    for (var k = 0u; k <= WG; k++) {
        if (lid == 0u) {
            atomicStore(&op_min[(k + 2u) % 3u], INF);  // next used two barriers from now
        }
        let cand = i32(lid) > last && (!usable || m < i32((*ch).thresh));
        if (cand) {
            atomicMin(&op_min[k % 3u], lid);
        }
        workgroupBarrier();
        let r = atomicLoad(&op_min[k % 3u]);
        if (lid == r) {
            op_res = vec4<u32>(select(R_STOP, R_RECORD, usable), lid, t, u32(m));
        } else if (lid == 0u && r == INF) {
            op_res = vec4<u32>(R_NONE, 0u, 0u, 0u);
        }
        let res = workgroupUniformLoad(&op_res);
        if (res.x != R_RECORD) {
            return res.xy;
        }
        take_owner(lid, res.z, i32(res.w), mp, ch);
        if ((*ch).status != C_GOING) {
            return vec2<u32>(R_NONE, 0u);
        }
        last = i32(res.y);
    }
    return vec2<u32>(R_NONE, 0u);
}

// Appends owner q (minimum m, below the threshold) to the chain (uniform arguments).
fn take_owner(lid: u32, q: u32, m: i32, mp: u32, ch: ptr<function, Chain>) {
    if ((*ch).len == CHAIN_CAP) {
        (*ch).status = C_FAILED;
        return;
    }
    let mu = u32(max(m, 0));
    if (lid == 0u) {
        op_chain[(*ch).len] = vec2<u32>(q, mu);
    }
    (*ch).len += 1u;
    (*ch).thresh = mu;
    if (mu < mp) {
        (*ch).status = C_DONE;
        (*ch).parent1 = q + 1u;
    } else if (mu == 0u) {
        (*ch).status = C_DONE;
    }
}

// The owners of the incoming stack's heights (mp, bp], highest first, into op_chain: entry k =
// (q, M[q]) serves heights (M[q], M[k - 1]]; then parent(p) = the first owner with M < mp (it
// serves mp). The owners are the records of M going back from p: the first window is the
// lookback's last one when it began at p - 1 (no new polls: M[t] from the incoming size and the
// summaries before the lookback's stop, from published sizes after it), later ones poll WG
// partitions at once (M from a workgroup sum of b - a back from a known size: exact up to the
// first owner with M = 0, which ends the chain), reducing a silent partition themselves
// (decoupled fallback) and jumping over a window without owners to the farthest published parent
// link in it where that parent's size is published. Returns (entries, parent + 1 or 0, ok).
fn owner_chain(p: u32, bp: u32, mp: u32, lid: u32, steps: ptr<function, u32>, lb: vec4<u32>) -> vec3<u32> {
    var ch = Chain(bp, 0u, select(C_GOING, C_DONE, bp == 0u), 0u);
    var q0 = i32(p) - 1;
    var send = bp;  // stack size after q0
    if (LB_D == 1u && lb.z == p && ch.status == C_GOING) {
        let e = op_win[lid];
        let stop = lb.w;
        let before = lid < stop;  // K_AGG entries: M from the incoming size
        let ex = wg_exclusive_sum(lid, select(0, i32(e.z) - i32(e.y), before));
        let m = select(i32(e.w) - i32(e.z), i32(bp) - ex.x - i32(e.z), before);
        let usable = before || e.x == K_BOTH;
        op_sb[lid] = u32(m + i32(e.y));
        let r = take_records(lid, usable, p - 1u - lid, m, mp, &ch);
        if (ch.status == C_GOING) {
            if (r.x == R_STOP) {
                let e_r = op_win[r.y];
                if (e_r.x == K_PAST) {  // cannot happen: partition 0's minimum is 0
                    ch.status = C_DONE;
                }
                q0 = i32(p - 1u - r.y);
                send = select(op_sb[max(r.y, 1u) - 1u], bp, r.y == 0u);
            } else {
                q0 -= i32(WG);
                send = op_sb[WG - 1u];
            }
        }
    }
    for (var round = 0u; round <= params.max_hops && ch.status == C_GOING; round++) {
        if (q0 < 0) {  // cannot happen either (see above)
            ch.status = C_DONE;
            break;
        }
        if (*steps == 0u) {
            ch.status = C_FAILED;
            break;
        }
        *steps -= 1u;
        if (lid == 0u) {
            atomicStore(&op_min[3], INF);
        }
        let valid = q0 >= i32(lid);
        let t = select(0u, u32(q0) - lid, valid);
        var g = vec3<u32>(0u);
        var par = vec2<u32>(0u);
        if (valid) {
            g = poll_agg(t);
            par = poll_parent(t);
            for (var s = 1u; s < SPIN_LIMIT && g.x == 0u; s++) {
                g = poll_agg(t);
            }
        }
        // A withheld partition (test switch) is never trusted here, even when a fallback has
        // published it: the walk reduces it itself, as it must one whose summary it cannot see.
        let usable = valid && g.x != 0u && !withholds(t, params.withhold_period);
        let ex = wg_exclusive_sum(lid, select(0, i32(g.z) - i32(g.y), usable));  // (b - a) of the nearer entries
        let m = i32(send) - ex.x - i32(g.z);  // M[t] (unclamped: right up to the first owner with M = 0)
        op_sb[lid] = u32(m + i32(g.y));
        let r = take_records(lid, usable, t, m, mp, &ch);
        if (ch.status != C_GOING) {
            break;
        }
        if (r.x == R_STOP) {
            let q = u32(q0) - r.y;
            if (r.y >= u32(q0) + 1u) {  // past partition 0: cannot happen (see above)
                ch.status = C_DONE;
                break;
            }
            // Silent: reduced here (and published for others), then taken in place, so the walk
            // never waits for it to become visible.
            let sum = part_summary(q, lid);
            if (lid == 0u) {
                publish_agg(q, sum);
                atomicAdd(&state[2], 1u);
            }
            let mq = i32(select(op_sb[max(r.y, 1u) - 1u], send, r.y == 0u)) - i32(sum.y);
            if (mq < i32(ch.thresh)) {
                take_owner(lid, q, mq, mp, &ch);
                if (ch.status != C_GOING) {
                    break;
                }
            }
            send = u32(mq + i32(sum.x));  // mq >= the threshold > 0: no clamping
            q0 = i32(q) - 1;
            continue;
        }
        // No owner left in the window: every entry from the last owner on has M >= the threshold,
        // and so do the partitions between each of them and its parent.
        if (par.x != 0u && par.y != 0u && m >= i32(ch.thresh)) {
            atomicMin(&op_min[3], par.y - 1u);
        }
        workgroupBarrier();
        let j = atomicLoad(&op_min[3]);
        if (lid == 0u) {
            var res = vec4<u32>(u32(q0) - WG, u32(i32(send) - ex.y), 0u, 0u);
            if (j != INF && i32(j) <= q0 - i32(WG)) {
                let ps = poll_size(j);
                if (ps.x != 0u) {
                    res = vec4<u32>(j, ps.y, 0u, 0u);
                }
            }
            op_res = res;
        }
        let nx = workgroupUniformLoad(&op_res);
        q0 = bitcast<i32>(nx.x);
        send = nx.y;
    }
    if (ch.status == C_GOING) {
        ch.status = C_FAILED;
    }
    return vec3<u32>(ch.len, ch.parent1, select(0u, 1u, ch.status == C_DONE));
}

var<private> g_ci: u32;           // chain entry: owners only move left as heights fall
var<private> g_chain_len: u32;

// (q + 1, M[q]) of the nearest earlier partition q with M[q] < h, from the owner chain; x = 0 for
// none (past the chain).
fn partition_owner(h: u32) -> vec2<u32> {
    for (; g_ci < g_chain_len && op_chain[g_ci].y >= h; g_ci++) {
    }
    if (g_ci == g_chain_len) {
        return vec2<u32>(0u);
    }
    return vec2<u32>(op_chain[g_ci].x + 1u, op_chain[g_ci].y);
}

// The open at `slot` of partition q's list (global index). An entry without this call's tag was
// not visible yet (plain stores and flags are not ordered): rebuilt from q's input instead, as
// the last open at that height of q's unclamped walk.
fn list_entry(q: u32, slot: u32) -> i32 {
    let v = atomicLoad(&lists[q * P + slot]);
    if ((v >> LOCAL_BITS) == params.epoch) {
        return i32(q * P + (v & LOCAL_MASK));
    }
    let height = i32(slot) - i32(poll_agg(q).y);  // q's summary is published: the walk read it
    var h = 0;
    var last = 0u;
    for (var t = 0u; t < WG; t++) {
        let m = load_masks(q, t);
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
    return i32(q * P + last);
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
#endif
    // Partitions by ticket: a predecessor has always started.
    if (lid == 0u) {
        op_ticket = atomicAdd(&state[0], 1u);
    }
    let p = workgroupUniformLoad(&op_ticket);
    if (p >= params.n_parts) {
        return;
    }
    let m = load_masks(p, lid);
    let total = write_list(p, lid, m);
    if (lid == WG - 1u) {
        op_total = total;
    }
    workgroupBarrier();  // write_list's scans and bic_exclusive share sh_a / sh_b
    let pre = bic_exclusive(lid, inv_summary(m));
    let agg = workgroupUniformLoad(&op_total);
    let silent = withholds(p, params.withhold_period);
    if (lid == 0u && !silent) {
        publish_agg(p, agg);
    }
    var bp = 0u;  // stack size before the partition
    var lb = vec4<u32>(0u);
#if NO_LOOKBACK_TIMING
    if (false) {
#else
    if (p > 0u) {
#endif
        lb = lookback(p, lid);
        if (lb.x == 0u) {
            if (lid == 0u) {
                give_up();
            }
            return;
        }
        bp = lb.y;
    }
    let s_end = bic_apply(bp, agg);
    let mp = max(bp, agg.x) - agg.x;  // the partition's minimum stack size
    if (lid == 0u) {
        if (!silent) {
            publish_size(p, s_end);
        }
        if (agg.x > bp) {
            atomicAdd(&info[0], agg.x - bp);
        }
        if (p == params.n_parts - 1u) {
            atomicStore(&info[1], s_end);
        }
    }
    // The owners of the incoming stack's heights the partition needs, and parent(p) (published
    // for later walks), found once by the whole workgroup.
    var steps = params.max_hops;
#if NO_WALKS_TIMING
    steps = 0u;
#endif
    let chain = owner_chain(p, bp, mp, lid, &steps, lb);
    if (lid == 0u && chain.z != 0u && !silent) {
        publish_parent(p, chain.y);
    }

    // The leaf, with partition owners from the chain. An element left without one: the chain
    // stopped short because a budget ran out.
    g_chain_len = chain.x;
    var B: array<u32, 17>;
    var lk: array<i32, 16>;
    let gave = leaf_links(p, lid, m, pre, bp, &lk, &B) && chain.z == 0u;
#if !NO_WALKS_TIMING
    if (gave) {
        give_up();
    }
#endif
    store_direct(p * P + lid * EPT, &lk, &B);
}
#endif

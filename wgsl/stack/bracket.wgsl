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
// No workgroup waits on another (no lookback), so nothing depends on forward progress; every loop
// has a constant or small bound. Depth is unbounded (u32 stack sizes).
// Defines: WG (invocations; P = 16 * WG), MODE_U8 | MODE_U32 | MODE_KIND, REDUCE | CHAIN | LEAF,
// SUBGROUPS (scans by subgroup shuffles; else Hillis-Steele in workgroup memory), ELEMS_PER_VEC,
// STAGE_STORES (outputs through workgroup memory, for contiguous stores).

struct Params {
    n: u32,          // elements
    n_parts: u32,    // partitions
    n_groups: u32,   // workgroups asked for (the grid may round up)
    tree_size: u32,  // leaves of the global min tree (a power of two >= n_parts)
}

const WG: u32 = {{WG}}u;
const EPT: u32 = 16u;
const P: u32 = WG * EPT;
const INF: u32 = 0xffffffffu;

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

#if REDUCE
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

#if LEAF
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

#if REDUCE
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
    let m = load_masks(p, lid);
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
    let base = p * P + lid * EPT;
#unroll E 16
    {
        const e: i32 = 15 - {{E}};
        run = min(run, start + s[e + 1]);
        let v = start + s[e];
        if (((m.x >> u32(e)) & 1u) != 0u && v < run) {
            opens_out[p * P + u32(v - pmin)] = base + u32(e);
        }
    }
#endunroll
    if (lid == WG - 1u) {
        let total = start + s[16];
        part_bic[p] = vec2<u32>(u32(-pmin), u32(total - pmin));
    }
}
#endif

#if !REDUCE
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

#if LEAF
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

// Partition q's (minimum M[q], parent(q)); (INF, INF) for none (q < 0).
fn chain_entry(q: i32) -> vec2<u32> {
    if (q < 0) {
        return vec2<u32>(INF);
    }
    return chain[u32(q)].xy;
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
    let pre = bic_exclusive(lid, inv_summary(m));
    let own = chain[p];
    let bp = own.w;
    var B: array<u32, 17>;
    let tmin = inv_heights(m, max(bp, pre.x) - pre.x + pre.y, &B);
    let base = p * P + lid * EPT;
    var lk: array<i32, 16>;
    let st = inv_links(m, base, &lk);
    var pending = st.x & positive_mask(&B);
    share_invocations(lid, tmin, st, B[16]);
    // The owners of the pending heights, highest first: an owner invocation j serves every height
    // in (its minimum, h], an owner partition q every height in (M[q], h]; each round hands a whole
    // range to its elements. Heights only decrease, so owners only move left.
    var h = B[0];
    var jo = -2;  // owner invocation: -2 not searched yet, -1 before the partition
    var q = -2;   // owner partition: -2 not looked up yet, -1 none
    var qc = vec2<u32>(0u);  // its (minimum, parent)
    for (var round = 0u; round < 17u && pending != 0u && h > 0u; round++) {
        if (jo != -1) {
            jo = owner_search(select(lid, u32(jo), jo >= 0), h);
        }
        if (jo >= 0) {
            h = serve_from_invocation(p, u32(jo), &B, &lk, &pending);
        } else {
            // Before the partition: the open at height t of the incoming stack, in the list of the
            // nearest earlier partition whose minimum is below t.
            if (q == -2) {
                q = bitcast<i32>(own.z);
                qc = chain_entry(q);
            }
            for (var hop = 0u; hop < 8u; hop++) {
                if (q < 0 || qc.x < h) {
                    break;
                }
                q = bitcast<i32>(qc.y);
                qc = chain_entry(q);
            }
            if (q >= 0 && qc.x >= h) {  // a long chain: the tree instead
                q = gtree_query(u32(q), h);
                qc = chain_entry(q);
            }
            if (q < 0) {
                break;  // inconsistent summaries; cannot happen for t > 0
            }
            let qm = qc.x;
            let qbase = u32(q) * P - 1u - qm;
#unroll E 16
            if (((pending >> {{E}}u) & 1u) != 0u && B[{{E}}] > qm) {
                lk[{{E}}] = i32(opens_out[qbase + B[{{E}}]]);
                pending &= ~(1u << {{E}}u);
            }
#endunroll
            h = qm;
        }
    }
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

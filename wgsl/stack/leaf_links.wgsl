// The leaf's links and depths from a partition's masks and incoming stack (the multi-pass LEAF and
// the single pass): block minima, owner searches, the invocations' stacks, direct stores.

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

#if CHUNK_OUT
// Past one binding the heights are global, and a link either lies within the chunk (a local index)
// or is a carried open (its global index g, held as -2 - g): the link made global.
fn global_link(l: i32) -> i32 {
    if (l >= 0) {
        return i32(params.out_base) + l;
    }
    return select(-2 - l, -1, l == -1);
}
#endif

// Each invocation's own 16 links, then its 16 depths (depth = min(B[e], B[e + 1])). CHUNK_OUT:
// the links made global (global_link).
fn store_direct(base: u32, lk: ptr<function, array<i32, 16>>, B: ptr<function, array<u32, 17>>) {
    let n_vec = (params.n + 3u) / 4u;
#unroll V 4
    {
        let vi = base / 4u + {{V}}u;
        if (vi < n_vec) {
#if CHUNK_OUT
            link[vi] = vec4<i32>(global_link((*lk)[{{V}} * 4]), global_link((*lk)[{{V}} * 4 + 1]),
                                 global_link((*lk)[{{V}} * 4 + 2]), global_link((*lk)[{{V}} * 4 + 3]));
#else
            link[vi] = vec4<i32>((*lk)[{{V}} * 4], (*lk)[{{V}} * 4 + 1], (*lk)[{{V}} * 4 + 2], (*lk)[{{V}} * 4 + 3]);
#endif
        }
    }
#endunroll
#if !NO_DEPTH
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
#endif
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
// height h. Partition owners come from the mode's partition_owner and owner_open (CHUNK_OUT: past
// them, the carried stack). Returns true when an element was left without an owner (the single
// pass: a budget ran out; otherwise it cannot happen).
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
    for (var round = 0u; round < 18u && pending != 0u && h > 0u; round++) {
        let o = partition_owner(h);
        if (o.x == INF) {
#if CHUNK_OUT
            // Past one binding: no partition of the chunk owns these heights, the carried stack
            // does (slot B - 1 is carried[B - lowest height]; held as -2 - global index).
#unroll E 16
            if (((pending >> {{E}}u) & 1u) != 0u) {
                (*lk)[{{E}}] = -2 - carried[(*B)[{{E}}] - g_low];
            }
#endunroll
            return false;
#else
            return true;
#endif
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

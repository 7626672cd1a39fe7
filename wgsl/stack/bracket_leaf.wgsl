// Bracket matching, multi-pass method, pass 6 (LEAF): every element's link and depth from its
// partition's masks, the owner chain and the owners' lists. Defines: see stack/bracket_common.wgsl.

#include "stack/bracket_common.wgsl"
#include "stack/tree.wgsl"
#include "stack/leaf_links.wgsl"

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

#if CHUNK_OUT
#include "common/later_min.wgsl"

var<private> g_low: u32;  // the run's lowest height (the min tree's root; carried[0] is slot g_low - 1)

// Past one binding: the chunk's segment of the carried stack gets, at slot h - g_low, the open of
// global depth h that the chunk leaves unclosed: the one below every later height (in its partition:
// the later invocations' minimum; after it, `tail`: CHAIN's). One open per slot: plain stores.
fn push_unclosed(base: u32, lid: u32, opens: u32, B: ptr<function, array<u32, 17>>, tail: u32) {
    var d: array<u32, 16>;
    var low = INF;
    for (var k = 0u; k < 16u; k++) {
        d[k] = INF;
        if (base + k < params.n) {
            d[k] = min((*B)[k], (*B)[k + 1u]);
        }
        low = min(low, d[k]);
    }
    if (lid == WG - 1u) {
        low = min(low, tail);
    }
    var later = later_minimum(lid, low, tail);  // the lowest height after the element
    for (var j = 0u; j < 16u; j++) {
        let k = 15u - j;
        if (d[k] < later && ((opens >> k) & 1u) != 0u) {
            segment[d[k] - g_low] = i32(params.out_base + base + k);
        }
        later = min(later, d[k]);
    }
}
#endif

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
#if CHUNK_OUT
    g_low = tree[1];
#endif
    let own = chain[p];
    g_first = bitcast<i32>(own.z);
    var B: array<u32, 17>;
    var lk: array<i32, 16>;
    _ = leaf_links(p, lid, m, bic_exclusive(lid, inv_summary(m)), own.w, &lk, &B);
    let base = p * P + lid * EPT;
    store_direct(base, &lk, &B);
#if CHUNK_OUT
    if (params.push_opens != 0u) {  // uniform
        let tail = tails[p];
        if (tail > own.x) {  // else every height of the partition comes again later: no open to push
            push_unclosed(base, lid, m.x, &B, tail);
        }
    }
#endif
}

// The global min tree of the multi-pass method's spine (CHAIN and LEAF): gtree_query (and past one
// binding heights_from).

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

#if CHUNK_OUT
// The lowest height of partitions [start, tree_size) (the min tree's leaves: each partition's lowest).
fn heights_from(start: u32) -> u32 {
    var lo = params.tree_size + start;
    var hi = 2u * params.tree_size;
    var r = INF;
    for (var it = 0u; it < GT_LEVELS && lo < hi; it++) {
        if ((lo & 1u) != 0u) {
            r = min(r, tree[lo]);
            lo += 1u;
        }
        if ((hi & 1u) != 0u) {
            hi -= 1u;
            r = min(r, tree[hi]);
        }
        lo >>= 1u;
        hi >>= 1u;
    }
    return r;
}
#endif

// Chained chunks (CHAINED): one call past a storage binding runs the single-pass kernel once per
// input chunk, each chunk continuing the previous ones' count, so its items go straight to their
// final positions (no scratch, no placement pass). The chunk reads from `chain` (the previous
// chunk's info block, written on the GPU) the items before it ([0]) and, for RLE, the element
// just before the chunk ([12]: the first element starts a run only where it differs). The
// output is bound as two adjacent windows, the first starting at params.win_base (chosen on the
// GPU by rle/route.wgsl among host-known window starts), so local stores go to
// `before - win_base + offset`, those at params.win_len or past it to the second window (the
// including kernel's `_hi` bindings and put_* helpers);
// positions (nonzero's indices, RLE run starts) add params.pos_base, the chunk's first element,
// and RLE's per-tile record is indexed from params.tile_base (the tiles of earlier chunks).
// Without CHAINED every helper is the identity of the unchunked kernel.
// Included by rle/compact.wgsl and rle/fused.wgsl after their Params.

#if CHAINED
@group(0) @binding(14) var<storage, read> chain: array<u32>;

fn chain_before() -> u32 {
    return chain[0];
}

fn chain_shift() -> u32 {
    return chain[0] - params.win_base;
}

fn chain_win() -> u32 {
    return params.win_base;
}

fn chain_pos() -> u32 {
    return params.pos_base;
}

fn chain_tile() -> u32 {
    return params.tile_base;
}

// The element before the chunk's first one `first`: one that differs where there is none.
fn chain_prev(first: u32) -> u32 {
    return select(~first, chain[12], params.has_prev != 0u);
}
#else
fn chain_before() -> u32 {
    return 0u;
}

fn chain_shift() -> u32 {
    return 0u;
}

fn chain_win() -> u32 {
    return 0u;
}

fn chain_pos() -> u32 {
    return 0u;
}

fn chain_tile() -> u32 {
    return 0u;
}

fn chain_prev(first: u32) -> u32 {
    return ~first;
}
#endif

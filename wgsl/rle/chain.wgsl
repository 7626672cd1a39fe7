// Chained chunks (CHAINED): one call past a storage binding runs the single-pass kernel once per
// input chunk, each chunk continuing the previous ones' count, so its items go straight to their
// final positions (no scratch, no placement pass). The chunk reads from `chain` (the previous
// chunk's info block, written on the GPU) the items before it ([0]) and, for RLE, the element
// just before the chunk ([12], and [13] for a 64-bit value: the first element starts a run only
// where it differs). The output is bound as two adjacent windows, the first starting at
// params.win_base (chosen on the GPU by rle/route.wgsl among host-known window starts), so local
// stores go to `before - win_base + offset`, those at params.win_len or past it to the second
// window (the including kernel's `_hi` bindings and put_* helpers);
// positions (nonzero's indices, RLE run starts) add params.pos_base, the chunk's first element,
// and RLE's per-tile record is indexed from params.tile_base (the tiles of earlier chunks).
// CHAIN_WORDS (compaction of 64-bit values, rle/compact.wgsl PAIRS): the count in chain[0] is in
// elements, offsets and the window's start and length in 32-bit words. IDX64 (nonzero as int64) and 64-bit
// RLE count items of 8 bytes, as the window does.
// Without CHAINED every helper is the identity of the unchunked kernel.
// Included by rle/compact.wgsl and rle/fused.wgsl after their Params.

#if CHAINED
@group(0) @binding(14) var<storage, read> chain: array<u32>;

#if CHAIN_WORDS
// compaction of 64-bit values (rle/compact.wgsl PAIRS): the count is in elements, offsets and the
// window's start in 32-bit words
fn chain_before() -> u32 {
    return 2u * chain[0];
}

fn chain_shift() -> u32 {
    return 2u * chain[0] - params.win_base;
}
#else
fn chain_before() -> u32 {
    return chain[0];
}

fn chain_shift() -> u32 {
    return chain[0] - params.win_base;
}
#endif

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

// The same for a 64-bit value as its two words (chain[12], chain[13]).
fn chain_prev2(first: vec2<u32>) -> vec2<u32> {
    return select(~first, vec2<u32>(chain[12], chain[13]), params.has_prev != 0u);
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

fn chain_prev2(first: vec2<u32>) -> vec2<u32> {
    return ~first;
}
#endif

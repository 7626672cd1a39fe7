// rle/compact.wgsl's encoder with subgroups (BITMASK): the tile's run starts as a bitmask in
// workgroup memory with the position of every fourth start, and the store that finds each output
// vec4's starts from them. Included by rle/compact.wgsl.

// Bit position of the j-th (from 0) set bit of `bits` (j below its count).
fn nth_bit(bits: u32, j: u32) -> u32 {
    var b = bits;
    var k = j;
    var pos = 0u;
    for (var s = 16u; s > 0u; s = s >> 1u) {
        let c = countOneBits(b & ((1u << s) - 1u));
        let up = k >= c;
        k -= select(0u, c, up);
        pos += select(0u, s, up);
        b = select(b, b >> s, up);
    }
    return pos;
}

// Word w holds the tile's starts [s, s + c) at its set bits: every multiple of 4 among those ranks
// gets its position.
fn note_positions(w: u32, s: u32, c: u32, bits: u32) {
    var j = (4u - (s & 3u)) & 3u;
    if (j >= c) {
        return;
    }
    var b = bits & (0xffffffffu << nth_bit(bits, j));
    for (; j < c; j += 4u) {
        pos4[(s + j) >> 2u] = w * 32u + firstTrailingBit(b);
        b &= b - 1u;
        b &= b - 1u;
        b &= b - 1u;
        b &= b - 1u;
    }
}

// The tile's run-start bitmask from the flags (each group of 8 lanes ORs its four-bit flags into one
// word) and, unless RTS_REDUCE (which needs only the count), the table of every fourth start; returns
// the tile's count. Called by the whole workgroup.
fn bitmask_prefix(f: ptr<function, array<u32, VEC4_PER_THREAD>>) -> u32 {
    let group = min(8u, g_sg_size);
    let sh = (g_lid & 7u) * 4u;
#unroll I VEC4_PER_THREAD
    {
        var nib = (*f)[{{I}}] << sh;
        for (var d = 1u; d < group; d = d << 1u) {
            nib |= subgroupShuffleXor(nib, d);
        }
        (*f)[{{I}}] = nib;
    }
#endunroll
    // after every subgroup operation; atomic because subgroups of fewer than 8 share a word
    if ((g_lid & (group - 1u)) == 0u) {
#unroll I VEC4_PER_THREAD
        atomicOr(&bm[({{I}}u * WG + g_lid) >> 3u], (*f)[{{I}}]);
#endunroll
    }
    workgroupBarrier();
    let w0 = 2u * g_lid;  // NW <= 2 WG (VEC4_PER_THREAD <= 16)
    let b0 = select(0u, atomicLoad(&bm[min(w0, NW - 1u)]), w0 < NW);
    let b1 = select(0u, atomicLoad(&bm[min(w0 + 1u, NW - 1u)]), w0 + 1u < NW);
    let c0 = countOneBits(b0);
    let c = c0 + countOneBits(b1);
    let incl = subgroupInclusiveAdd(c);
    let wp = workgroup_prefix(subgroupShuffle(incl, g_sg_size - 1u));
#if !RTS_REDUCE
    let before = wp.x + incl - c;
    note_positions(w0, before, c0, b0);
    note_positions(w0 + 1u, before + c0, c - c0, b1);
    // pos4 complete; and note_positions' early return and loop diverge, which no subgroup operation
    // (the lookback's) may follow without a barrier (common/subgroup_scan.wgsl)
    workgroupBarrier();
#endif
    return wp.y;
}

#if !RTS_REDUCE
// A walk over consecutive run starts: the word and its starts not yet taken.
struct Cursor {
    w: u32,
    rest: u32,
}

// The cursor's next start (tile-local position), over empty words; the caller knows one exists.
fn pop(c: ptr<function, Cursor>) -> u32 {
    for (var i = 0u; i < NW && (*c).rest == 0u; i++) {
        (*c).w = min((*c).w + 1u, NW - 1u);
        (*c).rest = atomicLoad(&bm[(*c).w]);
    }
    let p = firstTrailingBit((*c).rest);
    (*c).rest &= (*c).rest - 1u;
    return (*c).w * 32u + p;
}

// A cursor whose next start is the tile's r-th (r below the tile's count): from the start of
// rank r rounded down to a multiple of 4, at most three starts on.
fn seek(r: u32) -> Cursor {
    let p = pos4[r >> 2u];
    var c = Cursor(p >> 5u, atomicLoad(&bm[p >> 5u]) & (0xffffffffu << (p & 31u)));
    for (var k = r & ~3u; k < r; k++) {
        pop(&c);
    }
    return c;
}

// The tile's r-th start, the cursor's next: from the cursor's word or the next, else sought.
fn take(c: ptr<function, Cursor>, r: u32) -> u32 {
    if ((*c).rest == 0u) {
        let nw = min((*c).w + 1u, NW - 1u);
        let bits = atomicLoad(&bm[nw]);
        if (bits != 0u && nw > (*c).w) {
            *c = Cursor(nw, bits);
        } else {
            *c = seek(r);
        }
    }
    return pop(c);
}

// Writes the tile's runs to output positions offset .. offset + count - 1 without rounds: each
// output vec4 finds its starts in the bitmask. Called by the whole workgroup.
fn bitmask_store_tile(tile: u32, offset: u32, count: u32) {
    let tile_e0 = tile * TILE_V * 4u;
    let lo = offset;
    let hi = offset + count;
    let last = hi - 1u;
    for (var q = lo / 4u + g_lid; q < (hi + 3u) / 4u; q += WG) {
        let w = 4u * q;
        if (w >= lo && w + 4u <= hi) {
            let r = w - lo;
            var c = seek(r);
            let ps = vec4<u32>(take(&c, r), take(&c, r + 1u), take(&c, r + 2u), take(&c, r + 3u));
            var p4 = 0u;
            if (r + 4u < count) {
                p4 = take(&c, r + 4u);
            }
            let pn = vec4<u32>(ps.yzw, p4);
            let is_last = vec4<u32>(w) + vec4<u32>(0u, 1u, 2u, 3u) == vec4<u32>(last);
            put_vec(q, vec4<u32>(x_u32[tile_e0 + ps.x], x_u32[tile_e0 + ps.y], x_u32[tile_e0 + ps.z],
                                 x_u32[tile_e0 + ps.w]),
                    select(pn - ps, vec4<u32>(tile_e0 + chain_pos()) + ps, is_last));
        } else {
            for (var j = 0u; j < 4u; j++) {
                let k = w + j;
                if (k >= lo && k < hi) {
                    let r = k - lo;
                    var c = seek(r);
                    let ps = take(&c, r);
                    var pn = 0u;
                    if (r + 1u < count) {
                        pn = take(&c, r + 1u);
                    }
                    put_val(k, x_u32[tile_e0 + ps]);
                    put_count(k, select(pn - ps, tile_e0 + chain_pos() + ps, k == last));
                }
            }
        }
    }
    if (g_lid == 0u) {
        let h = 2u * (tile + chain_tile());
        head[h] = offset + chain_win();
        head[h + 1u] = 0xffffffffu;
        if (count != 0u) {
            head[h + 1u] = tile_e0 + chain_pos() + pos4[0];
        }
    }
}
#endif

// Tile load/store for recfilter.wgsl: a tile is 64 positions x 64 lines, kept in `tile` as
// [line][position] with rows padded to 65 words. FAST_POS: positions are contiguous in memory
// (filtering along rows), so thread t takes position t; otherwise thread t takes line t.

fn tile_src(a: u32) -> f32 {
#if IN_PLACE
    return dst[a];
#else
    return src[a];
#endif
}

// Loads go 8 at a time into registers before any is used, so that 8 are in flight per thread.
fn load_tile(k: u32, lb: u32, ch: u32, t: u32) {
    for (var j0 = 0u; j0 < B; j0 += 8u) {
        var v: array<f32, 8>;
#unroll JJ 8
        {
            let j = j0 + {{JJ}}u;
#if FAST_POS
            let l = lb * B + j;
            let p = k * B + t;
#else
            let l = lb * B + t;
            let p = k * B + j;
#endif
            v[{{JJ}}] = 0.0;
            if (l < params.nlines && p < params.N) {
                v[{{JJ}}] = tile_src(addr(l, ch, p));
            }
        }
#endunroll
#unroll JJ 8
        {
            let j = j0 + {{JJ}}u;
#if FAST_POS
            tile[j * BP + t] = v[{{JJ}}];
#else
            tile[t * BP + j] = v[{{JJ}}];
#endif
        }
#endunroll
    }
}

#if BLOCK_C
fn store_tile(k: u32, lb: u32, ch: u32, t: u32) {
    for (var j = 0u; j < B; j++) {
#if FAST_POS
        let lo = j;
        let po = t;
#else
        let lo = t;
        let po = j;
#endif
        let l = lb * B + lo;
        let p = k * B + po;
        if (l < params.nlines && p < params.N) {
            dst[addr(l, ch, p)] = tile[lo * BP + po];
        }
    }
}
#endif

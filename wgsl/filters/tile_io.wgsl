// Tile load/store for the tile passes (recfilter_pass_a.wgsl, recfilter_pass_c.wgsl): a tile is 64 positions x 64 lines, kept in `tile` as
// [line][position] with rows padded to 65 words. FAST_POS: positions are contiguous in memory
// (filtering along rows), so thread t takes position t; otherwise thread t takes line t.

#if VEC4
// VEC4 (one channel, rows a multiple of 4 long): the TPW threads move the tile together, image
// row by image row, as 16 vec4 per row (thread t: vec4 column t % 16, rows t / 16 + TPW / 16 * i),
// all TROWS = 1024 / TPW loads in flight per thread. The tile keeps its [line][position] layout.
fn tile_src(a: u32) -> vec4<f32> {
#if IN_PLACE
    return dst[a - params.doff / 4u];
#else
    return src[a - params.soff / 4u];
#endif
}

struct Geo {
    Y0: u32,
    X0: u32,
    H: u32,
    W4: u32,
}

fn geo(k: u32, lb: u32) -> Geo {
#if FAST_POS
    return Geo(lb * B, k * B, params.nlines, params.N / 4u);
#else
    return Geo(k * B, lb * B, params.N, params.nlines / 4u);
#endif
}

fn put4(yl: u32, xl: u32, v: vec4<f32>) {
#if FAST_POS
    let i = yl * BP + xl;
    tile[i] = v.x;
    tile[i + 1u] = v.y;
    tile[i + 2u] = v.z;
    tile[i + 3u] = v.w;
#else
    let i = xl * BP + yl;
    tile[i] = v.x;
    tile[i + BP] = v.y;
    tile[i + 2u * BP] = v.z;
    tile[i + 3u * BP] = v.w;
#endif
}

fn get4(yl: u32, xl: u32) -> vec4<f32> {
#if FAST_POS
    let i = yl * BP + xl;
    return vec4<f32>(tile[i], tile[i + 1u], tile[i + 2u], tile[i + 3u]);
#else
    let i = xl * BP + yl;
    return vec4<f32>(tile[i], tile[i + BP], tile[i + 2u * BP], tile[i + 3u * BP]);
#endif
}

fn load_tile(k: u32, lb: u32, ch: u32, t: u32) {
    let g = geo(k, lb);
    let x4 = g.X0 / 4u + t % 16u;
    let xok = x4 < g.W4;
    var v: array<vec4<f32>, {{TROWS}}>;
#unroll J TROWS
    {
        let yl = {{J}}u * (TPW / 16u) + t / 16u;
        v[{{J}}] = vec4<f32>(0.0);
        if (xok && g.Y0 + yl < g.H) {
            v[{{J}}] = tile_src((g.Y0 + yl) * g.W4 + x4);
        }
    }
#endunroll
#unroll J TROWS
    put4({{J}}u * (TPW / 16u) + t / 16u, (t % 16u) * 4u, v[{{J}}]);
#endunroll
}

#if BLOCK_C
fn store_tile(k: u32, lb: u32, ch: u32, t: u32) {
    let g = geo(k, lb);
    let x4 = g.X0 / 4u + t % 16u;
    if (x4 < g.W4) {
        for (var i = 0u; i < {{TROWS}}u; i++) {
            let yl = i * (TPW / 16u) + t / 16u;
            if (g.Y0 + yl < g.H) {
                dst[(g.Y0 + yl) * g.W4 + x4 - params.doff / 4u] = get4(yl, (t % 16u) * 4u);
            }
        }
    }
}
#endif
#else
fn tile_src(a: u32) -> f32 {
#if IN_PLACE
    return dst[a - params.doff];
#else
    return src[a - params.soff];
#endif
}

// Loads go 8 at a time into registers before any is used, so that 8 are in flight per thread.
// (Threads 64 and up, when the workgroup has them, do not take part.)
fn load_tile(k: u32, lb: u32, ch: u32, t: u32) {
    if (t >= B) {
        return;
    }
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
    if (t >= B) {
        return;
    }
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
            dst[addr(l, ch, p) - params.doff] = tile[lo * BP + po];
        }
    }
}
#endif
#endif

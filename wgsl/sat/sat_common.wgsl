// Summed-area tables: the overlapped algorithm of Nehab, Maximo, Lima and Hoppe (2011), stages S.1
// to S.4, plus the one-thread-per-row/column baseline (RT).
//
// The image (H x W, C interleaved channels; channel = workgroup_id.z) is cut into 64 x 64 tiles,
// tile (m, n) having origin (Y, X) = (64 m, 64 n). With S the SAT and I the image:
//   S(Y+i, X+j) = L(m, n, i) + sum_{j' <= j} [ A(m, X+j') + V(i, j') ]
// where V is the tile's own vertical inclusive prefix, A(m, x) = sum_{y < Y} I(y, x) (the column
// sums of the tiles above) and L(m, n, i) = S(Y+i, X-1) (the full SAT just left of the tile).
//   tile_sums (S.1)  per tile: column sums colsum[m][x], row prefixes rowpref[n][y] (the sum of the
//                    tile's rows Y..y), the tile total blocktot[m][n].  Reads the image once.
//   scan_cols (S.2)  per column: colsum -> A (exclusive scan over m); per tile column: blocktot ->
//                    sum of the tiles above (exclusive scan over m).
//   scan_rows (S.3)  per row: rowpref -> L (exclusive scan over n of tiles-above + row prefix).
//   tile_final (S.4) per tile: reads the image again, writes S.  So: image read twice, written once.
// Defines: T (f32, u32, i32: the accumulation and output type), SRC_T (the input word type),
// U8 (input is uint8 packed four to a u32 word).
//
// This file: what every stage includes (parameters, tile constants, the image load). The stages,
// one entry file each: sat_rt_rows.wgsl, sat_rt_cols.wgsl (the baseline), sat_tile_sums.wgsl,
// sat_scan_cols.wgsl, sat_scan_rows.wgsl, sat_tile_final.wgsl.

struct Params {
    H: u32,
    W: u32,
    C: u32,
    nbx: u32,   // tiles across
    nby: u32,   // tiles down
}

@group(0) @binding(0) var<uniform> params: Params;

const TS: u32 = 64u;        // tile side
const TP: u32 = 65u;        // padded shared-memory row (no bank conflicts column-wise)
const RPT: u32 = 16u;       // rows (or columns) per thread: 64 / 4 thread groups

#if !SCAN_COLS
#if !SCAN_ROWS
#if !RT_COLS
#if !VEC4
fn load(y: u32, x: u32, ch: u32) -> {{T}} {
    let e = (y * params.W + x) * params.C + ch;
#if U8
    return {{T}}((src[e >> 2u] >> ((e & 3u) * 8u)) & 0xffu);
#else
    return {{T}}(src[e]);
#endif
}
#endif
#endif
#endif
#endif

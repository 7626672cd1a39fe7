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
// Defines: T (the accumulation and output type: f32, u32, i32, u64, i64, f64, or vec2<u32> for a
// 64-bit integer as a pair of 32-bit words with carries, common/u64.wgsl) and the typed defines of
// common/typed_monoid.wgsl and common/typed_load.wgsl (pywgpuprims/_dtypes.py typed_defines: the
// input's element kind, read packed for 8- and 16-bit inputs, and its conversion to T); sums are
// combine(a, b). TS, the tile side (64 for 4-byte T and the VEC4 tiles; 32 for 8-byte T in the
// scalar tiles, so that a tile fits 16 KiB of workgroup memory), RPT = TS * TS / 256 (rows or
// columns per thread), NG = 256 / TS (thread groups per tile column) and TILE = TS * (TS + 1).
// VEC4: the tile stages move vec4s of T (one channel, rows a multiple of 4 long, T not a word
// pair); SAME: the input is T itself.
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

#include "common/typed_monoid.wgsl"

const TS: u32 = {{TS}}u;        // tile side
const TP: u32 = {{TS}}u + 1u;   // padded shared-memory row (no bank conflicts column-wise)
const RPT: u32 = {{RPT}}u;      // rows (or columns) per thread: TS / NG
const NG: u32 = {{NG}}u;        // thread groups of TS threads in a 256-invocation workgroup

#if !SCAN_COLS
#if !SCAN_ROWS
#if !RT_COLS
#if VEC4
#if !SAME
#include "common/typed_load.wgsl"
#endif

// Elements 4q..4q+3 of a one-channel image (SAME: the input is T itself, one vec4 load).
fn load4(q: u32) -> vec4<{{T}}> {
#if SAME
    return input[q];
#else
    let e = 4u * q;
    return vec4<{{T}}>(load_acc(e), load_acc(e + 1u), load_acc(e + 2u), load_acc(e + 3u));
#endif
}
#else
#include "common/typed_load.wgsl"

fn load(y: u32, x: u32, ch: u32) -> {{T}} {
    return load_acc((y * params.W + x) * params.C + ch);
}
#endif
#endif
#endif
#endif

// Recursive filters of order 1 to 3 along one axis of an image (float32), after Nehab, Maximo,
// Lima and Hoppe (2011). The causal filter is b0 / ((1 + a1 z^-1 + a2 z^-2) (1 + a3 z^-1)) (see
// step()); the anticausal one is the same recursion run from the right on the causal output.
// Lower orders have zero coefficients.
//
// A "line" is a row or column (one channel of it); a "position" runs along the line. Element
// (line l, channel ch, position p) lives at  l * line_stride + ch + p * pos_stride.
//
// Entries (one define each):
//   RT         one thread per line: the whole line, causal then anticausal (the baseline).
//   BLOCK_A    per 64 x 64 tile: incomplete causal epilogue (last 3 outputs from a zero prologue)
//              and incomplete anticausal prologue (first 3 outputs from a zero epilogue), and the
//              tile's share of the boundary dot products. With OVERLAP (a column pass followed by
//              a row pass): the same for the rows of the column-filtered tile (zero carries).
//   BLOCK_FIX  boundary initial conditions (sums of BLOCK_A's partial dot products), then the
//              carries across blocks with the precomputed 3 x 3 matrices (Nehab et al.'s Alg. 2
//              fix-up). Each line's blocks are cut into S segments, a thread per (line,
//              segment), joined through workgroup memory.
//   ROW_CORR   per tile (OVERLAP): adds to the row carries what the column carries contribute
//              (the column carries enter a tile through 6 fixed column responses, so their effect
//              on the rows' carries is row pass A on 6 vectors per tile: 36 dot products with
//              weights the host computes, plus the boundary dot products).
//   BLOCK_C    per tile: the filter again, from the complete carries; writes the output. With
//              OVERLAP: down the columns, then along the rows, in workgroup memory.
// With OVERLAP the image is read twice and written once (Nehab et al.'s Alg. 5 overlapping).
// BLOCK_A, BLOCK_C: 128 threads per tile, two per tile line, each running half of the line (see
// reg_run2); partial tiles run a thread per line.
// EDGES (BLOCK_A, BLOCK_C with OVERLAP): only tiles cut by the image's edges; recfilter_reg.wgsl
// runs the full ones with the tile in registers.
//
// Boundaries: the signal is extended past both ends (mode: 0 zero, 1 nearest, 2 reflect
// (half-sample symmetric, scipy 'reflect'), 3 mirror (whole-sample, scipy 'mirror'), 4 wrap).
// RT runs the recursions over `padlen` samples of that extension (boundary.wgsl), chosen on the
// host so that the impulse-response tail past it is below 2^-27 of its total: the truncation
// error is below float32 rounding. The block method gets the same initial conditions as dot
// products of the line with weights the host folds from the infinite extension (wts).
//
// This file: what every kernel of the recursive filters includes, the block length and the tile a
// workgroup takes (filters/recfilter_common.wgsl: parameters, steps). The entries, one file each:
// recfilter_rt.wgsl, recfilter_pass_a.wgsl, recfilter_fix.wgsl, recfilter_row_corr.wgsl,
// recfilter_pass_c.wgsl, and recfilter_reg.wgsl (full tiles of the overlapped passes in registers).

#include "filters/recfilter_common.wgsl"

const B: u32 = 64u;     // block length (positions) and lines per tile
const BP: u32 = 65u;    // padded shared-memory row

// Tile (block k along the lines, line block lb) of a workgroup. Workgroups next to each other in
// x take tiles next to each other along the image rows (so that the tiles in flight together
// read whole rows): along the rows x is k, down the columns x is lb.
fn tile_k(wid: vec3<u32>) -> u32 {
#if FAST_POS
    return wid.x;
#else
    return wid.y + params.kc0;  // kc0: a band of rows runs only its own blocks (else 0)
#endif
}

fn tile_lb(wid: vec3<u32>) -> u32 {
#if FAST_POS
    return wid.y;
#else
    return wid.x;
#endif
}

// EDGES (OVERLAP): this dispatch takes only the tiles cut by the image's edges.
fn full_tile(k: u32, lb: u32) -> bool {
    return (k + 1u) * B <= params.N && (lb + 1u) * B <= params.nlines;
}

// Recursive filter, block method, the row carries (ROW_CORR, with OVERLAP): what the column
// carries contribute to the rows' carries, per tile. See filters/recfilter_tiles.wgsl.

#include "filters/recfilter_tiles.wgsl"
@group(0) @binding(1) var<storage, read> carry: array<f32>;
@group(0) @binding(2) var<storage, read_write> carry2: array<f32>;
@group(0) @binding(3) var<storage, read_write> bpart2: array<f32>;
@group(0) @binding(4) var<storage, read> wts: array<f32>;
@group(0) @binding(5) var<storage, read> resp: array<f32>;

// 6 vectors of 64 as vec4 rows of 17 (one pad: rows start 4 banks apart), so the dot products
// read four samples per load.
const RV: u32 = 17u;
var<workgroup> tile: array<vec4<f32>, 102>;

var<workgroup> xs: array<f32, 72>;   // per column vector: row pass A's s, e, wl, wr (3 each)
var<workgroup> wsh: array<vec4<f32>, 102>;  // row pass A's (or the boundary) weights, laid out as tile

// The column pass's complete carries for tile (k, lb): 6 numbers per column (causal prologue,
// anticausal epilogue). They enter the column-filtered tile as sum_c P_c(col) F_c(row) +
// e_c(col) R_c(row), F_c and R_c the column pass's responses (resp: 64 x 6 per row, full tile
// then last tile row). Row pass A being linear, the rows' carries gain
// sum_c F_c(row) A(P_c) + R_c(row) A(e_c), A run on the 6 vectors over the tile's columns. A is a
// dot product per output (resp holds next the 64 x 6 weights of s and e for a full row tile, then
// the last one; wts the boundary ones): 36 of them at once rather than 6 serial recursions. The
// weights go through workgroup memory with the carries, so the dot products wait on no global load
// (H100, 4096^2, in context: 20.8 -> 18.3 us for order 2; 27.6 -> 20.5 with reflect boundaries,
// whose loop ran one global load per step). The boundary weights reuse the weights' array in a
// second round: 2 KiB less workgroup memory per tile, 167 -> 164.7 us for the whole filter (order 2).
// Column vector c of the tile dotted with weight vector o (both in workgroup memory).
fn corr_dot(c: u32, o: u32) -> f32 {
    var acc = vec4<f32>(0.0);
#unroll I 16
    acc = fma(tile[c * RV + {{I}}u], wsh[o * RV + {{I}}u], acc);
#endunroll
    return acc.x + acc.y + acc.z + acc.w;
}

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let k = tile_k(wid);
    let lb = tile_lb(wid);
    let ch = wid.z;
    let nl = params.nlines;
    let x = lb * B + t;
    // What the end needs loads now (clamped), with the column carries and the weights.
    let y = k * B + t;
    let nl2 = params.N;
    let base2 = (ch * params.K2 + lb) * 6u * nl2 + min(y, nl2 - 1u);
    var old: array<f32, 6>;
    var f: array<f32, 6>;
    var ro = min(y, nl2 - 1u) % B * 6u;
    if (k == params.K - 1u) {
        ro += B * 6u;
    }
#unroll C 6
    old[{{C}}] = 0.0;
    if (Z3 || {{C}}u % 3u != 2u) {
        old[{{C}}] = carry2[base2 + {{C}}u * nl2];
    }
    f[{{C}}] = resp[ro + {{C}}u];
#endunroll
    let n2 = min(B, nl - lb * B);
    let rg = vec4<u32>(params.lo_L2, params.hi_L2, params.lo_R2, params.hi_R2);
    let p0 = lb * B;
    // The sides whose supports the tile meets (a tile of a long line meets one at most).
    let hit_l = p0 < rg.y && p0 + n2 > rg.x;
    let hit_r = p0 < rg.w && p0 + n2 > rg.z;
    let hit = hit_l || hit_r;
    let wo0 = select(12u, 18u, lb == params.K2 - 1u) * B;
    var bw: array<f32, 6>;
#unroll C 6
    {
        var v = 0.0;
        bw[{{C}}] = 0.0;
        if (x < nl && (Z3 || {{C}}u % 3u != 2u)) {
            v = carry[((ch * params.K + k) * 6u + {{C}}u) * nl + x];
            if (select(hit_l, hit_r, {{C}}u >= 3u)) {
                bw[{{C}}] = wts[params.woff2 + {{C}}u * nl + x];
            }
        }
        tile[{{C}}u * RV + t / 4u][t % 4u] = v;
        wsh[{{C}}u * RV + t / 4u][t % 4u] = resp[wo0 + 6u * t + {{C}}u];
    }
#endunroll
    workgroupBarrier();
    // Invocation t < 36: output o of vector c (zeros past the line's end, in tile and weights).
    let c = t / 6u;
    let o = t % 6u;
    if (t < 36u) {
        xs[c * 12u + o] = corr_dot(c, o);
        xs[c * 12u + 6u + o] = 0.0;
    }
    // The boundary weights, where the tile meets their supports (a few tile columns), take a
    // second round through the same workgroup memory: a third array would cost every tile
    // occupancy.
    if (hit) {
        workgroupBarrier();
#unroll C 6
        wsh[{{C}}u * RV + t / 4u][t % 4u] = bw[{{C}}];
#endunroll
        workgroupBarrier();
        if (t < 36u) {
            xs[c * 12u + 6u + o] = corr_dot(c, o);
        }
    }
    workgroupBarrier();
    if (y >= params.N) {
        return;
    }
    var ds = vec3<f32>(0.0);
    var de = vec3<f32>(0.0);
    var dl = vec3<f32>(0.0);
    var dr = vec3<f32>(0.0);
#unroll C 6
    ds += f[{{C}}] * vec3<f32>(xs[{{C}}u * 12u], xs[{{C}}u * 12u + 1u], xs[{{C}}u * 12u + 2u]);
    de += f[{{C}}] * vec3<f32>(xs[{{C}}u * 12u + 3u], xs[{{C}}u * 12u + 4u], xs[{{C}}u * 12u + 5u]);
    dl += f[{{C}}] * vec3<f32>(xs[{{C}}u * 12u + 6u], xs[{{C}}u * 12u + 7u], xs[{{C}}u * 12u + 8u]);
    dr += f[{{C}}] * vec3<f32>(xs[{{C}}u * 12u + 9u], xs[{{C}}u * 12u + 10u], xs[{{C}}u * 12u + 11u]);
#endunroll
    carry2[base2] = old[0] + ds.x;
    carry2[base2 + nl2] = old[1] + ds.y;
    if (Z3) {
        carry2[base2 + 2u * nl2] = old[2] + ds.z;
    }
    carry2[base2 + 3u * nl2] = old[3] + de.x;
    carry2[base2 + 4u * nl2] = old[4] + de.y;
    if (Z3) {
        carry2[base2 + 5u * nl2] = old[5] + de.z;
    }
    // (Pass A stores only the parts of the sides it meets.)
    if (hit_l) {
        bpart2[base2] += dl.x;
        bpart2[base2 + nl2] += dl.y;
        if (Z3) {
            bpart2[base2 + 2u * nl2] += dl.z;
        }
    }
    if (hit_r) {
        bpart2[base2 + 3u * nl2] += dr.x;
        bpart2[base2 + 4u * nl2] += dr.y;
        if (Z3) {
            bpart2[base2 + 5u * nl2] += dr.z;
        }
    }
}

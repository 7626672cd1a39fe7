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

#include "sat/recfilter_common.wgsl"
#if RT
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;
#elif BLOCK_A
@group(0) @binding(7) var<storage, read> hbuf: array<vec4<f32>>;
#if VEC4
@group(0) @binding(1) var<storage, read> src: array<vec4<f32>>;
#else
@group(0) @binding(1) var<storage, read> src: array<f32>;
#endif
@group(0) @binding(2) var<storage, read_write> carry: array<f32>;
@group(0) @binding(3) var<storage, read> wts: array<f32>;
@group(0) @binding(4) var<storage, read_write> bpart: array<f32>;
#if OVERLAP
@group(0) @binding(5) var<storage, read_write> carry2: array<f32>;
@group(0) @binding(6) var<storage, read_write> bpart2: array<f32>;
#endif
#elif BLOCK_FIX
@group(0) @binding(1) var<storage, read_write> carry: array<f32>;
// The matrices (117 floats, 30 vec4) in a uniform buffer: the same for every invocation, so the
// constant cache serves them, at fixed offsets straight into the multiply-adds. Row-major 3 x 3
// at offsets: [T_FP, M, T_RE] of a full block 0, 9, 18 and of the last block 27, 36, 45; Mp 54
// (the causal state at N-1 -> the anticausal state at N); the segments' transfer matrices
// Tf^SL 63, Tl Tf^(n-1) 72, Rf^SL 81, Rf^(n-1) Rl 90; and Q 99 (full segment), 108 (last):
// what a segment's incoming causal state adds to its outgoing anticausal one.
@group(0) @binding(2) var<uniform> mats: array<vec4<f32>, 30>;
@group(0) @binding(3) var<storage, read> bpart: array<f32>;
#elif ROW_CORR
@group(0) @binding(1) var<storage, read> carry: array<f32>;
@group(0) @binding(2) var<storage, read_write> carry2: array<f32>;
@group(0) @binding(3) var<storage, read_write> bpart2: array<f32>;
@group(0) @binding(4) var<storage, read> wts: array<f32>;
@group(0) @binding(5) var<storage, read> resp: array<f32>;
#elif BLOCK_C
@group(0) @binding(5) var<storage, read> hbuf: array<vec4<f32>>;
#if VEC4
#if IN_PLACE
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<f32>>;
#else
@group(0) @binding(1) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> dst: array<vec4<f32>>;
#endif
#else
#if IN_PLACE
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
#else
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;
#endif
#endif
@group(0) @binding(3) var<storage, read> carry: array<f32>;
#if OVERLAP
@group(0) @binding(4) var<storage, read> carry2: array<f32>;
#endif
#endif

const B: u32 = 64u;     // block length (positions) and lines per tile
const BP: u32 = 65u;    // padded shared-memory row
const TPW: u32 = 128u;  // threads per tile workgroup (BLOCK_A, BLOCK_C): two per tile line

// Tile (block k along the lines, line block lb) of a workgroup. Workgroups next to each other in
// x take tiles next to each other along the image rows (so that the tiles in flight together
// read whole rows): along the rows x is k, down the columns x is lb.
fn tile_k(wid: vec3<u32>) -> u32 {
#if FAST_POS
    return wid.x;
#else
    return wid.y;
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

#if RT
#include "sat/boundary.wgsl"
#endif

#if RT
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let l = gid.x;
    let ch = gid.y;
    if (l >= params.nlines) {
        return;
    }
    let N = params.N;
    var s = vec3<f32>(0.0);
    if (params.causal != 0u) {
        s = causal_init(l, ch);
        for (var p = 0u; p < N; p++) {
            s = step(s, src[addr(l, ch, p)]);
            dst[addr(l, ch, p)] = s.x;
        }
    }
    if (params.anti != 0u) {
        var e = anti_init(l, ch, s);
        for (var q = 0u; q < N; q++) {
            let p = N - 1u - q;
            var v: f32;
            if (params.causal != 0u) {
                v = dst[addr(l, ch, p)];
            } else {
                v = src[addr(l, ch, p)];
            }
            e = step(e, v);
            dst[addr(l, ch, p)] = e.x;
        }
    }
}
#endif

#if !RT
#if !BLOCK_FIX
#if ROW_CORR
// 6 vectors of 64 as vec4 rows of 17 (one pad: rows start 4 banks apart), so the dot products
// read four samples per load.
const RV: u32 = 17u;
var<workgroup> tile: array<vec4<f32>, 102>;
#else
var<workgroup> tile: array<f32, 4160>;   // 64 lines x 65 (64 positions + pad)
#endif
#endif
#endif

#if BLOCK_A
#include "sat/tile_io.wgsl"
#endif
#if BLOCK_C
#include "sat/tile_io.wgsl"
#endif

#if !RT
#if !BLOCK_FIX
#if !ROW_CORR
struct ALine {
    s: vec3<f32>,    // causal state at the block's end, from a zero prologue
    e: vec3<f32>,    // anticausal state at its start, from a zero epilogue (on the causal output)
    wl: vec3<f32>,   // the block's share of the boundary dot products (left, right)
    wr: vec3<f32>,
    hit: bool,       // whether the block meets the weights' supports
}

// Causal run over tile[base + i * stride], i < n, from state s0, in place. Eight loads go out
// before eight steps, so that the chain waits on arithmetic only.
fn run_causal(base: u32, stride: u32, n: u32, s0: vec3<f32>) -> vec3<f32> {
    var s = s0;
    let full = n & ~7u;
    for (var i0 = 0u; i0 < full; i0 += 8u) {
        var xv: array<f32, 8>;
#unroll J 8
        xv[{{J}}] = tile[base + (i0 + {{J}}u) * stride];
#endunroll
#unroll J 8
        s = step(s, gain_c(xv[{{J}}]));
        tile[base + (i0 + {{J}}u) * stride] = s.x;
#endunroll
    }
    for (var i = full; i < n; i++) {
        s = step(s, gain_c(tile[base + i * stride]));
        tile[base + i * stride] = s.x;
    }
    return s;
}

// Anticausal run over the same elements from the end, from state e0 (in place when write).
fn run_anti(base: u32, stride: u32, n: u32, e0: vec3<f32>, write: bool) -> vec3<f32> {
    var e = e0;
    let full = n & ~7u;
    for (var q0 = 0u; q0 < full; q0 += 8u) {
        var xv: array<f32, 8>;
#unroll J 8
        xv[{{J}}] = tile[base + (n - 1u - q0 - {{J}}u) * stride];
#endunroll
#unroll J 8
        e = step(e, gain_a(xv[{{J}}]));
        if (write) {
            tile[base + (n - 1u - q0 - {{J}}u) * stride] = e.x;
        }
#endunroll
    }
    for (var q = full; q < n; q++) {
        let i = base + (n - 1u - q) * stride;
        e = step(e, gain_a(tile[i]));
        if (write) {
            tile[i] = e.x;
        }
    }
    return e;
}

struct SE {
    s: vec3<f32>,
    e: vec3<f32>,
}

// A full line (64 samples at tile[base + i * stride]) in registers: causal from s0, then
// anticausal from e0 (each when enabled), written back when write. Constant indices keep the
// samples in registers, and the steps touch no workgroup memory.
fn reg_run(base: u32, stride: u32, s0: vec3<f32>, e0: vec3<f32>, write: bool) -> SE {
    var v: array<f32, 64>;
#unroll J 64
    v[{{J}}] = tile[base + {{J}}u * stride];
#endunroll
    var s = s0;
    if (params.causal != 0u) {
#unroll J 64
        s = step(s, gain_c(v[{{J}}]));
        v[{{J}}] = s.x;
#endunroll
    }
    var e = e0;
    if (params.anti != 0u) {
#unroll J 64
        e = step(e, gain_a(v[63 - {{J}}]));
        v[63 - {{J}}] = e.x;
#endunroll
    }
    if (write) {
#unroll J 64
        tile[base + {{J}}u * stride] = v[{{J}}];
#endunroll
    }
    return SE(s, e);
}

// Filter one tile line: elements tile[base + i * stride], i < n, in place; causal from state s,
// then anticausal from state e (each when enabled).
fn c_line(base: u32, stride: u32, n: u32, s0: vec3<f32>, e0: vec3<f32>) {
    if (n == B) {
        reg_run(base, stride, s0, e0, true);
        return;
    }
    if (params.causal != 0u) {
        run_causal(base, stride, n, s0);
    }
    if (params.anti != 0u) {
        run_anti(base, stride, n, e0, true);
    }
}
#endif
#endif
#endif

#if !ROW_CORR
// Two threads per tile line, each with half of it (32 samples) in registers. A half runs
// from a zero state and is then corrected by the state the other half hands over through
// workgroup memory: sample j after the hand-over gains H[j] . state (H[j] the first row of A^(j+1),
// A the recursion's 3 x 3 state matrix), the end state gains A^32 . state (hbuf: H[0..31], then
// the rows of A^32; host float64). The causal chain runs half 0 then hands to half 1, the
// anticausal one half 1 to half 0: each thread's chains are 32 steps, not 64.
var<workgroup> xch: array<vec3<f32>, 64>;
var<workgroup> hsh: array<vec4<f32>, 35>;

fn load_h(t: u32) {
    if (t < 35u) {
        hsh[t] = hbuf[t];
    }
}

fn a32(v: vec3<f32>) -> vec3<f32> {
    return vec3<f32>(dot(hsh[32].xyz, v), dot(hsh[33].xyz, v), dot(hsh[34].xyz, v));
}

// Call from uniform control flow (it holds barriers), every thread of the workgroup: h the half,
// li the tile line (index into xch); half h covers samples 32 h .. 32 h + 31 of the line at
// tile[base + i * stride]. s0 / e0: the line's causal / anticausal initial states.
fn reg_run2(base: u32, stride: u32, h: u32, li: u32, s0: vec3<f32>, e0: vec3<f32>, write: bool) -> SE {
    var v: array<f32, 32>;
    let o = base + 32u * h * stride;
#unroll J 32
    v[{{J}}] = tile[o + {{J}}u * stride];
#endunroll
    var s = select(vec3<f32>(0.0), s0, h == 0u);
    if (params.causal != 0u) {
#unroll J 32
        s = step(s, gain_c(v[{{J}}]));
        v[{{J}}] = s.x;
#endunroll
    }
    if (h == 0u) {
        xch[li] = s;
    }
    workgroupBarrier();
    if (params.causal != 0u && h == 1u) {
        let sa = xch[li];
#unroll J 32
        v[{{J}}] += dot(hsh[{{J}}].xyz, sa);
#endunroll
        s += a32(sa);
    }
    workgroupBarrier();
    var e = select(vec3<f32>(0.0), e0, h == 1u);
    if (params.anti != 0u) {
#unroll J 32
        e = step(e, gain_a(v[31 - {{J}}]));
        v[31 - {{J}}] = e.x;
#endunroll
    }
    if (h == 1u) {
        xch[li] = e;
    }
    workgroupBarrier();
    if (params.anti != 0u && h == 0u) {
        let eb = xch[li];
#unroll J 32
        v[31 - {{J}}] += dot(hsh[{{J}}].xyz, eb);
#endunroll
        e += a32(eb);
    }
    if (write) {
#unroll J 32
        tile[o + {{J}}u * stride] = v[{{J}}];
#endunroll
    }
    return SE(s, e);
}
#endif

#if BLOCK_A
// Pass A on one tile line: elements tile[base + i * stride], i < n, at positions p0 + i of a line
// of N samples; boundary weights wts[woff + j * N + p]. Leaves the line filtered with zero
// carries (causal, then anticausal too when keep_anti).
fn a_line(base: u32, stride: u32, n: u32, p0: u32, N: u32, woff: u32, rg: vec4<u32>, keep_anti: bool) -> ALine {
    var r = a_weights(base, stride, n, p0, N, woff, rg);
    var s = vec3<f32>(0.0);
    var e = vec3<f32>(0.0);
    if (n == B) {
        // (Without keep_anti nothing reads the tile afterwards: no write-back at all.)
        let se = reg_run(base, stride, s, e, keep_anti);
        s = se.s;
        e = se.e;
    } else {
        if (params.causal != 0u) {
            s = run_causal(base, stride, n, s);
        }
        if (params.anti != 0u) {
            e = run_anti(base, stride, n, e, keep_anti);
        }
    }
    r.s = s;
    r.e = e;
    return r;
}

// The line's share of the boundary dot products (when the block meets their supports).
fn a_weights(base: u32, stride: u32, n: u32, p0: u32, N: u32, woff: u32, rg: vec4<u32>) -> ALine {
    var r: ALine;
    r.s = vec3<f32>(0.0);
    r.e = vec3<f32>(0.0);
    r.hit = (p0 < rg.y && p0 + n > rg.x) || (p0 < rg.w && p0 + n > rg.z);
    r.wl = vec3<f32>(0.0);
    r.wr = vec3<f32>(0.0);
    if (r.hit) {
        // Eight samples' weights load at once (48 loads in flight, not 6).
        let full = n & ~7u;
        for (var i0 = 0u; i0 < full; i0 += 8u) {
            var wa: array<vec3<f32>, 8>;
            var wb: array<vec3<f32>, 8>;
#unroll J 8
            {
                let p = woff + p0 + i0 + {{J}}u;
                wa[{{J}}] = vec3<f32>(wts[p], wts[N + p], wts[2u * N + p]);
                wb[{{J}}] = vec3<f32>(wts[3u * N + p], wts[4u * N + p], wts[5u * N + p]);
            }
#endunroll
#unroll J 8
            {
                let x = tile[base + (i0 + {{J}}u) * stride];
                r.wl += wa[{{J}}] * x;
                r.wr += wb[{{J}}] * x;
            }
#endunroll
        }
        for (var i = full; i < n; i++) {
            let p = woff + p0 + i;
            let x = tile[base + i * stride];
            r.wl += vec3<f32>(wts[p], wts[N + p], wts[2u * N + p]) * x;
            r.wr += vec3<f32>(wts[3u * N + p], wts[4u * N + p], wts[5u * N + p]) * x;
        }
    }
    return r;
}
#endif

#if BLOCK_A
struct AOut {
    r: ALine,
    ws: bool,    // whether this thread writes the line's causal carry
    we: bool,    // ... its anticausal carry and boundary parts
}

// Pass A on tile line li (valid: the line exists); every thread of the workgroup calls it (with
// its barriers). See a_line.
fn a_tile_line(base: u32, stride: u32, n: u32, p0: u32, N: u32, woff: u32, rg: vec4<u32>, keep_anti: bool,
               li: u32, h: u32, valid: bool) -> AOut {
    var r: ALine;
    r.hit = false;
    if (n == B) {
        if (h == 0u) {
            r = a_weights(base, stride, n, p0, N, woff, rg);
        }
        let se = reg_run2(base, stride, h, li, vec3<f32>(0.0), vec3<f32>(0.0), keep_anti);
        r.s = se.s;
        r.e = se.e;
        return AOut(r, valid && h == 1u, valid && h == 0u);
    }
    let mine = valid && h == 0u;
    if (mine) {
        r = a_line(base, stride, n, p0, N, woff, rg, keep_anti);
    }
    return AOut(r, mine, mine);
}

#if OVERLAP
const KEEP_ANTI: bool = true;
#else
const KEEP_ANTI: bool = false;
#endif

@compute @workgroup_size(TPW)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let k = tile_k(wid);
    let lb = tile_lb(wid);
#if EDGES
    if (full_tile(k, lb)) {
        return;  // recfilter_reg.wgsl took it
    }
#endif
    let ch = wid.z;
    let li = t % B;
    let h = t / B;
    load_tile(k, lb, ch, t);
    load_h(t);
    workgroupBarrier();
    let l = lb * B + li;
    let n = min(B, params.N - k * B);
    let nl = params.nlines;
    let a = a_tile_line(li * BP, 1u, n, k * B, params.N, 0u,
                        vec4<u32>(params.lo_L, params.hi_L, params.lo_R, params.hi_R), KEEP_ANTI, li, h, l < nl);
    let base = (ch * params.K + k) * 6u * nl + l;
    if (a.we) {
        if (a.r.hit) {
            bpart[base] = a.r.wl.x;
            bpart[base + nl] = a.r.wl.y;
            if (Z3) {
                bpart[base + 2u * nl] = a.r.wl.z;
            }
            bpart[base + 3u * nl] = a.r.wr.x;
            bpart[base + 4u * nl] = a.r.wr.y;
            if (Z3) {
                bpart[base + 5u * nl] = a.r.wr.z;
            }
        }
        carry[base + 3u * nl] = a.r.e.x;
        carry[base + 4u * nl] = a.r.e.y;
        if (Z3) {
            carry[base + 5u * nl] = a.r.e.z;
        }
    }
    if (a.ws) {
        carry[base] = a.r.s.x;
        carry[base + nl] = a.r.s.y;
        if (Z3) {
            carry[base + 2u * nl] = a.r.s.z;
        }
    }
#if OVERLAP
    // The tile now holds its columns filtered with zero carries; run the row pass's first stage
    // on its rows (row y = k*64 + li; the tile is block lb along the rows). ROW_CORR later adds
    // what the column carries contribute.
    workgroupBarrier();
    let y = k * B + li;
    let n2 = min(B, nl - lb * B);
    let a2 = a_tile_line(li, BP, n2, lb * B, nl, params.woff2,
                         vec4<u32>(params.lo_L2, params.hi_L2, params.lo_R2, params.hi_R2), false, li, h, y < params.N);
    let nl2 = params.N;
    let base2 = (ch * params.K2 + lb) * 6u * nl2 + y;
    if (a2.we) {
        if (a2.r.hit) {
            bpart2[base2] = a2.r.wl.x;
            bpart2[base2 + nl2] = a2.r.wl.y;
            if (Z3) {
                bpart2[base2 + 2u * nl2] = a2.r.wl.z;
            }
            bpart2[base2 + 3u * nl2] = a2.r.wr.x;
            bpart2[base2 + 4u * nl2] = a2.r.wr.y;
            if (Z3) {
                bpart2[base2 + 5u * nl2] = a2.r.wr.z;
            }
        }
        carry2[base2 + 3u * nl2] = a2.r.e.x;
        carry2[base2 + 4u * nl2] = a2.r.e.y;
        if (Z3) {
            carry2[base2 + 5u * nl2] = a2.r.e.z;
        }
    }
    if (a2.ws) {
        carry2[base2] = a2.r.s.x;
        carry2[base2 + nl2] = a2.r.s.y;
        if (Z3) {
            carry2[base2 + 2u * nl2] = a2.r.s.z;
        }
    }
#endif
}
#endif

#if BLOCK_FIX
// The chains' states and maps: without ORDER3 the third component is dead (recfilter_common.wgsl
// Z3), so they run on 2-vectors and the leading 2 x 2 blocks of the host's 3 x 3 matrices.
#if ORDER3
alias St = vec3<f32>;
alias Mt = mat3x3<f32>;
const NS: u32 = 3u;
#else
alias St = vec2<f32>;
alias Mt = mat2x2<f32>;
const NS: u32 = 2u;
#endif

// Float o of the matrices (mats packs them four to a vec4: uniform arrays have a 16-byte stride).
fn mat_at(o: u32) -> f32 {
    return mats[o / 4u][o % 4u];
}

// The row-major 3 x 3 matrix at mats[o..o+9] (WGSL matrices are built column by column), or its
// leading 2 x 2 block.
fn loadm(o: u32) -> Mt {
#if ORDER3
    return transpose(Mt(mat_at(o), mat_at(o + 1u), mat_at(o + 2u), mat_at(o + 3u), mat_at(o + 4u),
                        mat_at(o + 5u), mat_at(o + 6u), mat_at(o + 7u), mat_at(o + 8u)));
#else
    return transpose(Mt(mat_at(o), mat_at(o + 1u), mat_at(o + 3u), mat_at(o + 4u)));
#endif
}

fn ident() -> Mt {
#if ORDER3
    return Mt(1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0);
#else
    return Mt(1.0, 0.0, 0.0, 1.0);
#endif
}

fn get3(base: u32) -> St {
    let nl = params.nlines;
#if ORDER3
    return St(carry[base], carry[base + nl], carry[base + 2u * nl]);
#else
    return St(carry[base], carry[base + nl]);
#endif
}

fn put3(base: u32, v: St) {
    let nl = params.nlines;
    carry[base] = v.x;
    carry[base + nl] = v.y;
#if ORDER3
    carry[base + 2u * nl] = v.z;
#endif
}

fn part3(base: u32) -> St {
    let nl = params.nlines;
#if ORDER3
    return St(bpart[base], bpart[base + nl], bpart[base + 2u * nl]);
#else
    return St(bpart[base], bpart[base + nl]);
#endif
}

// Segmented fix-up: a workgroup takes LPW lines, each line's K blocks cut into S segments of SL
// blocks, a thread per (line, segment): all S segments load their carries at once (S times the
// loads in flight of a thread per line). The chains are affine maps, so each segment first runs
// from a zero state; the segments' incoming states then follow from S small steps over workgroup
// memory with the segments' transfer matrices (host float64), and each segment reruns from its
// true state.
const LPW: u32 = {{LPW}}u;
const S: u32 = {{S}}u;
const WG: u32 = LPW * S;
#if REGSEG
// Per thread 4 NS floats: the causal and anticausal states, the boundary parts.
const SHN: u32 = 4u * NS * WG;
#else
// Per thread 2 NS + NS^2 floats: state, boundary part, transfer matrix (column by column).
const SHN: u32 = (2u * NS + NS * NS) * WG;
#endif
var<workgroup> sh: array<f32, SHN>;

fn sh_put(slot: u32, t: u32, v: St) {
    sh[slot * WG + t] = v.x;
    sh[(slot + 1u) * WG + t] = v.y;
#if ORDER3
    sh[(slot + 2u) * WG + t] = v.z;
#endif
}

fn sh_get(slot: u32, t: u32) -> St {
#if ORDER3
    return St(sh[slot * WG + t], sh[(slot + 1u) * WG + t], sh[(slot + 2u) * WG + t]);
#else
    return St(sh[slot * WG + t], sh[(slot + 1u) * WG + t]);
#endif
}

#if REGSEG
// Block k's causal (0), anticausal-from-causal (9) or anticausal (18) matrix, loaded where used
// (loaded once into registers, or staged in workgroup memory, both measured slower on the H100).
fn bm(which: u32, k: u32) -> Mt {
    if (k == params.K - 1u) {
        return loadm(which + 27u);
    }
    return loadm(which);
}

// Run by the segment-0 invocation of line i, over what the segments left in sh (slot 0: the
// causal end state from a zero start, NS: the anticausal state leaving the segment's left end
// from zero starts, 2 NS / 3 NS: the boundary parts): both chains, one after the other, leaving
// each segment's true incoming causal state in slot 0 and anticausal one (at its right end) in
// slot NS. The anticausal chain takes the causal states' share through Q (host float64: what a
// segment's incoming causal state adds to its outgoing anticausal one), so that no segment reruns
// between the chains (one barrier pair, not two).
fn chains(i: u32, SL: u32) {
    let sl = (params.K - 1u) / SL;    // the segment holding the last block; later ones are empty
    var P = St(0.0);
    var e = St(0.0);
    for (var j = 0u; j < S; j++) {
        P += sh_get(2u * NS, j * LPW + i);
        e += sh_get(3u * NS, j * LPW + i);
    }
    if (params.causal != 0u) {
        let T = loadm(63u);
        for (var j = 0u; j < sl; j++) {
            let slot = j * LPW + i;
            let next = sh_get(0u, slot) + T * P;
            sh_put(0u, slot, P);
            P = next;
        }
        let slot = sl * LPW + i;
        let next = sh_get(0u, slot) + loadm(72u) * P;
        sh_put(0u, slot, P);
        P = next;
    }
    if (params.anti != 0u) {
        e += loadm(54u) * P;
        let slot = sl * LPW + i;
        let next = sh_get(NS, slot) + loadm(108u) * sh_get(0u, slot) + loadm(90u) * e;
        sh_put(NS, slot, e);
        e = next;
        let R = loadm(81u);
        let Q = loadm(99u);
        for (var jj = 0u; jj < sl; jj++) {
            let slot = (sl - 1u - jj) * LPW + i;
            let next = sh_get(NS, slot) + Q * sh_get(0u, slot) + R * e;
            sh_put(NS, slot, e);
            e = next;
        }
    }
}

// REGSEG: every segment has at most FB blocks (the host checks), so a thread loads its carries
// once, keeps them in registers and writes each carry once (the fix-up is latency-bound: one
// workgroup alone takes nearly as long as the whole grid). Each segment runs both recursions from
// zero states (the anticausal one on F plus what the segment's zero-start causal prologues add),
// one invocation per line chains both (`chains`), and each segment runs both once more from its
// true states: one barrier pair, not two (H100, 4096^2: 174.4 -> 173.3 us for the Gaussian,
// 153.2 -> 152.1 for order 2).
@compute @workgroup_size(LPW * S)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let i = t % LPW;
    let sg = t / LPW;
    let l = wid.x * LPW + i;
    let ch = wid.y;
    let live = l < params.nlines;
    let K = params.K;
    let nl = params.nlines;
    let SL = (K + S - 1u) / S;
    let k_lo = min(K, sg * SL);
    let k_hi = min(K, k_lo + SL);
    let nb = k_hi - k_lo;
    let cb = ch * K * 6u * nl + min(l, nl - 1u);
    let st = 6u * nl;
    let causal = params.causal != 0u;
    var E: array<St, {{FB}}>;    // incomplete causal epilogues
    var F: array<St, {{FB}}>;    // incomplete anticausal prologues
#unroll J FB
    {
        let k = min(k_lo + {{J}}u, K - 1u);
        E[{{J}}] = get3(cb + k * st);
        F[{{J}}] = get3(cb + k * st + 3u * nl);
    }
#endunroll
    var bpL = St(0.0);
    var bpR = St(0.0);
    let kL = vec2<u32>(params.lo_L / B, select(0u, (params.hi_L - 1u) / B + 1u, params.hi_L > params.lo_L));
    let kR = vec2<u32>(params.lo_R / B, select(0u, (params.hi_R - 1u) / B + 1u, params.hi_R > params.lo_R));
    if (live) {
        for (var k = max(k_lo, kL.x); k < min(k_hi, kL.y); k++) {
            bpL += part3(cb + k * st);
        }
        for (var k = max(k_lo, kR.x); k < min(k_hi, kR.y); k++) {
            bpR += part3(cb + k * st + 3u * nl);
        }
    }
    // Zero starts: the causal run, and the anticausal one on F plus what those prologues add.
    var P = St(0.0);
    var G: array<St, {{FB}}>;
#unroll J FB
    {
        G[{{J}}] = F[{{J}}];
        if (causal && {{J}}u < nb) {
            G[{{J}}] += bm(9u, k_lo + {{J}}u) * P;
            P = E[{{J}}] + bm(0u, k_lo + {{J}}u) * P;
        }
    }
#endunroll
    var e = St(0.0);
    if (params.anti != 0u) {
#unroll J FB
        {
            const j = {{FB}}u - 1u - {{J}}u;
            if (j < nb) {
                e = G[j] + bm(18u, k_lo + j) * e;
            }
        }
#endunroll
    }
    sh_put(0u, t, P);
    sh_put(NS, t, e);
    sh_put(2u * NS, t, bpL);
    sh_put(3u * NS, t, bpR);
    workgroupBarrier();
    if (sg == 0u) {
        chains(i, SL);
    }
    workgroupBarrier();
    P = sh_get(0u, t);
    e = sh_get(NS, t);
    // True starts: each block's complete prologue, F completed by it, then the anticausal ones.
    if (causal) {
#unroll J FB
        if ({{J}}u < nb) {
            if (live) {
                put3(cb + (k_lo + {{J}}u) * st, P);
            }
            F[{{J}}] += bm(9u, k_lo + {{J}}u) * P;
            P = E[{{J}}] + bm(0u, k_lo + {{J}}u) * P;
        }
#endunroll
    }
    if (params.anti != 0u) {
#unroll J FB
        {
            const j = {{FB}}u - 1u - {{J}}u;
            if (j < nb) {
                if (live) {
                    put3(cb + (k_lo + j) * st + 3u * nl, e);
                }
                e = F[j] + bm(18u, k_lo + j) * e;
            }
        }
#endunroll
    }
}
#else
// The looping kernel (segments of more than FB blocks, loaded FB at a time): the causal
// recursion first (zero-state runs, the chain through workgroup memory, reruns from the true
// states), then the anticausal one the same way.
fn set_state(t: u32, P: St) {
    sh_put(0u, t, P);
}

fn set_part(t: u32, b: St) {
    sh_put(NS, t, b);
}

fn put_sh(t: u32, P: St, T: Mt, b: St) {
    set_state(t, P);
    set_part(t, b);
    sh_put(2u * NS, t, T[0]);
    sh_put(3u * NS, t, T[1]);
#if ORDER3
    sh_put(4u * NS, t, T[2]);
#endif
}

fn sh_state(t: u32) -> St {
    return sh_get(0u, t);
}

fn sh_part(t: u32) -> St {
    return sh_get(NS, t);
}

fn sh_mat(t: u32) -> Mt {
#if ORDER3
    return Mt(sh_get(2u * NS, t), sh_get(3u * NS, t), sh_get(4u * NS, t));
#else
    return Mt(sh_get(2u * NS, t), sh_get(3u * NS, t));
#endif
}

// Run by the segment-0 invocation of line i only (the others would repeat it: the fix-up is
// latency-bound, and 16 copies of a serial chain cost issue slots): the line's incoming causal
// state (the boundary sums) through the segments' maps. Over what put_sh wrote, leaves each
// segment's incoming state in its state slot and the line's end state in slot i's part.
fn causal_chain(i: u32) {
    var P = St(0.0);
    for (var j = 0u; j < S; j++) {
        P += sh_part(j * LPW + i);
    }
    for (var j = 0u; j < S; j++) {
        let slot = j * LPW + i;
        let next = sh_state(slot) + sh_mat(slot) * P;
        set_state(slot, P);
        P = next;
    }
    set_part(i, P);
}

// The same from the right for the anticausal chain, from e_end (what enters the line's end).
fn anti_chain(i: u32, e_end: St) {
    var e = e_end;
    for (var j = 0u; j < S; j++) {
        e += sh_part(j * LPW + i);
    }
    for (var jj = 0u; jj < S; jj++) {
        let slot = (S - 1u - jj) * LPW + i;
        let next = sh_state(slot) + sh_mat(slot) * e;
        set_state(slot, e);
        e = next;
    }
}

@compute @workgroup_size(LPW * S)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let i = t % LPW;
    let sg = t / LPW;
    let l = wid.x * LPW + i;
    let ch = wid.y;
    let live = l < params.nlines;
    let K = params.K;
    let nl = params.nlines;
    let SL = (K + S - 1u) / S;
    let k_lo = min(K, sg * SL);
    let k_hi = min(K, k_lo + SL);
    let cb = ch * K * 6u * nl + min(l, nl - 1u);   // carry/bpart of block k at cb + k * 6 * nl
    let st = 6u * nl;
    let Tf = loadm(0u);
    let Mf = loadm(9u);
    let Rf = loadm(18u);
    let Tl = loadm(27u);
    let Ml = loadm(36u);
    let Rl = loadm(45u);
    let Mp = loadm(54u);
    let I = ident();
    let causal = params.causal != 0u;
    let anti = params.anti != 0u;
    var P = St(0.0);
    if (causal) {
        // 1. The segment from a zero state; its share of the boundary sums.
        var bp = St(0.0);
        if (live && params.hi_L > params.lo_L) {
            let b_lo = max(k_lo, params.lo_L / B);
            let b_hi = min(k_hi, (params.hi_L - 1u) / B + 1u);
            for (var k = b_lo; k < b_hi; k++) {
                bp += part3(cb + k * st);
            }
        }
        for (var k0 = k_lo; k0 < k_hi; k0 += {{FB}}u) {
            var eb: array<St, {{FB}}>;
#unroll J FB
            {
                let k = min(k0 + {{J}}u, k_hi - 1u);
                eb[{{J}}] = get3(cb + k * st);
            }
#endunroll
#unroll J FB
            {
                let k = k0 + {{J}}u;
                if (k < k_hi) {
                    var Tk = Tf;
                    if (k == K - 1u) {
                        Tk = Tl;
                    }
                    P = eb[{{J}}] + Tk * P;
                }
            }
#endunroll
        }
        // The segment's transfer matrix (host float64: composing float32 matrices in a chain
        // loses precision for poles near 1): Tf^SL, or Tl Tf^(n-1) for the last segment.
        var T = I;
        if (k_hi > k_lo) {
            T = loadm(select(63u, 72u, k_hi == K));
        }
        put_sh(t, P, T, bp);
        workgroupBarrier();
        // 2. Incoming state: the boundary sum, then the earlier segments' maps.
        if (sg == 0u) {
            causal_chain(i);
        }
        workgroupBarrier();
        let Pend = sh_part(i);
        P = sh_state(t);
        workgroupBarrier();
        // 3. Rerun with the true state, writing each block's complete prologue.
        for (var k0 = k_lo; k0 < k_hi; k0 += {{FB}}u) {
            var eb: array<St, {{FB}}>;
#unroll J FB
            {
                let k = min(k0 + {{J}}u, k_hi - 1u);
                eb[{{J}}] = get3(cb + k * st);
            }
#endunroll
#unroll J FB
            {
                let k = k0 + {{J}}u;
                if (k < k_hi) {
                    if (live) {
                        put3(cb + k * st, P);
                    }
                    var Tk = Tf;
                    if (k == K - 1u) {
                        Tk = Tl;
                    }
                    P = eb[{{J}}] + Tk * P;
                }
            }
#endunroll
        }
        P = Pend;
    }
    if (anti) {
        // The same from the right: e <- (bb + M pk) + R e, with pk the complete causal prologues
        // (this thread wrote them above).
        var e = St(0.0);
        var bp = St(0.0);
        if (live && params.hi_R > params.lo_R) {
            let b_lo = max(k_lo, params.lo_R / B);
            let b_hi = min(k_hi, (params.hi_R - 1u) / B + 1u);
            for (var k = b_lo; k < b_hi; k++) {
                bp += part3(cb + k * st + 3u * nl);
            }
        }
        for (var q0 = k_lo; q0 < k_hi; q0 += {{FB}}u) {
            var fb: array<St, {{FB}}>;
#unroll J FB
            {
                let k = k_hi - 1u - min(q0 + {{J}}u - k_lo, k_hi - 1u - k_lo);
                var Mk = Mf;
                if (k == K - 1u) {
                    Mk = Ml;
                }
                fb[{{J}}] = get3(cb + k * st + 3u * nl);
                if (causal) {
                    fb[{{J}}] += Mk * get3(cb + k * st);
                }
            }
#endunroll
#unroll J FB
            {
                let q = q0 + {{J}}u;
                if (q < k_hi) {
                    let k = k_hi - 1u - (q - k_lo);
                    var Rk = Rf;
                    if (k == K - 1u) {
                        Rk = Rl;
                    }
                    e = fb[{{J}}] + Rk * e;
                }
            }
#endunroll
        }
        var R = I;
        if (k_hi > k_lo) {
            R = loadm(select(81u, 90u, k_hi == K));
        }
        put_sh(t, e, R, bp);
        workgroupBarrier();
        if (sg == 0u) {
            anti_chain(i, Mp * P);
        }
        workgroupBarrier();
        e = sh_state(t);
        for (var q0 = k_lo; q0 < k_hi; q0 += {{FB}}u) {
            var fb: array<St, {{FB}}>;
#unroll J FB
            {
                let k = k_hi - 1u - min(q0 + {{J}}u - k_lo, k_hi - 1u - k_lo);
                var Mk = Mf;
                if (k == K - 1u) {
                    Mk = Ml;
                }
                fb[{{J}}] = get3(cb + k * st + 3u * nl);
                if (causal) {
                    fb[{{J}}] += Mk * get3(cb + k * st);
                }
            }
#endunroll
#unroll J FB
            {
                let q = q0 + {{J}}u;
                if (q < k_hi) {
                    let k = k_hi - 1u - (q - k_lo);
                    if (live) {
                        put3(cb + k * st + 3u * nl, e);
                    }
                    var Rk = Rf;
                    if (k == K - 1u) {
                        Rk = Rl;
                    }
                    e = fb[{{J}}] + Rk * e;
                }
            }
#endunroll
        }
    }
}
#endif
#endif

#if ROW_CORR
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
#endif

#if BLOCK_C
fn carry6(b: u32, stride: u32) -> array<vec3<f32>, 2> {
    var z = vec2<f32>(0.0);
    if (Z3) {
        z = vec2<f32>(carry[b + 2u * stride], carry[b + 5u * stride]);
    }
    return array<vec3<f32>, 2>(vec3<f32>(carry[b], carry[b + stride], z.x),
                               vec3<f32>(carry[b + 3u * stride], carry[b + 4u * stride], z.y));
}

#if OVERLAP
fn carry6_2(b: u32, stride: u32) -> array<vec3<f32>, 2> {
    var z = vec2<f32>(0.0);
    if (Z3) {
        z = vec2<f32>(carry2[b + 2u * stride], carry2[b + 5u * stride]);
    }
    return array<vec3<f32>, 2>(vec3<f32>(carry2[b], carry2[b + stride], z.x),
                               vec3<f32>(carry2[b + 3u * stride], carry2[b + 4u * stride], z.y));
}
#endif

// Pass C on tile line li from states s0, e0; every thread of the workgroup calls it (it holds
// barriers).
fn c_tile_line(base: u32, stride: u32, n: u32, s0: vec3<f32>, e0: vec3<f32>, li: u32, h: u32, valid: bool) {
    if (n == B) {
        reg_run2(base, stride, h, li, s0, e0, true);
        return;
    }
    let mine = valid && h == 0u;
    if (mine) {
        c_line(base, stride, n, s0, e0);
    }
}

@compute @workgroup_size(TPW)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let k = tile_k(wid);
    let lb = tile_lb(wid);
#if EDGES
    if (full_tile(k, lb)) {
        return;  // recfilter_reg.wgsl took it
    }
#endif
    let ch = wid.z;
    let li = t % B;
    let h = t / B;
    let l = lb * B + li;
    let n = min(B, params.N - k * B);
    let nl = params.nlines;
    // The carries load with the tile (clamped indices, used only where valid), so that the
    // workgroup waits on memory once.
    let c1 = carry6((ch * params.K + k) * 6u * nl + min(l, nl - 1u), nl);
#if OVERLAP
    let y = k * B + li;
    let nl2 = params.N;
    let c2 = carry6_2((ch * params.K2 + lb) * 6u * nl2 + min(y, nl2 - 1u), nl2);
#endif
    load_tile(k, lb, ch, t);
    load_h(t);
    workgroupBarrier();
    c_tile_line(li * BP, 1u, n, c1[0], c1[1], li, h, l < nl);
#if OVERLAP
    // Then along the rows of the tile (row y = k*64 + li, block lb), from the rows' carries.
    workgroupBarrier();
    c_tile_line(li, BP, min(B, nl - lb * B), c2[0], c2[1], li, h, y < params.N);
#endif
    workgroupBarrier();
    store_tile(k, lb, ch, t);
}
#endif

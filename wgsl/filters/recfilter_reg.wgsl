// Overlapped column-then-row passes A and C (recfilter_pass_a.wgsl / recfilter_pass_c.wgsl with
// OVERLAP) for full 64 x 64 tiles, with the tile in registers instead of workgroup memory.
//
// Why: NVIDIA's Vulkan driver leaves about 48 KiB of workgroup memory per SM, so the passes'
// 18 KiB tile allowed two 128-invocation workgroups per SM, too few to hide memory latency. Here
// workgroup memory holds a quarter of the tile in transit (4.2 KiB) and the halves' hand-over.
//
// Invocation t is, for the column stage, column c = t % 64, half h = t / 64 (tile rows 32 h ..
// 32 h + 31, loaded straight from memory: a group of 32 invocations reads 32 adjacent columns), and
// for the row stage tile row 32 (t / 64) + t % 32, half (t / 32) % 2. So each group of 32
// invocations (a subgroup on NVIDIA) holds the same 32 x 32 block in both stages, as columns and
// then as rows, and transposes it through `quarter` (the groups take turns: four rounds), without
// ever holding both forms (registers decide how many workgroups share an SM).
//
// A line's two halves run one after the other (half 0 hands its causal end state to half 1, half
// 1 its anticausal start state to half 0): half the instructions of running both from zero states
// and correcting them (recfilter_lines.wgsl reg_run2), and faster on the H100 (BENCHMARKS.md); the waiting
// half's groups leave the SM to other workgroups.
//
// Entries: PASS_A (the carries of both stages from zero states and the boundary dot products, as
// BLOCK_A with OVERLAP) and PASS_C (both stages from their complete carries; writes the output).
// Partial tiles (the image's edges) run recfilter_pass_a/c.wgsl with EDGES.
//
// BANDS2 (an image past one storage binding): one dispatch runs two adjacent bands of rows, each
// bound as a range of its own (src / dst: blocks from kc0, src1 / dst1: blocks from kc1); a
// workgroup's tile lies in one band, so it reads and writes one binding (a uniform branch).

#include "filters/recfilter_common.wgsl"
#if PASS_A
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> carry: array<f32>;
@group(0) @binding(3) var<storage, read> wts: array<f32>;
@group(0) @binding(4) var<storage, read_write> bpart: array<f32>;
@group(0) @binding(5) var<storage, read_write> carry2: array<f32>;
@group(0) @binding(6) var<storage, read_write> bpart2: array<f32>;
#if BANDS2
@group(0) @binding(7) var<storage, read> src1: array<f32>;
#endif
#else
#if IN_PLACE
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
#if BANDS2
@group(0) @binding(5) var<storage, read_write> dst1: array<f32>;
#endif
#else
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;
#if BANDS2
@group(0) @binding(5) var<storage, read> src1: array<f32>;
@group(0) @binding(6) var<storage, read_write> dst1: array<f32>;
#endif
#endif
@group(0) @binding(3) var<storage, read> carry: array<f32>;
@group(0) @binding(4) var<storage, read> carry2: array<f32>;
#endif

const B: u32 = 64u;
// A half's end state for the other half, per line, as NS planes of 64 (workgroup memory decides
// how many workgroups share an SM: a vec3 array takes 1 KiB, two planes 512 B; H100, 4096^2
// order 2: 156 -> 153 us. Aliasing the planes into `quarter` was 1-2 us slower.)
var<workgroup> xch0: array<f32, 64>;
var<workgroup> xch1: array<f32, 64>;
#if ORDER3
var<workgroup> xch2: array<f32, 64>;
#endif

fn xput(i: u32, s: vec3<f32>) {
    xch0[i] = s.x;
    xch1[i] = s.y;
#if ORDER3
    xch2[i] = s.z;
#endif
}

fn xget(i: u32) -> vec3<f32> {
#if ORDER3
    return vec3<f32>(xch0[i], xch1[i], xch2[i]);
#else
    return vec3<f32>(xch0[i], xch1[i], 0.0);  // order <= 2: the third component is never read
#endif
}
var<workgroup> quarter: array<f32, 1056>;     // a 32 x 32 block in transit, rows of 33 words

fn load_src(a: u32) -> f32 {
#if IN_PLACE
    return dst[a - params.doff];
#else
    return src[a - params.soff];
#endif
}

#if BANDS2
fn load_src1(a: u32) -> f32 {
#if IN_PLACE
    return dst1[a - params.doff1];
#else
    return src1[a - params.soff1];
#endif
}
#endif

// Causal step (recfilter_common.wgsl step; the host always sets UNIT_B0 here: b0 = 1): without
// ORDER3 (a3 = 0, u = x) one chain fewer.
fn step_fast(s: vec3<f32>, x: f32) -> vec3<f32> {
#if ORDER3
    return step(s, x);
#else
    return vec3<f32>(fma(-params.a1, s.x, fma(-params.a2, s.y, x)), s.x, x);
#endif
}

struct SE {
    s: vec3<f32>,
    e: vec3<f32>,
}

// Half h of a 64-sample line (xi its index in xch), in place: causal from s0, anticausal from e0.
// Returns the causal end state (valid in half 1) and the anticausal start state (valid in half 0).
// Call from uniform control flow, every invocation of the workgroup.
fn run_half(v: ptr<function, array<f32, 32>>, h: u32, xi: u32, s0: vec3<f32>, e0: vec3<f32>) -> SE {
    var s = s0;
    if (params.causal != 0u && h == 0u) {
#unroll J 32
        s = step_fast(s, gain_c((*v)[{{J}}]));
        (*v)[{{J}}] = s.x;
#endunroll
        xput(xi, s);
    }
    workgroupBarrier();
    var e = e0;
    if (h == 1u) {
        if (params.causal != 0u) {
            s = xget(xi);
#unroll J 32
            s = step_fast(s, gain_c((*v)[{{J}}]));
            (*v)[{{J}}] = s.x;
#endunroll
        }
        if (params.anti != 0u) {
#unroll J 32
            e = step_fast(e, gain_a((*v)[31 - {{J}}]));
            (*v)[31 - {{J}}] = e.x;
#endunroll
            xput(xi, e);
        }
    }
    workgroupBarrier();
    if (params.anti != 0u && h == 0u) {
        e = xget(xi);
#unroll J 32
        e = step_fast(e, gain_a((*v)[31 - {{J}}]));
        (*v)[31 - {{J}}] = e.x;
#endunroll
    }
    return SE(s, e);
}

// This group's 32 x 32 block from column halves to row halves, or back, in place: the groups take
// turns with `quarter`. In place, so that one array of 32 is live, not two (registers decide how
// many workgroups share an SM). Uniform control flow.
fn transpose_block(v: ptr<function, array<f32, 32>>, t: u32) {
    let lane = t % 32u;
#unroll Q 4
    {
        if (t / 32u == {{Q}}u) {
#unroll J 32
            quarter[{{J}}u * 33u + lane] = (*v)[{{J}}];
#endunroll
        }
        workgroupBarrier();
        if (t / 32u == {{Q}}u) {
#unroll J 32
            (*v)[{{J}}] = quarter[lane * 33u + {{J}}u];
#endunroll
        }
        workgroupBarrier();
    }
#endunroll
}

#if PASS_A
// This half's share of a line's boundary dot products with one side's weights (side 0: the
// causal state at the start, 1: the anticausal one at the end; samples x at positions p0 + j),
// summed over both halves through `quarter` (the half-1 invocation of line xi hands over); valid
// in half 0. A tile of a long line meets one side's support only, so it runs only that side's
// three weight vectors. Call only where the block meets that side's support (uniform).
fn half_weights(v: ptr<function, array<f32, 32>>, p0: u32, N: u32, woff: u32, side: u32, h: u32, xi: u32) -> vec3<f32> {
    var w = vec3<f32>(0.0);
    let wb = woff + side * 3u * N + p0;
#unroll J 32
    {
        let p = wb + {{J}}u;
        w += vec3<f32>(wts[p], wts[N + p], wts[2u * N + p]) * (*v)[{{J}}];
    }
#endunroll
    // (Nothing reads `quarter` here: before the column stage, or after transpose_block's barrier.)
    if (h == 1u) {
        quarter[xi * 3u] = w.x;
        quarter[xi * 3u + 1u] = w.y;
        quarter[xi * 3u + 2u] = w.z;
    }
    workgroupBarrier();
    if (h == 0u) {
        w += vec3<f32>(quarter[xi * 3u], quarter[xi * 3u + 1u], quarter[xi * 3u + 2u]);
    }
    workgroupBarrier();
    return w;
}

// Whether the block at p0 meets a side's support [lo, hi).
fn meets(p0: u32, lo: u32, hi: u32) -> bool {
    return p0 < hi && p0 + B > lo;
}

#if FRAME_FIRST
// The i-th tile (column block, row block) of PASS_A in launch order: first the tiles outside the
// interior rectangle (the rows above it, the rows below it, then the rows beside it, left part
// first), which also run the boundary dot products, then the interior row by row; so the slower
// tiles start early instead of ending the dispatch.
fn tile_of(i: u32) -> vec2<u32> {
    let iw = params.fr_lhi - params.fr_llo;
    let n_frame = params.fr_w * params.fr_h - iw * (params.fr_khi - params.fr_klo);
    if (i >= n_frame) {
        return vec2<u32>(params.fr_llo + (i - n_frame) % iw, params.fr_klo + (i - n_frame) / iw);
    }
    let fw = params.fr_w;
    let top = params.fr_klo * fw;
    if (i < top) {
        return vec2<u32>(i % fw, i / fw);
    }
    let below = (params.fr_h - params.fr_khi) * fw;
    if (i - top < below) {
        return vec2<u32>((i - top) % fw, params.fr_khi + (i - top) / fw);
    }
    let j = i - top - below;
    let side = fw - iw;
    let c = j % side;
    return vec2<u32>(select(c + iw, c, c < params.fr_llo), params.fr_klo + j / side);
}
#endif

// One side's boundary parts of one line at index base, lines nl apart, into bpart (the column
// stage) or bpart2 (row), from the half-0 invocation. Stored as soon as they are summed, so that
// they do not hold registers across the recursion.
fn put_parts(rows: bool, base: u32, nl: u32, h: u32, side: u32, w: vec3<f32>) {
    let parts = array<f32, 3>(w.x, w.y, w.z);
    for (var m = 0u; m < 3u; m++) {
        let i = base + (3u * side + m) * nl;
        if ((Z3 || m != 2u) && h == 0u) {
            if (rows) {
                bpart2[i] = parts[m];
            } else {
                bpart[i] = parts[m];
            }
        }
    }
}

// Both sides' boundary parts for the block at p0 of this line, where it meets their supports
// rg = (lo_L, hi_L, lo_R, hi_R) (uniform).
fn boundary_parts(v: ptr<function, array<f32, 32>>, rows: bool, p0: u32, rg: vec4<u32>, base: u32, nl: u32,
                  N: u32, woff: u32, h: u32, xi: u32) {
    // Sides s0 .. s1 - 1: none, one, or (short lines) both; a loop, so the dot products' code is
    // not written out twice (registers: the order-2 filter without boundary weights lost 1 us).
    let s0 = select(1u, 0u, meets(p0, rg.x, rg.y));
    let s1 = select(1u, 2u, meets(p0, rg.z, rg.w));
    for (var side = s0; side < s1; side++) {
        put_parts(rows, base, nl, h, side, half_weights(v, p0 + 32u * h, N, woff, side, h, xi));
    }
}

// Carries of one line at index base, lines nl apart, into carry (the column stage) or carry2
// (row): the half-1 invocation holds the causal end state, the half-0 one the anticausal start.
fn put_carries(rows: bool, base: u32, nl: u32, h: u32, se: SE) {
    let vals = array<f32, 6>(se.s.x, se.s.y, se.s.z, se.e.x, se.e.y, se.e.z);
    for (var m = 0u; m < 6u; m++) {
        if ((Z3 || m % 3u != 2u) && (m < 3u) == (h == 1u)) {
            if (rows) {
                carry2[base + m * nl] = vals[m];
            } else {
                carry[base + m * nl] = vals[m];
            }
        }
    }
}
#endif

#if PASS_C
// The carry a half of a line starts from, in carry (carry_h, the column stage) or carry2
// (carry_h2, rows): half 0 the causal prologue (planes 0-2), half 1 the anticausal epilogue
// (planes 3-5), for run_half's s0 and e0 alike (each half reads only its own). Half the loads, and
// three registers held through the column stage instead of six (H100, 4096^2: 152.1 -> 145.3 us
// for order 2, 173.3 -> 163.1 for the Gaussian; registers decide how many workgroups share an
// SM). Two functions, not one taking the stage as put_carries does: that measured 0.3-0.9 us
// slower (bit-identical output).
fn carry_h(b: u32, stride: u32, h: u32) -> vec3<f32> {
    let o = b + 3u * h * stride;
    var z = 0.0;
    if (Z3) {
        z = carry[o + 2u * stride];
    }
    return vec3<f32>(carry[o], carry[o + stride], z);
}

fn carry_h2(b: u32, stride: u32, h: u32) -> vec3<f32> {
    let o = b + 3u * h * stride;
    var z = 0.0;
    if (Z3) {
        z = carry2[o + 2u * stride];
    }
    return vec3<f32>(carry2[o], carry2[o + stride], z);
}
#endif

// Workgroup (x: column block lb, y: row block k, z: channel), as recfilter_pass_a.wgsl's column pass.
@compute @workgroup_size(128)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
#if FRAME_FIRST
    let ti = wid.x + wid.y * nwg.x;
    if (ti >= params.fr_w * params.fr_h) {
        return;
    }
    let ft = tile_of(ti);
    let lb = ft.x;
    let k = ft.y + params.kc0;  // a band's frame counts its blocks from kc0
#else
    let lb = wid.x;
    let k = wid.y + params.kc0;  // 0 but in a band of rows
#endif
    let ch = wid.z;
    let c = t % B;
    let h = t / B;
    let r = 32u * (t / 64u) + t % 32u;
    let h2 = t / 32u % 2u;
    let nl = params.nlines;   // columns (the column stage's lines)
    let nl2 = params.N;       // rows
    let l = lb * B + c;
    let y = k * B + r;
    var v: array<f32, 32>;
    let a0 = addr(l, ch, k * B + 32u * h);
#if BANDS2
    if (k >= params.kc1) {  // uniform: the tile lies in the second band
#unroll J 32
        v[{{J}}] = load_src1(a0 + {{J}}u * params.pos_stride);
#endunroll
    } else {
#unroll J 32
        v[{{J}}] = load_src(a0 + {{J}}u * params.pos_stride);
#endunroll
    }
#else
#unroll J 32
    v[{{J}}] = load_src(a0 + {{J}}u * params.pos_stride);
#endunroll
#endif
#if PASS_C
    let ch1 = carry_h((ch * params.K + k) * 6u * nl + l, nl, h);
    let ch2 = carry_h2((ch * params.K2 + lb) * 6u * nl2 + y, nl2, h2);
    let c1 = SE(ch1, ch1);
    let c2 = SE(ch2, ch2);
#else
    let c1 = SE(vec3<f32>(0.0), vec3<f32>(0.0));
    let c2 = c1;
#endif

    // Column stage.
#if PASS_A
    let cbase = (ch * params.K + k) * 6u * nl + l;
#if !NO_BOUNDARY
    boundary_parts(&v, false, k * B, vec4<u32>(params.lo_L, params.hi_L, params.lo_R, params.hi_R), cbase, nl,
                   params.N, 0u, h, c);
#endif
#endif
    let se = run_half(&v, h, c, c1.s, c1.e);
#if PASS_A
    put_carries(false, cbase, nl, h, se);
#endif
    transpose_block(&v, t);

    // Row stage (tile row r, half h2).
#if PASS_A
    let rbase = (ch * params.K2 + lb) * 6u * nl2 + y;
#if !NO_BOUNDARY
    boundary_parts(&v, true, lb * B, vec4<u32>(params.lo_L2, params.hi_L2, params.lo_R2, params.hi_R2), rbase, nl2,
                   nl, params.woff2, h2, r);
#endif
    let se2 = run_half(&v, h2, r, c2.s, c2.e);
    put_carries(true, rbase, nl2, h2, se2);
#else
    _ = run_half(&v, h2, r, c2.s, c2.e);
    // Back to column halves for the store (coalesced).
    transpose_block(&v, t);
    let ob = addr(l, ch, k * B + 32u * h);
#if BANDS2
    if (k >= params.kc1) {
        let ob1 = ob - params.doff1;
#unroll J 32
        dst1[ob1 + {{J}}u * params.pos_stride] = v[{{J}}];
#endunroll
        return;
    }
#endif
    let ob0 = ob - params.doff;
#unroll J 32
    dst[ob0 + {{J}}u * params.pos_stride] = v[{{J}}];
#endunroll
#endif
}

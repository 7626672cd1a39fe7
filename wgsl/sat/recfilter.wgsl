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
//              and incomplete anticausal prologue (first 3 outputs from a zero epilogue).
//   BLOCK_FIX  one thread per line: boundary initial conditions, then the carries across blocks
//              with the precomputed 3 x 3 matrices (Nehab et al.'s Alg. 2 fix-up).
//   BLOCK_C    per tile: the filter again, from the complete carries; writes the output.
//
// Boundaries: the signal is extended past both ends (mode: 0 zero, 1 nearest, 2 reflect
// (half-sample symmetric, scipy 'reflect'), 3 mirror (whole-sample, scipy 'mirror'), 4 wrap) and
// the initial conditions are the recursions run over `padlen` samples of that extension, chosen on
// the host so that the impulse-response tail past it is below 2^-27 of its total: the truncation
// error is below float32 rounding. The anticausal initial values z[N..N+2] are accumulated forward
// as sum_k g[k] y[N+j+k] (g the impulse response), so no buffer of the extension is needed.

struct Params {
    N: u32,            // positions per line
    nlines: u32,       // lines per channel
    C: u32,            // channels (interleaved)
    pos_stride: u32,
    line_stride: u32,
    K: u32,            // blocks of 64 positions
    mode: u32,
    padlen: u32,
    causal: u32,
    anti: u32,
    b0: f32,
    a1: f32,
    a2: f32,
    a3: f32,
}

@group(0) @binding(0) var<uniform> params: Params;
#if RT
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;
#elif BLOCK_A
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> carry: array<f32>;
#elif BLOCK_FIX
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> carry: array<f32>;
@group(0) @binding(3) var<storage, read> mats: array<f32>;
#elif BLOCK_C
#if IN_PLACE
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
#else
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;
#endif
@group(0) @binding(3) var<storage, read> carry: array<f32>;
#endif

const B: u32 = 64u;     // block length (positions) and lines per tile
const BP: u32 = 65u;    // padded shared-memory row

fn addr(l: u32, ch: u32, p: u32) -> u32 {
    return l * params.line_stride + ch + p * params.pos_stride;
}

// Causal step, in cascade form: a first-order section u[p] = x[p] - a3 u[p-1] feeding a
// second-order one y[p] = b0 u[p] - a1 y[p-1] - a2 y[p-2] (the host factors a third-order
// denominator so; a direct form with poles near 1 loses float32 precision). For order <= 2, a3 = 0
// and u = x. State s = (y[p-1], y[p-2], u[p-1]) -> (y[p], y[p-1], u[p]).
fn step(s: vec3<f32>, x: f32) -> vec3<f32> {
    let u = x - params.a3 * s.z;
    let y = params.b0 * u - params.a1 * s.x - params.a2 * s.y;
    return vec3<f32>(y, s.x, u);
}

#if RT
#include "sat/boundary.wgsl"
#endif
#if BLOCK_FIX
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

#if BLOCK_A
var<workgroup> tile: array<f32, 4160>;
#endif
#if BLOCK_C
var<workgroup> tile: array<f32, 4160>;
#endif

#if BLOCK_A
#include "sat/tile_io.wgsl"
#endif
#if BLOCK_C
#include "sat/tile_io.wgsl"
#endif

#if BLOCK_A
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let k = wid.x;
    let lb = wid.y;
    let ch = wid.z;
    load_tile(k, lb, ch, t);
    workgroupBarrier();
    let l = lb * B + t;
    let n = min(B, params.N - k * B);
    if (l >= params.nlines) {
        return;
    }
    let row = t * BP;
    var s = vec3<f32>(0.0);
    if (params.causal != 0u) {
        for (var i = 0u; i < n; i++) {
            s = step(s, tile[row + i]);
            tile[row + i] = s.x;
        }
    }
    var e = vec3<f32>(0.0);
    if (params.anti != 0u) {
        for (var q = 0u; q < n; q++) {
            let i = n - 1u - q;
            e = step(e, tile[row + i]);
        }
    }
    let base = (ch * params.K + k) * 6u * params.nlines + l;
    carry[base] = s.x;
    carry[base + params.nlines] = s.y;
    carry[base + 2u * params.nlines] = s.z;
    carry[base + 3u * params.nlines] = e.x;
    carry[base + 4u * params.nlines] = e.y;
    carry[base + 5u * params.nlines] = e.z;
}
#endif

#if BLOCK_FIX
fn mat(o: u32, v: vec3<f32>) -> vec3<f32> {
    return vec3<f32>(mats[o] * v.x + mats[o + 1u] * v.y + mats[o + 2u] * v.z,
                     mats[o + 3u] * v.x + mats[o + 4u] * v.y + mats[o + 5u] * v.z,
                     mats[o + 6u] * v.x + mats[o + 7u] * v.y + mats[o + 8u] * v.z);
}

fn get3(base: u32) -> vec3<f32> {
    let nl = params.nlines;
    return vec3<f32>(carry[base], carry[base + nl], carry[base + 2u * nl]);
}

fn put3(base: u32, v: vec3<f32>) {
    let nl = params.nlines;
    carry[base] = v.x;
    carry[base + nl] = v.y;
    carry[base + 2u * nl] = v.z;
}

// mats: [T_FP, M, T_RE] for a full block (offsets 0, 9, 18), then for the last block (27, 36, 45).
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let l = gid.x;
    let ch = gid.y;
    if (l >= params.nlines) {
        return;
    }
    let K = params.K;
    let nl = params.nlines;
    var P = vec3<f32>(0.0);
    if (params.causal != 0u) {
        P = causal_init(l, ch);
        for (var k = 0u; k < K; k++) {
            let base = (ch * K + k) * 6u * nl + l;
            let eb = get3(base);
            put3(base, P);
            var o = 0u;
            if (k == K - 1u) {
                o = 27u;
            }
            P = eb + mat(o, P);
        }
    }
    if (params.anti != 0u) {
        var e = anti_init(l, ch, P);
        for (var q = 0u; q < K; q++) {
            let k = K - 1u - q;
            let base = (ch * K + k) * 6u * nl + l;
            let bb = get3(base + 3u * nl);
            put3(base + 3u * nl, e);
            var o = 0u;
            if (k == K - 1u) {
                o = 27u;
            }
            var Pk = vec3<f32>(0.0);
            if (params.causal != 0u) {
                Pk = get3(base);
            }
            e = bb + mat(o + 9u, Pk) + mat(o + 18u, e);
        }
    }
}
#endif

#if BLOCK_C
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let k = wid.x;
    let lb = wid.y;
    let ch = wid.z;
    load_tile(k, lb, ch, t);
    workgroupBarrier();
    let l = lb * B + t;
    let n = min(B, params.N - k * B);
    if (l < params.nlines) {
        let row = t * BP;
        let nl = params.nlines;
        let base = (ch * params.K + k) * 6u * nl + l;
        if (params.causal != 0u) {
            var s = vec3<f32>(carry[base], carry[base + nl], carry[base + 2u * nl]);
            for (var i = 0u; i < n; i++) {
                s = step(s, tile[row + i]);
                tile[row + i] = s.x;
            }
        }
        if (params.anti != 0u) {
            var e = vec3<f32>(carry[base + 3u * nl], carry[base + 4u * nl], carry[base + 5u * nl]);
            for (var q = 0u; q < n; q++) {
                let i = n - 1u - q;
                e = step(e, tile[row + i]);
                tile[row + i] = e.x;
            }
        }
    }
    workgroupBarrier();
    store_tile(k, lb, ch, t);
}
#endif

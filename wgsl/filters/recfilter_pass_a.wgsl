// Recursive filter, block method, pass A (BLOCK_A, with OVERLAP the column-then-row form): per
// 64 x 64 tile the incomplete epilogues and prologues and the boundary dot products' shares.
// See filters/recfilter_tiles.wgsl.

#include "filters/recfilter_tiles.wgsl"
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

const TPW: u32 = 128u;  // threads per tile workgroup (BLOCK_A, BLOCK_C): two per tile line
var<workgroup> tile: array<f32, 4160>;   // 64 lines x 65 (64 positions + pad)

#include "filters/tile_io.wgsl"
#include "filters/recfilter_lines.wgsl"

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

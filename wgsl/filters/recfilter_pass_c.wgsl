// Recursive filter, block method, pass C (BLOCK_C, with OVERLAP down the columns then along the
// rows): the filter again from the complete carries; writes the output. See filters/recfilter_tiles.wgsl.

#include "filters/recfilter_tiles.wgsl"
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

const TPW: u32 = 128u;  // threads per tile workgroup (BLOCK_A, BLOCK_C): two per tile line
var<workgroup> tile: array<f32, 4160>;   // 64 lines x 65 (64 positions + pad)

#include "filters/tile_io.wgsl"
#include "filters/recfilter_lines.wgsl"

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

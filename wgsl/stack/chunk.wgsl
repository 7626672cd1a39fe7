// Clip boxes past one storage binding (pywgpuprims/stack.py, _Chunks; bracket matching instead runs
// its chunks in one batch: spine.wgsl CARRY, carry.wgsl, bracket_leaf.wgsl CHUNK_OUT): the input is cut into chunks processed in order; the opens that earlier chunks left unmatched are
// carried as a stack (their global indices `stack`, for clip boxes also their boxes `rects`).
// Chunk k runs the in-binding kernels on an extended input: p closes (on an empty stack: they do
// nothing; they only align the prefix to 4 elements), t carried opens (the top t of the stack,
// t = min(stack size s, chunk length)), then the chunk. Then:
//   PREFIX: write the prefix (and, for clip boxes, the carried opens' boxes: their own results,
//           which reproduce themselves under the clip operator).
//   FIXUP:  the chunk's links and depths from the extended run's, made global: a link into the
//           chunk is offset by its base, a link to prefix open j is stack[s - t + j], depth + (s - t).
//   PUSH:   the new stack: slot s - t + h holds the last open of extended depth h < F (F = opens the
//           extended run leaves unclosed); the chunk's global indices exceed every stale entry, so
//           atomicMax keeps the last. Only opens that no later element of their block of 4096
//           (16 per invocation) closes push (depth below every later depth in the block): a few per
//           block instead of half the elements on a few thousand hot slots.
//   RECTS:  (clip boxes) the boxes of the slots PUSH filled from this chunk.
// Defines: PREFIX | FIXUP | PUSH | RECTS; MODE_U8 | MODE_U32 | MODE_KIND; DEPTH (FIXUP writes depth);
// BOXES (PREFIX writes boxes).

struct Params {
    count: u32,      // threads with work (PREFIX: prefix words or elements; FIXUP, PUSH: chunk length; RECTS: M)
    prefix: u32,     // T: prefix length (p closes, then t opens)
    pad: u32,        // p
    s_off: u32,      // index, in the `stack` binding, of slot s - t
    r_off: u32,      // index, in the `rects` binding, of slot s - t
    below: u32,      // 1 where s > t: stack[s - t - 1], the open below the prefix, is bound (s_off > 0)
    depth_add: u32,  // s - t
    base: u32,       // the chunk's first global index
    n_groups: u32,
}

const WG: u32 = 256u;

@group(0) @binding(0) var<uniform> params: Params;
#if PREFIX
@group(0) @binding(1) var<storage, read_write> ext: array<u32>;
#if BOXES
@group(0) @binding(2) var<storage, read> rects: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> ext_boxes: array<vec4<f32>>;
#endif
#elif FIXUP
@group(0) @binding(1) var<storage, read> ext_link: array<i32>;
@group(0) @binding(2) var<storage, read> stack: array<i32>;
@group(0) @binding(3) var<storage, read_write> link: array<i32>;
#if DEPTH
@group(0) @binding(4) var<storage, read> ext_depth: array<u32>;
@group(0) @binding(5) var<storage, read_write> depth: array<u32>;
#endif
#elif PUSH
@group(0) @binding(1) var<storage, read> ext: array<u32>;
@group(0) @binding(2) var<storage, read> ext_depth: array<u32>;
@group(0) @binding(3) var<storage, read> info: array<u32>;
@group(0) @binding(4) var<storage, read_write> stack: array<atomic<i32>>;
#elif RECTS
@group(0) @binding(1) var<storage, read> stack: array<i32>;
@group(0) @binding(2) var<storage, read> info: array<u32>;
@group(0) @binding(3) var<storage, read> ext_out: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> rects: array<vec4<f32>>;
#endif

#if PUSH
// 1 where extended element e is an open.
fn is_open(e: u32) -> bool {
#if MODE_U8
    return ((ext[e >> 2u] >> (8u * (e & 3u))) & 0xffu) != 0u;
#elif MODE_U32
    return ext[e] != 0u;
#else
    return ext[e] == 1u;
#endif
}
#endif

#if !PUSH
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * WG;
    if (i >= params.count) {
        return;
    }
#if PREFIX
#if MODE_U8
    // word i holds elements 4i .. 4i + 3: closes (0) below p, opens (1) above
    var w = 0u;
    for (var k = 0u; k < 4u; k++) {
        if (4u * i + k >= params.pad) {
            w |= 1u << (8u * k);
        }
    }
    ext[i] = w;
#elif MODE_U32
    ext[i] = select(1u, 0u, i < params.pad);
#else
    ext[i] = select(1u, 2u, i < params.pad);
#endif
#if BOXES
    if (i < params.pad) {
        ext_boxes[i] = vec4<f32>(0.0);
    } else {
        ext_boxes[i] = rects[params.r_off + i - params.pad];
    }
#endif
#elif FIXUP
    let T = params.prefix;
    let l = ext_link[T + i];
    var g = -1;
    if (l >= i32(T)) {
        g = i32(params.base) + l - i32(T);
    } else if (l >= 0) {
        g = stack[params.s_off + u32(l) - params.pad];
    } else if (params.below != 0u) {
        g = stack[params.s_off - 1u];
    }
    link[i] = g;
#if DEPTH
    depth[i] = ext_depth[T + i] + params.depth_add;
#endif
#elif RECTS
    if (i >= info[1]) {
        return;
    }
    let g = stack[params.s_off + i];
    if (g >= i32(params.base)) {
        rects[params.r_off + i] = ext_out[params.prefix + u32(g) - params.base];
    }
#endif
}
#endif

#if PUSH
const SEG: u32 = 16u;  // elements per invocation (a block of SEG * WG)
#include "common/later_min.wgsl"


@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid3: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let lid = lid3.x;
    let first = ((wid.x + wid.y * nwg.x) * WG + lid) * SEG;  // chunk element
    var d: array<u32, SEG>;
    var m = 0xffffffffu;
    for (var k = 0u; k < SEG; k++) {
        d[k] = 0xffffffffu;
        if (first + k < params.count) {
            d[k] = ext_depth[params.prefix + first + k];
        }
        m = min(m, d[k]);
    }
    var later = later_minimum(lid, m, 0xffffffffu);  // the smallest depth after the element in the block
    let F = info[1];
    for (var j = 0u; j < SEG; j++) {
        let k = SEG - 1u - j;
        let e = first + k;
        if (e < params.count && d[k] < later && d[k] < F && is_open(params.prefix + e)) {
            atomicMax(&stack[params.s_off + d[k]], i32(params.base + e));
        }
        later = min(later, d[k]);
    }
}
#endif

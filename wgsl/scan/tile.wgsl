// Tiles of a batched scan: the data is `rows` segments of `row_len` elements; each segment is cut
// into `tiles_per_row` tiles of TILE = WG * VEC4_PER_THREAD * 4 elements. An invocation holds VEC4_PER_THREAD vec4 of its
// tile in registers. Which vec4 slots it holds depends on the local-scan flavour:
//   SUBGROUPS: subgroup g owns a contiguous run of VEC4_PER_THREAD * size vec4; lane l holds slot i*size + l of
//              it, so each load instruction of a subgroup reads one contiguous span;
//   otherwise: invocation t holds the contiguous slots t*VEC4_PER_THREAD .. t*VEC4_PER_THREAD + VEC4_PER_THREAD - 1.
// SCALAR loads element by element (segments that do not start on a vec4 boundary); otherwise
// vec4 loads, with the tail of a partial vec4 masked to the identity (buffers are padded to 16 B).
// Expects: WG, VEC4_PER_THREAD, the monoid, `params` with row_len and tiles_per_row, and bindings `input`
// (array<vec4<Elem>> or, with SCALAR, array<Elem>).

const WG: u32 = {{WG}}u;
const VEC4_PER_THREAD: u32 = {{VEC4_PER_THREAD}}u;
const TILE: u32 = WG * VEC4_PER_THREAD * 4u;

#include "common/tile_slots.wgsl"

// (index of the tile's first element, number of valid elements in it)
fn tile_origin(tile: u32) -> vec2<u32> {
    let row = tile / params.tiles_per_row;
    let start = (tile - row * params.tiles_per_row) * TILE;
    return vec2<u32>(row * params.row_len + start, min(TILE, params.row_len - start));
}

// One vec4 of a tile at vec4 slot `slot`, elements past the tile's end set to the identity.
// Branch-free on purpose: subgroup operations follow, and without maximal reconvergence a
// divergent branch may leave part of the subgroup inactive there (seen on NVIDIA). Indices are
// clamped into the tile, so every load is in bounds, and the excess is masked afterwards.
fn load_vec4(o: vec2<u32>, slot: u32) -> vec4<Elem> {
    let e = slot * 4u;  // element offset in the tile
    let past = vec4<u32>(e) + vec4<u32>(0u, 1u, 2u, 3u) >= vec4<u32>(o.y);
    let last = o.x + o.y - 1u;
#if SCALAR
    let x = vec4<Elem>(input[min(o.x + e, last)], input[min(o.x + e + 1u, last)],
                       input[min(o.x + e + 2u, last)], input[min(o.x + e + 3u, last)]);
#else
    let x = input[min(o.x + e, last) / 4u];
#endif
    return select(x, vec4<Elem>(identity()), past);
}

fn load_tile(tile: u32, v: ptr<function, array<vec4<Elem>, VEC4_PER_THREAD>>) {
    let o = tile_origin(tile);
#if !SCALAR
    if (o.y == TILE) {  // uniform: a whole tile needs no clamps and no masks
        let base = o.x / 4u;
#unroll I VEC4_PER_THREAD
        (*v)[{{I}}] = input[base + vec_slot({{I}}u)];
#endunroll
        return;
    }
#endif
#unroll I VEC4_PER_THREAD
    (*v)[{{I}}] = load_vec4(o, vec_slot({{I}}u));
#endunroll
}

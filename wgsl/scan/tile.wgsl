// Tiles of a batched scan: the data is `rows` segments of `row_len` elements; each segment is cut
// into `tiles_per_row` tiles of TILE = WG * VPT * 4 elements. An invocation holds VPT vec4 of its
// tile in registers. Which vec4 slots it holds depends on the local-scan flavour:
//   SUBGROUPS: subgroup g owns a contiguous run of VPT * size vec4; lane l holds slot i*size + l of
//              it, so each load instruction of a subgroup reads one contiguous span;
//   otherwise: invocation t holds the contiguous slots t*VPT .. t*VPT + VPT - 1.
// SCALAR loads element by element (segments that do not start on a vec4 boundary); otherwise
// vec4 loads, with the tail of a partial vec4 masked to the identity (buffers are padded to 16 B).
// Expects: WG, VPT, the monoid, `params` with row_len and tiles_per_row, and bindings `input`
// (array<vec4<Elem>> or, with SCALAR, array<Elem>).

const WG: u32 = {{WG}}u;
const VPT: u32 = {{VPT}}u;
const TILE: u32 = WG * VPT * 4u;

var<private> g_lid: u32;
var<private> g_lane: u32;
var<private> g_sg_size: u32;

// (index of the tile's first element, number of valid elements in it)
fn tile_origin(tile: u32) -> vec2<u32> {
    let row = tile / params.tiles_per_row;
    let start = (tile - row * params.tiles_per_row) * TILE;
    return vec2<u32>(row * params.row_len + start, min(TILE, params.row_len - start));
}

// vec4 slot (0 .. WG*VPT-1) of this invocation's i-th vec4
fn vec_slot(i: u32) -> u32 {
#if SUBGROUPS
    let sgid = g_lid / g_sg_size;
    return (sgid * VPT + i) * g_sg_size + g_lane;
#else
    return g_lid * VPT + i;
#endif
}

// One vec4 of a tile at vec4 slot `slot`, elements past the tile's end set to the identity.
fn load_vec4(o: vec2<u32>, slot: u32) -> vec4<Elem> {
    let id = vec4<Elem>(identity());
    let e = slot * 4u;  // element offset in the tile
    var x = id;
#if SCALAR
    if (e < o.y) { x.x = input[o.x + e]; }
    if (e + 1u < o.y) { x.y = input[o.x + e + 1u]; }
    if (e + 2u < o.y) { x.z = input[o.x + e + 2u]; }
    if (e + 3u < o.y) { x.w = input[o.x + e + 3u]; }
#else
    if (e < o.y) {
        x = input[(o.x + e) / 4u];
        x = select(x, id, vec4<u32>(e) + vec4<u32>(0u, 1u, 2u, 3u) >= vec4<u32>(o.y));
    }
#endif
    return x;
}

fn load_tile(tile: u32, v: ptr<function, array<vec4<Elem>, VPT>>) {
    let o = tile_origin(tile);
#unroll I VPT
    (*v)[{{I}}] = load_vec4(o, vec_slot({{I}}u));
#endunroll
}

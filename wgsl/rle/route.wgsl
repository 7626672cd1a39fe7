// Chained chunks past one storage binding (rle/chain.wgsl): picks on the GPU the output window a
// chunk writes through (the first of the two adjacent windows it binds). The host records the
// chunk's kernel once per candidate window, each
// dispatched indirectly; this one-invocation pass gives the chosen candidate the chunk's grid and
// every other one an empty grid. Candidate a < n_alt - 1 starts at a * stride, the last one at
// `top`; the chunk's items start at chain[0] (items before it), and the host chose stride and
// window size so that the candidate with the largest start at or below chain[0] holds them all
// (with the window after it).
// args: 4 words per candidate (x, y, z groups, unused).

struct Params {
    stride: u32,
    top: u32,
    n_alt: u32,
    gx: u32,
    gy: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> chain: array<u32>;
@group(0) @binding(2) var<storage, read_write> args: array<u32>;

@compute @workgroup_size(1)
fn main() {
    let before = chain[0];
    var pick = params.n_alt - 1u;
    if (before < params.top) {
        pick = before / params.stride;
    }
    for (var a = 0u; a < params.n_alt; a++) {
        let on = a == pick;
        args[4u * a] = select(0u, params.gx, on);
        args[4u * a + 1u] = select(0u, params.gy, on);
        args[4u * a + 2u] = select(0u, 1u, on);
        args[4u * a + 3u] = 0u;
    }
}

// Box filter from a summed-area table: four lookups per output pixel.
// Defines: T (the SAT's type: f32, u32 or i32; integer differences wrap, which is exact while a
// window's true sum fits the type).

struct Params {
    H: u32,
    W: u32,
    C: u32,
    radius: u32,
    normalize: u32,   // 0: divide by (2r+1)^2 (zero outside); 1: by the pixels inside the image
    y_lo: u32,        // the rows written: y_lo .. y_lo + y_n - 1, to dst from its start (a band of a
    y_n: u32,         // larger image keeps its own rows; pywgpuprims/sat.py _record_box_bands)
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> sat: array<{{T}}>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;

fn S(y: i32, x: i32, ch: u32) -> {{T}} {
    if (y < 0 || x < 0) {
        return {{T}}(0);
    }
    return sat[(u32(y) * params.W + u32(x)) * params.C + ch];
}

// One invocation per output element (pixel and channel); a 1-D grid split over x and y.
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let e = (wid.x + wid.y * nwg.x) * 256u + lid;
    if (e >= params.y_n * params.W * params.C) {
        return;
    }
    let ch = e % params.C;
    let pix = e / params.C;
    let x = pix % params.W;
    let y = params.y_lo + pix / params.W;
    let r = i32(params.radius);
    let y0 = max(i32(y) - r, 0) - 1;
    let x0 = max(i32(x) - r, 0) - 1;
    let y1 = min(i32(y) + r, i32(params.H) - 1);
    let x1 = min(i32(x) + r, i32(params.W) - 1);
    let s = S(y1, x1, ch) - S(y0, x1, ch) - S(y1, x0, ch) + S(y0, x0, ch);
    var d = f32(2 * r + 1) * f32(2 * r + 1);
    if (params.normalize != 0u) {
        d = f32(y1 - y0) * f32(x1 - x0);
    }
    dst[e] = f32(s) / d;
}

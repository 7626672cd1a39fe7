// Premultiplied float colour per pixel (tile-major) -> straight-alpha RGBA8 rows.

struct Params {
    width: u32,
    height: u32,
    tiles_x: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> pix: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> image: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x) * 256u + lid;
    if (i >= params.width * params.height) {
        return;
    }
    let x = i % params.width;
    let y = i / params.width;
    let tile = (y >> 4u) * params.tiles_x + (x >> 4u);
    let c = pix[2u * (tile * 256u + (y & 15u) * 16u + (x & 15u))];
    var s = vec4<f32>(0.0);
    if (c.w > 0.0) {
        s = vec4<f32>(c.xyz / c.w, c.w);
    }
    let q = vec4<u32>(floor(clamp(s, vec4<f32>(0.0), vec4<f32>(1.0)) * 255.0 + 0.5));
    image[i] = q.x | (q.y << 8u) | (q.z << 16u) | (q.w << 24u);
}

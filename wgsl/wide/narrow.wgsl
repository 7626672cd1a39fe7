// Packs 32-bit results into 8- or 16-bit elements (numpy's bool, int8, uint8, int16, uint16,
// float16 results, computed in 32 bits): invocation w writes output word w from PER consecutive
// elements (PER = 4 for 8 bits, 2 for 16), the low bits of each integer (numpy's wrap-around) or
// float16 rounded to nearest (F16). Words past the last element are padded with zero bits.

struct Params {
    n: u32,        // elements
    n_words: u32,  // output words
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> input: array<u32>;
@group(0) @binding(2) var<storage, read_write> output: array<u32>;

const PER: u32 = {{PER}}u;
const WG: u32 = 256u;

fn elem(i: u32) -> u32 {
    return select(0u, input[min(i, params.n - 1u)], i < params.n);
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let w = gid.x + gid.y * nwg.x * WG;
    if (w >= params.n_words) {
        return;
    }
    let i = w * PER;
#if F16
    output[w] = pack2x16float(vec2<f32>(bitcast<f32>(elem(i)), bitcast<f32>(elem(i + 1u))));
#else
    var word = 0u;
    for (var k = 0u; k < PER; k++) {
        word |= (elem(i + k) & ((1u << (32u / PER)) - 1u)) << (k * (32u / PER));
    }
    output[w] = word;
#endif
}

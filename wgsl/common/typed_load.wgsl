// Loads element i of `input` as the accumulator type (common/typed_monoid.wgsl's Acc). Defines:
//   IN_U8, IN_I8, IN_U16, IN_I16, IN_F16, IN_U32, IN_I32, IN_F32, IN_P64 or IN_F64: the input's
//        element kind. 8- and 16-bit elements are read from packed little-endian u32 words, so
//        narrow inputs are widened here, without a host-side copy.
//   CONVERT: an expression turning `r` (the raw element: u32, i32, f32, vec2<u32> or f64) into Acc.
// The including kernel declares `input` (array<u32>, or array<vec2<u32>> / array<f64> for 64-bit).

fn load_acc(i: u32) -> Acc {
#if IN_U8
    let r = (input[i >> 2u] >> ((i & 3u) * 8u)) & 0xffu;
#elif IN_I8
    let r = bitcast<i32>(input[i >> 2u] << (24u - (i & 3u) * 8u)) >> 24u;
#elif IN_U16
    let r = (input[i >> 1u] >> ((i & 1u) * 16u)) & 0xffffu;
#elif IN_I16
    let r = bitcast<i32>(input[i >> 1u] << (16u - (i & 1u) * 16u)) >> 16u;
#elif IN_F16
    let r = unpack2x16float(input[i >> 1u])[i & 1u];
#elif IN_U32
    let r = input[i];
#elif IN_I32
    let r = bitcast<i32>(input[i]);
#elif IN_F32
    let r = bitcast<f32>(input[i]);
#else
    let r = input[i];
#endif
    return {{CONVERT}};
}

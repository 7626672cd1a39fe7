// Recursive filter, the RT baseline (RT): one thread per line, the whole line, causal then
// anticausal, over `padlen` samples of the extension (filters/boundary.wgsl). See filters/recfilter_tiles.wgsl.

#include "filters/recfilter_tiles.wgsl"
@group(0) @binding(1) var<storage, read> src: array<f32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;

#include "filters/boundary.wgsl"

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let l = gid.x;
    let ch = gid.y;
    if (l >= params.nlines) {
        return;
    }
    let N = params.N;
    var s = vec3<f32>(0.0);
    if (params.causal != 0u) {
        s = causal_init(l, ch);
        for (var p = 0u; p < N; p++) {
            s = step(s, src[addr(l, ch, p)]);
            dst[addr(l, ch, p)] = s.x;
        }
    }
    if (params.anti != 0u) {
        var e = anti_init(l, ch, s);
        for (var q = 0u; q < N; q++) {
            let p = N - 1u - q;
            var v: f32;
            if (params.causal != 0u) {
                v = dst[addr(l, ch, p)];
            } else {
                v = src[addr(l, ch, p)];
            }
            e = step(e, v);
            dst[addr(l, ch, p)] = e.x;
        }
    }
}

// Baselines for the benchmark harness: a copy and a read-only pass over the same bytes as a
// primitive. Each invocation moves VECS_PER_THREAD vec4 words, strided by the workgroup so that
// every load instruction of a workgroup touches one contiguous span.

struct Params {
    n_vec4: u32,     // vec4<u32> words to move
    n_groups: u32,   // workgroups asked for (the grid may round up)
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<vec4<u32>>;
#if COPY
@group(0) @binding(2) var<storage, read_write> dst: array<vec4<u32>>;
#else
@group(0) @binding(2) var<storage, read_write> partials: array<u32>;
#endif

const WG: u32 = {{WG}}u;
const VEC4_PER_THREAD: u32 = {{VECS_PER_THREAD}}u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let group = wid.x + wid.y * nwg.x;
    if (group >= params.n_groups) {
        return;
    }
    let base = group * WG * VEC4_PER_THREAD + lid;
    // Every load is issued before the first store or combine: without that the compiler may keep
    // one load in flight per invocation (src and dst could alias), and the yardstick then depends
    // on memory latency, which varied from buffer to buffer on an H100.
    let last = params.n_vec4 - 1u;
    var v: array<vec4<u32>, VEC4_PER_THREAD>;
#unroll K VECS_PER_THREAD
    v[{{K}}] = src[min(base + {{K}}u * WG, last)];
#endunroll
#if COPY
#unroll K VECS_PER_THREAD
    if (base + {{K}}u * WG <= last) {
        dst[base + {{K}}u * WG] = v[{{K}}];
    }
#endunroll
#else
    var acc = vec4<u32>(0u);
#unroll K VECS_PER_THREAD
    acc ^= v[{{K}}];
#endunroll
    // A write that depends on every load keeps the compiler from dropping them; it almost never happens.
    if (all(acc == vec4<u32>(0x9e3779b9u))) {
        partials[group] = acc.x;
    }
#endif
}

// Overflow check of run-length decoding input: `ends` is the inclusive u32 scan of the counts.
// Each count is below 2^32, so the true sum passed 2^32 exactly where the wrapped scan decreases;
// any invocation that sees that sets status[0] to 1.

struct Params {
    n: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> ends: array<u32>;
@group(0) @binding(2) var<storage, read_write> status: array<atomic<u32>>;

const WG: u32 = 256u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * WG;
    if (i == 0u || i >= params.n) {
        return;
    }
    if (ends[i] < ends[i - 1u]) {
        atomicMax(&status[0], 1u);
    }
}

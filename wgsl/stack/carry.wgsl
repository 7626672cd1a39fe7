// Bracket matching past one binding (pywgpuprims/stack.py, _BracketChunks), GATHER: before chunk
// k's leaf, the slots of the carried stack it may read, from its lowest height minus 1 up to the
// stack size it starts with, copied into `carried` (slot h at carried[h + 1 - lowest]). The stack
// is not one array: each earlier chunk j holds its own segment, the opens it left unclosed from its
// lowest height up (slot h at segment[h - low_j]); slot h belongs to the last chunk j with
// low_j <= h that no later chunk cut below h. One dispatch per earlier chunk (its segment bound),
// indirect, on the grid chunk k's TOP sized to the slots (spine.wgsl CARRY; none: an empty grid),
// looping past 65535 workgroups: work O(slots read), nothing per element of the input.
// Defines: none.

struct Params {
    k: u32,  // the chunk about to run
    j: u32,  // the earlier chunk whose segment is bound
}

const WG: u32 = 256u;

@group(0) @binding(0) var<uniform> params: Params;
// Per chunk: (closes left unmatched before it, stack size before it, its lowest height, 0) (spine.wgsl CARRY).
@group(0) @binding(1) var<storage, read> carry: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> segment: array<i32>;
@group(0) @binding(3) var<storage, read_write> carried: array<i32>;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x;  // a 1-D grid of at most 65535 workgroups
    let threads = nwg.x * WG;
    let k = params.k;
    let j = params.j;
    let low = carry[k].z;
    // chunk j's slots still on the stack: from its lowest height up to its end size, cut by the
    // lowest height of every chunk since
    var top = carry[j + 1u].y;
    for (var c = j + 1u; c < k; c++) {
        top = min(top, carry[c].z);
    }
    let first = max(max(low, 1u) - 1u, carry[j].z);
    let end = min(carry[k].y, top);
    if (first >= end) {
        return;
    }
    let trips = (end - first - 1u) / threads + 1u;
    for (var t = 0u; t < trips; t++) {
        let h = first + i + t * threads;
        if (h < end) {
            carried[h + 1u - low] = segment[h - carry[j].z];
        }
    }
}

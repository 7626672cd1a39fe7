// Bracket matching, multi-pass method, pass 5 (CHAIN, after the spine): each partition's owner
// chain entry from the global min tree. Defines: see stack/bracket_common.wgsl.

#include "stack/bracket_common.wgsl"
#include "stack/tree.wgsl"

// Per partition q: (M[q] = its minimum stack size, parent(q) = nearest earlier partition with a
// smaller minimum, first(q) = nearest earlier partition with a minimum below q's start height,
// q's start height); INF for "none". The leaf walks first(p), parent(first(p)), ... to find the
// owner of each height of the incoming stack it needs: heights only decrease along a partition.
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = gid.x + gid.y * nwg.x * WG;
    if (q >= params.n_parts) {
        return;
    }
    let m = tree[params.tree_size + q];
    let bp = part_start[q];
    chain[q] = vec4<u32>(m, bitcast<u32>(gtree_query(q, m)), bitcast<u32>(gtree_query(q, bp)), bp);
#if CHUNK_OUT
    tails[q] = heights_from(q + 1u);  // past one binding: the leaf pushes opens only where M[q] is below it
#endif
}

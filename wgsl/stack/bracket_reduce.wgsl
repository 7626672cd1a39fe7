// Bracket matching, multi-pass method, pass 1 (REDUCE): each partition's bicyclic summary and its
// list of unmatched opens. Defines: see stack/bracket_common.wgsl.

#include "stack/bracket_common.wgsl"

fn store_entry(i: u32, v: u32) {
    opens_out[i] = v;
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
#if SUBGROUPS
        @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) sg_size: u32,
#endif
        @builtin(num_workgroups) nwg: vec3<u32>) {
#if SUBGROUPS
    g_lane = lane;
    g_sg = min(sg_size, WG);  // a workgroup smaller than the subgroup fills only part of it
#endif
    let p = wid.x + wid.y * nwg.x;
    if (p >= params.n_parts) {
        return;
    }
    let bic = write_list(p, lid, load_masks(p, lid), vec3<i32>(0, BIG_RUN, 0));
    if (lid == WG - 1u) {
        part_bic[p] = bic;
    }
}

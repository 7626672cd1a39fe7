// Which vec4 slots of a tile an invocation holds. Expects WG, VEC4_PER_THREAD and, with SUBGROUPS, the entry
// point to set g_lane and g_sg_size (g_lid always).
//   SUBGROUPS: subgroup g owns a contiguous run of VEC4_PER_THREAD * size vec4; lane l holds slot i*size + l of
//              it, so each load instruction of a subgroup reads one contiguous span;
//   SUBGROUPS and SLOT_MAJOR: the workgroup's i-th load is the tile's i-th span of WG vec4, in
//              invocation order (rle/compact.wgsl's BITMASK: 8 consecutive invocations' flags
//              make one word of the tile's bitmask);
//   otherwise: invocation t holds the contiguous slots t*VEC4_PER_THREAD .. t*VEC4_PER_THREAD + VEC4_PER_THREAD - 1.

var<private> g_lid: u32;
var<private> g_lane: u32;
var<private> g_sg_size: u32;

// vec4 slot (0 .. WG*VEC4_PER_THREAD-1) of this invocation's i-th vec4
fn vec_slot(i: u32) -> u32 {
#if SUBGROUPS
#if SLOT_MAJOR
    return i * WG + g_lid;
#else
    let sgid = g_lid / g_sg_size;
    return (sgid * VEC4_PER_THREAD + i) * g_sg_size + g_lane;
#endif
#else
    return g_lid * VEC4_PER_THREAD + i;
#endif
}

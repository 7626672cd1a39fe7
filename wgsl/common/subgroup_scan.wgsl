// Subgroup scans for the monoid of common/monoid.wgsl, for any power-of-two subgroup size.
// Call in subgroup-uniform control flow. Define OP_ADD to use the built-in add scans.

fn sg_inclusive(x: Elem, lane: u32, size: u32) -> Elem {
#if OP_ADD
    return subgroupInclusiveAdd(x);
#else
    // Hillis-Steele with shuffles: log2(size) steps.
    var v = x;
    for (var d = 1u; d < size; d = d << 1u) {
        let y = subgroupShuffleUp(v, d);
        if (lane >= d) {
            v = combine(y, v);
        }
    }
    return v;
#endif
}

// Exclusive scan from an inclusive one: shift up by one lane, identity in lane 0.
fn sg_exclusive_of(incl: Elem, lane: u32) -> Elem {
    let y = subgroupShuffleUp(incl, 1u);
    return select(y, identity(), lane == 0u);
}

fn sg_reduce(x: Elem) -> Elem {
    return {{SG_REDUCE}}(x);
}

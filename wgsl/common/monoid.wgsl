// A monoid over one 32-bit element type, chosen on the host (pywgpuprims/_monoid.py).
// Defines expected: T (u32 | i32 | f32), IDENTITY (a WGSL expression of type T),
// COMBINE (an expression in `a` and `b`), SG_REDUCE (the subgroup builtin that reduces with it).
// Values cross workgroups as raw bits (atomics hold u32), hence to_bits/from_bits.

alias Elem = {{T}};

fn identity() -> Elem {
    return {{IDENTITY}};
}

fn combine(a: Elem, b: Elem) -> Elem {
    return {{COMBINE}};
}

fn to_bits(v: Elem) -> u32 {
    return bitcast<u32>(v);
}

fn from_bits(b: u32) -> Elem {
    return bitcast<Elem>(b);
}

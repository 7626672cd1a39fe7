// A monoid over an accumulator of any numpy dtype the typed reduce-then-scan (wgsl/wide/) takes,
// chosen on the host (pywgpuprims/_dtypes.py). Defines expected:
//   ACC: the accumulator's WGSL type (u32, i32, f32, u64, i64, f64, or vec2<u32> for 64-bit
//        integers as word pairs, common/u64.wgsl); IDENTITY and COMBINE (an expression in a, b).
//   ACC_FLOAT: the accumulator is a float (the NaN-aware min/max below exist).

#include "common/u64.wgsl"

alias Acc = {{ACC}};

fn identity() -> Acc {
    return {{IDENTITY}};
}

#if ACC_FLOAT
// np.minimum / np.maximum: a NaN operand gives NaN.
fn nan_min(a: Acc, b: Acc) -> Acc {
    return select(select(min(a, b), b, b != b), a, a != a);
}

fn nan_max(a: Acc, b: Acc) -> Acc {
    return select(select(max(a, b), b, b != b), a, a != a);
}

// np.fmin / np.fmax: a NaN operand is ignored (NaN only if both are).
fn fmin(a: Acc, b: Acc) -> Acc {
    return select(select(min(a, b), a, b != b), b, a != a);
}

fn fmax(a: Acc, b: Acc) -> Acc {
    return select(select(max(a, b), a, b != b), b, a != a);
}
#endif

fn combine(a: Acc, b: Acc) -> Acc {
    return {{COMBINE}};
}

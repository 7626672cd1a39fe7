// A monoid over an accumulator of any numpy dtype the typed reduce-then-scan (wgsl/wide/) takes,
// chosen on the host (pywgpuprims/_dtypes.py). Defines expected:
//   ACC: the accumulator's WGSL type (u32, i32, f32, u64, i64, f64, or vec2<u32> for 64-bit
//        integers as word pairs, common/u64.wgsl); IDENTITY and COMBINE (an expression in a, b).
//   ACC_FLOAT: the accumulator is a float (the NaN-aware min/max below exist); ACC_F64: float64.

#include "common/u64.wgsl"

alias Acc = {{ACC}};

fn identity() -> Acc {
    return {{IDENTITY}};
}

#if ACC_FLOAT
// float32 NaN by its bits (exponent all ones, mantissa not zero), which no compiler folds away;
// float64 (whose bits need shader-int64 to reach) as the one value not equal to itself, written
// `!(x == x)`: on lavapipe `x != x` came out false for NaN.
fn is_nan(x: Acc) -> bool {
#if ACC_F64
    return !(x == x);
#else
    return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
#endif
}

// np.minimum / np.maximum: a NaN operand gives NaN.
fn nan_min(a: Acc, b: Acc) -> Acc {
    return select(select(min(a, b), b, is_nan(b)), a, is_nan(a));
}

fn nan_max(a: Acc, b: Acc) -> Acc {
    return select(select(max(a, b), b, is_nan(b)), a, is_nan(a));
}

// np.fmin / np.fmax: a NaN operand is ignored (NaN only if both are).
fn fmin(a: Acc, b: Acc) -> Acc {
    return select(select(min(a, b), a, is_nan(b)), b, is_nan(a));
}

fn fmax(a: Acc, b: Acc) -> Acc {
    return select(select(max(a, b), a, is_nan(b)), b, is_nan(a));
}
#endif

fn combine(a: Acc, b: Acc) -> Acc {
    return {{COMBINE}};
}

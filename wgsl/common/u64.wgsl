// 64-bit integers as pairs of 32-bit words, vec2<u32>(low, high), for adapters without
// `shader-int64`. Addition carries from the low word; comparisons read the high word first (as
// i32 for the signed forms). Bitwise ops work on vec2<u32> as they are. Wrap-around is modulo
// 2^64, as numpy's int64/uint64 arithmetic.

fn u64_add(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}

fn u64_lt(a: vec2<u32>, b: vec2<u32>) -> bool {
    return a.y < b.y || (a.y == b.y && a.x < b.x);
}

fn i64_lt(a: vec2<u32>, b: vec2<u32>) -> bool {
    return bitcast<i32>(a.y) < bitcast<i32>(b.y) || (a.y == b.y && a.x < b.x);
}

fn u64_min(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return select(b, a, u64_lt(a, b));
}

fn u64_max(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return select(a, b, u64_lt(a, b));
}

fn i64_min(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return select(b, a, i64_lt(a, b));
}

fn i64_max(a: vec2<u32>, b: vec2<u32>) -> vec2<u32> {
    return select(a, b, i64_lt(a, b));
}

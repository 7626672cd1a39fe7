// The lowest lane set in a ballot, or `size` if none.
fn first_lane(b: vec4<u32>, size: u32) -> u32 {
    var first = size;
    if (b.w != 0u) { first = 96u + firstTrailingBit(b.w); }
    if (b.z != 0u) { first = 64u + firstTrailingBit(b.z); }
    if (b.y != 0u) { first = 32u + firstTrailingBit(b.y); }
    if (b.x != 0u) { first = firstTrailingBit(b.x); }
    return first;
}

// How many lanes up to and including `lane` are set in a ballot.
fn count_through(b: vec4<u32>, lane: u32) -> u32 {
    let w = lane / 32u;
    let upto = (2u << (lane % 32u)) - 1u;  // (lane 31: 2 << 31 wraps to 0, so every bit)
    var n = 0u;
#unroll K 4
    n += countOneBits(select(select(0u, b[{{K}}] & upto, {{K}}u == w), b[{{K}}], {{K}}u < w));
#endunroll
    return n;
}

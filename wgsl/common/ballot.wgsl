// The lowest lane set in a ballot, or `size` if none.
fn first_lane(b: vec4<u32>, size: u32) -> u32 {
    var first = size;
    if (b.w != 0u) { first = 96u + firstTrailingBit(b.w); }
    if (b.z != 0u) { first = 64u + firstTrailingBit(b.z); }
    if (b.y != 0u) { first = 32u + firstTrailingBit(b.y); }
    if (b.x != 0u) { first = firstTrailingBit(b.x); }
    return first;
}

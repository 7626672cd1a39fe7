// MurmurHash3's 32-bit finaliser: the block checksums' mixing step (hist.wgsl sums fmix of the
// words, place.wgsl finishes the sum with the block's length; pywgpuprims.fse._codec._fmix is the
// host's twin).

fn fmix(x: u32) -> u32 {
    var v = x;
    v ^= v >> 16u;
    v *= 0x85ebca6bu;
    v ^= v >> 13u;
    v *= 0xc2b2ae35u;
    v ^= v >> 16u;
    return v;
}

// Bounded reads of `comp` (needs params.comp_words) and the backward bit reader of FSE streams.
// Included by decode.wgsl and refdec.wgsl.

fn cw(i: u32) -> u32 {
    if (i < params.comp_words && i < arrayLength(&comp)) {
        return comp[i];
    }
    return 0u;
}

// Backward bit reader over the stream at word bw: fields are read from bit `pos` downwards,
// never below bit `sb`. A two-word window (hi = word p1, lo = word p1 - 1) is refilled one
// word at a time. Function-scope state passed by pointer (module-scope private variables were
// kept in memory by the NVIDIA Vulkan compiler: ~100x slower loops).
struct Rb {
    bw: u32,
    pos: u32,
    sb: u32,
    p1: u32,
    hi: u32,
    lo: u32,
}

fn rb_init(bw: u32, pos: u32, sb: u32) -> Rb {
    var r: Rb;
    r.bw = bw;
    r.pos = pos;
    r.sb = sb;
    r.p1 = (max(pos, 1u) - 1u) >> 5u;
    r.hi = cw(bw + r.p1);
    r.lo = select(0u, cw(bw + r.p1 - 1u), r.p1 > 0u);
    return r;
}

// No per-read underflow test: a stream that reads past its start leaves pos != sb at the
// end (checked by the caller), and every load stays bounded meanwhile.
fn rb_read(rb: ptr<function, Rb>, k: u32) -> u32 {
    let pos = (*rb).pos - k;
    (*rb).pos = pos;
    let p1 = (*rb).p1;
    let hi = (*rb).hi;
    let lo = (*rb).lo;
    let r = pos + 32u - p1 * 32u;   // field start within the 64-bit window (lo at bit 0)
    let a = (lo >> (r & 31u)) | (hi << ((32u - r) & 31u));
    let v = select(a, hi >> ((r - 32u) & 31u), r >= 32u);
    if (pos > 0u && ((pos - 1u) >> 5u) < p1) {
        (*rb).p1 = p1 - 1u;
        (*rb).hi = lo;
        (*rb).lo = select(0u, cw((*rb).bw + p1 - 2u), p1 > 1u);
    }
    return v & ((1u << k) - 1u);
}


// Binary search over the runs' ends for the decoders (rle/decode.wgsl, rle/expand.wgsl), which
// provide `fn end_of(r: u32) -> u32`, the end (exclusive) of run r. At most 33 steps: bounded.

// First run in [lo, hi) whose end exceeds p; hi when there is none.
fn search(lo_in: u32, hi_in: u32, p: u32) -> u32 {
    var lo = lo_in;
    var hi = hi_in;
    for (var s = 0u; s < 33u; s++) {
        if (lo >= hi) {
            break;
        }
        let mid = lo + (hi - lo) / 2u;
        if (end_of(mid) > p) {
            hi = mid;
        } else {
            lo = mid + 1u;
        }
    }
    return lo;
}

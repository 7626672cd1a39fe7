// Bit writer into `stage` (LSB first, u32 words, bounded by a slot capacity) and the NCount
// header writer (needs the workgroup array `normv`). Included by encode.wgsl and reftab.wgsl.

var<private> acc: u32;
var<private> nacc: u32;
var<private> wpos: u32;
var<private> wbase: u32;
var<private> wcap: u32;
var<private> over: bool;

fn writer(base: u32, cap: u32) {
    acc = 0u;
    nacc = 0u;
    wpos = 0u;
    wbase = base;
    wcap = cap;
    over = false;
}

// Append the low k bits of v (k <= 16), least significant bit first.
fn put(v: u32, k: u32) {
    let m = v & ((1u << k) - 1u);
    acc |= m << nacc;
    nacc += k;
    if (nacc >= 32u) {
        if (wpos < wcap) {
            stage[wbase + wpos] = acc;
        } else {
            over = true;
        }
        wpos += 1u;
        nacc -= 32u;
        acc = m >> (k - nacc);
    }
}

// Write the last partial word; returns the stream length in bits.
fn finish() -> u32 {
    let bits = wpos * 32u + nacc;
    if (nacc > 0u) {
        if (wpos < wcap) {
            stage[wbase + wpos] = acc;
        } else {
            over = true;
        }
        wpos += 1u;
    }
    return bits;
}

#if !WRITER_ONLY
fn write_ncount(tl: u32, maxsv: u32) {
    let size = i32(1u << tl);
    var remaining = size + 1;
    var threshold = size;
    var nbits = tl + 1u;
    put(tl - 5u, 4u);
    var s = 0u;
    var prev0 = false;
    loop {
        if (s > maxsv || remaining <= 1) {
            break;
        }
        if (prev0) {
            var start = s;
            while (s <= maxsv && normv[s] == 0) {
                s += 1u;
            }
            if (s > maxsv) {
                break;
            }
            while (s >= start + 24u) {
                start += 24u;
                put(0xffffu, 16u);
            }
            while (s >= start + 3u) {
                start += 3u;
                put(3u, 2u);
            }
            put(s - start, 2u);
        }
        var count = normv[s];
        s += 1u;
        let mx = (2 * threshold - 1) - remaining;
        remaining -= abs(count);
        count += 1;
        if (count >= threshold) {
            count += mx;
        }
        put(u32(count), nbits - select(0u, 1u, count < mx));
        prev0 = count == 1;
        while (remaining < threshold && threshold > 1) {
            nbits -= 1u;
            threshold >>= 1u;
        }
    }
}
#endif

// The same writer as a function-scope struct passed by pointer (no module-scope private state;
// on the H100 this measured the same speed as the private-variable writer above).
struct Bw {
    acc: u32,
    nacc: u32,
    wpos: u32,
    base: u32,
    cap: u32,
    over: u32,
}

fn bw_put(w: ptr<function, Bw>, v: u32, k: u32) {
    let m = v & ((1u << k) - 1u);
    let n = (*w).nacc + k;
    let a = (*w).acc | (m << (*w).nacc);
    if (n >= 32u) {
        let p = (*w).wpos;
        if (p < (*w).cap) {
            stage[(*w).base + p] = a;
        } else {
            (*w).over = 1u;
        }
        (*w).wpos = p + 1u;
        (*w).nacc = n - 32u;
        (*w).acc = m >> (k - (n - 32u));
    } else {
        (*w).nacc = n;
        (*w).acc = a;
    }
}

// Write the last partial word; returns the stream length in bits.
fn bw_finish(w: ptr<function, Bw>) -> u32 {
    let bits = (*w).wpos * 32u + (*w).nacc;
    if ((*w).nacc > 0u) {
        if ((*w).wpos < (*w).cap) {
            stage[(*w).base + (*w).wpos] = (*w).acc;
        } else {
            (*w).over = 1u;
        }
        (*w).wpos += 1u;
    }
    return bits;
}

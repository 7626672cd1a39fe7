// The reference symbol spread, built by all WG invocations together (interleaved mode).
// Low-probability symbols (norm -1) take the top slots, one each, from the top down; the others
// go, in symbol order and norm times each, to positions k * step mod size for k = 0, 1, ...,
// skipping positions above the low-probability area. Here the k's are split over invocations,
// the accepted ones ranked by a scan of per-invocation counts, and each rank's symbol found by
// binary search in the cumulative counts. Needs WG, TSIZE and `normv` (filled, then a barrier).
// Result: symbol of slot u = spr_get(u).

var<workgroup> spr: array<atomic<u32>, TSIZE / 4u>;   // 4 slots per word
var<workgroup> cpos: array<u32, 257>;                 // cumulative positive counts
var<workgroup> kcnt: array<u32, WG>;
var<workgroup> sh_high: u32;
var<workgroup> snext: array<u32, 257>;                // per-symbol cursor of spread_next

fn spr_get(u: u32) -> u32 {
    return (atomicLoad(&spr[u >> 2u]) >> (8u * (u & 3u))) & 255u;
}

fn parallel_spread(lid: u32, tl: u32, maxsv: u32) {
    let size = 1u << tl;
    let mask = size - 1u;
    for (var i = lid; i < TSIZE / 4u; i += WG) {
        atomicStore(&spr[i], 0u);
    }
    workgroupBarrier();
    if (lid == 0u) {
        var c = 0u;
        var high = size - 1u;
        for (var s = 0u; s <= maxsv; s++) {
            cpos[s] = c;
            let v = normv[s];
            if (v == -1) {
                atomicOr(&spr[(high & mask) >> 2u], s << (8u * (high & 3u)));
                high -= 1u;
            }
            c += u32(max(v, 0));
        }
        cpos[maxsv + 1u] = c;
        sh_high = high;
    }
    workgroupBarrier();
    let high = sh_high;
    let step = (size >> 1u) + (size >> 3u) + 3u;
    let per = (size + WG - 1u) / WG;
    let k0 = min(lid * per, size);
    let k1 = min(k0 + per, size);
    var n = 0u;
    for (var k = k0; k < k1; k++) {
        if (((k * step) & mask) <= high) {
            n += 1u;
        }
    }
    kcnt[lid] = n;
    workgroupBarrier();
    if (lid == 0u) {
        var t = 0u;
        for (var i = 0u; i < WG; i++) {
            let v = kcnt[i];
            kcnt[i] = t;
            t += v;
        }
    }
    workgroupBarrier();
    var r = kcnt[lid];
    var lo = 0u;
    var hi = maxsv + 1u;
    while (hi - lo > 1u) {
        let mid = (lo + hi) / 2u;
        if (cpos[mid] <= r) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    var s = lo;
    for (var k = k0; k < k1; k++) {
        let pos = (k * step) & mask;
        if (pos <= high) {
            while (s < maxsv && cpos[s + 1u] <= r) {
                s += 1u;
            }
            atomicOr(&spr[pos >> 2u], s << (8u * (pos & 3u)));
            r += 1u;
        }
    }
    workgroupBarrier();
}

// Walks the table chunk by chunk (call with u = c + lid, c = 0, WG, ... < size, from uniform
// control flow, after parallel_spread): returns (symbol of slot u, or 256 past the table;
// snext[symbol] + the slots of that symbol before u) and advances snext[symbol] past the chunk.
// The includer fills snext with each symbol's first value. Every invocation stays busy: ranks
// within a chunk are counted, not found by one owner walking the whole spread. Reuses kcnt.
fn spread_next(lid: u32, u: u32, size: u32) -> vec2<u32> {
    let s = select(256u, spr_get(u), u < size);
    kcnt[lid] = s;
    workgroupBarrier();
    var rank = 0u;
    var tot = 0u;
    for (var i = 0u; i < WG; i++) {
        let same = kcnt[i] == s;
        rank += select(0u, 1u, same && i < lid);
        tot += select(0u, 1u, same);
    }
    let x = snext[min(s, 255u)] + rank;
    workgroupBarrier();
    if (s < 256u && rank == 0u) {
        snext[s] = x + tot;
    }
    return vec2<u32>(s, x);
}

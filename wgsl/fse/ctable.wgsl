// FSE encoding table built in workgroup memory from a block's normalised counts.
// Needs: WG, TSIZE constants; normv (loaded by the caller, then a barrier).
// REF (one coding invocation per workgroup, small footprint): invocation 0 does the sequential
// parts (cumulative counts, symbol spread, state table) and the state table is u16 pairs.
// Otherwise all invocations build the spread (fse/spread.wgsl) and fill the state table, each
// the first 32 owning the symbols s with s % 32 == lid (WG >= 32). Writes only inside the workgroup arrays.

var<workgroup> normv: array<i32, 256>;
var<workgroup> cumul: array<u32, 257>;
var<workgroup> tt: array<vec2<u32>, 256>;        // (deltaNbBits, deltaFindState as u32)
#if REF
var<workgroup> spread: array<u32, TSIZE / 4u>;   // symbol per table slot, 4 per word
var<workgroup> stab: array<u32, TSIZE / 2u>;     // next states, u16 pairs
#else
#include "fse/spread.wgsl"
var<workgroup> stab: array<u32, TSIZE>;          // next states
#endif

fn highbit(x: u32) -> u32 {
    return 31u - countLeadingZeros(x);
}

#if REF
fn set_byte(i: u32, s: u32) {
    let sh = 8u * (i & 3u);
    let w = i >> 2u;
    spread[w] = (spread[w] & ~(255u << sh)) | (s << sh);
}

fn get_byte(i: u32) -> u32 {
    return (spread[i >> 2u] >> (8u * (i & 3u))) & 255u;
}

fn set16(i: u32, v: u32) {
    let sh = 16u * (i & 1u);
    let w = i >> 1u;
    stab[w] = (stab[w] & ~(0xffffu << sh)) | (v << sh);
}

fn get16(i: u32) -> u32 {
    return (stab[i >> 1u] >> (16u * (i & 1u))) & 0xffffu;
}
#else
fn get16(i: u32) -> u32 {
    return stab[i];
}
#endif

fn build_ctable(lid: u32, tl: u32, maxsv: u32) {
    let size = 1u << tl;
    if (lid == 0u) {
        var c = 0u;
        for (var s = 0u; s <= maxsv; s++) {
            cumul[s] = c;
            let v = normv[s];
            c += select(u32(max(v, 0)), 1u, v == -1);
        }
        cumul[maxsv + 1u] = c;
    }
    workgroupBarrier();
    for (var s = lid; s < 256u; s += WG) {
        let v = normv[s];
        var dnb = ((tl + 1u) << 16u) - size;
        var dfs = 0u;
        if (s <= maxsv && (v == -1 || v == 1)) {
            dnb = (tl << 16u) - size;
            dfs = cumul[s] - 1u;
        } else if (s <= maxsv && v > 1) {
            let mbo = tl - highbit(u32(v) - 1u);
            dnb = (mbo << 16u) - (u32(v) << mbo);
            dfs = cumul[s] - u32(v);
        }
        tt[s] = vec2<u32>(dnb, dfs);
    }
    workgroupBarrier();
#if REF
    if (lid == 0u) {
        let mask = size - 1u;
        var high = size - 1u;
        for (var s = 0u; s <= maxsv; s++) {
            if (normv[s] == -1) {
                set_byte(high, s);
                high -= 1u;
            }
        }
        let step = (size >> 1u) + (size >> 3u) + 3u;
        var pos = 0u;
        var guard = 0u;
        for (var s = 0u; s <= maxsv; s++) {
            let v = u32(max(normv[s], 0));
            for (var k = 0u; k < v; k++) {
                set_byte(pos, s);
                pos = (pos + step) & mask;
                while (pos > high && guard < size) {
                    pos = (pos + step) & mask;
                    guard += 1u;
                }
            }
        }
        for (var u = 0u; u < size; u++) {
            let s = get_byte(u);
            let idx = cumul[s];
            cumul[s] = idx + 1u;
            set16(idx & mask, size + u);
        }
    }
#else
    parallel_spread(lid, tl, maxsv);
    let mask = size - 1u;
    // only the first 32 invocations scan the spread (each owns the symbols s % 32 == lid): the
    // scan is the same length for any owner count, so more owners only cost issue slots
    if (lid < 32u) {
        for (var w = 0u; w < size / 4u; w++) {
            let word = atomicLoad(&spr[w]);
            for (var q = 0u; q < 4u; q++) {
                let s = (word >> (8u * q)) & 255u;
                if ((s & 31u) == lid) {
                    let idx = cumul[s];
                    cumul[s] = idx + 1u;
                    stab[idx & mask] = size + 4u * w + q;
                }
            }
        }
    }
#endif
    workgroupBarrier();
}

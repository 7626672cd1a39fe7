// FSE encoding table built in workgroup memory from a block's normalised counts.
// Needs: WG, TSIZE constants; normv (loaded by the caller, then a barrier).
// All invocations build the spread (fse/spread.wgsl); the first 32 fill the state table, each
// owning the symbols s with s % 32 == lid (WG >= 32). Writes only inside the workgroup arrays.

var<workgroup> normv: array<i32, 256>;
var<workgroup> cumul: array<u32, 257>;
var<workgroup> tt: array<vec2<u32>, 256>;        // (deltaNbBits, deltaFindState as u32)
#include "fse/spread.wgsl"
var<workgroup> stab: array<u32, TSIZE>;          // next states

fn highbit(x: u32) -> u32 {
    return 31u - countLeadingZeros(x);
}

fn get16(i: u32) -> u32 {
    return stab[i];
}

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
    workgroupBarrier();
}

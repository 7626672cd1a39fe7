// FSE encoding table built in workgroup memory from a block's normalised counts.
// Needs: WG, TSIZE constants; normv (loaded by the caller, then a barrier).
// All invocations build the spread (fse/spread.wgsl), then fill the state table chunk by chunk
// (spread_chunk). Writes only inside the workgroup arrays (or through put_tt / put_stab).

var<workgroup> normv: array<i32, 256>;
#include "fse/spread.wgsl"
#if !CTABLE_OUT
// The table in workgroup memory. An includer defining CTABLE_OUT provides put_tt / put_stab
// itself (reftab.wgsl writes straight to global memory: workgroup memory is scarce, see there).
var<workgroup> tt: array<vec2<u32>, 256>;        // (deltaNbBits, deltaFindState as u32)
var<workgroup> stab: array<u32, TSIZE>;          // next states

fn put_tt(s: u32, dnb: u32, dfs: u32) {
    tt[s] = vec2<u32>(dnb, dfs);
}

fn put_stab(i: u32, state: u32) {
    stab[i] = state;
}

fn get16(i: u32) -> u32 {
    return stab[i];
}
#endif

fn highbit(x: u32) -> u32 {
    return 31u - countLeadingZeros(x);
}

fn build_ctable(lid: u32, tl: u32, maxsv: u32) {
    let size = 1u << tl;
    if (lid == 0u) {
        var c = 0u;
        for (var s = 0u; s <= maxsv; s++) {
            snext[s] = c;
            let v = normv[s];
            c += select(u32(max(v, 0)), 1u, v == -1);
        }
        snext[maxsv + 1u] = c;
    }
    workgroupBarrier();
    for (var s = lid; s < 256u; s += WG) {
        let v = normv[s];
        var dnb = ((tl + 1u) << 16u) - size;
        var dfs = 0u;
        if (s <= maxsv && (v == -1 || v == 1)) {
            dnb = (tl << 16u) - size;
            dfs = snext[s] - 1u;
        } else if (s <= maxsv && v > 1) {
            let mbo = tl - highbit(u32(v) - 1u);
            dnb = (mbo << 16u) - (u32(v) << mbo);
            dfs = snext[s] - u32(v);
        }
        put_tt(s, dnb, dfs);
    }
    workgroupBarrier();
    parallel_spread(lid, tl, maxsv);
    let mask = size - 1u;
    // slot u of symbol s: the next state at index cumul[s] + (slots of s before u) (snext starts
    // as the cumulative counts)
    for (var c = 0u; c < size; c += WG) {
        let q = spread_next(lid, c + lid, size);
        if (q.x < 256u) {
            put_stab(q.y & mask, size + c + lid);
        }
    }
    workgroupBarrier();
}

// rle/compact.wgsl's encoder without subgroups (STAGED): the store in rounds through workgroup
// memory. Included by rle/compact.wgsl.

// One round of the staged store (RLE without subgroups): the tile's runs of ranks [base, base +
// STAGE) staged in workgroup memory, then written out contiguously. With `skip` (tiles of more than
// one round), a vec4 with no item in the round costs one branch: a tile of random values has about 0.9 runs per element and six
// rounds, each of which used to test all of its elements (H100: random 0..9 153 -> 174 G el/s).
// Single-round tiles keep the branch-free form, in a call of their own: with one call site, runs of
// ~16 (one round a tile) ran 2.4% slower.
fn stage_round(tile: u32, v: ptr<function, array<vec4<u32>, VEC4_PER_THREAD>>, f: ptr<function, array<u32, VEC4_PER_THREAD>>,
               pre: ptr<function, array<u32, VEC4_PER_THREAD>>, offset: u32, count: u32, base: u32, skip: bool) {
    let tile_e0 = tile * TILE_V * 4u;
    // stage[k - base] = the tile's k-th run value, for k in [base, base + STAGE), and stage_pos its
    // tile-local start, one past the round
#unroll I VEC4_PER_THREAD
    {
        let m = (*f)[{{I}}];
        let vv = (*v)[{{I}}];
        var p = (*pre)[{{I}}] - base;  // wraps below base: then far past STAGE
        // a vec4 with no item in this round skips its stores at one branch (a subgroup's loads
        // are consecutive in rank, so its lanes mostly agree)
        if (!skip || ((*pre)[{{I}}] + countOneBits(m) > base && (*pre)[{{I}}] <= base + STAGE)) {
            let e = vec_slot({{I}}u) * 4u;
            if ((m & 1u) != 0u && p <= STAGE) { stage_pos[p] = e; }
            if ((m & 1u) != 0u && p < STAGE) { stage[p] = vv.x; }
            p += m & 1u;
            if ((m & 2u) != 0u && p <= STAGE) { stage_pos[p] = e + 1u; }
            if ((m & 2u) != 0u && p < STAGE) { stage[p] = vv.y; }
            p += (m >> 1u) & 1u;
            if ((m & 4u) != 0u && p <= STAGE) { stage_pos[p] = e + 2u; }
            if ((m & 4u) != 0u && p < STAGE) { stage[p] = vv.z; }
            p += (m >> 2u) & 1u;
            if ((m & 8u) != 0u && p <= STAGE) { stage_pos[p] = e + 3u; }
            if ((m & 8u) != 0u && p < STAGE) { stage[p] = vv.w; }
        }
    }
#endunroll
    workgroupBarrier();
    let lo = offset + base;                 // output words [lo, hi) this round
    let hi = offset + min(base + STAGE, count);
    let last = offset + count - 1u;         // the tile's last run: its start, for rle/fixup.wgsl
    // vec4 words q with 4q .. 4q + 3 in [lo, hi) are written whole; the partial first and
    // last words belong partly to neighbouring tiles, so they are written element by element
    let q0 = lo / 4u;
    let q1 = (hi + 3u) / 4u;
    for (var q = q0 + g_lid; q < q1; q += WG) {
        let w = 4u * q;
        if (w >= lo && w + 4u <= hi) {
            let s = w - lo;
            let ps = vec4<u32>(stage_pos[s], stage_pos[s + 1u], stage_pos[s + 2u], stage_pos[s + 3u]);
            let pn = vec4<u32>(ps.yzw, stage_pos[s + 4u]);
            let is_last = vec4<u32>(w) + vec4<u32>(0u, 1u, 2u, 3u) == vec4<u32>(last);
            put_vec(q, vec4<u32>(stage[s], stage[s + 1u], stage[s + 2u], stage[s + 3u]),
                    select(pn - ps, vec4<u32>(tile_e0 + chain_pos()) + ps, is_last));
        } else {
            for (var c = 0u; c < 4u; c++) {
                let k = w + c;
                if (k >= lo && k < hi) {
                    put_val(k, stage[k - lo]);
                    let ps = stage_pos[k - lo];
                    put_count(k, select(stage_pos[k - lo + 1u] - ps, tile_e0 + chain_pos() + ps, k == last));
                }
            }
        }
    }
    if (g_lid == 0u && base == 0u) {
        head[2u * (tile + chain_tile())] = offset + chain_win();
        head[2u * (tile + chain_tile()) + 1u] = tile_e0 + chain_pos() + stage_pos[0];
    }
    workgroupBarrier();
}

// The end of a tile of the RLE/compaction kernels (rle/compact.wgsl and rle/fused.wgsl), which
// declare store_tile, finish_total, partials, tile_state, repair_args and params identically:
// RTS_REDUCE writes the tile's count; RTS_DOWNSWEEP stores with the scanned partial; the single
// pass looks back for the tile's offset, stores, and the last tile to finish arms the repair.
// Offsets and the total are the chunk's own plus what came before (rle/chain.wgsl; 0 unchained).
// Called by the whole workgroup.
fn end_tile(tile: u32, v: ptr<function, array<vec4<u32>, VEC4_PER_THREAD>>, f: ptr<function, array<u32, VEC4_PER_THREAD>>,
            pre: ptr<function, array<u32, VEC4_PER_THREAD>>, aggregate: u32) {
    let lid = g_lid;
#if RTS_REDUCE
    if (lid == 0u) {
        partials[tile] = aggregate;
    }
#elif RTS_DOWNSWEEP
    let prefix = partials[tile];
    store_tile(tile, v, f, pre, prefix + chain_shift(), aggregate);
    if (lid == 0u && tile == params.n_tiles - 1u) {
        finish_total(prefix + aggregate + chain_before());
    }
#else
    let withhold = withholds(tile, params.withhold_period);
    var prefix = 0u;
    var ok = true;
    if (tile != 0u) {
#if !EARLY_AGGREGATE
        if (lid == 0u && !withhold) {
            publish_state(tile, FLAG_AGGREGATE, aggregate);
        }
#endif
#if EARLY_PUBLISH
        g_publish = !withhold;
        g_aggregate = aggregate;
#endif
        let lb = decoupled_lookback(tile, 0u, 0u, lid, params.max_steps, params.max_self);
        prefix = lb.prefix;
        ok = lb.ok;
    }
    if (ok) {
        if (lid == 0u) {
#if EARLY_PUBLISH
            if (!withhold && !g_published) {
#else
            if (!withhold) {
#endif
                publish_state(tile, FLAG_INCLUSIVE, prefix + aggregate);
            }
            if (tile == params.n_tiles - 1u) {
                finish_total(prefix + aggregate + chain_before());
            }
        }
        store_tile(tile, v, f, pre, prefix + chain_shift(), aggregate);
    }
#if ARM_REPAIR
    // Word 3 counts finished tiles (times 2) with a give-up bit in bit 0: the last tile to finish
    // arms the repair passes when any tile gave up. (Only where the host recorded the repair: the
    // count's round trip holds every workgroup back at its end.)
    if (lid == 0u) {
        if (!ok) {
            atomicOr(&tile_state[3], 1u);
        }
        let total = atomicAdd(&tile_state[3], 2u) + 2u;
        if (total >> 1u == params.n_tiles) {
            let failed = (total & 1u) != 0u;
            repair_args[0] = select(0u, params.repair_x, failed);
            repair_args[1] = select(0u, params.repair_y, failed);
            repair_args[2] = select(0u, 1u, failed);
            repair_args[4] = select(0u, 1u, failed);
            repair_args[5] = select(0u, 1u, failed);
            repair_args[6] = select(0u, 1u, failed);
        }
    }
#endif
#endif
}

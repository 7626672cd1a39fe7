// Batched scan over a monoid: the single-pass chained scan with decoupled lookback and decoupled
// fallback (SINGLE_PASS), and the reduce-then-scan passes (RTS_REDUCE, then scan/rts_spine.wgsl,
// then RTS_DOWNSWEEP), which are the portable baseline and the repair path.
// Defines: T, IDENTITY, COMBINE, SG_REDUCE, OP_ADD (monoid); WG, VEC4_PER_THREAD; SUBGROUPS; SCALAR;
// EXCLUSIVE; SPIN_LIMIT; exactly one of SINGLE_PASS, RTS_REDUCE, RTS_DOWNSWEEP.

#include "common/monoid.wgsl"

struct Params {
    row_len: u32,         // elements per segment (the scanned axis)
    tiles_per_row: u32,
    n_tiles: u32,         // tiles in this dispatch (rows * tiles_per_row)
    carry_in: u32,        // 1: segment 0 starts from carry[chunk - 1] (chunked 1-D scans)
    chunk: u32,
    withhold_period: u32, // test switch: every tile t with t % period == period - 1 withholds its state
    max_steps: u32,       // lookback step budget before the tile reduces what is left itself
    max_self: u32,        // tiles it may reduce itself; past that it gives up to the repair pass
    n_groups: u32,        // workgroups asked for (the grid may round up)
    repair_x: u32,        // the reduce-then-scan grid the last tile arms if any tile gave up
    repair_y: u32,
    rows: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
#if SCALAR
@group(0) @binding(1) var<storage, read> input: array<Elem>;
#else
@group(0) @binding(1) var<storage, read> input: array<vec4<Elem>>;
#endif
#if SINGLE_PASS
@group(0) @binding(2) var<storage, read_write> tile_state: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read_write> carry: array<u32>;
@group(0) @binding(5) var<storage, read_write> repair_args: array<u32>;
#else
@group(0) @binding(2) var<storage, read_write> partials: array<u32>;
#endif
#if !RTS_REDUCE
#if SCALAR
@group(0) @binding(4) var<storage, read_write> output: array<Elem>;
#else
@group(0) @binding(4) var<storage, read_write> output: array<vec4<Elem>>;
#endif
#endif

#include "scan/tile.wgsl"
#if SUBGROUPS
#include "common/subgroup_scan.wgsl"
#endif
#if SINGLE_PASS
#include "common/lookback.wgsl"
#endif

var<workgroup> wg_scan: array<Elem, WG>;
var<workgroup> wg_aggregate: Elem;

#if SUBGROUPS
// A subgroup's exclusive scan of `r` and its total, in one go. Owner and fallback both take their
// totals from here, so a tile's aggregate has the same bits whoever computes it.
// The total comes from the inclusive scan's last lane: a second subgroup reduction gave wrong
// carries on an H100 (Vulkan, driver 580, 4 vec4 per invocation), a miscompile stepped around.
struct SgScan {
    ex: Elem,
    total: Elem,
}

fn sg_scan_total(r: Elem) -> SgScan {
    let incl = sg_inclusive(r, g_lane, g_sg_size);
    return SgScan(sg_exclusive_of(incl, g_lane), subgroupShuffle(incl, g_sg_size - 1u));
}
#endif

fn reduce4(x: vec4<Elem>) -> Elem {
    return combine(combine(combine(x.x, x.y), x.z), x.w);
}

// A workgroup's combination of its partial totals.
struct WorkgroupPrefix {
    before: Elem,     // combined partial totals of the subgroups (invocations) before this one's
    aggregate: Elem,  // all of them: the tile's aggregate
}

// Combines each subgroup's (each invocation's, without subgroups) partial total `run` across the
// workgroup. Owner and fallback both go through here, so a tile's aggregate has the same bits
// whoever computes it, floats included. Called by the whole workgroup; wg_scan may be rewritten
// once every invocation has passed a barrier after the call.
fn workgroup_prefix(run: Elem) -> WorkgroupPrefix {
#if SUBGROUPS
    let sgid = g_lid / g_sg_size;
    if (g_lane == 0u) {
        wg_scan[sgid] = run;
    }
    workgroupBarrier();
    let nsg = WG / g_sg_size;
    if (g_lid == 0u) {
        var acc = identity();
        for (var s = 0u; s < nsg; s++) {
            let t = wg_scan[s];
            wg_scan[s] = acc;
            acc = combine(acc, t);
        }
        wg_aggregate = acc;
#if SINGLE_PASS
        publish_own_aggregate(acc);
#endif
    }
    workgroupBarrier();
    return WorkgroupPrefix(wg_scan[sgid], wg_aggregate);
#else
    // Hillis-Steele over the invocations' totals.
    wg_scan[g_lid] = run;
    workgroupBarrier();
    for (var d = 1u; d < WG; d = d << 1u) {
        var t = wg_scan[g_lid];
        if (g_lid >= d) {
            t = combine(wg_scan[g_lid - d], t);
        }
        workgroupBarrier();
        wg_scan[g_lid] = t;
        workgroupBarrier();
    }
    var before = identity();
    if (g_lid > 0u) {
        before = wg_scan[g_lid - 1u];
    }
#if SINGLE_PASS
    if (g_lid == WG - 1u) {
        publish_own_aggregate(wg_scan[WG - 1u]);
    }
#endif
    return WorkgroupPrefix(before, wg_scan[WG - 1u]);
#endif
}

// Scans the tile held in `v` in place: afterwards each element holds the combination of the
// elements of its subgroup's run (its invocation's run, without subgroups) up to and including it
// (excluding it, with EXCLUSIVE); the result's `before` goes in front of all of them. Rewriting the
// tile instead of keeping a prefix per vec4 saves VEC4_PER_THREAD registers across the lookback. The aggregate
// is combined exactly as fallback_aggregate does, so both give the same bits, floats included.
// Called by the whole workgroup.
fn scan4(seed: Elem, x: vec4<Elem>) -> vec4<Elem> {
    var y: vec4<Elem>;
#if EXCLUSIVE
    y.x = seed;
    y.y = combine(y.x, x.x);
    y.z = combine(y.y, x.y);
    y.w = combine(y.z, x.z);
#else
    y.x = combine(seed, x.x);
    y.y = combine(y.x, x.y);
    y.z = combine(y.y, x.z);
    y.w = combine(y.z, x.w);
#endif
    return y;
}

fn local_scan(v: ptr<function, array<vec4<Elem>, VEC4_PER_THREAD>>) -> WorkgroupPrefix {
    var run = identity();
#if SUBGROUPS
#unroll I VEC4_PER_THREAD
    {
        let x = (*v)[{{I}}];
        let sc = sg_scan_total(reduce4(x));
        (*v)[{{I}}] = scan4(combine(run, sc.ex), x);
        run = combine(run, sc.total);
    }
#endunroll
#else
#unroll I VEC4_PER_THREAD
    {
        let x = (*v)[{{I}}];
        (*v)[{{I}}] = scan4(run, x);
        run = combine(run, reduce4(x));
    }
#endunroll
#endif
    let wp = workgroup_prefix(run);
#if !SUBGROUPS
    workgroupBarrier();  // wg_scan may be reused by the next local_scan
#endif
    return wp;
}

#if !RTS_REDUCE
// Writes the scanned tile: element = prefix (tiles before) + before (runs before in the tile) + v.
fn store_tile(tile: u32, v: ptr<function, array<vec4<Elem>, VEC4_PER_THREAD>>, prefix: Elem) {
    let o = tile_origin(tile);
#unroll I VEC4_PER_THREAD
    {
        let e = vec_slot({{I}}u) * 4u;
        let x = (*v)[{{I}}];
        let y = vec4<Elem>(combine(prefix, x.x), combine(prefix, x.y), combine(prefix, x.z), combine(prefix, x.w));
#if SCALAR
        if (e < o.y) { output[o.x + e] = y.x; }
        if (e + 1u < o.y) { output[o.x + e + 1u] = y.y; }
        if (e + 2u < o.y) { output[o.x + e + 2u] = y.z; }
        if (e + 3u < o.y) { output[o.x + e + 3u] = y.w; }
#else
        if (e < o.y) {
            output[(o.x + e) / 4u] = y;  // a partial last vec4 spills into the buffer's padding
        }
#endif
    }
#endunroll
}
#endif

#if SINGLE_PASS
// A tile's partial total for workgroup_prefix (its subgroup's, or its invocation's), recomputed
// vec4 by vec4 (no tile held in registers) in exactly the order local_scan combines it.
fn tile_run(tile: u32) -> Elem {
    let o = tile_origin(tile);
    var run = identity();
#unroll I VEC4_PER_THREAD
#if SUBGROUPS
    {
        run = combine(run, sg_scan_total(reduce4(load_vec4(o, vec_slot({{I}}u)))).total);
    }
#else
    run = combine(run, reduce4(load_vec4(o, vec_slot({{I}}u))));
#endif
#endunroll
    return run;
}

// A predecessor's aggregate, with the same bits as its owner's, floats included.
fn fallback_aggregate(tile: u32) -> Elem {
    let agg = workgroup_prefix(tile_run(tile)).aggregate;
    workgroupBarrier();  // wg_scan and wg_aggregate are rewritten by the next call
    return agg;
}

// The workgroup's total of tile_run shares (the lookback's last resort, common/lookback.wgsl).
fn runs_total(run: Elem) -> Elem {
    let total = workgroup_prefix(run).aggregate;
    workgroupBarrier();
    return total;
}
#endif

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32,
#if SUBGROUPS
        @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) sg_size: u32,
#endif
        @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    g_lid = lid;
#if SUBGROUPS
    g_lane = lane;
    g_sg_size = sg_size;
#endif
#if SINGLE_PASS
    let tile = take_ticket(lid);
#else
    let tile = wid.x + wid.y * nwg.x;
#endif
    if (tile >= params.n_tiles) {
        return;
    }
    var v: array<vec4<Elem>, VEC4_PER_THREAD>;
    load_tile(tile, &v);
#if SINGLE_PASS
    let seg_first = tile - tile % params.tiles_per_row;
    let withhold = withholds(tile, params.withhold_period);
    if (tile != seg_first && !withhold) {
        g_agg_tile = tile;
    }
#endif
    let wp = local_scan(&v);
#if SINGLE_PASS
    g_agg_tile = NO_TILE;
#endif
    let aggregate = wp.aggregate;

#if RTS_REDUCE
    if (lid == 0u) {
        partials[tile] = to_bits(aggregate);
    }
#elif RTS_DOWNSWEEP
    store_tile(tile, &v, combine(from_bits(partials[tile]), wp.before));
#else
    var seed = identity();
    if (params.carry_in != 0u) {
        seed = from_bits(carry[params.chunk - 1u]);
    }
    var prefix = seed;
    var ok = true;
    if (tile != seg_first) {
        g_publish = !withhold;  // the lookback publishes the inclusive value as soon as it has it
        g_aggregate = aggregate;
        let lb = decoupled_lookback(tile, seg_first, seed, lid, params.max_steps, params.max_self);
        prefix = lb.prefix;
        ok = lb.ok;
    }
    if (ok) {
        let inclusive = combine(prefix, aggregate);
        if (lid == 0u) {
            if (!withhold && !g_published) {
                publish_state(tile, FLAG_INCLUSIVE, inclusive);
            }
            if (tile == params.n_tiles - 1u) {
                carry[params.chunk] = to_bits(inclusive);
            }
        }
        store_tile(tile, &v, combine(prefix, wp.before));
    } else if (lid == 0u) {
        // Arm the repair dispatches (their arguments were cleared to zero: no workgroups). Every
        // tile that gives up writes the same values, so no ordering is needed.
        repair_args[0] = params.repair_x;
        repair_args[1] = params.repair_y;
        repair_args[2] = 1u;
        repair_args[3] = params.rows;
        repair_args[4] = 1u;
        repair_args[5] = 1u;
    }
#endif
}

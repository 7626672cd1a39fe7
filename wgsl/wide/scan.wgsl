// Single-pass scan into a 64-bit accumulator (u64 / i64 with shader-int64, word pairs without,
// f64 with shader-f64 and shader-int64) of 32- or 64-bit input: the chained scan of
// scan/scan.wgsl (tiles by atomic ticket, the aggregate published the moment the tile's local scan
// has it, a subgroup-parallel lookback that publishes the inclusive value as soon as it knows it,
// decoupled fallback, a bounded walk) with 64-bit tile state (wide/lookback.wgsl). Needs subgroups.
// Tile = WG * NV vec4<u32> loads of PER_VEC elements each (two 64-bit or four 32-bit elements);
// subgroup g owns a contiguous run of NV * size vectors and lane l holds vector i * size + l of it,
// so each load of a subgroup reads one contiguous span. Results are written as vec4<u32> (two
// 64-bit values: bits, whatever the accumulator).
// Defines: common/typed_monoid.wgsl's; the IN_* flag and CONVERT (in `r`) of common/typed_load.wgsl;
// TO_WORDS (in `a`) / FROM_WORDS (in `w`): Acc to and from vec2<u32>(low, high); WG, NV, PER_VEC,
// MAX_NSG (WG / 4); ALIGNED (segments start on a vector: whole-vector loads and stores);
// EXCLUSIVE; SPIN_LIMIT.

#include "common/typed_monoid.wgsl"

struct Params {
    row_len: u32,          // elements per segment
    tiles_per_row: u32,
    n_tiles: u32,          // rows * tiles_per_row
    carry_in: u32,         // 1: segment 0 starts from carry[chunk - 1] (1-D scans cut in dispatches)
    chunk: u32,
    withhold_period: u32,  // test hook: tile t with t % period == period - 1 withholds its state
    max_steps: u32,        // lookback steps before the walk (wide/lookback.wgsl)
    max_self: u32,         // predecessors the walk may cover (the host keeps segments within it)
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> input: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> tile_state: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read_write> carry: array<vec2<u32>>;
@group(0) @binding(4) var<storage, read_write> output: array<vec4<u32>>;

const WG: u32 = {{WG}}u;
const NV: u32 = {{NV}}u;
const PER_VEC: u32 = {{PER_VEC}}u;
const ITEMS: u32 = NV * PER_VEC;
const TILE: u32 = WG * ITEMS;
const NO_TILE: u32 = 0xffffffffu;

var<private> g_lid: u32;
var<private> g_lane: u32;
var<private> g_sg_size: u32;
var<private> g_own_tile: u32 = NO_TILE;  // set around the tile's own local scan: publish its aggregate

var<workgroup> wg_tot: array<Acc, {{MAX_NSG}}>;
var<workgroup> wg_agg: Acc;

fn to_words(a: Acc) -> vec2<u32> {
    return {{TO_WORDS}};
}

fn from_words(w: vec2<u32>) -> Acc {
    return {{FROM_WORDS}};
}

// Element k (0 .. PER_VEC - 1) of an input vector, as the accumulator.
fn vec_acc(q: vec4<u32>, k: u32) -> Acc {
#if IN_P64
    let r = vec2<u32>(q[2u * k], q[2u * k + 1u]);
#elif IN_F64
    let r = bitcast<f64>((u64(q[2u * k + 1u]) << 32u) | u64(q[2u * k]));
#elif IN_I32
    let r = bitcast<i32>(q[k]);
#elif IN_F32
    let r = bitcast<f32>(q[k]);
#else
    let r = q[k];
#endif
    return {{CONVERT}};
}

fn vec_slot(i: u32) -> u32 {
    return ((g_lid / g_sg_size) * NV + i) * g_sg_size + g_lane;
}

// (index of the tile's first element in the binding, number of valid elements in it)
fn tile_origin(tile: u32) -> vec2<u32> {
    let row = tile / params.tiles_per_row;
    let start = (tile - row * params.tiles_per_row) * TILE;
    return vec2<u32>(row * params.row_len + start, min(TILE, params.row_len - start));
}

// The invocation's ITEMS elements of a tile, those past its end the identity. Branch-free past the
// uniform whole-tile test (subgroup operations follow); indices are clamped into the tile.
fn load_tile(o: vec2<u32>, v: ptr<function, array<Acc, ITEMS>>) {
#if ALIGNED
    if (o.y == TILE) {
        let base = o.x / PER_VEC;
#unroll I NV
        {
            let q = input[base + vec_slot({{I}}u)];
#unroll C PER_VEC
            (*v)[{{I}}u * PER_VEC + {{C}}u] = vec_acc(q, {{C}}u);
#endunroll
        }
#endunroll
        return;
    }
#endif
    let last = o.x + o.y - 1u;
#unroll I NV
#unroll C PER_VEC
    {
        let e = vec_slot({{I}}u) * PER_VEC + {{C}}u;
        let i = min(o.x + e, last);
        let x = vec_acc(input[i / PER_VEC], i % PER_VEC);
        (*v)[{{I}}u * PER_VEC + {{C}}u] = select(identity(), x, e < o.y);
    }
#endunroll
#endunroll
}

fn sg_shuffle_up(a: Acc, d: u32) -> Acc {
    return from_words(subgroupShuffleUp(to_words(a), d));
}

// Inclusive subgroup scan (Hillis-Steele by shuffles of the two words, any size up to 128): no
// loop, so a tile's reduction costs no loop trips (lavapipe's cap, wide/lookback.wgsl).
fn sg_inclusive(x: Acc) -> Acc {
    var v = x;
#unroll D 7
    if ((1u << {{D}}u) < g_sg_size) {  // subgroup-uniform
        let y = sg_shuffle_up(v, 1u << {{D}}u);
        v = select(v, combine(y, v), g_lane >= (1u << {{D}}u));
    }
#endunroll
    return v;
}

fn sg_last(a: Acc) -> Acc {
    return from_words(subgroupShuffle(to_words(a), g_sg_size - 1u));
}

struct WorkgroupPrefix {
    before: Acc,     // combined totals of the subgroups before this one's
    aggregate: Acc,  // the tile's aggregate
}

// Combines each subgroup's total across the workgroup in a fixed order, so owner and fallback get
// the same bits, floats included; publishes the owner's aggregate at once (g_own_tile). Called by
// the whole workgroup; wg_tot may be rewritten once every invocation has passed a barrier after.
fn workgroup_prefix(run: Acc) -> WorkgroupPrefix {
    let sgid = g_lid / g_sg_size;
    if (g_lane == 0u) {
        wg_tot[sgid] = run;
    }
    workgroupBarrier();
    if (g_lid == 0u) {
        let nsg = WG / g_sg_size;
        var acc = identity();
        for (var s = 0u; s < nsg; s++) {  // at most MAX_NSG loop trips
            let t = wg_tot[s];
            wg_tot[s] = acc;
            acc = combine(acc, t);
        }
        wg_agg = acc;
        if (g_own_tile != NO_TILE) {
            publish_state(g_own_tile, FLAG_AGGREGATE, acc);
        }
    }
    workgroupBarrier();
    return WorkgroupPrefix(wg_tot[sgid], wg_agg);
}

// A vector's elements in order (the order local_scan and tile_run combine them in).
fn vec_total(v: ptr<function, array<Acc, ITEMS>>, i: u32) -> Acc {
    var t = (*v)[i * PER_VEC];
#unroll C PER_VEC
    if ({{C}}u > 0u) {
        t = combine(t, (*v)[i * PER_VEC + {{C}}u]);
    }
#endunroll
    return t;
}

// Scans the invocation's elements in place: afterwards element k holds the combination of its
// subgroup's run up to and including it (excluding it, with EXCLUSIVE).
fn local_scan(v: ptr<function, array<Acc, ITEMS>>) -> WorkgroupPrefix {
    var run = identity();
#unroll I NV
    {
        let incl = sg_inclusive(vec_total(v, {{I}}u));
        var s = combine(run, select(sg_shuffle_up(incl, 1u), identity(), g_lane == 0u));
        run = combine(run, sg_last(incl));
#unroll C PER_VEC
        {
            let x = (*v)[{{I}}u * PER_VEC + {{C}}u];
#if EXCLUSIVE
            (*v)[{{I}}u * PER_VEC + {{C}}u] = s;
            s = combine(s, x);
#else
            s = combine(s, x);
            (*v)[{{I}}u * PER_VEC + {{C}}u] = s;
#endif
        }
#endunroll
    }
#endunroll
    return workgroup_prefix(run);
}

// This invocation's share of a tile's total (its subgroup's run, as local_scan combines it),
// reloaded from the input; no loops.
fn tile_run(tile: u32) -> Acc {
    var v: array<Acc, ITEMS>;
    load_tile(tile_origin(tile), &v);
    var run = identity();
#unroll I NV
    run = combine(run, sg_last(sg_inclusive(vec_total(&v, {{I}}u))));
#endunroll
    return run;
}

// A predecessor's aggregate, with the same bits as its owner's, floats included.
fn fallback_aggregate(tile: u32) -> Acc {
    let agg = workgroup_prefix(tile_run(tile)).aggregate;
    workgroupBarrier();  // wg_tot and wg_agg are rewritten by the next call
    return agg;
}

// The workgroup's total of tile_run shares (the walk's last step, wide/lookback.wgsl).
fn runs_total(run: Acc) -> Acc {
    let total = workgroup_prefix(run).aggregate;
    workgroupBarrier();
    return total;
}

#include "wide/lookback.wgsl"
#include "common/withhold.wgsl"

// Writes the scanned tile: element = prefix (tiles and subgroups before) + v.
fn store_tile(o: vec2<u32>, v: ptr<function, array<Acc, ITEMS>>, prefix: Acc) {
#if ALIGNED
    if (o.y == TILE) {
        let base = o.x / 2u;
#unroll I NV
#unroll P OUT_PER
        {
            let k = {{I}}u * PER_VEC + 2u * {{P}}u;
            output[base + vec_slot({{I}}u) * (PER_VEC / 2u) + {{P}}u] =
                vec4<u32>(to_words(combine(prefix, (*v)[k])), to_words(combine(prefix, (*v)[k + 1u])));
        }
#endunroll
#endunroll
        return;
    }
#endif
#unroll I NV
#unroll C PER_VEC
    {
        let e = vec_slot({{I}}u) * PER_VEC + {{C}}u;
        if (e < o.y) {
            let i = o.x + e;
            let w = to_words(combine(prefix, (*v)[{{I}}u * PER_VEC + {{C}}u]));
            output[i / 2u][2u * (i % 2u)] = w.x;
            output[i / 2u][2u * (i % 2u) + 1u] = w.y;
        }
    }
#endunroll
#endunroll
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32,
        @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) sg_size: u32) {
    g_lid = lid;
    g_lane = lane;
    g_sg_size = sg_size;
    let tile = take_ticket(lid);
    if (tile >= params.n_tiles) {
        return;
    }
    let o = tile_origin(tile);
    var v: array<Acc, ITEMS>;
    load_tile(o, &v);
    let seg_first = tile - tile % params.tiles_per_row;
    let withhold = withholds(tile, params.withhold_period);
    if (tile != seg_first && !withhold) {
        g_own_tile = tile;
    }
    let wp = local_scan(&v);
    g_own_tile = NO_TILE;
    var seed = identity();
    if (params.carry_in != 0u) {
        seed = from_words(carry[params.chunk - 1u]);
    }
    var prefix = seed;
    if (tile != seg_first) {
        g_publish = !withhold;  // the lookback publishes the inclusive value as soon as it has it
        g_aggregate = wp.aggregate;
        prefix = decoupled_lookback(tile, seg_first, seed, lid, params.max_steps, params.max_self);
    }
    if (lid == 0u) {
        let inclusive = combine(prefix, wp.aggregate);
        if (!withhold && !g_published) {
            publish_state(tile, FLAG_INCLUSIVE, inclusive);
        }
        if (tile == params.n_tiles - 1u) {
            carry[params.chunk] = to_words(inclusive);
        }
    }
    store_tile(o, &v, combine(prefix, wp.before));
}

// Fused stream compaction / run-start compaction: the input is read once.
//
// Each tile of TILE_V vec4 words flags its elements (RLE: a run starts where an element differs
// from the one before it, compared as bits; COMPACT: the mask is nonzero; NONZERO: the element
// itself is nonzero), counts the flags, scans the counts in workgroup memory, takes its output
// offset from the single-pass lookback over u32 counts (common/lookback.wgsl, add monoid), and
// writes the flagged elements' indices, compacted and in order. It serves uint8 values (RLE and
// COMPACT; 32-bit values go through rle/compact.wgsl) and NONZERO.
// RLE writes the run START positions (plus the sentinel n after the last run); the run lengths
// come from rle/finish.wgsl as next_start - start, so runs that cross tiles need no special case.
//
// Modes (exactly one): SINGLE_PASS, RTS_REDUCE (per-tile counts into `partials`),
// RTS_DOWNSWEEP (offsets from `partials`, after scan/rts_spine.wgsl): the last two are the repair
// the single pass arms on the GPU (indirect dispatch) when a lookback exhausted its budget.
// PAIRS with VALUES (RLE of 64-bit values in one pass): each staged run start also writes its
// value (both words, read again from x: the tile was just loaded) to `out_val` and its length
// (the next start in the tile minus its own) to `counts`; the tile's last run leaves its start in
// its count slot and its first run's index and start in `head`, and rle/fixup.wgsl finishes the
// runs that cross tiles, as for 32-bit values (rle/compact.wgsl).
// IDX64 (NONZERO): indices are written as int64 word pairs (low, high), the chunk's 64-bit base
// (base_lo, base_hi) added with its carry, so indices past 2^32 are exact.
// Defines: WG, VEC4_PER_THREAD, SUBGROUPS, EB8 (x is uint8, packed 4 to a word), PAIRS (RLE of 64-bit
// values as word pairs, two to a vec4, compared as both words), VALUES, IDX64, RLE | COMPACT | NONZERO,
// MASK_U8 (COMPACT: mask bytes, else 32-bit mask words), WRITE_IDX,
// SPIN_LIMIT, LOOKBACK_WINDOW and the u32 add monoid (T, IDENTITY, COMBINE, SG_REDUCE, OP_ADD).

#include "common/monoid.wgsl"

struct Params {
    n: u32,               // elements
    n_vec4: u32,          // vec4 words holding them
    n_mask_words: u32,    // COMPACT: 32-bit words of the mask buffer
    n_tiles: u32,
    n_groups: u32,
    withhold_period: u32, // test switch: tiles t with t % period == period - 1 withhold their state
    max_steps: u32,
    max_self: u32,        // predecessors a lookback past its step budget may walk (lookback.wgsl)
    repair_x: u32,
    repair_y: u32,
    fin_per_group: u32,   // items per workgroup of the finishing pass (its indirect grid)
    max_groups: u32,      // the device's grid limit per dimension
#if CHAINED
    win_base: u32,        // rle/chain.wgsl: the output window's first element
    pos_base: u32,        // the chunk's first element
    tile_base: u32,
    has_prev: u32,
    win_len: u32,         // elements of the output window; past it the next window (the _hi bindings)
#endif
#if IDX64
    base_lo: u32,         // added to every index (a 64-bit base: low and high words)
    base_hi: u32,
#endif
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> x: array<vec4<u32>>;
#if COMPACT
@group(0) @binding(2) var<storage, read> mask: array<u32>;
#endif
#if SINGLE_PASS
@group(0) @binding(3) var<storage, read_write> tile_state: array<atomic<u32>>;
// [0..2] repair grid, [4..6] repair spine grid (indirect dispatch arguments)
@group(0) @binding(8) var<storage, read_write> repair_args: array<u32>;
#else
@group(0) @binding(5) var<storage, read_write> partials: array<u32>;
#endif
#if !RTS_REDUCE
// [0] number of items written, [4..6] grid of the finishing pass (indirect arguments).
@group(0) @binding(4) var<storage, read_write> info: array<u32>;
#if WRITE_IDX
#if IDX64
@group(0) @binding(6) var<storage, read_write> out_idx: array<vec2<u32>>;
#else
@group(0) @binding(6) var<storage, read_write> out_idx: array<u32>;
#endif
#endif
#if VALUES
@group(0) @binding(7) var<storage, read_write> out_val: array<vec2<u32>>;
@group(0) @binding(9) var<storage, read_write> counts: array<u32>;
@group(0) @binding(10) var<storage, read_write> head: array<u32>;
#endif
#endif

#include "rle/chain.wgsl"

#if !RTS_REDUCE
#if CHAINED
// rle/chain.wgsl: a chunk's items run on from the window at win_base into the next one
#if WRITE_IDX
#if IDX64
@group(0) @binding(15) var<storage, read_write> out_idx_hi: array<vec2<u32>>;
#else
@group(0) @binding(15) var<storage, read_write> out_idx_hi: array<u32>;
#endif
#endif
#if VALUES
@group(0) @binding(16) var<storage, read_write> out_val_hi: array<vec2<u32>>;
@group(0) @binding(17) var<storage, read_write> counts_hi: array<u32>;
#endif
#endif

// Stores at window-relative positions (rle/chain.wgsl; unchained the result itself).
#if WRITE_IDX
#if IDX64
fn put_idx(k: u32, v: vec2<u32>) {
#else
fn put_idx(k: u32, v: u32) {
#endif
#if CHAINED
    if (k >= params.win_len) {
        out_idx_hi[k - params.win_len] = v;
        return;
    }
#endif
    out_idx[k] = v;
}
#endif

#if VALUES
// a run's value and length (or, for a tile's last run, its start: rle/fixup.wgsl)
fn put_run(k: u32, v: vec2<u32>, c: u32) {
#if CHAINED
    if (k >= params.win_len) {
        out_val_hi[k - params.win_len] = v;
        counts_hi[k - params.win_len] = c;
        return;
    }
#endif
    out_val[k] = v;
    counts[k] = c;
}
#endif
#endif

const WG: u32 = {{WG}}u;
const VEC4_PER_THREAD: u32 = {{VEC4_PER_THREAD}}u;
const TILE_V: u32 = WG * VEC4_PER_THREAD;
#if EB8
const EPV: u32 = 16u;  // elements per vec4
#elif PAIRS
const EPV: u32 = 2u;   // 64-bit values as word pairs
#else
const EPV: u32 = 4u;
#endif
const TILE_E: u32 = TILE_V * EPV;  // elements per tile

#include "common/tile_slots.wgsl"

#if SUBGROUPS
#include "common/subgroup_scan.wgsl"
#endif
#if SINGLE_PASS
#include "common/lookback.wgsl"
#endif

var<workgroup> wg_scan: array<u32, WG>;
var<workgroup> wg_aggregate: u32;
var<workgroup> wg_count: atomic<u32>;
#if !RTS_REDUCE
const STAGE: u32 = {{STAGE}}u;  // staging entries (rounds cover larger tiles)
var<workgroup> stage: array<u32, STAGE>;
#endif

fn x_word(w: u32) -> u32 {
    let v = x[w / 4u];
    return v[w % 4u];
}

// One bit per byte of each component: bit k of component c is 4c + k.
fn byte_bits(d: vec4<u32>) -> u32 {
    var m = 0u;
#unroll C 4
    {
        let c = d[{{C}}u];
        let nib = select(0u, 1u, (c & 0xffu) != 0u) | select(0u, 2u, (c & 0xff00u) != 0u)
            | select(0u, 4u, (c & 0xff0000u) != 0u) | select(0u, 8u, (c & 0xff000000u) != 0u);
        m |= nib << (4u * {{C}}u);
    }
#endunroll
    return m;
}

fn word_bits(d: vec4<u32>) -> u32 {
    return select(0u, 1u, d.x != 0u) | select(0u, 2u, d.y != 0u) | select(0u, 4u, d.z != 0u)
        | select(0u, 8u, d.w != 0u);
}

// The vec4 at global vec4 index `gv` (clamped into the input: branch-free) and its element flags,
// bit j for element j of the vec4, elements past n cleared.
struct Slot {
    v: vec4<u32>,
    flags: u32,
}

fn load_slot(gv: u32) -> Slot {
    let last = max(params.n_vec4, 1u) - 1u;
    let v = x[min(gv, last)];
    let e0 = gv * EPV;
    let valid = select((1u << (min(params.n - min(e0, params.n), EPV))) - 1u, 0u, e0 >= params.n);
#if RLE
#if PAIRS
    // the pair before this vec4's first; at the very start one that differs from it
    let pp = select(x[max(min(gv, last), 1u) - 1u].zw, chain_prev2(v.xy), gv == 0u);
    let bits = select(0u, 1u, any(v.xy != pp)) | select(0u, 2u, any(v.zw != v.xy));
#else
    // the word before this vec4; at the very start one that differs from the first element
    let pw_index = max(min(gv, last) * 4u, 1u) - 1u;
    let pw = select(x_word(pw_index), (~v.x) << 24u, gv == 0u);
    let prev = vec4<u32>(pw, v.x, v.y, v.z);
    let bits = byte_bits(v ^ ((v << vec4<u32>(8u)) | (prev >> vec4<u32>(24u))));
#endif
#elif COMPACT
    let ml = max(params.n_mask_words, 1u) - 1u;
#if MASK_U8
    // one mask byte per element: EPV / 4 mask words per vec4
    let base = min(gv, last) * 4u;
    var bits = 0u;
#unroll K 4
    bits |= byte_bits(vec4<u32>(mask[min(base + {{K}}u, ml)], 0u, 0u, 0u)) << (4u * {{K}}u);
#endunroll
#else
    // one mask word per element
    let base = min(gv, last) * 16u;
    var bits = 0u;
#unroll K 4
    bits |= word_bits(vec4<u32>(mask[min(base + 4u * {{K}}u, ml)], mask[min(base + 4u * {{K}}u + 1u, ml)],
                                mask[min(base + 4u * {{K}}u + 2u, ml)], mask[min(base + 4u * {{K}}u + 3u, ml)]))
            << (4u * {{K}}u);
#endunroll
#endif
#else
    // NONZERO: the elements themselves
#if EB8
    let bits = byte_bits(v);
#else
    let bits = word_bits(v);
#endif
#endif
    return Slot(v, bits & valid);
}

// Exclusive scan of the flag counts over the tile: pre[i] = flags before this invocation's i-th
// vec4; returns the tile's count. Called by the whole workgroup, in uniform control flow.
fn local_scan(tile: u32, v: ptr<function, array<vec4<u32>, VEC4_PER_THREAD>>, f: ptr<function, array<u32, VEC4_PER_THREAD>>,
              pre: ptr<function, array<u32, VEC4_PER_THREAD>>) -> u32 {
    let t0 = tile * TILE_V;
#unroll I VEC4_PER_THREAD
    {
        let s = load_slot(t0 + vec_slot({{I}}u));
        (*v)[{{I}}] = s.v;
        (*f)[{{I}}] = s.flags;
    }
#endunroll
#if SUBGROUPS
    var run = 0u;
#unroll I VEC4_PER_THREAD
    {
        let c = countOneBits((*f)[{{I}}]);
        let incl = subgroupInclusiveAdd(c);
        (*pre)[{{I}}] = run + incl - c;
        run += subgroupShuffle(incl, g_sg_size - 1u);
    }
#endunroll
    let sgid = g_lid / g_sg_size;
    if (g_lane == 0u) {
        wg_scan[sgid] = run;
    }
    workgroupBarrier();
    if (g_lid == 0u) {
        var acc = 0u;
        for (var s = 0u; s < WG / g_sg_size; s++) {
            let t = wg_scan[s];
            wg_scan[s] = acc;
            acc += t;
        }
        wg_aggregate = acc;
    }
    workgroupBarrier();
    let before = wg_scan[sgid];
    let agg = workgroupUniformLoad(&wg_aggregate);  // uniform: store_tile loops on it around barriers
    workgroupBarrier();
#else
    var run = 0u;
#unroll I VEC4_PER_THREAD
    (*pre)[{{I}}] = run;
    run += countOneBits((*f)[{{I}}]);
#endunroll
    wg_scan[g_lid] = run;
    workgroupBarrier();
    for (var d = 1u; d < WG; d = d << 1u) {
        var t = wg_scan[g_lid];
        if (g_lid >= d) {
            t += wg_scan[g_lid - d];
        }
        workgroupBarrier();
        wg_scan[g_lid] = t;
        workgroupBarrier();
    }
    let before = wg_scan[g_lid] - run;
    if (g_lid == WG - 1u) {
        wg_aggregate = wg_scan[WG - 1u];
    }
    let agg = workgroupUniformLoad(&wg_aggregate);  // uniform: store_tile loops on it around barriers
    workgroupBarrier();
#endif
#unroll I VEC4_PER_THREAD
    (*pre)[{{I}}] += before;
#endunroll
    return agg;
}

// This invocation's share of a tile's count, recounted from its input.
fn tile_run(tile: u32) -> u32 {
    let t0 = tile * TILE_V;
    var run = 0u;
#unroll I VEC4_PER_THREAD
    run += countOneBits(load_slot(t0 + vec_slot({{I}}u)).flags);
#endunroll
    return run;
}

// A predecessor tile's count, recounted from its input (the decoupled fallback). Integer sums
// do not depend on the order, so this equals the owner's count.
fn fallback_aggregate(tile: u32) -> u32 {
    return runs_total(tile_run(tile));
}

// The workgroup's total of tile_run shares.
fn runs_total(run: u32) -> u32 {
    if (g_lid == 0u) {
        atomicStore(&wg_count, 0u);
    }
    workgroupBarrier();
    atomicAdd(&wg_count, run);
    workgroupBarrier();
    let agg = atomicLoad(&wg_count);
    workgroupBarrier();
    return agg;
}

#if !RTS_REDUCE
// Writes the tile's flagged items from output position `offset` on. Items are staged in
// workgroup memory (tile-local positions, then values) so that every global store of the
// workgroup is coalesced. Called by the whole workgroup, in uniform control flow.
fn store_tile(tile: u32, v: ptr<function, array<vec4<u32>, VEC4_PER_THREAD>>, f: ptr<function, array<u32, VEC4_PER_THREAD>>,
              pre: ptr<function, array<u32, VEC4_PER_THREAD>>, offset: u32, count: u32) {
    let tile_e0 = tile * TILE_V * EPV;
    // Rounds of STAGE - 1 items (each round has room for one position past its items).
    for (var base = 0u; base < count; base += STAGE - 1u) {
        let hi = base + STAGE;
#unroll I VEC4_PER_THREAD
        {
            var m = (*f)[{{I}}];
            var pos = (*pre)[{{I}}];
            let e0 = vec_slot({{I}}u) * EPV;
            if (pos < hi && pos + countOneBits(m) > base) {
                for (var k = 0u; k < EPV; k++) {
                    if (m == 0u) {
                        break;
                    }
                    if (pos >= base && pos < hi) {
                        stage[pos - base] = e0 + firstTrailingBit(m);
                    }
                    m &= m - 1u;
                    pos += 1u;
                }
            }
        }
#endunroll
        workgroupBarrier();
        let end = min(base + STAGE - 1u, count);
        for (var k = base + g_lid; k < end; k += WG) {
            let s = stage[k - base];
#if WRITE_IDX
#if IDX64
            let i = tile_e0 + chain_pos() + s;
            let lo = i + params.base_lo;
            put_idx(offset + k, vec2<u32>(lo, params.base_hi + select(0u, 1u, lo < i)));
#else
            put_idx(offset + k, tile_e0 + chain_pos() + s);
#endif
#endif
#if VALUES
            // the value at the run start; the length to the next start in the tile (staged one
            // past the round's items), or for the tile's last run its start (rle/fixup.wgsl)
            let e = tile_e0 + s;
            let w = x[e / 2u];
            put_run(offset + k, select(w.xy, w.zw, (e & 1u) != 0u),
                    select(tile_e0 + chain_pos() + s, stage[k + 1u - base] - s, k + 1u < count));
#endif
        }
#if VALUES
        if (g_lid == 0u && base == 0u) {
            head[2u * (tile + chain_tile())] = offset + chain_win();
            head[2u * (tile + chain_tile()) + 1u] = tile_e0 + chain_pos() + stage[0];
        }
#endif
        workgroupBarrier();
    }
#if VALUES
    if (g_lid == 0u && count == 0u) {
        head[2u * (tile + chain_tile())] = offset + chain_win();
        head[2u * (tile + chain_tile()) + 1u] = 0xffffffffu;
    }
#endif
}

// The last tile knows the total: it records it, the RLE sentinel and the finishing pass's grid.
fn finish_total(total: u32) {
    info[0] = total;
#if WRITE_IDX
#if RLE
    out_idx[total] = params.n;
#endif
#endif
    let groups = (total + params.fin_per_group - 1u) / params.fin_per_group;
    let gy = (groups + params.max_groups - 1u) / params.max_groups;
    info[4] = select((groups + gy - 1u) / max(gy, 1u), 0u, groups == 0u);
    info[5] = select(gy, 0u, groups == 0u);
    info[6] = select(1u, 0u, groups == 0u);
}
#endif

#include "rle/end_tile.wgsl"

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
    var v: array<vec4<u32>, VEC4_PER_THREAD>;
    var f: array<u32, VEC4_PER_THREAD>;
    var pre: array<u32, VEC4_PER_THREAD>;
    let aggregate = local_scan(tile, &v, &f, &pre);

    end_tile(tile, &v, &f, &pre, aggregate);
}

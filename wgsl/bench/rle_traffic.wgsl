// The memory traffic of run-length encoding and nothing else: a ceiling, not a primitive.
// Each workgroup reads its tile of the input (as the encoder does: VEC4_PER_THREAD vec4 per invocation,
// strided by the workgroup) and writes its given output range [ends[t - 1], ends[t]) of values
// and run lengths with consecutive stores. There are no flags, no scan, no staging and no
// lookback: the ranges come precomputed from the host. What it writes is junk derived from the
// loads, so that the compiler keeps them.
//
// With STREAM, the same bytes as a plain stream instead: every tile reads its 10 * WG vec4 and
// writes 9 * WG vec4 of values and of run lengths at its own aligned place (0.9 runs per element,
// as for random values 0..9), with VEC4_STORES as aligned vec4 words, else each vec4 as four
// single words (so a store instruction writes every fourth word).
//
// Without STREAM: VEC4_STORES writes the aligned vec4 words inside a tile's range whole (single
// words at its two ends), as rle/compact.wgsl does; ROUNDS splits a tile's range into rounds of
// ROUND words with two workgroup barriers each, the shape of the encoder's staged rounds.
// LOOKBACK takes each tile's output offset from the encoder's own lookback (common/lookback.wgsl,
// subgroup steps with SUBGROUPS, early publish) instead of the host's ranges: tiles by ticket, the tile's count
// published once its loads are in, and word 3 of `tile_state` counts offsets that disagree with
// the host's. HOLD keeps the tile's loads live across the lookback, as the encoder does.

struct Params {
    n_vec4: u32,     // vec4<u32> words of input
    n_tiles: u32,    // workgroups asked for
    max_steps: u32,  // LOOKBACK: the lookback's step budget
    zero: u32,       // 0, opaque to the compiler: makes the published count depend on the loads
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> ends: array<u32>;  // inclusive end of each tile's range
@group(0) @binding(3) var<storage, read_write> values: array<u32>;
@group(0) @binding(4) var<storage, read_write> counts: array<u32>;
#if VEC4_STORES
// the same two buffers again, as vec4 words
@group(0) @binding(5) var<storage, read_write> values4: array<vec4<u32>>;
@group(0) @binding(6) var<storage, read_write> counts4: array<vec4<u32>>;
#endif

const WG: u32 = {{WG}}u;
const VEC4_PER_THREAD: u32 = {{VECS_PER_THREAD}}u;
var<private> g_lid: u32;

// The first word of tile t's output range, from the host's inclusive ends.
fn tile_start(tile: u32) -> u32 {
    return select(0u, ends[max(tile, 1u) - 1u], tile > 0u);
}

#if LOOKBACK
@group(0) @binding(7) var<storage, read_write> tile_state: array<atomic<u32>>;
#include "common/monoid.wgsl"
#if SUBGROUPS
var<private> g_lane: u32;
var<private> g_sg_size: u32;
#include "common/subgroup_scan.wgsl"
#endif
#include "common/lookback.wgsl"

// A silent predecessor's count, from the host's ranges (the encoder recounts its input).
fn fallback_aggregate(tile: u32) -> u32 {
    return ends[tile] - tile_start(tile);
}
#endif

#if STREAM
@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let tile = wid.x + wid.y * nwg.x;
    if (tile >= params.n_tiles) {
        return;
    }
    let base = tile * WG * 10u + lid;
    var v: array<vec4<u32>, 10>;
#unroll K 10
    v[{{K}}] = src[base + {{K}}u * WG];
#endunroll
    var acc = vec4<u32>(0u);
#unroll K 10
    acc ^= v[{{K}}];
#endunroll
    let out = tile * WG * 9u + lid;
#unroll K 9
    store4(out + {{K}}u * WG, acc ^ v[{{K}}], v[{{K}}]);
#endunroll
}

fn store4(at: u32, a: vec4<u32>, b: vec4<u32>) {
#if VEC4_STORES
    values4[at] = a;
    counts4[at] = b;
#else
    for (var c = 0u; c < 4u; c++) {
        values[4u * at + c] = a[c];
        counts[4u * at + c] = b[c];
    }
#endif
}
#else
@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
#if SUBGROUPS
        @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) sg_size: u32,
#endif
        @builtin(local_invocation_index) lid: u32) {
    g_lid = lid;
#if LOOKBACK
#if SUBGROUPS
    g_lane = lane;
    g_sg_size = sg_size;
#endif
    let tile = take_ticket(lid);
#else
    let tile = wid.x + wid.y * nwg.x;
#endif
    if (tile >= params.n_tiles) {
        return;
    }
    let base = tile * WG * VEC4_PER_THREAD + lid;
    let last = params.n_vec4 - 1u;
    var v: array<vec4<u32>, VEC4_PER_THREAD>;
#unroll K VECS_PER_THREAD
    v[{{K}}] = src[min(base + {{K}}u * WG, last)];
#endunroll
#if !HOLD
    let junk = tile_junk(&v);
#endif
    let stop = ends[tile];
#if LOOKBACK
    let host_start = tile_start(tile);
    let count = (stop - host_start) ^ (v[VEC4_PER_THREAD - 1u].x & params.zero);
    var start = 0u;
    if (tile > 0u) {
        if (lid == 0u) {
            publish_state(tile, FLAG_AGGREGATE, count);
        }
        g_publish = true;
        g_aggregate = count;
        start = decoupled_lookback(tile, 0u, 0u, lid, params.max_steps, 0u).prefix;
    }
    if (lid == 0u) {
        if (!g_published) {
            publish_state(tile, FLAG_INCLUSIVE, start + count);
        }
        if (start != host_start) {
            atomicAdd(&tile_state[3], 1u);
        }
    }
#endif
#if !LOOKBACK
    let start = tile_start(tile);
#endif
#if HOLD
    let junk = tile_junk(&v);  // after the lookback: the tile's loads stay live across the wait
#endif
#if ROUNDS
    for (var lo = start; lo < stop; lo += ROUND) {
        workgroupBarrier();
        store_range(lo, min(lo + ROUND, stop), start, junk);
        workgroupBarrier();
    }
#else
    store_range(start, stop, start, junk);
#endif
}

#if ROUNDS
const ROUND: u32 = {{ROUND}}u;
#endif

// A word that depends on every load of the tile, so that the compiler keeps them.
fn tile_junk(v: ptr<function, array<vec4<u32>, VEC4_PER_THREAD>>) -> u32 {
    var acc = vec4<u32>(0u);
#unroll K VECS_PER_THREAD
    acc ^= (*v)[{{K}}];
#endunroll
    return acc.x ^ acc.y ^ acc.z ^ acc.w;
}

fn store_range(lo: u32, hi: u32, start: u32, junk: u32) {
    let lid = g_lid;
#if VEC4_STORES
    for (var q = lo / 4u + lid; q < (hi + 3u) / 4u; q += WG) {
        let w = 4u * q;
        if (w >= lo && w + 4u <= hi) {
            values4[q] = vec4<u32>(junk) ^ vec4<u32>(w, w + 1u, w + 2u, w + 3u);
            counts4[q] = vec4<u32>(w, w + 1u, w + 2u, w + 3u) - vec4<u32>(start);
        } else {
            for (var c = 0u; c < 4u; c++) {
                let k = w + c;
                if (k >= lo && k < hi) {
                    values[k] = junk ^ k;
                    counts[k] = k - start;
                }
            }
        }
    }
#else
    for (var j = lo + lid; j < hi; j += WG) {
        values[j] = junk ^ j;
        counts[j] = j - start;
    }
#endif
}
#endif

// Run-length decoding. Run r (of R = info[0] runs) covers output elements [end(r-1), end(r)),
// where end(r) = ends[r + params.shift] (shift 0: the inclusive scan of the counts; shift 1: the
// run starts of an encoding, whose sentinel follows the last run). Element p holds the value of
// the first run with end(r) > p, or 0 past the last run.
//
// Each workgroup owns WG * EPI contiguous output elements. The PARTITION pass (one invocation per
// workgroup, all in parallel) finds the run covering each workgroup's first element (a binary
// search, at most 33 steps), so no workgroup waits on a long chain of dependent loads. Each invocation then
// finds the run of its own first element within that range and walks forward, element by element
// (one step per run boundary; a binary search when zero-length runs lie between), writes its
// words to workgroup memory, and the workgroup stores them as coalesced vec4 words.
// The expand is for uint8 values (packed four to a word; 32-bit values expand in rle/expand.wgsl);
// the partition serves both.
// Defines: VEC4_PER_THREAD (vec4 of output per invocation), EB8 (uint8 values: always, but for the PARTITION).

struct Params {
    size: u32,       // output elements
    n_vec4: u32,     // output vec4 words
    shift: u32,
    n_groups: u32,
    lo: u32,         // an output window [lo, lo + len) of a larger result: run ends are clamped to it
    len: u32,        // (runs outside it have length 0); 0 and 0xffffffff for a whole result
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> info: array<u32>;
@group(0) @binding(2) var<storage, read> ends: array<u32>;
#if PARTITION
@group(0) @binding(5) var<storage, read_write> parts: array<u32>;
#else
@group(0) @binding(3) var<storage, read> values: array<u32>;
@group(0) @binding(4) var<storage, read_write> output: array<vec4<u32>>;
@group(0) @binding(5) var<storage, read> parts: array<u32>;
#endif

const WG: u32 = 256u;
const VEC4_PER_THREAD: u32 = {{VEC4_PER_THREAD}}u;
const WPI: u32 = VEC4_PER_THREAD * 4u;  // output words per invocation
#if EB8
const EPW: u32 = 4u;
#else
const EPW: u32 = 1u;
#endif
const EPI: u32 = WPI * EPW;  // elements per invocation

var<private> n_runs: u32;

fn end_of(r: u32) -> u32 {
    return min(max(ends[min(r, n_runs - 1u) + params.shift], params.lo), params.lo + params.len) - params.lo;
}

#include "rle/run_search.wgsl"

#if PARTITION
// parts[t] = the run holding element t * WG * EPI (n_runs past the last run), for t <= n_groups.
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = gid.x + gid.y * nwg.x * WG;
    if (t > params.n_groups) {
        return;
    }
    n_runs = info[0];
    var r = 0u;
    if (n_runs > 0u) {
        r = search(0u, n_runs, min(t * WG * EPI, params.size - 1u));
    }
    parts[t] = r;
}
#else
// word q of the workgroup's output lives at q + q / WPI: invocations' rows padded by one word,
// so the writes (one row per invocation) and the vec4 reads hit few shared banks at once
const ROW: u32 = WPI + 1u;
var<workgroup> staged: array<u32, WG * ROW>;

fn slot(q: u32) -> u32 {
    return q + q / WPI;
}

fn value_of(r: u32) -> u32 {
    return (values[r / 4u] >> (8u * (r % 4u))) & 0xffu;
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let group = wid.x + wid.y * nwg.x;
    if (group >= params.n_groups) {
        return;
    }
    n_runs = info[0];
    let first = group * WG * EPI;
    // runs [parts[group], parts[group + 1]] cover this workgroup's elements
    let rg = vec2<u32>(parts[group], min(parts[group + 1u] + 1u, n_runs));
    let p0 = first + lid * EPI;
    var r = rg.y;
    if (n_runs > 0u) {
        r = search(rg.x, rg.y, p0);
    }
    var end = select(0xffffffffu, end_of(r), r < n_runs);
    var val = select(0u, value_of(r), r < n_runs);
    for (var w = 0u; w < WPI; w++) {
        var word = 0u;
        for (var b = 0u; b < EPW; b++) {
            let p = p0 + w * EPW + b;
            if (p >= end) {
                r += 1u;
                if (r < n_runs && end_of(r) <= p) {
                    r = search(r, rg.y, p);
                }
                end = select(0xffffffffu, end_of(r), r < n_runs);
                val = select(0u, value_of(r), r < n_runs);
            }
            let keep = select(0u, val, p < params.size);
            word |= keep << (8u * b);
        }
        staged[lid * ROW + w] = word;
    }
    workgroupBarrier();
    let v0 = group * WG * VEC4_PER_THREAD;
    for (var k = 0u; k < VEC4_PER_THREAD; k++) {
        let i = k * WG + lid;
        if (v0 + i < params.n_vec4) {
            output[v0 + i] = vec4<u32>(staged[slot(4u * i)], staged[slot(4u * i + 1u)], staged[slot(4u * i + 2u)],
                                       staged[slot(4u * i + 3u)]);
        }
    }
}
#endif

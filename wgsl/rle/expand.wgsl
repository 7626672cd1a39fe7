// Run-length decoding of 32-bit values, branch-free per element: a max-scan of run-start marks.
// Run r (of R = info[0]) covers output elements [end(r-1), end(r)), end(r) = ends[r + shift].
//
// Each workgroup owns TILE_E = WG * VEC4_PER_THREAD * 4 contiguous output elements. rle/decode.wgsl's
// PARTITION pass gave rx = parts[group], the run covering the tile's first element, and
// parts[group + 1], the run covering the next tile's first (R past the last run). Every run
// rx < r <= parts[group + 1] with a nonzero length that starts inside the tile marks its start
// with r - rx in workgroup memory (distinct starts: no atomics; run R stands for the zeros past the
// last run). An inclusive max-scan of the marks over the tile, laid out like scan.wgsl (subgroup
// inclusive scans over the rows, the carry from the last lane, then the workgroup's subgroups),
// gives every element its run, and each invocation writes its whole vec4 words: each store
// instruction of a subgroup covers one contiguous span. A tile with more than CAP runs in its range
// (zero-length runs) takes a binary search per element instead.
// Defines: VEC4_PER_THREAD, SUBGROUPS, CAP, and the u32 max monoid (T, IDENTITY, COMBINE, SG_REDUCE, OP_ADD).

#include "common/monoid.wgsl"

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
@group(0) @binding(3) var<storage, read> values: array<u32>;
@group(0) @binding(4) var<storage, read_write> output: array<vec4<u32>>;
@group(0) @binding(5) var<storage, read> parts: array<u32>;

const WG: u32 = 256u;
const VEC4_PER_THREAD: u32 = {{VEC4_PER_THREAD}}u;
const TILE_V: u32 = WG * VEC4_PER_THREAD;
const TILE_E: u32 = TILE_V * 4u;
const CAP: u32 = {{CAP}}u;

#include "common/tile_slots.wgsl"
#if SUBGROUPS
#include "common/subgroup_scan.wgsl"
#endif

var<workgroup> marks: array<vec4<u32>, TILE_V>;
var<workgroup> wg_scan: array<u32, WG>;
var<workgroup> wg_flag: u32;
var<workgroup> wg_zero: atomic<u32>;  // some run in the range has length zero (shares its start)
var<private> n_runs: u32;

fn end_of(r: u32) -> u32 {
    return min(max(ends[min(r, max(n_runs, 1u) - 1u) + params.shift], params.lo), params.lo + params.len) - params.lo;
}

// the value of run r; 0 past the last run
fn value_of(r: u32) -> u32 {
    return select(0u, values[min(r, max(n_runs, 1u) - 1u)], r < n_runs);
}

#include "rle/run_search.wgsl"

fn write_vec4(q: u32, p0: u32, r: vec4<u32>) {
    let p = vec4<u32>(p0) + vec4<u32>(0u, 1u, 2u, 3u);
    let v = vec4<u32>(value_of(r.x), value_of(r.y), value_of(r.z), value_of(r.w));
    if (q < params.n_vec4) {
        output[q] = select(vec4<u32>(0u), v, p < vec4<u32>(params.size));
    }
}

// Exclusive combination (sum, or max) of the subgroups' (invocations') totals `run` over the
// workgroup. Called by the whole workgroup, in uniform control flow.
fn workgroup_exclusive(run: u32, add: bool) -> u32 {
#if SUBGROUPS
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
            acc = select(max(acc, t), acc + t, add);
        }
    }
    workgroupBarrier();
    return wg_scan[sgid];
#else
    wg_scan[g_lid] = run;
    workgroupBarrier();
    for (var d = 1u; d < WG; d = d << 1u) {
        var t = wg_scan[g_lid];
        if (g_lid >= d) {
            let u = wg_scan[g_lid - d];
            t = select(max(t, u), t + u, add);
        }
        workgroupBarrier();
        wg_scan[g_lid] = t;
        workgroupBarrier();
    }
    var before = 0u;
    if (g_lid > 0u) {
        before = wg_scan[g_lid - 1u];
    }
    return before;
#endif
}

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
    let group = wid.x + wid.y * nwg.x;
    if (group >= params.n_groups) {
        return;
    }
    n_runs = info[0];
    let tile0 = group * TILE_E;
    let v0 = group * TILE_V;
    let rx = parts[group];
    let ry = min(parts[group + 1u], n_runs);
    let nr = select(0u, ry - rx, ry > rx);
#unroll I VEC4_PER_THREAD
    marks[vec_slot({{I}}u)] = vec4<u32>(0u);
#endunroll
    if (lid == 0u) {
        wg_flag = select(0u, 1u, nr <= CAP);
        atomicStore(&wg_zero, 0u);
    }
    let fits = workgroupUniformLoad(&wg_flag) != 0u;  // also orders the clearing before the marks
    if (fits) {
        for (var k = lid; k < nr; k += WG) {
            let r = rx + 1u + k;
            let s = end_of(r - 1u);  // run r starts where run r - 1 ends
            let e = select(0xffffffffu, end_of(r), r < n_runs);
            let ls = s - tile0;
            if (e > s && s >= tile0 && ls < TILE_E) {
                marks[ls / 4u][ls % 4u] = r - rx;
            }
            if (e == s) {
                atomicOr(&wg_zero, 1u);
            }
        }
    }
    // Without zero-length runs the marks r - rx that a tile holds are 1, 2, 3, ... in order, so
    // the max-scan equals a count of the marks before each element: subgroup inclusive adds.
    let counted = workgroupUniformLoad(&wg_zero) == 0u;
    if (fits && counted) {
        var mk: array<vec4<u32>, VEC4_PER_THREAD>;
        var pre: array<u32, VEC4_PER_THREAD>;
        var run = 0u;
#unroll I VEC4_PER_THREAD
        {
            var m = select(vec4<u32>(0u), vec4<u32>(1u), marks[vec_slot({{I}}u)] != vec4<u32>(0u));
            m.y += m.x;
            m.z += m.y;
            m.w += m.z;
            mk[{{I}}] = m;
#if SUBGROUPS
            let incl = subgroupInclusiveAdd(m.w);
            pre[{{I}}] = run + incl - m.w;
            run += subgroupShuffle(incl, g_sg_size - 1u);
#else
            pre[{{I}}] = run;
            run += m.w;
#endif
        }
#endunroll
        let before = workgroup_exclusive(run, true);
#unroll I VEC4_PER_THREAD
        {
            let sl = vec_slot({{I}}u);
            write_vec4(v0 + sl, tile0 + sl * 4u, vec4<u32>(rx + before + pre[{{I}}]) + mk[{{I}}]);
        }
#endunroll
        return;
    }
    if (fits) {
        var mk: array<vec4<u32>, VEC4_PER_THREAD>;
        var pre: array<u32, VEC4_PER_THREAD>;
        var run = 0u;
#unroll I VEC4_PER_THREAD
        {
            var m = marks[vec_slot({{I}}u)];
            m.y = max(m.x, m.y);
            m.z = max(m.y, m.z);
            m.w = max(m.z, m.w);
            mk[{{I}}] = m;
#if SUBGROUPS
            let incl = sg_inclusive(m.w, g_lane, g_sg_size);
            pre[{{I}}] = max(run, sg_exclusive_of(incl, g_lane));
            run = max(run, subgroupShuffle(incl, g_sg_size - 1u));
#else
            pre[{{I}}] = run;
            run = max(run, m.w);
#endif
        }
#endunroll
        let before = workgroup_exclusive(run, false);
#unroll I VEC4_PER_THREAD
        {
            let sl = vec_slot({{I}}u);
            let rel = max(mk[{{I}}], vec4<u32>(max(before, pre[{{I}}])));
            write_vec4(v0 + sl, tile0 + sl * 4u, vec4<u32>(rx) + rel);
        }
#endunroll
    } else {
        // many zero-length runs: a search per element
#unroll I VEC4_PER_THREAD
        {
            let sl = vec_slot({{I}}u);
            let p0 = tile0 + sl * 4u;
            write_vec4(v0 + sl, p0, vec4<u32>(search(rx, n_runs, p0), search(rx, n_runs, p0 + 1u),
                                              search(rx, n_runs, p0 + 2u), search(rx, n_runs, p0 + 3u)));
        }
#endunroll
    }
}

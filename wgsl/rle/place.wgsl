// Chunked compaction and run-length encoding past one storage binding: each chunk of the input
// ran the unchunked pipeline into scratch arrays (items at 0 .. info[0]); these two passes move
// them into the final arrays, carrying the running offset on the GPU (no read-back).
//
// ADVANCE (one invocation, once per chunk k): from the record rec[k] (items so far, the last
//   item's value) and the chunk's item count info[0], writes the chunk's placement (first and end
//   position in the output, whether its first run joins the previous last run) and rec[k + 1],
//   and for every output window w the indirect grid of PLACE over the window's part of the chunk
//   with the first unit it covers. COUNTS (RLE): the chunk's first run joins the output's last run
//   when their values are equal (a run that crosses the chunk boundary).
// PLACE: moves the chunk's items that fall into one output window (a binding at a host-known,
//   aligned offset: the output may exceed one binding). Units are items, or with EB8 (values are
//   bytes, four to a word) output words (each invocation merges the bytes of its word).
//
// rec layout (u32 words, 8 per chunk k): [8k] items before chunk k, [8k + 1 .. 8k + 2] the last
// item's value words, [8k + 4] the chunk's first position, [8k + 5] its end, [8k + 6] join.
// Defines: ADVANCE | PLACE, COUNTS (RLE), EB8, VW (value words per item: 1 or 2).

struct Params {
    chunk: u32,      // k
    n_win: u32,      // output windows
    win_units: u32,  // units per window (items; EB8: words)
    win: u32,        // PLACE: this window
    add: u32,        // PLACE: added to every value (nonzero: the chunk's first element index)
    max_groups: u32, // the device's grid limit per dimension
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> info: array<u32>;
@group(0) @binding(2) var<storage, read> src_values: array<u32>;
#if ADVANCE
@group(0) @binding(3) var<storage, read_write> rec: array<u32>;
@group(0) @binding(4) var<storage, read_write> args: array<u32>;
#else
@group(0) @binding(3) var<storage, read> rec: array<u32>;
@group(0) @binding(4) var<storage, read> args: array<u32>;
@group(0) @binding(5) var<storage, read_write> out_values: array<u32>;
#if COUNTS
@group(0) @binding(6) var<storage, read> src_counts: array<u32>;
@group(0) @binding(7) var<storage, read_write> out_counts: array<u32>;
#endif
#endif

const WG: u32 = 256u;
const VW: u32 = {{VW}}u;

#if ADVANCE
// value word w of item j of the chunk
fn value_word(j: u32, w: u32) -> u32 {
#if EB8
    return (src_values[j / 4u] >> (8u * (j % 4u))) & 0xffu;
#else
    return src_values[j * VW + w];
#endif
}

@compute @workgroup_size(1)
fn main() {
    let k = params.chunk;
    let total = rec[8u * k];
    let n_k = info[0];
    var join = 0u;
#if COUNTS
    if (total > 0u && n_k > 0u) {
        join = 1u;
        for (var w = 0u; w < VW; w++) {
            if (value_word(0u, w) != rec[8u * k + 1u + w]) {
                join = 0u;
            }
        }
    }
#endif
    let lo = total - join;
    let hi = lo + n_k;
    rec[8u * k + 4u] = lo;
    rec[8u * k + 5u] = hi;
    rec[8u * k + 6u] = join;
    rec[8u * k + 8u] = hi;
    for (var w = 0u; w < VW; w++) {
        rec[8u * k + 9u + w] = select(rec[8u * k + 1u + w], value_word(max(n_k, 1u) - 1u, w), n_k > 0u);
    }
#if EB8
    let ulo = lo / 4u;
    let uhi = (hi + 3u) / 4u;
#else
    let ulo = lo;
    let uhi = hi;
#endif
    for (var win = 0u; win < params.n_win; win++) {
        let ws = win * params.win_units;
        let a = max(ulo, ws);
        let b = min(uhi, ws + params.win_units);
        let units = select(0u, b - a, b > a);
        let groups = (units + WG - 1u) / WG;
        let gy = (groups + params.max_groups - 1u) / params.max_groups;
        let at = 4u * (k * params.n_win + win);
        args[at] = select((groups + gy - 1u) / max(gy, 1u), 0u, groups == 0u);
        args[at + 1u] = select(gy, 0u, groups == 0u);
        args[at + 2u] = select(1u, 0u, groups == 0u);
        args[at + 3u] = a;
    }
}
#else
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = params.chunk;
    let t = gid.x + gid.y * nwg.x * WG;
    let lo = rec[8u * k + 4u];
    let hi = rec[8u * k + 5u];
    let join = rec[8u * k + 6u];
    let ws = params.win * params.win_units;
    let u = args[4u * (k * params.n_win + params.win) + 3u] + t;
#if EB8
    let uhi = (hi + 3u) / 4u;
#else
    let uhi = hi;
#endif
    if (u >= min(uhi, ws + params.win_units)) {
        return;
    }
    let local = u - ws;
#if EB8
    var word = out_values[local];
    for (var b = 0u; b < 4u; b++) {
        let pos = 4u * u + b;
        if (pos >= lo && pos < hi) {
            let j = pos - lo;
            let byte = (src_values[j / 4u] >> (8u * (j % 4u))) & 0xffu;
            word = (word & ~(0xffu << (8u * b))) | (byte << (8u * b));
#if COUNTS
            var c = src_counts[j];
            if (j == 0u && join != 0u) {
                c += out_counts[4u * local + b];
            }
            out_counts[4u * local + b] = c;
#endif
        }
    }
    out_values[local] = word;
#else
    let j = u - lo;
    for (var w = 0u; w < VW; w++) {
        out_values[local * VW + w] = src_values[j * VW + w] + params.add;
    }
#if COUNTS
    var c = src_counts[j];
    if (j == 0u && join != 0u) {
        c += out_counts[local];
    }
    out_counts[local] = c;
#endif
#endif
}
#endif

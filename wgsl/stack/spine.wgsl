// Spine of bracket matching, in three small dispatches over chunks of CH = 4 WG partitions (fewer
// when the tree is smaller): the stack size at each partition's start, and a min segment tree over
// each partition's minimum stack size (ends included): leaves at [tree_size, 2 tree_size), padding
// leaves = INF, node k = min(node 2k, node 2k + 1).
//   UP:   each chunk's bicyclic summary.
//   TOP:  one workgroup scans the chunk summaries (stack size at each chunk's start), and builds
//         the tree's levels above the chunk roots (a chunk's minimum is its start minus its pops,
//         clamped at 0); info[0] = closes left unmatched, info[1] = opens left unclosed.
//   DOWN: each chunk rescans its partitions from its start, writes their start sizes and its
//         subtree (leaves up to its root).
// CARRY (bracket matching past one binding, stack.py _BracketChunks): the run is chunk k of a longer
// input, entered with the stack that the earlier chunks left (its size in carry[k]): every height
// is global; TOP reads carry[k] and writes carry[k + 1] (and the run's lowest height into carry[k],
// the grid of the chunk's gathers into carry[gather_at]) instead of info.
// Chunks, not one workgroup for everything: the spine is then a few microseconds at 2^17
// partitions instead of hundreds.

struct Params {
    n_parts: u32,
    tree_size: u32,
    chunk: u32,      // leaves per chunk: min(4 WG, tree_size), a power of two
    n_chunks: u32,   // tree_size / chunk
#if CARRY
    carry_k: u32,    // the input chunk's number k (its entry in `carry`)
    gather_at: u32,  // the entry that receives the grid of chunk k's gathers (carry.wgsl)
#endif
}

const WG: u32 = {{WG}}u;
const CH: u32 = 4u * WG;
const INF: u32 = 0xffffffffu;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> part_bic: array<vec2<u32>>;
#if UP
@group(0) @binding(5) var<storage, read_write> chunk_bic: array<vec2<u32>>;
#endif
#if TOP
@group(0) @binding(5) var<storage, read> chunk_bic: array<vec2<u32>>;
@group(0) @binding(6) var<storage, read_write> chunk_start: array<u32>;
@group(0) @binding(3) var<storage, read_write> tree: array<u32>;
#if CARRY
// Per input chunk: (closes left unmatched before it, stack size before it, its lowest height, 0).
@group(0) @binding(7) var<storage, read_write> carry: array<vec4<u32>>;
#else
@group(0) @binding(4) var<storage, read_write> info: array<u32>;
#endif
#endif
#if DOWN
@group(0) @binding(6) var<storage, read> chunk_start: array<u32>;
@group(0) @binding(2) var<storage, read_write> part_start: array<u32>;
@group(0) @binding(3) var<storage, read_write> tree: array<u32>;
#endif

var<workgroup> sh_a: array<u32, WG>;
var<workgroup> sh_b: array<u32, WG>;

fn bic_combine(x: vec2<u32>, y: vec2<u32>) -> vec2<u32> {
    let m = min(x.y, y.x);
    return vec2<u32>(x.x + y.x - m, x.y + y.y - m);
}

// The stack size after a segment with summary s, entered with `stack` entries.
fn bic_apply(stack: u32, s: vec2<u32>) -> u32 {
    return max(stack, s.x) - s.x + s.y;
}

// Exclusive scan of the invocations' summaries (Hillis-Steele in workgroup memory: WG entries);
// also returns the workgroup's total in .zw.
fn exclusive_scan(lid: u32, v: vec2<u32>) -> vec4<u32> {
    sh_a[lid] = v.x;
    sh_b[lid] = v.y;
    workgroupBarrier();
    for (var d = 1u; d < WG; d = d << 1u) {
        var x = vec2<u32>(sh_a[lid], sh_b[lid]);
        if (lid >= d) {
            x = bic_combine(vec2<u32>(sh_a[lid - d], sh_b[lid - d]), x);
        }
        workgroupBarrier();
        sh_a[lid] = x.x;
        sh_b[lid] = x.y;
        workgroupBarrier();
    }
    var ex = vec2<u32>(0u);
    if (lid > 0u) {
        ex = vec2<u32>(sh_a[lid - 1u], sh_b[lid - 1u]);
    }
    let total = vec2<u32>(sh_a[WG - 1u], sh_b[WG - 1u]);
    workgroupBarrier();
    return vec4<u32>(ex, total);
}

// Summaries of partitions first .. first + 3 (the identity past n_parts), combined in order.
fn load4(first: u32) -> array<vec2<u32>, 4> {
    var v: array<vec2<u32>, 4>;
    let last = params.n_parts - 1u;
#unroll K 4
    v[{{K}}] = select(vec2<u32>(0u), part_bic[min(first + {{K}}u, last)], first + {{K}}u < params.n_parts);
#endunroll
    return v;
}

#if UP
@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let c = wid.x;
    let v = load4(c * params.chunk + 4u * lid);
    var acc = vec2<u32>(0u);
    if (4u * lid < params.chunk) {
#unroll K 4
        acc = bic_combine(acc, v[{{K}}]);
#endunroll
    }
    let s = exclusive_scan(lid, acc);
    if (lid == 0u) {
        chunk_bic[c] = s.zw;
    }
}
#endif

#if !UP
// A heap over up to CH leaves in workgroup memory: leaves at [w, 2w), node k = min(2k, 2k + 1).
var<workgroup> sh_heap: array<u32, 2u * CH>;

// Builds the heap's levels above its w leaves and copies each level (w/2 nodes, then w/4, ...)
// to the global tree at node `first_node(level nodes)`: level_base * nodes + offset * nodes.
fn build_levels(lid: u32, w: u32, level_base: u32, offset: u32) {
    workgroupBarrier();
    for (var k = w >> 1u; k >= 1u; k = k >> 1u) {
        for (var i = lid; i < k; i += WG) {
            let v = min(sh_heap[2u * (k + i)], sh_heap[2u * (k + i) + 1u]);
            sh_heap[k + i] = v;
            tree[level_base * k + offset * k + i] = v;
        }
        workgroupBarrier();
    }
}
#endif

#if TOP
@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32) {
    // Chunk c's summary; chunks 4 lid .. 4 lid + 3 per invocation (n_chunks <= CH).
    var v: array<vec2<u32>, 4>;
    var acc = vec2<u32>(0u);
#unroll K 4
    {
        let c = 4u * lid + {{K}}u;
        v[{{K}}] = select(vec2<u32>(0u), chunk_bic[min(c, params.n_chunks - 1u)], c < params.n_chunks);
        acc = bic_combine(acc, v[{{K}}]);
    }
#endunroll
    let s = exclusive_scan(lid, acc);
#if CARRY
    let before = carry[params.carry_k].x;  // (not .z: lid 0 writes it below)
    let s0 = carry[params.carry_k].y;
#else
    let s0 = 0u;
#endif
    var stack = bic_apply(s0, s.xy);
    let nc = params.n_chunks;
#unroll K 4
    {
        let c = 4u * lid + {{K}}u;
        if (c < nc) {
            chunk_start[c] = stack;
            let low = max(stack, v[{{K}}].x) - v[{{K}}].x;
            let m = select(INF, low, c * params.chunk < params.n_parts);
            sh_heap[nc + c] = m;  // the chunk roots themselves are DOWN's to write
            stack = bic_apply(stack, v[{{K}}]);
        }
    }
#endunroll
#if CARRY
    build_levels(lid, nc, 1u, 0u);
    if (lid == 0u) {  // the heap's root: the lowest height of the run (one leaf: the leaf itself)
        let k = params.carry_k;
        let low = sh_heap[1];
        carry[k].z = low;
        carry[k + 1u] = vec4<u32>(before + max(s.z, s0) - s0, bic_apply(s0, s.zw), 0u, 0u);
        let slots = s0 - (max(low, 1u) - 1u);  // the carried slots the leaf may read: low - 1 .. s0 - 1
        carry[params.gather_at] = vec4<u32>(min((slots + 255u) / 256u, 65535u), 1u, 1u, 0u);
    }
#else
    if (lid == 0u) {
        info[0] = s.z;
        info[1] = s.w;
    }
    build_levels(lid, nc, 1u, 0u);
#endif
}
#endif

#if DOWN
@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>) {
    let c = wid.x;
    let w = params.chunk;
    let first = c * w + 4u * lid;
    let v = load4(first);
    var acc = vec2<u32>(0u);
#unroll K 4
    acc = bic_combine(acc, v[{{K}}]);
#endunroll
    let s = exclusive_scan(lid, acc);
    var stack = bic_apply(chunk_start[c], s.xy);
    let size = params.tree_size;
#unroll K 4
    if (4u * lid + {{K}}u < w) {
        let q = first + {{K}}u;
        var m = INF;
        if (q < params.n_parts) {
            part_start[q] = stack;
            m = max(stack, v[{{K}}].x) - v[{{K}}].x;
            stack = bic_apply(stack, v[{{K}}]);
        }
        sh_heap[w + 4u * lid + {{K}}u] = m;
        tree[size + q] = m;
    }
#endunroll
    // Level with k nodes per chunk: global nodes n_chunks * k + c * k + i.
    build_levels(lid, w, params.n_chunks, c);
}
#endif

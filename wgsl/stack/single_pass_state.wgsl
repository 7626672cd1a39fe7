// The single pass. State words: [0] ticket, [1] invocations that gave up, [2] predecessors reduced
// by a successor (fallbacks); partition q owns words ST_BASE + 4q + (0: summary, 1 and 2: stack
// size after it in 16-bit halves, 3: parent + 1). Each word carries its own flag, so only relaxed
// atomics are assumed; a summary written twice (owner and fallback) has the same bits.
const ST_BASE: u32 = 4u;
const AGG_FLAG: u32 = 0x80000000u;
const SPIN_LIMIT: u32 = {{SPIN_LIMIT}}u;
const LIST_SPIN: u32 = {{LIST_SPIN}}u;  // polls of an untagged list entry before it is rebuilt
const FAIL: u32 = 0xffffffffu;
const CHAIN_CAP: u32 = {{CHAIN_CAP}}u; // owners a partition may need before it gives up

var<workgroup> op_ticket: u32;
var<workgroup> op_total: vec2<u32>;

fn store_entry(i: u32, v: u32) {
#if STALE_LISTS
    atomicStore(&lists[i], 0u);
#else
    atomicStore(&lists[i], v);
#endif
}

fn bic_apply(stack: u32, s: vec2<u32>) -> u32 {
    return max(stack, s.x) - s.x + s.y;
}

// The per-partition words (summary, size, parent link), one array each: a window's polls of one
// word are contiguous (interleaved records took 0.02 ms more at 2^28 on an H100).
fn st_at(field: u32, q: u32) -> u32 {
    return ST_BASE + field * params.n_parts + q;
}

fn publish_agg(q: u32, s: vec2<u32>) {
    atomicMax(&state[st_at(0u, q)], AGG_FLAG | (s.x << 16u) | s.y);
}

// (published, a, b)
fn poll_agg(q: u32) -> vec3<u32> {
    let w = atomicLoad(&state[st_at(0u, q)]);
    return vec3<u32>(w >> 31u, (w >> 16u) & 0x7fffu, w & 0xffffu);
}

// One word (flag, size): sizes are below 2^31.
fn publish_size(q: u32, s: u32) {
#if !NO_SIZES
    atomicStore(&state[st_at(1u, q)], AGG_FLAG | s);
#endif
}

// (published, stack size after partition q)
fn poll_size(q: u32) -> vec2<u32> {
    let w = atomicLoad(&state[st_at(1u, q)]);
    return vec2<u32>(w >> 31u, w & 0x7fffffffu);
}

fn publish_parent(q: u32, parent_plus1: u32) {
    atomicStore(&state[st_at(2u, q)], AGG_FLAG | parent_plus1);
}

// (published, parent + 1; 0: no earlier partition has a smaller minimum)
fn poll_parent(q: u32) -> vec2<u32> {
    let w = atomicLoad(&state[st_at(2u, q)]);
    return vec2<u32>(w >> 31u, w & 0x7fffffffu);
}

// Kinds of a polled predecessor: nothing yet, its summary only, its size only (the summary's
// store not visible yet), both; and, for the window's entries before partition 0, none.
const K_NONE: u32 = 0u;
const K_AGG: u32 = 1u;
const K_SIZE: u32 = 2u;
const K_BOTH: u32 = 3u;
const K_PAST: u32 = 4u;

// (kind, a, b, size after it) of a predecessor.
fn poll_pred(t: u32) -> vec4<u32> {
    let sz = poll_size(t);
    let g = poll_agg(t);
    let kind = select(g.x, select(K_SIZE, K_BOTH, g.x != 0u), sz.x != 0u);
    return vec4<u32>(kind, g.y, g.z, sz.y);
}

// Partition q's summary reduced by the whole workgroup: its own at the start (own: each chunk's
// summary also goes to op_ctot), or a silent predecessor's (the decoupled fallback). All chunks'
// loads are issued at once; per segment (subgroup) and chunk the (sum, minimum) of the walk go to
// put_chunk_sum (write_list's scans read them too).
var<workgroup> op_ctot: array<vec2<u32>, CHUNKS>;
fn partition_summary(q: u32, lid: u32, own: bool) -> vec2<u32> {
#if SUBGROUPS
    let sgid = lid / g_sg;
    let n_seg = WG / g_sg;
#unroll K CHUNKS
    let s{{K}} = inv_summary(load_masks(q * CHUNKS + {{K}}u, lid));
#endunroll
#unroll K CHUNKS
    {
        let d = i32(s{{K}}.y) - i32(s{{K}}.x);
        let lo = subgroupMin(subgroupExclusiveAdd(d) - i32(s{{K}}.x));
        let sum = subgroupAdd(d);
        if (g_lane == 0u) {
            put_chunk_sum(sgid, {{K}}u, vec2<i32>(sum, lo));
        }
    }
#endunroll
    workgroupBarrier();
#else
    let n_seg = 1u;
#unroll K CHUNKS
    {
        let s = inv_summary(load_masks(q * CHUNKS + {{K}}u, lid));
        let pre = bic_exclusive(lid, s);
        if (lid == WG - 1u) {
            let t = bic_combine(pre, s);
            put_chunk_sum(0u, {{K}}u, vec2<i32>(i32(t.y) - i32(t.x), -i32(t.x)));
        }
        workgroupBarrier();
    }
#endunroll
#endif
    if (lid == 0u) {
        var tot = vec2<u32>(0u);
        for (var k = 0u; k < CHUNKS; k++) {
            var d = 0;
            var lo = 0;
            for (var j = 0u; j < n_seg; j++) {
                let v = chunk_sum(j, k);
                lo = min(lo, d + v.y);
                d += v.x;
            }
            let t = vec2<u32>(u32(-lo), u32(d - lo));
            if (own) {
                op_ctot[k] = t;
            }
            tot = bic_combine(tot, t);
        }
        op_total = tot;
    }
    return workgroupUniformLoad(&op_total);
}

#if SHARED_WALK
var<private> g_excl: i32;        // own_summary's exclusive sum of the walk over the subgroup
var<private> g_carry: SegCarry;  // and its segment carries, for write_list's scans

// partition_summary of a partition of one chunk (masks m), with subgroups: every invocation
// combines the segments' sums itself (no second barrier, no broadcast), and keeps what write_list's
// scans need of them. (Its first lines repeat partition_summary's per-chunk block on purpose: one
// helper for both made the single pass 0.09 ms slower on an H100, 2.594 -> 2.681 ms at 2^28.)
fn own_summary(m: vec2<u32>, lid: u32) -> vec2<u32> {
    let s = inv_summary(m);
    let d = i32(s.y) - i32(s.x);
    let ex = subgroupExclusiveAdd(d);
    g_excl = ex;
    let lo = subgroupMin(ex - i32(s.x));
    let sum = subgroupAdd(d);
    if (g_lane == 0u) {
        put_chunk_sum(lid / g_sg, 0u, vec2<i32>(sum, lo));
    }
    workgroupBarrier();
    let c = seg_carry(lid / g_sg, 0u);
    g_carry = c;
    let t = vec2<u32>(u32(-c.all), u32(c.total - c.all));
    if (lid == 0u) {
        op_ctot[0] = t;
    }
    return t;
}
#endif

// With subgroups in sh_a / sh_b (free until fetch_incoming): write_list reads them, with no barrier
// before the first round's stores to the window's arrays. Without, the scans use sh_a / sh_b.
fn put_chunk_sum(seg: u32, k: u32, v: vec2<i32>) {
#if SUBGROUPS
    sh_a[seg * CHUNKS + k] = bitcast<u32>(v.x);
    sh_b[seg * CHUNKS + k] = bitcast<u32>(v.y);
#else
    if (k < 2u) {
        segs_sum[seg][2u * k] = v.x;
        segs_sum[seg][2u * k + 1u] = v.y;
    } else {
        segs_stop[seg][2u * k - 4u] = v.x;
        segs_stop[seg][2u * k - 3u] = v.y;
    }
#endif
}

fn chunk_sum(seg: u32, k: u32) -> vec2<i32> {
#if SUBGROUPS
    return vec2<i32>(bitcast<i32>(sh_a[seg * CHUNKS + k]), bitcast<i32>(sh_b[seg * CHUNKS + k]));
#else
    let v = select(segs_stop[seg], segs_sum[seg], k < 2u);
    let i = 2u * (k % 2u);
    return vec2<i32>(v[i], v[i + 1u]);
#endif
}

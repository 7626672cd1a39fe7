// Bracket matching in a single pass (SINGLE_PASS): partitions by ticket publish their summaries,
// look back for their start size, walk to their owners, fetch the incoming opens and run the leaf;
// a partition past a budget gives up and arms the multi-pass method as its repair.
// Defines: see stack/bracket_common.wgsl.

#include "stack/bracket_common.wgsl"
#include "stack/leaf_links.wgsl"
#include "stack/single_pass_state.wgsl"
#include "stack/single_pass_walk.wgsl"

// A chunk's owner chain: the owners inside the partition (earlier chunks, op_sub), then the
// partition's owner chain (op_chain) from entry g_c0. Entries: (owner, its minimum M), owner =
// a partition, or CHUNK_FLAG | a chunk.
const CHUNK_FLAG: u32 = 0x80000000u;
var<workgroup> op_sub: array<vec2<u32>, CHUNKS>;
var<workgroup> op_cinfo: vec4<u32>;  // chunk_chain's result for the chunk at hand
var<private> g_nsub: u32;
var<private> g_c0: u32;
var<private> g_ci: u32;           // chain entry: owners only move left as heights fall
var<private> g_chain_len: u32;
var<private> g_tab_lo: u32 = INF; // the incoming stack's opens at heights g_tab_lo.. in sh_a, sh_b

fn chain_at(i: u32) -> vec2<u32> {
    if (i < g_nsub) {
        return op_sub[i];
    }
    return op_chain[g_c0 + i - g_nsub];
}

// For chunk k of partition p (bp: the stack size before the partition; len entries in op_chain),
// by one invocation: the records of the earlier chunks' minima below the chunk's start size into
// op_sub. Returns (their count, the first op_chain entry still needed, the chunk's start size bk,
// its minimum mk).
fn chunk_chain(p: u32, k: u32, bp: u32, len: u32) -> vec4<u32> {
    var mins: array<u32, CHUNKS>;
    var b = bp;
    var bk = bp;
#unroll J CHUNKS
    {
        let t = op_ctot[{{J}}];
        mins[{{J}}] = max(b, t.x) - t.x;
        if ({{J}}u == k) {
            bk = b;
        }
        b = bic_apply(b, t);
    }
#endunroll
    let mk = max(bk, op_ctot[k].x) - op_ctot[k].x;
    var th = bk;
    var ns = 0u;
    var done = false;
#unroll J CHUNKS
    {
        const j: u32 = CHUNKS - 1u - {{J}}u;
        if (!done && j < k && mins[j] < th) {
            op_sub[ns] = vec2<u32>(CHUNK_FLAG | (p * CHUNKS + j), mins[j]);
            ns += 1u;
            th = mins[j];
            done = th < mk || th == 0u;
        }
    }
#endunroll
    var c0 = len;
    if (!done) {
        c0 = 0u;
        for (; c0 < len && op_chain[c0].y >= th; c0++) {
        }
    }
    return vec4<u32>(ns, c0, bk, mk);
}

// (owner, M) of the nearest earlier chunk or partition whose minimum M is below h, from the chunk's
// owner chain; x = INF for none (past the chain).
fn partition_owner(h: u32) -> vec2<u32> {
    for (; g_ci < g_chain_len && chain_at(g_ci).y >= h; g_ci++) {
    }
    if (g_ci == g_chain_len) {
        return vec2<u32>(INF, 0u);
    }
    return chain_at(g_ci);
}

// The open at `slot` of an owner's list (global index): a chunk's sub-list (written by this
// workgroup before a storage barrier) or a partition's list.
fn owner_open(w: u32, slot: u32) -> i32 {
    if (w >= CHUNK_FLAG) {
        let c = w - CHUNK_FLAG;
        let k = c % CHUNKS;
        return i32(c * P + sublists[(c - k) / CHUNKS * (CHUNKS - 1u) * P + k * P + slot]);
    }
    return list_entry(w, slot);
}

// Up to 2 WG opens of the incoming stack a partition's leaf needs (heights max(mp, 1) .. bp), read
// from their owners' lists at once by the whole workgroup into sh_a, sh_b (free after the scans):
// one round trip, and the leaf then serves them in one pass instead of a round per owner.
fn fetch_incoming(lid: u32, bp: u32, mp: u32) {
    let lo = max(mp, 1u);
    if (bp < lo || bp - lo >= 2u * WG) {
        return;
    }
    for (var i = lid; i <= bp - lo; i += WG) {
        let h = lo + i;
        var c = 0u;
        for (; c < g_chain_len && chain_at(c).y >= h; c++) {
        }
        if (c < g_chain_len) {
            let o = chain_at(c);
            let e = u32(owner_open(o.x, h - 1u - o.y));
            if (i < WG) {
                sh_a[i] = e;
            } else {
                sh_b[i - WG] = e;
            }
        }
    }
    g_tab_lo = lo;
    workgroupBarrier();  // (the leaf's first barrier would do, but this one is faster on an H100)
}

// The incoming stack's open at height h (global index), from fetch_incoming's table.
fn incoming_open(h: u32) -> i32 {
    let i = h - g_tab_lo;
    return i32(select(sh_b[max(i, WG) - WG], sh_a[min(i, WG - 1u)], i < WG));
}

// The open at `slot` of partition q's list (global index). An entry without this call's tag was
// not visible yet (plain stores and flags are not ordered): rebuilt from q's input instead, as
// the last open at that height of q's unclamped walk.
fn list_entry(q: u32, slot: u32) -> i32 {
    var v = atomicLoad(&lists[q * PP + slot]);
    // An entry without the tag is mostly one whose writer is still storing its lists (it published
    // its summary first): polled a while before the rebuild, which is far dearer (bounded: nothing
    // waits on another workgroup's progress).
    for (var spin = 0u; spin < LIST_SPIN && (v >> LOCAL_BITS) != params.epoch; spin++) {
        v = atomicLoad(&lists[q * PP + slot]);
    }
    if ((v >> LOCAL_BITS) == params.epoch) {
        return i32(q * PP + (v & LOCAL_MASK));
    }
#if ROUND_STATS
    if ({{LOOK_STATS}}u == 2u) {
        atomicAdd(&state[3], 1u);  // diagnostics: entries rebuilt
    }
#endif
    let height = i32(slot) - i32(poll_agg(q).y);  // q's summary is published: the walk read it
    var h = 0;
    var last = 0u;
    for (var t = 0u; t < WG * CHUNKS; t++) {
        let m = load_masks(q * CHUNKS, t);
#unroll E 16
        {
            if (((m.x >> {{E}}u) & 1u) != 0u) {
                if (h == height) {
                    last = t * EPT + {{E}}u;
                }
                h += 1;
            } else if (((m.y >> {{E}}u) & 1u) != 0u) {
                h -= 1;
            }
        }
#endunroll
    }
    return i32(q * PP + last);
}

// A budget ran out: counted, and the repair (the six dispatches, recorded indirect with zero
// grids) armed. Every writer writes the same values.
fn give_up() {
    atomicAdd(&state[1], 1u);
    if (params.arm != 0u) {
        repair_args[0] = params.red_x;
        repair_args[1] = params.red_y;
        repair_args[2] = 1u;
        repair_args[3] = params.up_x;
        repair_args[4] = params.up_y;
        repair_args[5] = 1u;
        repair_args[6] = 1u;
        repair_args[7] = 1u;
        repair_args[8] = 1u;
        repair_args[9] = params.up_x;
        repair_args[10] = params.up_y;
        repair_args[11] = 1u;
        repair_args[12] = params.chain_x;
        repair_args[13] = params.chain_y;
        repair_args[14] = 1u;
        repair_args[15] = params.red_x;
        repair_args[16] = params.red_y;
        repair_args[17] = 1u;
    }
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32,
#if SUBGROUPS
        @builtin(subgroup_invocation_id) lane: u32, @builtin(subgroup_size) sg_size: u32,
#endif
        ) {
#if SUBGROUPS
    g_lane = lane;
    g_sg = min(sg_size, WG);
#else
    g_lid = lid;
#endif
    // Partitions by ticket: a predecessor has always started.
    if (lid == 0u) {
        op_ticket = atomicAdd(&state[0], 1u);
    }
#if BLOCK_MIN_LANES
    if (lid < NBLK) {
        atomicStore(&sh_bmin[lid], INF);  // (the first chunk's leaf is many barriers later)
    }
#endif
    let p = workgroupUniformLoad(&op_ticket);
    if (p >= params.n_parts) {
        return;
    }
    let silent = withholds(p, params.withhold_period);
    // The partition's summary first (all chunks' loads at once), published before its lists.
#if SHARED_WALK
    let m0 = load_masks(p, lid);  // (one chunk: also write_list's)
    let agg = own_summary(m0, lid);
#else
    let agg = partition_summary(p, lid, true);  // (no divergent branch before the walk's subgroups)
#endif
    if (lid == 0u) {
        if (!silent) {
            publish_agg(p, agg);
        }
        atomicStore(&op_jump, INF);
    }
    // Each chunk's lists: the partition's list (for later partitions) and, but for the last chunk,
    // its own sub-list (for this partition's later chunks; read after the storage barrier).
    var cstart = 0;  // the chunk's start, walk relative to the partition's
    for (var k = 0u; k < CHUNKS; k++) {
        let c = p * CHUNKS + k;
        if (c * P >= params.n) {
            break;
        }
        var later = BIG_RUN;
        var d = 0;
        // (one chunk: no op_ctot read, which lid 0 of own_summary may still be writing)
        for (var j = k + 1u; j < CHUNKS; j++) {
            d += i32(op_ctot[j - 1u].y) - i32(op_ctot[j - 1u].x);
            later = min(later, d - i32(op_ctot[j].x));
        }
#if SHARED_WALK
        let m = m0;
#else
        let m = load_masks(c, lid);
#endif
        write_list(c, lid, m, vec3<i32>(cstart, later, -i32(agg.x)));
        if (k + 1u < CHUNKS) {
            cstart += i32(op_ctot[k].y) - i32(op_ctot[k].x);
        }
    }
    // Only the partition's own later chunks read its sub-lists here; other partitions' reads of its
    // list check each entry's tag, so one chunk needs no barrier (H100: 0.056 ms less at 2^28).
    if (CHUNKS > 1u) {
        storageBarrier();
    }
    // The stack size before the partition (published inside), the owners of the incoming stack's
    // heights it needs, and parent(p) (published for later walks).
    let chain = find_owners(p, lid, agg, silent);
    if (chain.w == 0u) {  // the lookback's budget ran out: nothing published but the summary
        if (lid == 0u) {
            give_up();
        }
        return;
    }
    let bp = chain.x;
    if (lid == 0u) {
        if (chain.w == 2u && !silent) {
            publish_parent(p, chain.z);
        }
        if (agg.x > bp) {
            atomicAdd(&info[0], agg.x - bp);
        }
        if (p == params.n_parts - 1u) {
            atomicStore(&info[1], bic_apply(bp, agg));
        }
    }

    // The leaf of each chunk, with owners from the earlier chunks and then from the partition's
    // chain. An element left without one: the chain stopped short because a budget ran out.
    for (var k = 0u; k < CHUNKS; k++) {
        let c = p * CHUNKS + k;
        if (c * P >= params.n) {
            break;
        }
#if SHARED_WALK
        // One chunk: no earlier chunks' owners, and op_chain's first entry is below bp already
        // (find_owners' last barrier is after its stores).
        let ci = vec4<u32>(0u, 0u, bp, max(bp, agg.x) - agg.x);
        let sv = sh_surv[lid];  // from write_list
        let m = vec2<u32>(sv.x & 0xffffu, sv.x >> 16u);
        let pre = vec2<u32>(sv.y, sv.y + sv.z);
#else
        workgroupBarrier();  // the last chunk's leaf is done with the shared arrays and op_sub
#if BLOCK_MIN_LANES
        if (lid < NBLK) {
            atomicStore(&sh_bmin[lid], INF);
        }
#endif
        if (lid == 0u) {
            op_cinfo = chunk_chain(p, k, bp, chain.y);
        }
        let m = load_masks(c, lid);
        let pre = bic_exclusive(lid, inv_summary(m));
        let ci = workgroupUniformLoad(&op_cinfo);  // (also: bic_exclusive's reads of sh_a / sh_b are done)
#endif
        let bk = ci.z;  // the stack size before the chunk
        let mk = ci.w;  // its minimum
        g_nsub = ci.x;
        g_c0 = ci.y;
        g_chain_len = ci.x + chain.y - ci.y;
        g_ci = 0u;
        g_tab_lo = INF;
        if (chain.w == 2u) {
            fetch_incoming(lid, bk, mk);
        }
        var B: array<u32, 17>;
        var lk: array<i32, 16>;
        let gave = leaf_links(c, lid, m, pre, bk, &lk, &B) && chain.w != 2u;
        if (gave) {
            give_up();
        }
        store_direct(c * P + lid * EPT, &lk, &B);
    }
}

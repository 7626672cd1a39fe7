// The single pass's lookback and owner walk (find_owners): rounds over windows of predecessors,
// scanned by segments (subgroups, or the workgroup through workgroup memory).

// The stack size before the partition and the owners of the incoming stack's heights, found in
// rounds over windows of WG predecessors (wide_round), one poll per invocation.
//
// Per window entry l (partition t = start - l, nearest first) with its summary (a, b) known:
// d = b - a, D = the sum of d over the nearer entries, v = D + b. Applied in order, the summaries
// between t and the partition map a stack size s to max(s + sum d, max v), so
//   the lookback: bp = max(size after the stop entry + D[stop], max of v before the stop);
//   the walk: M[t] = (stack size after the window's start) - v, exact up to the first owner
//   with M = 0 (no clamping before it).
// The owners of the heights still needed are the records of M (the entries whose M is below every
// nearer one and below the chain's threshold): ranked by a scan, written to op_chain directly.
// So a partition needs no other partition's parent link, only summaries and sizes, which every
// partition publishes as soon as it has them. An entry without a usable summary stops the window:
// a silent predecessor is reduced by the whole workgroup (the decoupled fallback) and taken in place.
const BIG: i32 = 0x20000000;
const PH_LOOK: u32 = 0u;    // the lookback: stack size before the partition
const PH_OWNERS: u32 = 1u;  // the owner walk
const PH_DONE: u32 = 2u;
const PH_FAILED: u32 = 3u;

struct Walk {
    phase: u32,
    look: u32,       // PH_LOOK: the next window starts at look - 1
    acc_d: i32,      // PH_LOOK: sum of d over the passed predecessors
    acc_v: i32,      // PH_LOOK: maximum of v over them (-BIG: none)
    bp: u32,         // the stack size before the partition
    q0: i32,         // PH_OWNERS: the next window starts at q0
    send: u32,       // PH_OWNERS: the stack size after q0
    thresh: u32,     // PH_OWNERS: heights below it still need owners
    len: u32,        // owners in op_chain
    parent1: u32,    // parent(p) + 1 (0: none)
    steps: u32,      // lookback windows left
    hops: u32,       // walk windows left
    fallback: u32,   // a predecessor for the workgroup to reduce (INF: none)
    reuse: u32,      // 1: the lookback is in its first window, which the walk's first one can reuse
    lb_done: u32,    // 1: bp is known (and published)
}
var<workgroup> op_walk: Walk;
var<workgroup> op_chain: array<vec2<u32>, CHAIN_CAP>;

// Segment operations (a segment: a subgroup, or without subgroups the workgroup through workgroup
// memory). Call them in segment-uniform control flow with no divergent branch since the last
// barrier (see common/subgroup_scan.wgsl).
#if SUBGROUPS
#include "common/ballot.wgsl"

fn seg_size() -> u32 {
    return g_sg;
}
fn seg_lane() -> u32 {
    return g_lane;
}
fn seg_incl_add(x: i32) -> i32 {
    return subgroupInclusiveAdd(x);
}
fn seg_incl_max(x: i32) -> i32 {
    var v = x;
    for (var d = 1u; d < g_sg; d = d << 1u) {
        let y = subgroupShuffleUp(v, d);
        v = select(v, max(v, y), g_lane >= d);
    }
    return v;
}
fn seg_up(x: i32, none: i32) -> i32 {  // the previous lane's x (none in lane 0)
    return select(subgroupShuffleUp(x, 1u), none, g_lane == 0u);
}
fn seg_at(x: i32, lane: u32) -> i32 {
    return subgroupShuffle(x, lane);
}
fn seg_first(pred: bool) -> u32 {
    return first_lane(subgroupBallot(pred), g_sg);
}
fn seg_all(pred: bool) -> bool {
    return subgroupAll(pred);
}
fn seg_count_incl(pred: bool) -> i32 {  // lanes up to this one where pred holds
    return i32(count_through(subgroupBallot(pred), g_lane));
}
#else
var<private> g_lid: u32;
var<workgroup> op_seg: array<i32, WG>;
var<workgroup> op_seg_min: atomic<u32>;
var<workgroup> op_seg_first: u32;
fn seg_size() -> u32 {
    return WG;
}
fn seg_lane() -> u32 {
    return g_lid;
}
// Inclusive sum (or maximum) over the workgroup, Hillis-Steele.
fn seg_inclusive(x: i32, take_max: bool) -> i32 {
    workgroupBarrier();
    op_seg[g_lid] = x;
    workgroupBarrier();
    for (var d = 1u; d < WG; d = d << 1u) {
        var v = op_seg[g_lid];
        if (g_lid >= d) {
            let y = op_seg[g_lid - d];
            v = select(v + y, max(v, y), take_max);
        }
        workgroupBarrier();
        op_seg[g_lid] = v;
        workgroupBarrier();
    }
    return op_seg[g_lid];
}
fn seg_incl_add(x: i32) -> i32 {
    return seg_inclusive(x, false);
}
fn seg_incl_max(x: i32) -> i32 {
    return seg_inclusive(x, true);
}
fn seg_at(x: i32, lane: u32) -> i32 {
    workgroupBarrier();
    op_seg[g_lid] = x;
    workgroupBarrier();
    return op_seg[lane];
}
fn seg_up(x: i32, none: i32) -> i32 {
    let y = seg_at(x, max(g_lid, 1u) - 1u);
    return select(y, none, g_lid == 0u);
}
fn seg_first(pred: bool) -> u32 {
    workgroupBarrier();
    if (g_lid == 0u) {
        atomicStore(&op_seg_min, WG);
    }
    workgroupBarrier();
    if (pred) {
        atomicMin(&op_seg_min, g_lid);
    }
    workgroupBarrier();
    if (g_lid == 0u) {
        op_seg_first = atomicLoad(&op_seg_min);
    }
    return workgroupUniformLoad(&op_seg_first);
}
fn seg_all(pred: bool) -> bool {
    return seg_first(!pred) == WG;
}
fn seg_count_incl(pred: bool) -> i32 {
    return seg_incl_add(select(0, 1, pred));
}
#endif

// One round of the lookback or the owner walk over a window of entries, entry l = partition
// t0 - l (nearest first), one poll each. A segment (subgroup, or the workgroup without subgroups)
// scans its own entries with shuffles (seg_scan) and leaves a summary in workgroup memory; after
// one barrier every invocation combines the summaries before its segment (carries) and the whole
// window's; the records are ranked after a second; the next state goes out through a third. When
// the lookback ends in its first window, the same polls serve the walk's first window.
const N_SEG: u32 = {{N_SEG}}u;  // segments per workgroup at most

// A segment's scan of its entries: per entry the window values (has: a usable summary for the
// lookback; usable: for the walk), and the segment's summary: sum = (sum of d, maximum of v, first
// lookback stop, first unusable entry), stop = at the first stop (kind, size after it, D, exclusive
// maximum of v), unus = at the first unusable entry (D, exclusive maximum of v, partition, kind).
struct SegScan {
    usable: bool,
    dx: i32,
    v: i32,
    pex: i32,
    sum: vec4<i32>,
    stop: vec4<i32>,
    unus: vec4<i32>,
}
fn seg_scan(st: vec4<u32>, t: u32) -> SegScan {
    let size = seg_size();
    // A withheld partition's summary (test switch) is never trusted by the walk.
    let has = st.x == K_AGG || st.x == K_BOTH;
    let usable = has && !withholds(t, params.withhold_period);
    let d = select(0, i32(st.z) - i32(st.y), has);
    let incl_d = seg_incl_add(d);
    let dx = incl_d - d;
    let v = select(BIG, dx + i32(st.z), has);
    let pin = seg_incl_max(v);
    let pex = seg_up(pin, -BIG);
    let fs = seg_first(st.x != K_AGG);
    let fu = seg_first(!usable);
    let fsc = min(fs, size - 1u);
    let fuc = min(fu, size - 1u);
    return SegScan(usable, dx, v, pex,
                   vec4<i32>(seg_at(incl_d, size - 1u), seg_at(pin, size - 1u), i32(fs), i32(fu)),
                   vec4<i32>(seg_at(i32(st.x), fsc), seg_at(i32(st.w), fsc), seg_at(dx, fsc), seg_at(pex, fsc)),
                   vec4<i32>(seg_at(dx, fuc), seg_at(pex, fuc), seg_at(i32(t), fuc), seg_at(i32(st.x), fuc)));
}

// A whole window's totals: (sum of d, maximum of v), and at its first lookback stop and first
// unusable entry: the entry's index (WG if there is none), the carries (D, maximum of v) into
// its segment, and its segment's stop / unus summary.
struct WinTot {
    tot_d: i32,
    tot_v: i32,
    stop_at: u32,
    stop_carry: vec2<i32>,
    stop: vec4<i32>,
    unus_at: u32,
    unus_carry: vec2<i32>,
    unus: vec4<i32>,
}

// The lookback's step from a window's totals: past the window, or to a silent predecessor for the
// workgroup to reduce, or bp. Returns whether the walk's records are to be taken from this window.
fn lookback_step(nw: ptr<function, Walk>, wt: WinTot, t0: i32, p: u32) -> bool {
    if (wt.stop_at == WG) {
        (*nw).acc_v = max((*nw).acc_v, (*nw).acc_d + wt.tot_v);
        (*nw).acc_d += wt.tot_d;
        (*nw).look = u32(t0 + 1) - WG;
        (*nw).reuse = 0u;
        return false;
    }
    let dd = (*nw).acc_d + wt.stop_carry.x + wt.stop.z;
    let vv = max((*nw).acc_v, max((*nw).acc_d + wt.stop_carry.y, (*nw).acc_d + wt.stop_carry.x + wt.stop.w));
    if (u32(wt.stop.x) == K_NONE) {
        (*nw).acc_d = dd;
        (*nw).acc_v = vv;
        (*nw).look = u32(t0) - wt.stop_at;
        (*nw).fallback = (*nw).look;
        (*nw).reuse = 0u;
        return false;
    }
    let bp = u32(max(i32(select(u32(wt.stop.y), 0u, u32(wt.stop.x) == K_PAST)) + dd, vv));
    (*nw).bp = bp;
    (*nw).lb_done = 1u;
    (*nw).phase = select(PH_OWNERS, PH_DONE, bp == 0u);
    (*nw).q0 = i32(p) - 1;
    (*nw).send = bp;
    (*nw).thresh = bp;
    let reuse = (*nw).phase == PH_OWNERS && (*nw).reuse == 1u;
    (*nw).reuse = 0u;
    return reuse;
}

// The walk's step after a window's records (count of them, and rec = (first that ends the chain
// (WG: none), its partition, its M)): done, failed, or on to the unusable entry (for the
// workgroup to reduce) or past the window (to its parent-link jump j where that is safe).
fn walk_step(nw: ptr<function, Walk>, wt: WinTot, count: u32, rec: vec4<i32>, t0: i32, mp: u32, j: u32) {
    let send = i32((*nw).send);
    if ((*nw).len + count > CHAIN_CAP) {
        (*nw).phase = PH_FAILED;
        return;
    }
    (*nw).len += count;
    if (u32(rec.x) != WG) {
        (*nw).phase = PH_DONE;
        (*nw).parent1 = select(0u, u32(rec.y) + 1u, rec.z < i32(mp));
        return;
    }
    if (count > 0u) {  // the last record's M: the minimum before the unusable entry
        (*nw).thresh = u32(send - select(wt.tot_v, max(wt.unus_carry.y, wt.unus_carry.x + wt.unus.y),
                                         wt.unus_at != WG));
    }
    if (wt.unus_at != WG) {
        // (a partition past 0 cannot be reached: partition 0's minimum is 0, an owner that ends
        // the chain)
        (*nw).q0 = wt.unus.z;
        (*nw).send = u32(send - (wt.unus_carry.x + wt.unus.x));
        (*nw).fallback = u32(wt.unus.z);
        return;
    }
    (*nw).q0 = t0 - i32(WG);
    (*nw).send = u32(send - wt.tot_d);
    // Every entry has M >= the threshold, and so does every partition between an entry and its
    // parent: the farthest published parent link is a safe jump.
    if (j != INF && i32(j) <= (*nw).q0) {
        let ps = poll_size(j);
        if (ps.x != 0u) {
            (*nw).q0 = i32(j);
            (*nw).send = ps.y;
        }
    }
}

// Entry l of a window: (kind, a, b, size after it) of partition t0 - l (K_PAST before partition 0),
// spinning (bounded) while the segment has an entry that has published nothing.
fn poll_entry(t0: i32, l: u32) -> vec4<u32> {
    let valid = t0 >= i32(l);
    let t = u32(select(0, t0 - i32(l), valid));
    var st = select(vec4<u32>(K_PAST, 0u, 0u, 0u), poll_pred(t), valid);
    for (var s = 1u; s < SPIN_LIMIT; s++) {
        if (seg_all(st.x != K_NONE)) {
            break;
        }
        st = select(st, poll_pred(t), st.x == K_NONE);
    }
    return st;
}

// Per segment: sum, stop and unus of seg_scan; rec = (records, first that ends the chain, its
// partition, its M).
var<workgroup> segs_sum: array<vec4<i32>, N_SEG>;
var<workgroup> segs_stop: array<vec4<i32>, N_SEG>;
var<workgroup> segs_unus: array<vec4<i32>, N_SEG>;
var<workgroup> segs_rec: array<vec4<i32>, N_SEG>;
var<workgroup> op_jump: atomic<u32>;  // the farthest published parent link in the window

#if SUBGROUPS
// With one lane per segment (lane j's entry position `at` in its segment, size: none there, and
// the carries (ed, ev) into it): (the first segment with such an entry, the entry's window
// position, the carries into its segment); x = the subgroup's size when no segment has one.
fn first_entry(in_win: bool, at: i32, ed: i32, ev: i32, size: u32, nseg: u32) -> vec4<i32> {
    let f = first_lane(subgroupBallot(in_win && u32(at) < size), size);
    let fc = min(f, nseg - 1u);
    let pos = f * size + u32(subgroupShuffle(at, fc));
    return vec4<i32>(i32(f), i32(pos), subgroupShuffle(ed, fc), subgroupShuffle(ev, fc));
}

// The window's totals and the carries into segment `seg`, with one lane per segment (nseg at most
// the subgroup's size): scans across the lanes instead of every invocation looping over the
// segments' summaries.
fn win_lanes(seg: u32, size: u32, nseg: u32, wt: ptr<function, WinTot>) -> vec2<i32> {
    let j = g_lane;
    let in_win = j < nseg;
    let sj = select(vec4<i32>(0, -BIG, i32(size), i32(size)), segs_sum[min(j, nseg - 1u)], in_win);
    // inclusive scan of (sum of d, maximum of v): x then y = (x.d + y.d, max(x.v, x.d + y.v))
    var d = sj.x;
    var v = sj.y;
    for (var k = 1u; k < nseg; k = k << 1u) {
        let pd = subgroupShuffleUp(d, k);
        let pv = subgroupShuffleUp(v, k);
        if (j >= k) {
            v = max(pv, pd + v);
            d += pd;
        }
    }
    let ed = select(subgroupShuffleUp(d, 1u), 0, j == 0u);
    let ev = select(subgroupShuffleUp(v, 1u), -BIG, j == 0u);
    (*wt).tot_d = subgroupShuffle(d, nseg - 1u);
    (*wt).tot_v = subgroupShuffle(v, nseg - 1u);
    let fs = first_entry(in_win, sj.z, ed, ev, size, nseg);
    if (fs.x < i32(nseg)) {
        (*wt).stop_at = u32(fs.y);
        (*wt).stop_carry = fs.zw;
        (*wt).stop = segs_stop[fs.x];
    }
    let fu = first_entry(in_win, sj.w, ed, ev, size, nseg);
    if (fu.x < i32(nseg)) {
        (*wt).unus_at = u32(fu.y);
        (*wt).unus_carry = fu.zw;
        (*wt).unus = segs_unus[fu.x];
    }
    return vec2<i32>(subgroupShuffle(ed, seg), subgroupShuffle(ev, seg));
}

// The records' totals with one lane per segment: (records before segment `seg`, records in the
// window), and rt as in wide_round.
fn rec_lanes(seg: u32, size: u32, nseg: u32, rt: ptr<function, vec4<i32>>) -> vec2<i32> {
    let j = g_lane;
    let in_win = j < nseg;
    let rj = select(vec4<i32>(0, i32(size), 0, 0), segs_rec[min(j, nseg - 1u)], in_win);
    let incl = subgroupInclusiveAdd(rj.x);
    let fr = first_lane(subgroupBallot(in_win && u32(rj.y) < size), size);
    let frc = min(fr, nseg - 1u);
    let rz = subgroupShuffle(rj.z, frc);
    let rw = subgroupShuffle(rj.w, frc);
    if (fr < nseg) {
        *rt = vec4<i32>(0, rz, rw, 0);
    }
    return vec2<i32>(subgroupShuffle(incl - rj.x, seg), subgroupShuffle(incl, nseg - 1u));
}
#endif

fn wide_round(w: ptr<function, Walk>, lid: u32, p: u32, agg: vec2<u32>) {
    let size = seg_size();
    let seg = lid / size;
    let nseg = WG / size;
    let look_phase = (*w).phase == PH_LOOK;
    let t0 = select((*w).q0, i32((*w).look) - 1, look_phase);
    let valid = t0 >= i32(lid);
    let t = u32(select(0, t0 - i32(lid), valid));
    let st = poll_entry(t0, lid);
    var par = vec2<u32>(0u);
    if (!look_phase) {
        par = poll_parent(t);
    }
    let sc = seg_scan(st, t);
    if (seg_lane() == 0u) {
        segs_sum[seg] = sc.sum;
        segs_stop[seg] = sc.stop;
        segs_unus[seg] = sc.unus;
    }
    workgroupBarrier();
    // Carries into this segment, and the whole window (every invocation the same values).
    var carry = vec2<i32>(0, -BIG);
    var wt = WinTot(0, -BIG, WG, vec2<i32>(0), vec4<i32>(0), WG, vec2<i32>(0), vec4<i32>(0));
#if SUBGROUPS
    let lanes = nseg <= size;
    if (lanes) {
        carry = win_lanes(seg, size, nseg, &wt);
    }
#else
    let lanes = false;
#endif
    for (var j = 0u; j < nseg && !lanes; j++) {
        let sj = segs_sum[j];
        if (j == seg) {
            carry = vec2<i32>(wt.tot_d, wt.tot_v);
        }
        if (wt.stop_at == WG && u32(sj.z) < size) {
            wt.stop_at = j * size + u32(sj.z);
            wt.stop_carry = vec2<i32>(wt.tot_d, wt.tot_v);
            wt.stop = segs_stop[j];
        }
        if (wt.unus_at == WG && u32(sj.w) < size) {
            wt.unus_at = j * size + u32(sj.w);
            wt.unus_carry = vec2<i32>(wt.tot_d, wt.tot_v);
            wt.unus = segs_unus[j];
        }
        wt.tot_v = max(wt.tot_v, wt.tot_d + sj.y);
        wt.tot_d += sj.x;
    }
    var nw = *w;
    var records = !look_phase;
    if (look_phase) {
        records = lookback_step(&nw, wt, t0, p);
    }
    // The records: owners of the heights below the threshold, in order.
    let send = i32(nw.send);
    let mp = max(nw.bp, agg.x) - agg.x;
    let m = send - (carry.x + sc.v);
    let th = min(i32(nw.thresh), send - max(carry.y, carry.x + sc.pex));  // the last owner's M before it
    let rec = records && lid < wt.unus_at && m < th && th >= i32(max(mp, 1u));
    let r_incl = seg_count_incl(rec);
    let term = rec && (m < i32(mp) || m == 0);
    let ft = seg_first(term);
    let ftc = min(ft, size - 1u);
    let s_rec = vec4<i32>(seg_at(r_incl, size - 1u), i32(ft), seg_at(i32(t), ftc), seg_at(m, ftc));
    if (seg_lane() == 0u) {
        segs_rec[seg] = s_rec;
    }
    if (records && valid && par.x != 0u && par.y != 0u) {
        atomicMin(&op_jump, par.y - 1u);
    }
    workgroupBarrier();
    var before = 0;
    var count = 0;
    var rt = vec4<i32>(i32(WG), 0, 0, 0);
#if SUBGROUPS
    if (lanes) {
        let bc = rec_lanes(seg, size, nseg, &rt);
        before = bc.x;
        count = bc.y;
    }
#endif
    for (var j = 0u; j < nseg && !lanes; j++) {
        let rj = segs_rec[j];
        if (j < seg) {
            before += rj.x;
        }
        count += rj.x;
        if (u32(rt.x) == WG && u32(rj.y) < size) {
            rt = vec4<i32>(0, rj.z, rj.w, 0);
        }
    }
    let rank = nw.len + u32(before + r_incl) - 1u;
    if (rec && rank < CHAIN_CAP) {
        op_chain[rank] = vec2<u32>(t, u32(max(m, 0)));
    }
    if (lid == 0u) {
        if (records) {
            walk_step(&nw, wt, u32(count), rt, t0, mp, atomicLoad(&op_jump));
        }
        atomicStore(&op_jump, INF);  // for the next round (after its first barrier)
        op_walk = nw;
    }
    *w = workgroupUniformLoad(&op_walk);
}

// The stack size before partition p and its owner chain (op_chain): (bp, entries, parent + 1,
// status: 0 the lookback's budget ran out, 1 the walk's, 2 done). Rounds of wide_round; the
// workgroup reduces the silent predecessors met and takes them in place: in the lookback as the
// next entry, in the walk as one entry (an owner if its minimum is below the threshold).
fn find_owners(p: u32, lid: u32, mp_of: vec2<u32>, silent: bool) -> vec4<u32> {
    var w = Walk(PH_LOOK, p, 0, -BIG, 0u, 0, 0u, 0u, 0u, 0u, params.max_steps, params.max_hops, INF, 1u, 0u);
    if (p == 0u) {
        w.phase = PH_DONE;
        w.lb_done = 1u;
    }
    for (var round = 0u; round <= params.max_steps + params.max_hops; round++) {
        if (w.phase == PH_LOOK) {
            if (w.steps == 0u) {
                w.phase = PH_FAILED;
                break;
            }
            w.steps -= 1u;
        } else if (w.phase == PH_OWNERS) {
            if (w.hops == 0u) {
                w.phase = PH_FAILED;
                break;
            }
            w.hops -= 1u;
        } else {
            break;
        }
        let was_look = w.phase == PH_LOOK;
#if ROUND_STATS
        if (lid == 0u && select(0u, 1u, was_look) == {{LOOK_STATS}}u) {
            atomicAdd(&state[3], 1u);  // diagnostics: lookback (LOOK_STATS) or walk rounds
        }
#endif
        wide_round(&w, lid, p, mp_of);
        if (was_look && w.lb_done == 1u && !silent && lid == 0u) {
            publish_size(p, bic_apply(w.bp, mp_of));
        }
        if (w.fallback == INF) {
            continue;
        }
        let q = w.fallback;
        w.fallback = INF;
        let sum = partition_summary(q, lid, false);
        if (lid == 0u) {
            publish_agg(q, sum);
            atomicAdd(&state[2], 1u);
        }
        if (w.phase == PH_LOOK) {
            w.acc_v = max(w.acc_v, w.acc_d + i32(sum.y));
            w.acc_d += i32(sum.y) - i32(sum.x);
            continue;
        }
        let mp = max(w.bp, mp_of.x) - mp_of.x;
        let mq = i32(w.send) - i32(sum.y);
        if (mq < i32(w.thresh)) {
            if (w.len == CHAIN_CAP) {
                w.phase = PH_FAILED;
                break;
            }
            if (lid == 0u) {
                op_chain[w.len] = vec2<u32>(q, u32(max(mq, 0)));
            }
            workgroupBarrier();  // (the leaf reads op_chain with no barrier of its own)
            w.len += 1u;
            w.thresh = u32(max(mq, 0));
            if (mq < i32(mp) || mq <= 0) {
                w.phase = PH_DONE;
                w.parent1 = select(0u, q + 1u, mq < i32(mp));
                break;
            }
        }
        w.send = u32(mq + i32(sum.x));  // mq >= the threshold > 0: no clamping
        w.q0 = i32(q) - 1;
    }
    if (w.phase == PH_DONE && p == 0u && !silent && lid == 0u) {
        publish_size(p, bic_apply(0u, mp_of));
    }
    return vec4<u32>(w.bp, w.len, w.parent1, select(w.lb_done, 2u, w.phase == PH_DONE));
}

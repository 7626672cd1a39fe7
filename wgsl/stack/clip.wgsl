// Clip / blend-group bounding boxes over the stack links of stack/bracket_*.wgsl (MODE_KIND), in
// tiles of T = WG * EPT elements, no readback (pywgpuprims/stack.py, _record_clip):
//   TILE:  per tile, the opens it leaves unclosed (no close of the tile links to them) form a chain
//          u1 <- u2 <- ... (each one's link is the one before); their boxes' running combination
//          rl[u_j] = op(box u1, ..., box u_j) (a workgroup scan), and the tile's anchor = link[u1]
//          (an open of an earlier tile, -1 at top level; -2 where the tile leaves none).
//          The value pushed by u_j is op(rl[u_j], A[tile]), A[tile] = the anchor's pushed value.
//   INIT, JUMP: A for every tile by pointer jumping over tiles (ping-pong buffers): (acc, next)
//          starts as (rl[anchor], tile of anchor), or (viewport, -1) at top level; a round does
//          acc = op(acc, acc[next]), next = next[next]. ceil(log2(tiles)) rounds reach the root.
//   LEAF:  per tile, each element's output: links within the tile resolved by pointer jumping in
//          workgroup memory (rounds until no chain is left, at most log2(T)); a link to an earlier
//          tile's open u reads op(rl[u], A[tile of u]); -1 reads the viewport.
// Defines: WG, EPT, LOG_T (T = WG * EPT = 2^LOG_T); TILE | INIT | JUMP | LEAF (INIT and JUMP with TILE_PASS).
// op: intersection (default) or UNION; empty = !(x0 < x1 && y0 < y1), written as (0, 0, 0, 0).
// op is associative and commutative (min/max, empties absorbing for intersection and neutral for
// union), so any grouping gives the sequential stack's result bit for bit.

struct Params {
    n: u32,
    n_tiles: u32,
    n_groups: u32,
    vx0: f32,
    vy0: f32,
    vx1: f32,
    vy1: f32,
}

const WG: u32 = {{WG}}u;
const EPT: u32 = {{EPT}}u;
const T: u32 = WG * EPT;
const LOG_T: u32 = {{LOG_T}}u;

@group(0) @binding(0) var<uniform> params: Params;
#if TILE
@group(0) @binding(1) var<storage, read> kinds: array<u32>;
@group(0) @binding(2) var<storage, read> link: array<i32>;
@group(0) @binding(3) var<storage, read> bboxes: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> rl: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> anchor: array<i32>;
#elif INIT
@group(0) @binding(1) var<storage, read> anchor: array<i32>;
@group(0) @binding(2) var<storage, read> rl: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> acc_out: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> next_out: array<i32>;
#elif JUMP
@group(0) @binding(1) var<storage, read> acc_in: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> next_in: array<i32>;
@group(0) @binding(3) var<storage, read_write> acc_out: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> next_out: array<i32>;
#elif LEAF
@group(0) @binding(1) var<storage, read> kinds: array<u32>;
@group(0) @binding(2) var<storage, read> link: array<i32>;
@group(0) @binding(3) var<storage, read> bboxes: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> rl: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> acc: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> output: array<vec4<f32>>;
#endif

fn empty_rect(r: vec4<f32>) -> bool {
    return !(r.x < r.z && r.y < r.w);
}

fn op(a: vec4<f32>, b: vec4<f32>) -> vec4<f32> {
#if UNION
    if (empty_rect(a)) {
        return b;
    }
    if (empty_rect(b)) {
        return a;
    }
    return vec4<f32>(min(a.xy, b.xy), max(a.zw, b.zw));
#else
    let r = vec4<f32>(max(a.xy, b.xy), min(a.zw, b.zw));
    return select(r, vec4<f32>(0.0), empty_rect(r));
#endif
}

// The identity of op: everything (intersection) or empty (union).
fn ident() -> vec4<f32> {
#if UNION
    return vec4<f32>(0.0);
#else
    let inf = bitcast<f32>(0x7f800000u);
    return vec4<f32>(-inf, -inf, inf, inf);
#endif
}

fn canon(r: vec4<f32>) -> vec4<f32> {
    return select(r, vec4<f32>(0.0), empty_rect(r));
}

fn viewport() -> vec4<f32> {
    return vec4<f32>(params.vx0, params.vy0, params.vx1, params.vy1);
}

#if TILE
var<workgroup> kk: array<u32, T>;
var<workgroup> closed: array<u32, T>;
var<workgroup> part: array<vec4<f32>, WG>;
var<workgroup> first: atomic<u32>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid3: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let lid = lid3.x;
    let q = wid.x + wid.y * nwg.x;
    if (q >= params.n_tiles) {  // uniform: the whole workgroup leaves
        return;
    }
    let base = q * T;
    if (lid == 0u) {
        atomicStore(&first, T);
    }
    for (var k = 0u; k < EPT; k++) {
        let e = k * WG + lid;
        closed[e] = 0u;
        kk[e] = select(0u, kinds[base + e], base + e < params.n);
    }
    workgroupBarrier();
    for (var k = 0u; k < EPT; k++) {  // a close of the tile closes the open it links to
        let e = k * WG + lid;
        if (kk[e] == 2u) {
            let l = link[base + e];
            if (l >= i32(base)) {
                closed[u32(l) - base] = 1u;
            }
        }
    }
    workgroupBarrier();
    // the unclosed opens' boxes combined over this invocation's EPT consecutive elements
    var a = ident();
    for (var k = 0u; k < EPT; k++) {
        let e = lid * EPT + k;
        if (kk[e] == 1u && closed[e] == 0u) {
            a = op(a, bboxes[base + e]);
            atomicMin(&first, e);
        }
    }
    part[lid] = a;
    workgroupBarrier();
    for (var d = 1u; d < WG; d <<= 1u) {  // inclusive scan of the parts (Hillis-Steele)
        var v = part[lid];
        if (lid >= d) {
            v = op(part[lid - d], v);
        }
        workgroupBarrier();
        part[lid] = v;
        workgroupBarrier();
    }
    a = ident();
    if (lid > 0u) {
        a = part[lid - 1u];
    }
    for (var k = 0u; k < EPT; k++) {
        let e = lid * EPT + k;
        if (kk[e] == 1u && closed[e] == 0u) {
            a = op(a, bboxes[base + e]);
            rl[base + e] = a;
        }
    }
    if (lid == 0u) {
        let f = atomicLoad(&first);
        anchor[q] = select(-2, link[base + f], f < T);
    }
}
#endif

#if TILE_PASS
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = gid.x + gid.y * nwg.x * 256u;
    if (q >= params.n_tiles) {
        return;
    }
#if INIT
    let u = anchor[q];
    if (u >= 0) {
        acc_out[q] = rl[u32(u)];
        next_out[q] = i32(u32(u) / T);
    } else {  // top level (or no unclosed open: never read)
        acc_out[q] = viewport();
        next_out[q] = -1;
    }
#else
    let j = next_in[q];
    if (j >= 0) {
        acc_out[q] = op(acc_in[q], acc_in[u32(j)]);
        next_out[q] = next_in[u32(j)];
    } else {
        acc_out[q] = acc_in[q];
        next_out[q] = -1;
    }
#endif
}
#endif

#if LEAF
var<workgroup> val: array<vec4<f32>, T>;
var<workgroup> jmp: array<i32, T>;
var<workgroup> more: array<atomic<u32>, 16>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid3: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let lid = lid3.x;
    let q = wid.x + wid.y * nwg.x;
    if (q >= params.n_tiles) {  // uniform: the whole workgroup leaves
        return;
    }
    let base = q * T;
    if (lid < 16u) {
        atomicStore(&more[lid], 0u);
    }
    workgroupBarrier();
    var kind: array<u32, EPT>;
    var lk: array<i32, EPT>;
    var box: array<vec4<f32>, EPT>;
    var top: array<vec4<f32>, EPT>;  // the value of the link when it lies outside the tile
    for (var k = 0u; k < EPT; k++) {
        let e = k * WG + lid;
        let g = base + e;
        kind[k] = 0u;
        lk[k] = -1;
        box[k] = vec4<f32>(0.0);
        if (g < params.n) {
            kind[k] = kinds[g];
            lk[k] = link[g];
            box[k] = bboxes[g];
        }
        let l = lk[k];
        top[k] = viewport();
        if (l >= 0 && u32(l) < base) {
            top[k] = op(rl[u32(l)], acc[u32(l) / T]);
        }
        let inside = l >= i32(base);
        if (kind[k] == 1u) {
            val[e] = select(op(box[k], top[k]), box[k], inside);
            jmp[e] = select(-1, l - i32(base), inside);
            if (inside) {
                atomicOr(&more[0], 1u);
            }
        } else {
            jmp[e] = -1;
        }
    }
    workgroupBarrier();
    // chains within the tile: val[e] = op(val[e], val[jmp[e]]), jmp[e] = jmp[jmp[e]]
    for (var r = 0u; r < LOG_T; r++) {
        if (workgroupUniformLoad(&more[r]) == 0u) {
            break;
        }
        var nv: array<vec4<f32>, EPT>;
        var nj: array<i32, EPT>;
        for (var k = 0u; k < EPT; k++) {
            let e = k * WG + lid;
            nj[k] = jmp[e];
            if (nj[k] >= 0) {
                let j = u32(nj[k]);
                nv[k] = op(val[e], val[j]);
                nj[k] = jmp[j];
                if (nj[k] >= 0) {
                    atomicOr(&more[r + 1u], 1u);
                }
            }
        }
        workgroupBarrier();
        for (var k = 0u; k < EPT; k++) {
            let e = k * WG + lid;
            if (jmp[e] >= 0) {
                val[e] = nv[k];
                jmp[e] = nj[k];
            }
        }
        workgroupBarrier();
    }
    for (var k = 0u; k < EPT; k++) {
        let e = k * WG + lid;
        let g = base + e;
        if (g >= params.n) {
            continue;
        }
        let l = lk[k];
        var t = top[k];
        if (l >= i32(base)) {
            t = val[u32(l) - base];
        }
        var r: vec4<f32>;
        if (kind[k] == 1u) {
            r = val[e];
        } else if (kind[k] == 2u && l >= 0) {
            r = t;
        } else {
            r = op(box[k], t);
        }
        output[g] = canon(r);
    }
}
#endif

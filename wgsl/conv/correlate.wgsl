// Multi-kernel 2-D / 3-D correlation with register blocking (generated per specialisation by
// pywgpuprims/conv.py, which fills the {{...}} code blocks).
//
// One workgroup computes a TY x TX block of outputs of UZ output planes for a block of KB
// kernels. Each invocation owns U adjacent outputs along x (times UZ planes) for all KB kernels:
// U*UZ*KB accumulators in registers. Input planes are walked one at a time (runtime loop): the
// slab the block needs, (TY+KH-1) x (TX+KW-1) values, is staged as vec4<f32> in workgroup memory
// with the boundary rule applied while loading (uint8 words unpacked there), together with the KB
// kernels' weights (of that kernel plane; of all planes when UZ > 1). The multiply-adds over
// (dy,) dx, u and the kernels are unrolled with compile-time indices, so every input value read
// from workgroup memory serves every output and kernel it touches, and the weights are read as
// broadcasts (a vec4 holds 4 kernels' taps). DB double-buffers the staging: the next plane is
// loaded into registers while this one is computed, one barrier per plane.
//
// Defines: WGX, WGY (workgroup shape), U (outputs per invocation along x, multiple of 4), UZ, KD,
// KH, KW, KBQ (weight words per tap), ROWV4 (vec4 words per staged row), TILE_V4, ROWP, SWZ,
// TILE_P (stored layout, padded against bank conflicts), WPLANE (weight words per kernel plane),
// WSH_ROWS, WTYPE (f32 or vec4<f32>), NBUF, DB, UZ1, U8 (volume is packed uint8), BOUNDARY_*
// (how coordinates outside the volume are read), and the generated blocks ACC_DECL, STAGE,
// PREFETCH, PUT, BODY, STORE; CS: results leave through workgroup memory in coalesced rows;
// SPLIT: one result binding per kernel of the block (RESULT_DECL), for bands of rows.
//
// Every loop is bounded by KD + UZ, KH or a staging count: far below lavapipe's 65,535-trip cap
// for the kernel sizes the host accepts on CPU drivers.

struct Params {
    nx: u32, ny: u32, nz: u32,        // volume size
    in_base: u32,                     // element index (in the whole volume) of the bound range's start
    ox: u32, oy: u32, oz: u32,        // output size (of one kernel's result)
    out_base: u32,                    // element index (in the whole output) of the bound range's start
    z0: u32,                          // first output plane of this dispatch
    z1: u32,                          // end of this dispatch's output planes
    offx: i32, offy: i32, offz: i32,  // input coordinate = output coordinate + tap - off
    k0: u32,                          // first kernel of this block
    nk: u32,                          // number of kernels
    w_base: u32,                      // WTYPE index of this block's weights in the bound range
    y_org: u32,                       // first output row of this dispatch (a band of rows; else 0)
    y_end: u32,                       // end of this dispatch's output rows (else oy)
    // SPLIT: element index (in the whole output) where kernel k0 + j's own binding result<j> starts
    ob0: u32, ob1: u32, ob2: u32, ob3: u32, ob4: u32, ob5: u32, ob6: u32, ob7: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
#if U8
@group(0) @binding(1) var<storage, read> volume: array<u32>;
#else
@group(0) @binding(1) var<storage, read> volume: array<f32>;
#endif
@group(0) @binding(2) var<storage, read> weights: array<{{WTYPE}}>;
#if SPLIT
// Each kernel of the block writes through a binding of its own (result0, result1, ...): a band of
// rows binds only its rows of every kernel's plane, however far apart the planes lie.
{{RESULT_DECL}}
#else
@group(0) @binding(3) var<storage, read_write> result: array<f32>;
#endif

const WGX: u32 = {{WGX}}u;
const WGY: u32 = {{WGY}}u;
const NT: u32 = WGX * WGY;
const U: u32 = {{U}}u;
const TX: u32 = WGX * U;
const TY: u32 = WGY;
const KD: u32 = {{KD}}u;
const KH: u32 = {{KH}}u;
const KW: u32 = {{KW}}u;
const ROWV4: u32 = {{ROWV4}}u;
const TILE_V4: u32 = {{TILE_V4}}u;  // staged vec4 words of one plane (logical)
// Rows are stored with a pitch of ROWP words and one pad word after every SWZ words, so that the
// invocations of a quarter-warp, whose segments start U/4 words apart, hit distinct banks.
const ROWP: u32 = {{ROWP}}u;
const SWZ: u32 = {{SWZ}}u;
const TILE_P: u32 = {{TILE_P}}u;    // stored vec4 words of one plane
const WPLANE: u32 = {{WPLANE}}u;
const WROW: u32 = KW * {{KBQ}}u;  // weight words of one kernel row (all kernels of the block)

const NBUF: u32 = {{NBUF}}u;  // 2: double-buffered staging (next plane prefetched into registers)
const UZ: u32 = {{UZ}}u;      // output planes per workgroup (each staged plane serves up to UZ of them)

var<workgroup> tile: array<vec4<f32>, NBUF * TILE_P>;
// Weights by kernel row, so that the multiply-adds index a row once and its words by constants.
var<workgroup> wsh: array<array<{{WTYPE}}, WROW>, {{WSH_ROWS}}>;

fn wput(i: u32, v: {{WTYPE}}) {
    wsh[i / WROW][i % WROW] = v;
}

// Maps a coordinate to the volume (or -1: read as 0) by the boundary rule.
fn bmap(i: i32, n: i32) -> i32 {
#if BOUNDARY_CONSTANT
    return select(-1, i, i >= 0 && i < n);
#elif BOUNDARY_REFLECT
    // Half-sample symmetric: f(i) == f(-1 - i), period 2n (no % of negatives: GLSL leaves it undefined).
    let p = 2 * n;
    let m = select(i, -1 - i, i < 0) % p;
    return select(m, p - 1 - m, m >= n);
#else
    return clamp(i, 0, n - 1);
#endif
}

// Element e of the bound range of the volume.
fn fetch(e: u32) -> f32 {
#if U8
    return f32((volume[e >> 2u] >> ((e & 3u) * 8u)) & 0xffu);
#else
    return volume[e];
#endif
}

// Four volume elements from row start ``rbase`` (bound-range index) at x = xs .. xs+3.
fn fetch4(rbase: u32, xs: i32, nx: i32) -> vec4<f32> {
    if (xs >= 0 && xs + 3 < nx) {
        let e = rbase + u32(xs);
#if U8
        // Four bytes from one word, or funnel-shifted from two (both hold bytes of this row).
        var w = volume[e >> 2u];
        let sh = (e & 3u) * 8u;
        if (sh != 0u) {
            w = (w >> sh) | (volume[(e >> 2u) + 1u] << (32u - sh));
        }
        return vec4<f32>((vec4<u32>(w) >> vec4<u32>(0u, 8u, 16u, 24u)) & vec4<u32>(0xffu));
#else
        return vec4<f32>(volume[e], volume[e + 1u], volume[e + 2u], volume[e + 3u]);
#endif
    }
    let xa = bmap(xs, nx);
    let xb = bmap(xs + 1, nx);
    let xc = bmap(xs + 2, nx);
    let xd = bmap(xs + 3, nx);
    // Out-of-volume taps (constant boundary) read element 0 of the row and are replaced by 0.
    return vec4<f32>(select(0.0, fetch(rbase + u32(max(xa, 0))), xa >= 0),
                     select(0.0, fetch(rbase + u32(max(xb, 0))), xb >= 0),
                     select(0.0, fetch(rbase + u32(max(xc, 0))), xc >= 0),
                     select(0.0, fetch(rbase + u32(max(xd, 0))), xd >= 0));
}

// Where staged word i is stored (within one buffer).
fn tphys(i: u32) -> u32 {
    let row = i / ROWV4;
    let c4 = i - row * ROWV4;
    return row * ROWP + c4 + c4 / SWZ;
}

// Staged value i (a vec4 of 4 x-adjacent inputs) of input plane zi for the block at (x0, y0).
fn stage_value(i: u32, zi: i32, x0: u32, y0: u32) -> vec4<f32> {
    let row = i / ROWV4;
    let c4 = i - row * ROWV4;
    // Rows past the last output row's window (a partial tile) are read as that row: no read
    // leaves the rows a band binds, and no output that is stored changes.
    let yi = bmap(i32(min(y0 + row, params.y_end + KH - 2u)) - params.offy, i32(params.ny));
    if (zi < 0 || yi < 0) {
        return vec4<f32>(0.0);
    }
    let rbase = (u32(zi) * params.ny + u32(yi)) * params.nx - params.in_base;
    return fetch4(rbase, i32(x0 + c4 * 4u) - params.offx, i32(params.nx));
}

@compute @workgroup_size(WGX, WGY, 1)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid3: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let tx = lid3.x;
    let ty = lid3.y;
    let x0 = wid.x * TX;
    let y0 = params.y_org + wid.y * TY;
    let z = params.z0 + wid.z * UZ;
    let nz = i32(params.nz);
{{ACC_DECL}}
#if DB
    // Plane 0 goes straight to buffer 0; plane dz+1 is loaded into registers while plane dz is
    // computed, then stored to the other buffer: one barrier per plane.
    {
        let zi = bmap(i32(z) - params.offz, nz);
        for (var i = lid; i < TILE_V4; i += NT) {
            tile[tphys(i)] = stage_value(i, zi, x0, y0);
        }
        for (var i = lid; i < WPLANE; i += NT) {
            wput(i, weights[params.w_base + i]);
        }
    }
    workgroupBarrier();
    for (var dz = 0u; dz < KD; dz++) {
        let tb = (dz & 1u) * TILE_P;
        let wb0 = (dz & 1u) * KH;  // in kernel rows
        let wbe = (dz & 1u) * WPLANE;  // in words
        let more = dz + 1u < KD;
        let zn = bmap(i32(z + dz + 1u) - params.offz, nz);
        let wn = params.w_base + (dz + 1u) * WPLANE;
{{PREFETCH}}
{{BODY}}
        if (more) {
{{PUT}}
        }
        workgroupBarrier();
    }
#elif UZ1
    let tb = 0u;
    let wb0 = 0u;
    for (var dz = 0u; dz < KD; dz++) {
        workgroupBarrier();
        // Stage the input slab of plane z + dz and the weights of kernel plane dz.
        let zi = bmap(i32(z + dz) - params.offz, nz);
{{STAGE}}
        let wb = params.w_base + dz * WPLANE;
        for (var i = lid; i < WPLANE; i += NT) {
            wput(i, weights[wb + i]);
        }
        workgroupBarrier();
{{BODY}}
    }
#else
    // UZ output planes: all kernel planes' weights stay in workgroup memory; input plane z + pz
    // is staged once and applied to output plane z + j with kernel plane pz - j.
    for (var i = lid; i < KD * WPLANE; i += NT) {
        wput(i, weights[params.w_base + i]);
    }
    let tb = 0u;
    for (var pz = 0u; pz < KD + UZ - 1u; pz++) {
        workgroupBarrier();
        let zi = bmap(i32(z + pz) - params.offz, nz);
{{STAGE}}
        workgroupBarrier();
{{BODY}}
    }
#endif
    let plane = params.ox * params.oy;
    let slab = plane * params.oz;
#if CS
    // Coalesced stores: each kernel's block of results goes through workgroup memory, then the
    // workgroup writes it row by row with consecutive invocations on consecutive addresses.
#if SPLIT
    let obase0 = y0 * params.ox + x0;
#else
    let obase0 = y0 * params.ox + x0 - params.out_base;
#endif
{{STORE}}
#else
    let xo = x0 + tx * U;
    let yo = y0 + ty;
    if (yo >= params.y_end) {
        return;
    }
{{STORE}}
#endif
}

// Line runs of the tile passes (BLOCK_A, BLOCK_C) on the tile in workgroup memory: causal and
// anticausal runs over a tile line, and the split runs (two threads per line, reg_run2).

struct ALine {
    s: vec3<f32>,    // causal state at the block's end, from a zero prologue
    e: vec3<f32>,    // anticausal state at its start, from a zero epilogue (on the causal output)
    wl: vec3<f32>,   // the block's share of the boundary dot products (left, right)
    wr: vec3<f32>,
    hit: bool,       // whether the block meets the weights' supports
}

// Causal run over tile[base + i * stride], i < n, from state s0, in place. Eight loads go out
// before eight steps, so that the chain waits on arithmetic only.
fn run_causal(base: u32, stride: u32, n: u32, s0: vec3<f32>) -> vec3<f32> {
    var s = s0;
    let full = n & ~7u;
    for (var i0 = 0u; i0 < full; i0 += 8u) {
        var xv: array<f32, 8>;
#unroll J 8
        xv[{{J}}] = tile[base + (i0 + {{J}}u) * stride];
#endunroll
#unroll J 8
        s = step(s, gain_c(xv[{{J}}]));
        tile[base + (i0 + {{J}}u) * stride] = s.x;
#endunroll
    }
    for (var i = full; i < n; i++) {
        s = step(s, gain_c(tile[base + i * stride]));
        tile[base + i * stride] = s.x;
    }
    return s;
}

// Anticausal run over the same elements from the end, from state e0 (in place when write).
fn run_anti(base: u32, stride: u32, n: u32, e0: vec3<f32>, write: bool) -> vec3<f32> {
    var e = e0;
    let full = n & ~7u;
    for (var q0 = 0u; q0 < full; q0 += 8u) {
        var xv: array<f32, 8>;
#unroll J 8
        xv[{{J}}] = tile[base + (n - 1u - q0 - {{J}}u) * stride];
#endunroll
#unroll J 8
        e = step(e, gain_a(xv[{{J}}]));
        if (write) {
            tile[base + (n - 1u - q0 - {{J}}u) * stride] = e.x;
        }
#endunroll
    }
    for (var q = full; q < n; q++) {
        let i = base + (n - 1u - q) * stride;
        e = step(e, gain_a(tile[i]));
        if (write) {
            tile[i] = e.x;
        }
    }
    return e;
}

struct SE {
    s: vec3<f32>,
    e: vec3<f32>,
}

// A full line (64 samples at tile[base + i * stride]) in registers: causal from s0, then
// anticausal from e0 (each when enabled), written back when write. Constant indices keep the
// samples in registers, and the steps touch no workgroup memory.
fn reg_run(base: u32, stride: u32, s0: vec3<f32>, e0: vec3<f32>, write: bool) -> SE {
    var v: array<f32, 64>;
#unroll J 64
    v[{{J}}] = tile[base + {{J}}u * stride];
#endunroll
    var s = s0;
    if (params.causal != 0u) {
#unroll J 64
        s = step(s, gain_c(v[{{J}}]));
        v[{{J}}] = s.x;
#endunroll
    }
    var e = e0;
    if (params.anti != 0u) {
#unroll J 64
        e = step(e, gain_a(v[63 - {{J}}]));
        v[63 - {{J}}] = e.x;
#endunroll
    }
    if (write) {
#unroll J 64
        tile[base + {{J}}u * stride] = v[{{J}}];
#endunroll
    }
    return SE(s, e);
}

// Filter one tile line: elements tile[base + i * stride], i < n, in place; causal from state s,
// then anticausal from state e (each when enabled).
fn c_line(base: u32, stride: u32, n: u32, s0: vec3<f32>, e0: vec3<f32>) {
    if (n == B) {
        reg_run(base, stride, s0, e0, true);
        return;
    }
    if (params.causal != 0u) {
        run_causal(base, stride, n, s0);
    }
    if (params.anti != 0u) {
        run_anti(base, stride, n, e0, true);
    }
}

// Two threads per tile line, each with half of it (32 samples) in registers. A half runs
// from a zero state and is then corrected by the state the other half hands over through
// workgroup memory: sample j after the hand-over gains H[j] . state (H[j] the first row of A^(j+1),
// A the recursion's 3 x 3 state matrix), the end state gains A^32 . state (hbuf: H[0..31], then
// the rows of A^32; host float64). The causal chain runs half 0 then hands to half 1, the
// anticausal one half 1 to half 0: each thread's chains are 32 steps, not 64.
var<workgroup> xch: array<vec3<f32>, 64>;
var<workgroup> hsh: array<vec4<f32>, 35>;

fn load_h(t: u32) {
    if (t < 35u) {
        hsh[t] = hbuf[t];
    }
}

fn a32(v: vec3<f32>) -> vec3<f32> {
    return vec3<f32>(dot(hsh[32].xyz, v), dot(hsh[33].xyz, v), dot(hsh[34].xyz, v));
}

// Call from uniform control flow (it holds barriers), every thread of the workgroup: h the half,
// li the tile line (index into xch); half h covers samples 32 h .. 32 h + 31 of the line at
// tile[base + i * stride]. s0 / e0: the line's causal / anticausal initial states.
fn reg_run2(base: u32, stride: u32, h: u32, li: u32, s0: vec3<f32>, e0: vec3<f32>, write: bool) -> SE {
    var v: array<f32, 32>;
    let o = base + 32u * h * stride;
#unroll J 32
    v[{{J}}] = tile[o + {{J}}u * stride];
#endunroll
    var s = select(vec3<f32>(0.0), s0, h == 0u);
    if (params.causal != 0u) {
#unroll J 32
        s = step(s, gain_c(v[{{J}}]));
        v[{{J}}] = s.x;
#endunroll
    }
    if (h == 0u) {
        xch[li] = s;
    }
    workgroupBarrier();
    if (params.causal != 0u && h == 1u) {
        let sa = xch[li];
#unroll J 32
        v[{{J}}] += dot(hsh[{{J}}].xyz, sa);
#endunroll
        s += a32(sa);
    }
    workgroupBarrier();
    var e = select(vec3<f32>(0.0), e0, h == 1u);
    if (params.anti != 0u) {
#unroll J 32
        e = step(e, gain_a(v[31 - {{J}}]));
        v[31 - {{J}}] = e.x;
#endunroll
    }
    if (h == 1u) {
        xch[li] = e;
    }
    workgroupBarrier();
    if (params.anti != 0u && h == 0u) {
        let eb = xch[li];
#unroll J 32
        v[31 - {{J}}] += dot(hsh[{{J}}].xyz, eb);
#endunroll
        e += a32(eb);
    }
    if (write) {
#unroll J 32
        tile[o + {{J}}u * stride] = v[{{J}}];
#endunroll
    }
    return SE(s, e);
}

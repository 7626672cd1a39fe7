// Recursive filter, block method, the fix-up (BLOCK_FIX): boundary initial conditions, then the
// carries across blocks, each line's blocks in S segments. See filters/recfilter_tiles.wgsl.

#include "filters/recfilter_tiles.wgsl"
@group(0) @binding(1) var<storage, read_write> carry: array<f32>;
// The matrices (117 floats, 30 vec4) in a uniform buffer: the same for every invocation, so the
// constant cache serves them, at fixed offsets straight into the multiply-adds. Row-major 3 x 3
// at offsets: [T_FP, M, T_RE] of a full block 0, 9, 18 and of the last block 27, 36, 45; Mp 54
// (the causal state at N-1 -> the anticausal state at N); the segments' transfer matrices
// Tf^SL 63, Tl Tf^(n-1) 72, Rf^SL 81, Rf^(n-1) Rl 90; and Q 99 (full segment), 108 (last):
// what a segment's incoming causal state adds to its outgoing anticausal one.
@group(0) @binding(2) var<uniform> mats: array<vec4<f32>, 30>;
@group(0) @binding(3) var<storage, read> bpart: array<f32>;

// The chains' states and maps: without ORDER3 the third component is dead (recfilter_common.wgsl
// Z3), so they run on 2-vectors and the leading 2 x 2 blocks of the host's 3 x 3 matrices.
#if ORDER3
alias St = vec3<f32>;
alias Mt = mat3x3<f32>;
const NS: u32 = 3u;
#else
alias St = vec2<f32>;
alias Mt = mat2x2<f32>;
const NS: u32 = 2u;
#endif

// Float o of the matrices (mats packs them four to a vec4: uniform arrays have a 16-byte stride).
fn mat_at(o: u32) -> f32 {
    return mats[o / 4u][o % 4u];
}

// The row-major 3 x 3 matrix at mats[o..o+9] (WGSL matrices are built column by column), or its
// leading 2 x 2 block.
fn loadm(o: u32) -> Mt {
#if ORDER3
    return transpose(Mt(mat_at(o), mat_at(o + 1u), mat_at(o + 2u), mat_at(o + 3u), mat_at(o + 4u),
                        mat_at(o + 5u), mat_at(o + 6u), mat_at(o + 7u), mat_at(o + 8u)));
#else
    return transpose(Mt(mat_at(o), mat_at(o + 1u), mat_at(o + 3u), mat_at(o + 4u)));
#endif
}

fn ident() -> Mt {
#if ORDER3
    return Mt(1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0);
#else
    return Mt(1.0, 0.0, 0.0, 1.0);
#endif
}

fn get3(base: u32) -> St {
    let nl = params.nlines;
#if ORDER3
    return St(carry[base], carry[base + nl], carry[base + 2u * nl]);
#else
    return St(carry[base], carry[base + nl]);
#endif
}

fn put3(base: u32, v: St) {
    let nl = params.nlines;
    carry[base] = v.x;
    carry[base + nl] = v.y;
#if ORDER3
    carry[base + 2u * nl] = v.z;
#endif
}

fn part3(base: u32) -> St {
    let nl = params.nlines;
#if ORDER3
    return St(bpart[base], bpart[base + nl], bpart[base + 2u * nl]);
#else
    return St(bpart[base], bpart[base + nl]);
#endif
}

// Segmented fix-up: a workgroup takes LPW lines, each line's K blocks cut into S segments of SL
// blocks, a thread per (line, segment): all S segments load their carries at once (S times the
// loads in flight of a thread per line). The chains are affine maps, so each segment first runs
// from a zero state; the segments' incoming states then follow from S small steps over workgroup
// memory with the segments' transfer matrices (host float64), and each segment reruns from its
// true state.
const LPW: u32 = {{LPW}}u;
const S: u32 = {{S}}u;
const WG: u32 = LPW * S;
#if REGSEG
// Per thread 4 NS floats: the causal and anticausal states, the boundary parts.
const SHN: u32 = 4u * NS * WG;
#else
// Per thread 2 NS + NS^2 floats: state, boundary part, transfer matrix (column by column).
const SHN: u32 = (2u * NS + NS * NS) * WG;
#endif
var<workgroup> sh: array<f32, SHN>;

fn sh_put(slot: u32, t: u32, v: St) {
    sh[slot * WG + t] = v.x;
    sh[(slot + 1u) * WG + t] = v.y;
#if ORDER3
    sh[(slot + 2u) * WG + t] = v.z;
#endif
}

fn sh_get(slot: u32, t: u32) -> St {
#if ORDER3
    return St(sh[slot * WG + t], sh[(slot + 1u) * WG + t], sh[(slot + 2u) * WG + t]);
#else
    return St(sh[slot * WG + t], sh[(slot + 1u) * WG + t]);
#endif
}

#if REGSEG
// Block k's causal (0), anticausal-from-causal (9) or anticausal (18) matrix, loaded where used
// (loaded once into registers, or staged in workgroup memory, both measured slower on the H100).
fn bm(which: u32, k: u32) -> Mt {
    if (k == params.K - 1u) {
        return loadm(which + 27u);
    }
    return loadm(which);
}

// Run by the segment-0 invocation of line i, over what the segments left in sh (slot 0: the
// causal end state from a zero start, NS: the anticausal state leaving the segment's left end
// from zero starts, 2 NS / 3 NS: the boundary parts): both chains, one after the other, leaving
// each segment's true incoming causal state in slot 0 and anticausal one (at its right end) in
// slot NS. The anticausal chain takes the causal states' share through Q (host float64: what a
// segment's incoming causal state adds to its outgoing anticausal one), so that no segment reruns
// between the chains (one barrier pair, not two).
fn chains(i: u32, SL: u32) {
    let sl = (params.K - 1u) / SL;    // the segment holding the last block; later ones are empty
    var P = St(0.0);
    var e = St(0.0);
    for (var j = 0u; j < S; j++) {
        P += sh_get(2u * NS, j * LPW + i);
        e += sh_get(3u * NS, j * LPW + i);
    }
    if (params.causal != 0u) {
        let T = loadm(63u);
        for (var j = 0u; j < sl; j++) {
            let slot = j * LPW + i;
            let next = sh_get(0u, slot) + T * P;
            sh_put(0u, slot, P);
            P = next;
        }
        let slot = sl * LPW + i;
        let next = sh_get(0u, slot) + loadm(72u) * P;
        sh_put(0u, slot, P);
        P = next;
    }
    if (params.anti != 0u) {
        e += loadm(54u) * P;
        let slot = sl * LPW + i;
        let next = sh_get(NS, slot) + loadm(108u) * sh_get(0u, slot) + loadm(90u) * e;
        sh_put(NS, slot, e);
        e = next;
        let R = loadm(81u);
        let Q = loadm(99u);
        for (var jj = 0u; jj < sl; jj++) {
            let slot = (sl - 1u - jj) * LPW + i;
            let next = sh_get(NS, slot) + Q * sh_get(0u, slot) + R * e;
            sh_put(NS, slot, e);
            e = next;
        }
    }
}

// REGSEG: every segment has at most FB blocks (the host checks), so a thread loads its carries
// once, keeps them in registers and writes each carry once (the fix-up is latency-bound: one
// workgroup alone takes nearly as long as the whole grid). Each segment runs both recursions from
// zero states (the anticausal one on F plus what the segment's zero-start causal prologues add),
// one invocation per line chains both (`chains`), and each segment runs both once more from its
// true states: one barrier pair, not two (H100, 4096^2: 174.4 -> 173.3 us for the Gaussian,
// 153.2 -> 152.1 for order 2).
@compute @workgroup_size(LPW * S)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let i = t % LPW;
    let sg = t / LPW;
    let l = wid.x * LPW + i;
    let ch = wid.y;
    let live = l < params.nlines;
    let K = params.K;
    let nl = params.nlines;
    let SL = (K + S - 1u) / S;
    let k_lo = min(K, sg * SL);
    let k_hi = min(K, k_lo + SL);
    let nb = k_hi - k_lo;
    let cb = ch * K * 6u * nl + min(l, nl - 1u);
    let st = 6u * nl;
    let causal = params.causal != 0u;
    var E: array<St, {{FB}}>;    // incomplete causal epilogues
    var F: array<St, {{FB}}>;    // incomplete anticausal prologues
#unroll J FB
    {
        let k = min(k_lo + {{J}}u, K - 1u);
        E[{{J}}] = get3(cb + k * st);
        F[{{J}}] = get3(cb + k * st + 3u * nl);
    }
#endunroll
    var bpL = St(0.0);
    var bpR = St(0.0);
    let kL = vec2<u32>(params.lo_L / B, select(0u, (params.hi_L - 1u) / B + 1u, params.hi_L > params.lo_L));
    let kR = vec2<u32>(params.lo_R / B, select(0u, (params.hi_R - 1u) / B + 1u, params.hi_R > params.lo_R));
    if (live) {
        for (var k = max(k_lo, kL.x); k < min(k_hi, kL.y); k++) {
            bpL += part3(cb + k * st);
        }
        for (var k = max(k_lo, kR.x); k < min(k_hi, kR.y); k++) {
            bpR += part3(cb + k * st + 3u * nl);
        }
    }
    // Zero starts: the causal run, and the anticausal one on F plus what those prologues add.
    var P = St(0.0);
    var G: array<St, {{FB}}>;
#unroll J FB
    {
        G[{{J}}] = F[{{J}}];
        if (causal && {{J}}u < nb) {
            G[{{J}}] += bm(9u, k_lo + {{J}}u) * P;
            P = E[{{J}}] + bm(0u, k_lo + {{J}}u) * P;
        }
    }
#endunroll
    var e = St(0.0);
    if (params.anti != 0u) {
#unroll J FB
        {
            const j = {{FB}}u - 1u - {{J}}u;
            if (j < nb) {
                e = G[j] + bm(18u, k_lo + j) * e;
            }
        }
#endunroll
    }
    sh_put(0u, t, P);
    sh_put(NS, t, e);
    sh_put(2u * NS, t, bpL);
    sh_put(3u * NS, t, bpR);
    workgroupBarrier();
    if (sg == 0u) {
        chains(i, SL);
    }
    workgroupBarrier();
    P = sh_get(0u, t);
    e = sh_get(NS, t);
    // True starts: each block's complete prologue, F completed by it, then the anticausal ones.
    if (causal) {
#unroll J FB
        if ({{J}}u < nb) {
            if (live) {
                put3(cb + (k_lo + {{J}}u) * st, P);
            }
            F[{{J}}] += bm(9u, k_lo + {{J}}u) * P;
            P = E[{{J}}] + bm(0u, k_lo + {{J}}u) * P;
        }
#endunroll
    }
    if (params.anti != 0u) {
#unroll J FB
        {
            const j = {{FB}}u - 1u - {{J}}u;
            if (j < nb) {
                if (live) {
                    put3(cb + (k_lo + j) * st + 3u * nl, e);
                }
                e = F[j] + bm(18u, k_lo + j) * e;
            }
        }
#endunroll
    }
}
#else
// The looping kernel (segments of more than FB blocks, loaded FB at a time): the causal
// recursion first (zero-state runs, the chain through workgroup memory, reruns from the true
// states), then the anticausal one the same way.
fn set_state(t: u32, P: St) {
    sh_put(0u, t, P);
}

fn set_part(t: u32, b: St) {
    sh_put(NS, t, b);
}

fn put_sh(t: u32, P: St, T: Mt, b: St) {
    set_state(t, P);
    set_part(t, b);
    sh_put(2u * NS, t, T[0]);
    sh_put(3u * NS, t, T[1]);
#if ORDER3
    sh_put(4u * NS, t, T[2]);
#endif
}

fn sh_state(t: u32) -> St {
    return sh_get(0u, t);
}

fn sh_part(t: u32) -> St {
    return sh_get(NS, t);
}

fn sh_mat(t: u32) -> Mt {
#if ORDER3
    return Mt(sh_get(2u * NS, t), sh_get(3u * NS, t), sh_get(4u * NS, t));
#else
    return Mt(sh_get(2u * NS, t), sh_get(3u * NS, t));
#endif
}

// Run by the segment-0 invocation of line i only (the others would repeat it: the fix-up is
// latency-bound, and 16 copies of a serial chain cost issue slots): the line's incoming causal
// state (the boundary sums) through the segments' maps. Over what put_sh wrote, leaves each
// segment's incoming state in its state slot and the line's end state in slot i's part.
fn causal_chain(i: u32) {
    var P = St(0.0);
    for (var j = 0u; j < S; j++) {
        P += sh_part(j * LPW + i);
    }
    for (var j = 0u; j < S; j++) {
        let slot = j * LPW + i;
        let next = sh_state(slot) + sh_mat(slot) * P;
        set_state(slot, P);
        P = next;
    }
    set_part(i, P);
}

// The same from the right for the anticausal chain, from e_end (what enters the line's end).
fn anti_chain(i: u32, e_end: St) {
    var e = e_end;
    for (var j = 0u; j < S; j++) {
        e += sh_part(j * LPW + i);
    }
    for (var jj = 0u; jj < S; jj++) {
        let slot = (S - 1u - jj) * LPW + i;
        let next = sh_state(slot) + sh_mat(slot) * e;
        set_state(slot, e);
        e = next;
    }
}

@compute @workgroup_size(LPW * S)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let i = t % LPW;
    let sg = t / LPW;
    let l = wid.x * LPW + i;
    let ch = wid.y;
    let live = l < params.nlines;
    let K = params.K;
    let nl = params.nlines;
    let SL = (K + S - 1u) / S;
    let k_lo = min(K, sg * SL);
    let k_hi = min(K, k_lo + SL);
    let cb = ch * K * 6u * nl + min(l, nl - 1u);   // carry/bpart of block k at cb + k * 6 * nl
    let st = 6u * nl;
    let Tf = loadm(0u);
    let Mf = loadm(9u);
    let Rf = loadm(18u);
    let Tl = loadm(27u);
    let Ml = loadm(36u);
    let Rl = loadm(45u);
    let Mp = loadm(54u);
    let I = ident();
    let causal = params.causal != 0u;
    let anti = params.anti != 0u;
    var P = St(0.0);
    if (causal) {
        // 1. The segment from a zero state; its share of the boundary sums.
        var bp = St(0.0);
        if (live && params.hi_L > params.lo_L) {
            let b_lo = max(k_lo, params.lo_L / B);
            let b_hi = min(k_hi, (params.hi_L - 1u) / B + 1u);
            for (var k = b_lo; k < b_hi; k++) {
                bp += part3(cb + k * st);
            }
        }
        for (var k0 = k_lo; k0 < k_hi; k0 += {{FB}}u) {
            var eb: array<St, {{FB}}>;
#unroll J FB
            {
                let k = min(k0 + {{J}}u, k_hi - 1u);
                eb[{{J}}] = get3(cb + k * st);
            }
#endunroll
#unroll J FB
            {
                let k = k0 + {{J}}u;
                if (k < k_hi) {
                    var Tk = Tf;
                    if (k == K - 1u) {
                        Tk = Tl;
                    }
                    P = eb[{{J}}] + Tk * P;
                }
            }
#endunroll
        }
        // The segment's transfer matrix (host float64: composing float32 matrices in a chain
        // loses precision for poles near 1): Tf^SL, or Tl Tf^(n-1) for the last segment.
        var T = I;
        if (k_hi > k_lo) {
            T = loadm(select(63u, 72u, k_hi == K));
        }
        put_sh(t, P, T, bp);
        workgroupBarrier();
        // 2. Incoming state: the boundary sum, then the earlier segments' maps.
        if (sg == 0u) {
            causal_chain(i);
        }
        workgroupBarrier();
        let Pend = sh_part(i);
        P = sh_state(t);
        workgroupBarrier();
        // 3. Rerun with the true state, writing each block's complete prologue.
        for (var k0 = k_lo; k0 < k_hi; k0 += {{FB}}u) {
            var eb: array<St, {{FB}}>;
#unroll J FB
            {
                let k = min(k0 + {{J}}u, k_hi - 1u);
                eb[{{J}}] = get3(cb + k * st);
            }
#endunroll
#unroll J FB
            {
                let k = k0 + {{J}}u;
                if (k < k_hi) {
                    if (live) {
                        put3(cb + k * st, P);
                    }
                    var Tk = Tf;
                    if (k == K - 1u) {
                        Tk = Tl;
                    }
                    P = eb[{{J}}] + Tk * P;
                }
            }
#endunroll
        }
        P = Pend;
    }
    if (anti) {
        // The same from the right: e <- (bb + M pk) + R e, with pk the complete causal prologues
        // (this thread wrote them above).
        var e = St(0.0);
        var bp = St(0.0);
        if (live && params.hi_R > params.lo_R) {
            let b_lo = max(k_lo, params.lo_R / B);
            let b_hi = min(k_hi, (params.hi_R - 1u) / B + 1u);
            for (var k = b_lo; k < b_hi; k++) {
                bp += part3(cb + k * st + 3u * nl);
            }
        }
        for (var q0 = k_lo; q0 < k_hi; q0 += {{FB}}u) {
            var fb: array<St, {{FB}}>;
#unroll J FB
            {
                let k = k_hi - 1u - min(q0 + {{J}}u - k_lo, k_hi - 1u - k_lo);
                var Mk = Mf;
                if (k == K - 1u) {
                    Mk = Ml;
                }
                fb[{{J}}] = get3(cb + k * st + 3u * nl);
                if (causal) {
                    fb[{{J}}] += Mk * get3(cb + k * st);
                }
            }
#endunroll
#unroll J FB
            {
                let q = q0 + {{J}}u;
                if (q < k_hi) {
                    let k = k_hi - 1u - (q - k_lo);
                    var Rk = Rf;
                    if (k == K - 1u) {
                        Rk = Rl;
                    }
                    e = fb[{{J}}] + Rk * e;
                }
            }
#endunroll
        }
        var R = I;
        if (k_hi > k_lo) {
            R = loadm(select(81u, 90u, k_hi == K));
        }
        put_sh(t, e, R, bp);
        workgroupBarrier();
        if (sg == 0u) {
            anti_chain(i, Mp * P);
        }
        workgroupBarrier();
        e = sh_state(t);
        for (var q0 = k_lo; q0 < k_hi; q0 += {{FB}}u) {
            var fb: array<St, {{FB}}>;
#unroll J FB
            {
                let k = k_hi - 1u - min(q0 + {{J}}u - k_lo, k_hi - 1u - k_lo);
                var Mk = Mf;
                if (k == K - 1u) {
                    Mk = Ml;
                }
                fb[{{J}}] = get3(cb + k * st + 3u * nl);
                if (causal) {
                    fb[{{J}}] += Mk * get3(cb + k * st);
                }
            }
#endunroll
#unroll J FB
            {
                let q = q0 + {{J}}u;
                if (q < k_hi) {
                    let k = k_hi - 1u - (q - k_lo);
                    if (live) {
                        put3(cb + k * st + 3u * nl, e);
                    }
                    var Rk = Rf;
                    if (k == K - 1u) {
                        Rk = Rl;
                    }
                    e = fb[{{J}}] + Rk * e;
                }
            }
#endunroll
        }
    }
}
#endif

// Boundary initial conditions for recfilter_rt.wgsl (expects Params, `src`, addr() and step()).

// i mod P in 0..P-1 without the remainder of a negative number (undefined in GLSL, the GL
// backend's target).
fn posmod(i: i32, P: i32) -> i32 {
    if (i >= 0) {
        return i32(u32(i) % u32(P));
    }
    return P - 1 - i32(u32(-(i + 1)) % u32(P));
}

// x at position i of the extended line (i may lie outside 0..N-1).
fn ext(l: u32, ch: u32, i: i32) -> f32 {
    let N = i32(params.N);
    var j = i;
    if (i < 0 || i >= N) {
        switch params.mode {
            case 1u: {
                j = clamp(i, 0, N - 1);
            }
            case 2u: {
                let P = 2 * N;
                j = posmod(i, P);
                if (j >= N) {
                    j = P - 1 - j;
                }
            }
            case 3u: {
                if (N == 1) {
                    j = 0;
                } else {
                    let P = 2 * N - 2;
                    j = posmod(i, P);
                    if (j >= N) {
                        j = P - j;
                    }
                }
            }
            case 4u: {
                j = posmod(i, N);
            }
            default: {
                return 0.0;
            }
        }
    }
    return src[addr(l, ch, u32(j))];
}

// Causal state (y[-1], y[-2], y[-3]) on the extended line.
fn causal_init(l: u32, ch: u32) -> vec3<f32> {
    if (params.mode == 0u) {
        return vec3<f32>(0.0);
    }
    if (params.mode == 1u) {
        // Constant extension: the steady state, exactly.
        let u = src[addr(l, ch, 0u)] / (1.0 + params.a3);
        let y = params.b0 * u / (1.0 + params.a1 + params.a2);
        return vec3<f32>(y, y, u);
    }
    var s = vec3<f32>(0.0);
    let L = i32(params.padlen);
    for (var m = 0; m < L; m++) {
        s = step(s, ext(l, ch, m - L));
    }
    return s;
}

// Anticausal state (z[N], z[N+1], u[N]) given the causal state s at N-1 (when causal is on):
// z[N+j] = sum_k G[k] y[N+j+k] and u[N] = sum_k g1[k] y[N+k] (G the impulse response, g1 that of
// the first-order section: the components of the state of the recursion run on an impulse),
// accumulated forward while the causal filter runs on past the end.
fn anti_init(l: u32, ch: u32, s0: vec3<f32>) -> vec3<f32> {
    if (params.mode == 0u && params.causal == 0u) {
        return vec3<f32>(0.0);
    }
    let N = i32(params.N);
    var s = s0;
    var g = vec3<f32>(0.0);
    var z = vec3<f32>(0.0);
    let L = params.padlen;
    for (var m = 0u; m < L; m++) {
        var y = ext(l, ch, N + i32(m));
        if (params.causal != 0u) {
            s = step(s, y);
            y = s.x;
        }
        var imp = 0.0;
        if (m == 0u) {
            imp = 1.0;
        }
        g = step(g, imp);
        z += g * y;
    }
    return z;
}

// Shared by every recursive-filter kernel (filters/recfilter_*.wgsl): the parameters of one axis pass, element
// addressing and the recursion's step.

struct Params {
    N: u32,            // positions per line
    nlines: u32,       // lines per channel
    C: u32,            // channels (interleaved)
    pos_stride: u32,
    line_stride: u32,
    K: u32,            // blocks of 64 positions
    mode: u32,
    padlen: u32,
    causal: u32,
    anti: u32,
    lo_L: u32,         // block method: supports of the boundary weights (left, right)
    hi_L: u32,
    lo_R: u32,
    hi_R: u32,
    K2: u32,           // OVERLAP: the row pass's blocks, weight supports and weights offset
    lo_L2: u32,
    hi_L2: u32,
    lo_R2: u32,
    hi_R2: u32,
    woff2: u32,
    b0: f32,
    a1: f32,
    a2: f32,
    a3: f32,
    gain: f32,         // UNIT_B0: b0 to the power of the directions run (see gain_c)
    fr_w: u32,         // recfilter_reg.wgsl PASS_A with FRAME_FIRST: full tiles across and down,
    fr_h: u32,         // and the interior rectangle of tiles that meet no boundary weights
    fr_llo: u32,       // (column blocks fr_llo..fr_lhi, row blocks fr_klo..fr_khi)
    fr_lhi: u32,
    fr_klo: u32,
    fr_khi: u32,
    kc0: u32,          // tile passes down the columns: the first block (of positions) run; grid y counts from it
    soff: u32,         // tile passes: element (of the image) where the bound range of src starts (a band of
    doff: u32,         // rows bound in place; a multiple of 4), and of dst; 0 for the whole image
    kc1: u32,          // recfilter_reg.wgsl BANDS2: the first block of the second band (bound as src1 / dst1),
    soff1: u32,        // and where its bound ranges start
    doff1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;

// Without ORDER3 (a3 = 0) a state's third component (the first-order section's u) never reaches an
// output, so the carries and boundary parts in memory keep only their first two components: the
// third planes are neither written nor read (taken as 0), a third less carry traffic.
#if ORDER3
const Z3: bool = true;
#else
const Z3: bool = false;
#endif

fn addr(l: u32, ch: u32, p: u32) -> u32 {
    return l * params.line_stride + ch + p * params.pos_stride;
}

// Causal step, in cascade form: a first-order section u[p] = x[p] - a3 u[p-1] feeding a
// second-order one y[p] = b0 u[p] - a1 y[p-1] - a2 y[p-2] (the host factors a third-order
// denominator so; a direct form with poles near 1 loses float32 precision). For order <= 2, a3 = 0
// and u = x. State s = (y[p-1], y[p-2], u[p-1]) -> (y[p], y[p-1], u[p]).
fn step(s: vec3<f32>, x: f32) -> vec3<f32> {
    // Written so that each chain (u, y) waits on one fused multiply-add per step.
    let u = fma(-params.a3, s.z, x);
#if UNIT_B0
    let y = fma(-params.a1, s.x, fma(-params.a2, s.y, u));
#else
    let y = fma(-params.a1, s.x, fma(-params.a2, s.y, params.b0 * u));
#endif
    return vec3<f32>(y, s.x, u);
}

// UNIT_B0 (the block method's tile passes): the recursions run with b0 = 1 on the input scaled by
// params.gain = b0^(directions run), which the filter's linearity allows; the host's matrices and
// weights are those of b0 = 1 (boundary and row-carry weights scaled by the gain, as they meet the
// input unscaled). The scaling rides on the first direction's steps, where the b0 multiply was:
// one multiply per sample and axis instead of one per step (scaling the tile as it loads was 8 us
// slower on the H100). GAIN_ANTI: only the anticausal direction runs, so it scales. (Without
// UNIT_B0 the host leaves gain at 1.)
fn gain_c(x: f32) -> f32 {
#if GAIN_ANTI
    return x;
#else
    return x * params.gain;
#endif
}

fn gain_a(x: f32) -> f32 {
#if GAIN_ANTI
    return x * params.gain;
#else
    return x;
#endif
}

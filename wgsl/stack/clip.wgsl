// Clip / blend-group bounding boxes over the stack links of stack/bracket_*.wgsl (MODE_KIND).
// JUMP: pointer jumping over begin-clips: val'[i] = op(val[i], val[jmp[i]]), jmp'[i] = jmp[jmp[i]]
//       (ping-pong buffers); after r rounds val[i] combines 2^r levels of i's ancestor chain.
// GATHER: each element's output from its link (see pywgpuprims/stack.py for the semantics).
// op: intersection (default) or UNION; empty = !(x0 < x1 && y0 < y1), written as (0, 0, 0, 0).

struct Params {
    n: u32,
    n_groups: u32,
    vx0: f32,
    vy0: f32,
    vx1: f32,
    vy1: f32,
}

const WG: u32 = 256u;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> kinds: array<u32>;
@group(0) @binding(2) var<storage, read> link: array<i32>;
#if JUMP
@group(0) @binding(3) var<storage, read> val_in: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> jmp_in: array<i32>;
@group(0) @binding(5) var<storage, read_write> val_out: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> jmp_out: array<i32>;
#else
@group(0) @binding(3) var<storage, read> bboxes: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> val: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> output: array<vec4<f32>>;
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

fn canon(r: vec4<f32>) -> vec4<f32> {
    return select(r, vec4<f32>(0.0), empty_rect(r));
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * WG;
    if (i >= params.n) {
        return;
    }
    let k = kinds[i];
#if JUMP
    if (k != 1u) {
        return;
    }
    let j = jmp_in[i];
    if (j >= 0) {
        val_out[i] = op(val_in[i], val_in[u32(j)]);
        jmp_out[i] = jmp_in[u32(j)];
    } else {
        val_out[i] = val_in[i];
        jmp_out[i] = -1;
    }
#else
    let vp = vec4<f32>(params.vx0, params.vy0, params.vx1, params.vy1);
    let j = link[i];
    var r: vec4<f32>;
    if (k == 1u) {
        r = op(val[i], vp);
    } else if (k == 2u && j >= 0) {
        r = op(val[u32(j)], vp);
    } else {
        var top = vp;
        if (j >= 0) {
            top = op(val[u32(j)], vp);
        }
        r = op(bboxes[i], top);
    }
    output[i] = canon(r);
#endif
}

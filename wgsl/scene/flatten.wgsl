// Flatten path records (lines and cubic Beziers, transformed on the host) into line segments.
// Records are two vec4s: (p0, p1), (p2, p3); info = part | (curve << 31).
// COUNT  pieces per record into counts (one invocation per record): lines 1, curves by Wang's formula
//        n = ceil(sqrt(3/4 / tol * max |second difference|)) clamped to 1..max_pieces (the rule of
//        geometry.flatten). Records that cannot change a sample get 0: horizontal lines, curves whose
//        points all lie on one row, and records wholly right of the canvas (those set their part's
//        "right" flag, 4, so its box reaches the right edge).
// WRITE  after an exclusive scan of counts into offsets: each record writes its pieces at its offset.
// Loops: WRITE walks one record's pieces (at most max_pieces trips).

struct Params {
    n: u32,           // records
    width: f32,       // canvas width in pixels
    scale: f32,       // 0.75 / tolerance
    max_pieces: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> recs: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> info: array<u32>;
#if COUNT
@group(0) @binding(3) var<storage, read_write> counts: array<u32>;
@group(0) @binding(4) var<storage, read_write> part_info: array<atomic<u32>>;
#else
@group(0) @binding(3) var<storage, read> offsets: array<u32>;
@group(0) @binding(4) var<storage, read_write> segs: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> seg_part: array<u32>;
#endif

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x) * 256u + lid;
    if (i >= params.n) {
        return;
    }
    let a = recs[2u * i];
    let b = recs[2u * i + 1u];
    let curve = (info[i] >> 31u) != 0u;
    let part = info[i] & 0x7fffffffu;
#if COUNT
    let xmin = select(min(a.x, b.z), min(min(a.x, a.z), min(b.x, b.z)), curve);
    if (xmin >= params.width) {
        atomicOr(&part_info[part], 4u);
        counts[i] = 0u;
        return;
    }
    if (!curve) {
        counts[i] = select(1u, 0u, a.y == b.w);
        return;
    }
    if (a.y == a.w && a.y == b.y && a.y == b.w) {
        counts[i] = 0u;
        return;
    }
    let d1 = a.xy - 2.0 * a.zw + b.xy;
    let d2 = a.zw - 2.0 * b.xy + b.zw;
    let nc = ceil(sqrt(params.scale * sqrt(max(dot(d1, d1), dot(d2, d2)))));
    let top = f32(params.max_pieces);
    // NaN counts 1 (as the host's nan_to_num); infinity and overflow the most pieces
    counts[i] = select(u32(clamp(nc, 1.0, top)), 1u, nc != nc);
#else
    let o = offsets[i];
    let n = offsets[i + 1u] - o;
    if (n == 0u) {
        return;
    }
    var prev = a.xy;
    // Bernstein form about p0 (fewer rounding errors far from the origin); end points exact.
    let q1 = a.zw - a.xy;
    let q2 = b.xy - a.xy;
    let q3 = b.zw - a.xy;
    let fn_ = f32(n);
    for (var j = 1u; j < n; j++) {
        let t = f32(j) / fn_;
        let s = 1.0 - t;
        let p = a.xy + (3.0 * s * s * t) * q1 + (3.0 * s * t * t) * q2 + (t * t * t) * q3;
        segs[o + j - 1u] = vec4<f32>(prev, p);
        seg_part[o + j - 1u] = part;
        prev = p;
    }
    segs[o + n - 1u] = vec4<f32>(prev, b.zw);
    seg_part[o + n - 1u] = part;
#endif
}

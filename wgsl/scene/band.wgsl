// Bin flattened segments into cells: one cell per (part, tile row of its element's tile rectangle).
// COUNT: counts[cell] += 1 per segment crossing the cell's row band. SCATTER (after an exclusive
// scan of the counts into cell_off and a clear of counts): copy each segment into its cells.
// Order inside a cell does not matter: winding numbers are integer sums.

struct Params {
    n_segs: u32,     // a bound; seg_count[0] segments were written
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> segs: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> seg_part: array<u32>;
@group(0) @binding(3) var<storage, read> parts: array<vec4<u32>>;   // cell, band0, nbands, flags
@group(0) @binding(4) var<storage, read_write> counts: array<atomic<u32>>;
@group(0) @binding(7) var<storage, read> seg_count: array<u32>;
#if SCATTER
@group(0) @binding(5) var<storage, read> cell_off: array<u32>;
@group(0) @binding(6) var<storage, read_write> binned: array<vec4<f32>>;
#endif

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x) * 256u + lid;
    if (i >= min(params.n_segs, seg_count[0])) {
        return;
    }
    let s = segs[i];
    let p = parts[seg_part[i]];
    if (p.z == 0u) {
        return;
    }
    let band0 = i32(p.y);
    let lo = max(i32(clamp(floor(min(s.y, s.w) / 16.0), -1.0, 65536.0)), band0);
    let hi = min(i32(clamp(floor(max(s.y, s.w) / 16.0), -1.0, 65536.0)), band0 + i32(p.z) - 1);
    // At most the tile rows of the canvas (<= 1024) trips.
    for (var b = lo; b <= hi; b++) {
        let cell = p.x + u32(b - band0);
        let slot = atomicAdd(&counts[cell], 1u);
#if SCATTER
        binned[cell_off[cell] + slot] = s;
#endif
    }
}

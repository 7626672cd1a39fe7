// GPU layout of a scene: bounding boxes, tile rectangles, cells and (element, tile row) pairs.
// Entry points (one dispatch each, one invocation per segment / part / element):
//   part_bbox_init  part boxes to the empty sentinel (ordered-float keys)
//   part_bbox       grow part boxes with each segment (atomic min / max on ordered keys)
//   elem_bbox       element box = union of its parts' boxes (zeros when empty; ENDs are empty)
//   elem_rect       tile rectangle of the clipped box (an END takes its BEGIN's); rows per element
//                   and tile rows per part, for the two scans that follow
//   parts_out       parts[q] = (first cell, first tile row, tile rows, flags)
//   pairs_out       one (element, tile row) pair per row of each element's rectangle
// Loops: elem_bbox and elem_rect over an element's parts, pairs_out over its tile rows.

struct Params {
    n: u32,          // segments, parts or elements (by entry)
    width: f32,
    tiles_x: u32,
    tiles_y: u32,
}

@group(0) @binding(0) var<uniform> params: Params;

#if PART_BBOX_INIT
@group(0) @binding(1) var<storage, read_write> pbb: array<vec4<u32>>;
#endif
#if PART_BBOX
@group(0) @binding(1) var<storage, read_write> pbb: array<atomic<u32>>;
@group(0) @binding(2) var<storage, read> segs: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> seg_part: array<u32>;
@group(0) @binding(4) var<storage, read> seg_count: array<u32>;  // segments written (params.n: a bound)
#endif
#if ELEM_BBOX
@group(0) @binding(1) var<storage, read> pbb: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> elems: array<vec4<u32>>;   // kind, part_lo, part_hi, match
@group(0) @binding(3) var<storage, read> part_info: array<u32>;     // flags: 1 evenodd, 2 new term, 4 right
@group(0) @binding(4) var<storage, read_write> bboxes: array<vec4<f32>>;
#endif
#if ELEM_RECT
@group(0) @binding(1) var<storage, read> clipped: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> elems: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> rects: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read_write> rows: array<u32>;      // per element (+1 zero)
@group(0) @binding(5) var<storage, read_write> part_rows: array<u32>; // per part (+1 zero)
@group(0) @binding(6) var<storage, read_write> part_band0: array<u32>;
#endif
#if PARTS_OUT
@group(0) @binding(1) var<storage, read> part_cell: array<u32>;
@group(0) @binding(2) var<storage, read> part_rows: array<u32>;
@group(0) @binding(3) var<storage, read> part_band0: array<u32>;
@group(0) @binding(4) var<storage, read> part_info: array<u32>;
@group(0) @binding(5) var<storage, read_write> parts: array<vec4<u32>>;
#endif
#if PAIRS_OUT
@group(0) @binding(1) var<storage, read> rects: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read> pair_off: array<u32>;
@group(0) @binding(3) var<storage, read_write> pairs: array<vec2<u32>>;
#endif

// Order-preserving map of f32 to u32 (and back): unsigned order of keys = float order.
fn key(f: f32) -> u32 {
    let b = bitcast<u32>(f);
    return select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}

fn unkey(k: u32) -> f32 {
    return bitcast<f32>(select(~k, k & 0x7fffffffu, (k & 0x80000000u) != 0u));
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let i = (wid.x + wid.y * nwg.x) * 256u + lid;
    if (i >= params.n) {
        return;
    }
#if PART_BBOX_INIT
    pbb[i] = vec4<u32>(0xffffffffu, 0xffffffffu, 0u, 0u);
#endif
#if PART_BBOX
    if (i >= seg_count[0]) {
        return;
    }
    let s = segs[i];
    let q = seg_part[i];
    atomicMin(&pbb[4u * q], key(min(s.x, s.z)));
    atomicMin(&pbb[4u * q + 1u], key(min(s.y, s.w)));
    atomicMax(&pbb[4u * q + 2u], key(max(s.x, s.z)));
    atomicMax(&pbb[4u * q + 3u], key(max(s.y, s.w)));
#endif
#if ELEM_BBOX
    let h = elems[i];
    var b = vec4<f32>(0.0);
    var any = false;
    if (h.x != 2u) {
        for (var q = h.y; q < h.z; q++) {
            let k = pbb[q];
            if (k.x == 0xffffffffu) {
                continue;  // no segment that matters
            }
            var pb = vec4<f32>(unkey(k.x), unkey(k.y), unkey(k.z), unkey(k.w));
            if ((part_info[q] & 4u) != 0u) {
                pb.z = max(pb.z, params.width);
            }
            if (any) {
                b = vec4<f32>(min(b.xy, pb.xy), max(b.zw, pb.zw));
            } else {
                b = pb;
                any = true;
            }
        }
    }
    if (!any || b.z <= b.x || b.w <= b.y) {
        b = vec4<f32>(0.0);
    }
    bboxes[i] = b;
#endif
#if ELEM_RECT
    let h = elems[i];
    var src = i;
    if (h.x == 2u) {
        src = h.w;
    }
    let cb = clipped[src];
    var r = vec4<u32>(0u);
    let ok = all(cb == cb) && cb.z > cb.x && cb.w > cb.y;  // not NaN, not empty
    if (ok) {
        let t = vec4<f32>(floor(cb.x / 16.0), floor(cb.y / 16.0), ceil(cb.z / 16.0), ceil(cb.w / 16.0));
        let hi = vec4<f32>(f32(params.tiles_x), f32(params.tiles_y), f32(params.tiles_x), f32(params.tiles_y));
        r = vec4<u32>(clamp(t, vec4<f32>(0.0), hi));
        if (r.z <= r.x || r.w <= r.y) {
            r = vec4<u32>(0u);
        }
    }
    rects[i] = r;
    rows[i] = r.w - r.y;
    if (h.x != 2u) {
        for (var q = h.y; q < h.z; q++) {
            part_rows[q] = r.w - r.y;
            part_band0[q] = r.y;
        }
    }
#endif
#if PARTS_OUT
    parts[i] = vec4<u32>(part_cell[i], part_band0[i], part_rows[i], part_info[i] & 3u);
#endif
#if PAIRS_OUT
    let r = rects[i];
    let base = pair_off[i];
    for (var y = r.y; y < r.w; y++) {
        pairs[base + y - r.y] = vec2<u32>(i, y);
    }
#endif
}

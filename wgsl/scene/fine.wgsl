// Fine rasterisation of one 16x16 tile per workgroup, one pixel per invocation.
//
// The tile walks its element bits (painter's order). Each pixel keeps a premultiplied colour and
// `top`, the product of the coverages of the clips around it. BEGIN pushes `top` on the pixel's
// clip stack (levels in `spill`, sized per tile from its depth bound) and multiplies it by the
// clip's coverage; END pops it; DRAW composites colour * coverage * top source-over (the colour
// is the element's, or its gradient's at the pixel centre when the head's w names a paint block).
// LAYERS: a BEGIN flagged as a layer also saves the pixel's colour on its level and starts from
// transparent; its END composites the layer, times the layer's opacity, over the saved colour.
// Coverage = samples of a 4x4 grid inside / 16. A sample's winding number counts the segments of
// the part's cell (its tile row) crossing the sample's row left of it; a clip is a union of
// products of parts (SVG clipPath children and nested clip-path references).
//
// NO_STACK (used when the stack levels would not fit in memory): no per-level storage. A BEGIN
// multiplies `top` by the clip's coverage c; its END computes c again (same samples, same value)
// and divides it back out. A clip with c = 0 saves `top` once in `saved` and counts the levels
// below it in `zd`, so zero coverage loses nothing. Deeper is slower (clips rasterised twice),
// never wrong (only float rounding of top * c / c, far below 1/255).
//
// Work per invocation is bounded: the walk stops before exceeding `budget` loop trips (the same
// count for every pixel of the tile, so the stop is uniform) and saves where it stopped; the host
// dispatches again until no tile is unfinished (lavapipe cuts loops past 65,535 trips).

struct Params {
    tiles_x: u32,
    n_tiles: u32,
    n_words: u32,
    n_sum: u32,
    budget: u32,
    first: u32,
    bg_r: f32,
    bg_g: f32,
    bg_b: f32,
    bg_a: f32,
}

const KIND_BEGIN: u32 = 1u;
const KIND_END: u32 = 2u;
const DONE: u32 = 0xffffffffu;
const NO_STACK: bool = {{NO_STACK_BOOL}};

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> masks: array<u32>;
@group(0) @binding(2) var<storage, read> elems: array<vec4<u32>>;   // [2e]: kind, part_lo, part_hi; [2e+1]: colour bits
@group(0) @binding(3) var<storage, read> parts: array<vec4<u32>>;   // cell, band0, nbands, flags (1 evenodd, 2 new term)
@group(0) @binding(4) var<storage, read> cell_off: array<u32>;      // exclusive scan of cell sizes (+ total)
@group(0) @binding(5) var<storage, read> binned: array<vec4<f32>>;  // x0, y0, x1, y1
@group(0) @binding(6) var<storage, read> spill_off: array<u32>;     // first stack level of each tile
@group(0) @binding(7) var<storage, read_write> spill: array<f32>;
@group(0) @binding(8) var<storage, read_write> pix: array<vec4<f32>>; // [2i]: colour, [2i+1].x: top
@group(0) @binding(9) var<storage, read> state_in: array<u32>;      // per tile: next element, depth
@group(0) @binding(10) var<storage, read_write> state_out: array<atomic<u32>>; // same, then the unfinished count
@group(0) @binding(11) var<storage, read> summary: array<u32>;     // per tile: one bit per non-zero mask word
@group(0) @binding(12) var<storage, read> paints: array<vec4<f32>>; // gradient blocks (pywgpuprims/scene/paint.py)

const RAMP: u32 = 512u;
const LAYER_BIT: u32 = 0x80000000u;  // in a BEGIN's / END's head.w: the clip also starts / ends a layer
const MASK_BIT: u32 = 0x40000000u;   // with LAYER_BIT: a masked layer; alone, on a DRAW: the mask/content switch

// Premultiplied colour of the gradient block at `base` at the centre of pixel (px, py).
fn paint_colour(base: u32, px: f32, py: f32) -> vec4<f32> {
    let h0 = paints[base];
    let h1 = paints[base + 1u];
    let g0 = paints[base + 2u];
    let g1 = paints[base + 3u];
    let x = px + 0.5;
    let y = py + 0.5;
    let gx = h0.x * x + h0.y * y + h0.z;
    let gy = h0.w * x + h1.x * y + h1.y;
    var t: f32;
    if (h1.z < 0.5) {
        t = (gx - g0.x) * g0.z + (gy - g0.y) * g0.w;
    } else {
        // Two-point conical: the largest t whose circle (centre f + t cd, radius fr + t dr) holds the point.
        let p = vec2<f32>(gx - g0.x, gy - g0.y);
        let fr = g1.x;
        let dr = g1.y;
        let a = dot(g0.zw, g0.zw) - dr * dr;
        let b = dot(p, g0.zw) + fr * dr;
        let c = dot(p, p) - fr * fr;
        if (abs(a) < 1e-6 * max(dr * dr, 1e-12)) {
            t = c / (2.0 * b);
        } else {
            let sq = sqrt(max(b * b - a * c, 0.0));
            let t1 = (b + sq) / a;
            let t2 = (b - sq) / a;
            t = select(min(t1, t2), max(t1, t2), fr + max(t1, t2) * dr >= 0.0);
        }
    }
    t = clamp(t, -1e9, 1e9);
    if (t != t) {
        t = 0.0;
    }
    if (h1.w > 1.5) {
        t = t - floor(t);
    } else if (h1.w > 0.5) {
        t = abs(t - 2.0 * floor(t * 0.5));
        t = select(t, 2.0 - t, t > 1.0);
    }
    let idx = u32(floor(clamp(t, 0.0, 1.0) * f32(RAMP - 1u) + 0.5));
    return paints[base + 4u + idx];
}

fn cell_range(p: vec4<u32>, ty: u32) -> vec2<u32> {
    if (ty < p.y || ty >= p.y + p.z) {
        return vec2<u32>(0u, 0u);
    }
    let cell = p.x + ty - p.y;
    return vec2<u32>(cell_off[cell], cell_off[cell + 1u]);
}

fn row_wind(s: vec4<f32>, sy: f32, sx: vec4<f32>, d: i32) -> vec4<i32> {
    if ((s.y <= sy) != (s.w <= sy)) {
        let xc = s.x + ((sy - s.y) * (s.z - s.x)) / (s.w - s.y);
        return select(vec4<i32>(0), vec4<i32>(d), vec4<f32>(xc) < sx);
    }
    return vec4<i32>(0);
}

fn row_bits(w: vec4<i32>, evenodd: bool) -> u32 {
    var inside: vec4<bool>;
    if (evenodd) {
        inside = (w & vec4<i32>(1)) != vec4<i32>(0);
    } else {
        inside = w != vec4<i32>(0);
    }
    let b = select(vec4<u32>(0u), vec4<u32>(1u, 2u, 4u, 8u), inside);
    return b.x | b.y | b.z | b.w;
}

// 16 sample bits of one part at pixel (px, py) in tile row ty.
fn part_bits(p: vec4<u32>, ty: u32, px: f32, py: f32) -> u32 {
    let r = cell_range(p, ty);
    let sx = vec4<f32>(px + 0.125, px + 0.375, px + 0.625, px + 0.875);
    var w0 = vec4<i32>(0);
    var w1 = vec4<i32>(0);
    var w2 = vec4<i32>(0);
    var w3 = vec4<i32>(0);
    for (var i = r.x; i < r.y; i++) {
        let s = binned[i];
        // Skip segments that miss this pixel's sample rows or lie right of all its samples (the
        // margin keeps the skip exact whatever the rounding of the crossing's x).
        if (max(s.y, s.w) <= py + 0.125 || min(s.y, s.w) > py + 0.875 || min(s.x, s.z) > px + 1.0) {
            continue;
        }
        let d = select(-1, 1, s.w > s.y);
        w0 += row_wind(s, py + 0.125, sx, d);
        w1 += row_wind(s, py + 0.375, sx, d);
        w2 += row_wind(s, py + 0.625, sx, d);
        w3 += row_wind(s, py + 0.875, sx, d);
    }
    let eo = (p.w & 1u) != 0u;
    return row_bits(w0, eo) | (row_bits(w1, eo) << 4u) | (row_bits(w2, eo) << 8u) | (row_bits(w3, eo) << 12u);
}

fn coverage(head: vec4<u32>, ty: u32, px: f32, py: f32) -> f32 {
    var acc = 0u;
    var term = 0u;
    for (var q = head.y; q < head.z; q++) {
        let p = parts[q];
        let bits = part_bits(p, ty, px, py);
        if ((p.w & 2u) != 0u) {
            acc |= term;
            term = bits;
        } else {
            term &= bits;
        }
    }
    acc |= term;
    return f32(countOneBits(acc)) / 16.0;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let tile = wid.x + wid.y * nwg.x;
    if (tile >= params.n_tiles) {
        return;
    }
    let tx = tile % params.tiles_x;
    let ty = tile / params.tiles_x;
    let px = f32(tx * 16u + (lid & 15u));
    let py = f32(ty * 16u + (lid >> 4u));
    let pi = tile * 256u + lid;
    var col = vec4<f32>(params.bg_r, params.bg_g, params.bg_b, params.bg_a);
    var top = 1.0;
    var pos = 0u;
    var depth = 0u;
#if NO_STACK
    var zd = 0u;
    var saved = 0.0;
#endif
    if (params.first == 0u) {
        pos = state_in[2u * tile];
        depth = state_in[2u * tile + 1u];
        if (pos == DONE) {
            if (lid == 0u) {
                atomicStore(&state_out[2u * tile], DONE);
            }
            return;
        }
        col = pix[2u * pi];
        let aux = pix[2u * pi + 1u];
        top = aux.x;
#if NO_STACK
        saved = aux.y;
        zd = bitcast<u32>(aux.z);
#endif
    }
    let soff = spill_off[tile];
    var count = 0u;
    var stopped = false;
    let w0 = pos >> 5u;
    let keep0 = ~0u << (pos & 31u);
    var si = w0 >> 5u;
    var skeep = ~0u << (w0 & 31u);
    loop {
        if (si >= params.n_sum || stopped) {
            break;
        }
        if (count >= params.budget) {
            stopped = true;
            pos = si * 1024u;
            break;
        }
        var sm = summary[tile * params.n_sum + si] & skeep;
        skeep = ~0u;
        count += 1u;
        loop {
            if (sm == 0u || stopped) {
                break;
            }
            let w = si * 32u + countTrailingZeros(sm);
            sm &= sm - 1u;
            if (count >= params.budget) {
                stopped = true;
                pos = w * 32u;
                break;
            }
            var m = masks[tile * params.n_words + w] & select(~0u, keep0, w == w0);
            count += 1u;
            loop {
                if (m == 0u) {
                    break;
                }
                let e = w * 32u + countTrailingZeros(m);
                let head = elems[2u * e];
                var cost = 1u;
                if (head.x != KIND_END || NO_STACK) {
                    for (var q = head.y; q < head.z; q++) {
                        let r = cell_range(parts[q], ty);
                        cost += 1u + r.y - r.x;
                    }
                }
                if (count + cost > params.budget && count > 2u) {
                    stopped = true;
                    pos = e;
                    break;
                }
                count += cost;
                m &= m - 1u;
#if NO_STACK
                if (head.x == KIND_END) {
                    depth -= 1u;
                    if (zd > 1u) {
                        zd -= 1u;
                    } else if (zd == 1u) {
                        zd = 0u;
                        top = saved;
                    } else if (top > 0.0) {
                        top = top / coverage(head, ty, px, py);
                    }
                } else if (head.x == KIND_BEGIN) {
                    depth += 1u;
                    if (zd > 0u) {
                        zd += 1u;
                    } else if (top > 0.0) {
                        let c = coverage(head, ty, px, py);
                        if (c == 0.0) {
                            saved = top;
                            zd = 1u;
                            top = 0.0;
                        } else {
                            top = top * c;
                        }
                    }
                }
#else
#if LAYERS
                // Levels of 6 floats: the clip coverage, then (for a layer) the colour under it and
                // (for a masked layer) the mask's luminance.
                if (head.x == KIND_END) {
                    depth -= 1u;
                    let lv = (soff + depth) * 6u * 256u + lid;
                    top = spill[lv];
                    if ((head.w & LAYER_BIT) != 0u) {
                        let under = vec4<f32>(spill[lv + 256u], spill[lv + 512u], spill[lv + 768u], spill[lv + 1024u]);
                        var k = bitcast<vec4<f32>>(elems[2u * e + 1u]).w;
                        if ((head.w & MASK_BIT) != 0u) {
                            k = k * spill[lv + 1280u];
                        }
                        let s = col * k;
                        col = s + under * (1.0 - s.w);
                    }
                } else if (head.x == 0u && (head.w & MASK_BIT) != 0u) {
                    // The mask is drawn: keep its luminance on the level below, start the content.
                    let lv = (soff + depth - 1u) * 6u * 256u + lid;
                    spill[lv + 1280u] = clamp(dot(col.xyz, vec3<f32>(0.2125, 0.7154, 0.0721)), 0.0, 1.0);
                    col = vec4<f32>(0.0);
                } else if (head.x == KIND_BEGIN) {
                    var c = 0.0;
                    if (top > 0.0) {
                        c = coverage(head, ty, px, py);
                    }
                    let lv = (soff + depth) * 6u * 256u + lid;
                    spill[lv] = top;
                    if ((head.w & LAYER_BIT) != 0u) {
                        spill[lv + 256u] = col.x;
                        spill[lv + 512u] = col.y;
                        spill[lv + 768u] = col.z;
                        spill[lv + 1024u] = col.w;
                        col = vec4<f32>(0.0);
                    }
                    depth += 1u;
                    top = top * c;
                }
#else
                if (head.x == KIND_END) {
                    depth -= 1u;
                    top = spill[(soff + depth) * 256u + lid];
                } else if (head.x == KIND_BEGIN) {
                    var c = 0.0;
                    if (top > 0.0) {
                        c = coverage(head, ty, px, py);
                    }
                    spill[(soff + depth) * 256u + lid] = top;
                    depth += 1u;
                    top = top * c;
                }
#endif
#endif
                if (head.x == 0u && top > 0.0 && (head.w & MASK_BIT) == 0u) {
                    let c = coverage(head, ty, px, py);
                    let eff = c * top;
                    var s = bitcast<vec4<f32>>(elems[2u * e + 1u]) * eff;
                    if (head.w != 0u) {  // (a DRAW's w never has LAYER_BIT: blocks are far smaller)
                        s = paint_colour(head.w - 1u, px, py) * eff;
                    }
                    col = s + col * (1.0 - s.w);
                }
            }
        }
        si += 1u;
    }
    if (!stopped) {
        pos = DONE;
    }
    pix[2u * pi] = col;
#if NO_STACK
    pix[2u * pi + 1u] = vec4<f32>(top, saved, bitcast<f32>(zd), 0.0);
#else
    pix[2u * pi + 1u] = vec4<f32>(top, 0.0, 0.0, 0.0);
#endif
    if (lid == 0u) {
        atomicStore(&state_out[2u * tile], pos);
        atomicStore(&state_out[2u * tile + 1u], depth);
        if (stopped) {
            atomicAdd(&state_out[2u * params.n_tiles], 1u);
        }
    }
}

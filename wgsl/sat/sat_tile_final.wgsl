// Summed-area table, stage S.4: per tile, the image read again and the SAT written (TILE_FINAL). See sat/sat_common.wgsl.

#include "sat/sat_common.wgsl"
#if VEC4
#if SAME
@group(0) @binding(1) var<storage, read> input: array<vec4<{{T}}>>;
#else
@group(0) @binding(1) var<storage, read> input: array<{{IN_STORE}}>;
#endif
@group(0) @binding(2) var<storage, read> colsum: array<vec4<{{T}}>>;
@group(0) @binding(3) var<storage, read> rowpref: array<{{T}}>;
@group(0) @binding(4) var<storage, read_write> dst: array<vec4<{{T}}>>;
#else
@group(0) @binding(1) var<storage, read> input: array<{{IN_STORE}}>;
@group(0) @binding(2) var<storage, read> colsum: array<{{T}}>;
@group(0) @binding(3) var<storage, read> rowpref: array<{{T}}>;
@group(0) @binding(4) var<storage, read_write> dst: array<{{T}}>;
#endif

#if !VEC4
var<workgroup> tile: array<{{T}}, {{TILE}}>;   // TS x TP
var<workgroup> part: array<{{T}}, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let n = wid.x;
    let m = wid.y;
    let ch = wid.z;
    let X = n * TS;
    let Y = m * TS;
    let c = t % TS;
    let g = t / TS;
    let x = X + c;
    var p: array<{{T}}, {{RPT}}>;
    // All RPT loads first (in flight together), then the prefix.
#unroll R RPT
    {
        let y = Y + g * RPT + {{R}}u;
        p[{{R}}] = {{T}}(0);
        if (x < params.W && y < params.H) {
            p[{{R}}] = load(y, x, ch);
        }
    }
#endunroll
    var acc = {{T}}(0);
#unroll R RPT
    acc = combine(acc, p[{{R}}]);
    p[{{R}}] = acc;
#endunroll
    part[g * TS + c] = acc;
    var above = {{T}}(0);
    if (x < params.W) {
        above = colsum[(ch * params.nby + m) * params.W + x];
    }
    workgroupBarrier();
    var off = above;
    for (var k = 0u; k < g; k++) {
        off = combine(off, part[k * TS + c]);
    }
#unroll R RPT
    tile[(g * RPT + {{R}}u) * TP + c] = combine(p[{{R}}], off);
#endunroll
    workgroupBarrier();
    // Horizontal inclusive prefix of each row, plus L (the SAT just left of the tile).
    let i = t % TS;
    let h = t / TS;
    var s = {{T}}(0);
#unroll K RPT
    s = combine(s, tile[i * TP + h * RPT + {{K}}u]);
    p[{{K}}] = s;
#endunroll
    workgroupBarrier();
    part[h * TS + i] = s;
    workgroupBarrier();
    var left = {{T}}(0);
    if (Y + i < params.H) {
        left = rowpref[(ch * params.nbx + n) * params.H + Y + i];
    }
    for (var k = 0u; k < h; k++) {
        left = combine(left, part[k * TS + i]);
    }
#unroll K RPT
    tile[i * TP + h * RPT + {{K}}u] = combine(p[{{K}}], left);
#endunroll
    workgroupBarrier();
    if (x < params.W) {
        for (var r = 0u; r < RPT; r++) {
            let y = Y + g * RPT + r;
            if (y < params.H) {
                dst[(y * params.W + x) * params.C + ch] = tile[(g * RPT + r) * TP + c];
            }
        }
    }
}
#else
// VEC4: thread t holds rows 4r..4r+3 (r = t / 16) of vec4 column q = t % 16. Vertical prefix in
// registers, then the exclusive prefix over the row groups above (workgroup memory) plus A; then
// the horizontal prefix inside each vec4, the exclusive prefix over the vec4s to the left, plus L.
var<workgroup> cpart: array<vec4<{{T}}>, 256>;
var<workgroup> rpart: array<vec4<{{T}}>, 256>;

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let n = wid.x;
    let m = wid.y;
    let q = t % 16u;
    let r = t / 16u;
    let W4 = params.W / 4u;
    let x4 = n * 16u + q;
    let xok = x4 < W4;
    let y0 = m * TS + r * 4u;
    var v: array<vec4<{{T}}>, 4>;
#unroll J 4
    v[{{J}}] = vec4<{{T}}>({{T}}(0));
    if (xok && y0 + {{J}}u < params.H) {
        v[{{J}}] = load4((y0 + {{J}}u) * W4 + x4);
    }
#endunroll
    var above = vec4<{{T}}>({{T}}(0));
    if (xok) {
        above = colsum[(params.nby * wid.z + m) * W4 + x4];
    }
    var left = vec4<{{T}}>({{T}}(0));
    let lb = (wid.z * params.nbx + n) * params.H;
#unroll J 4
    if (y0 + {{J}}u < params.H) {
        left[{{J}}] = rowpref[lb + y0 + {{J}}u];
    }
#endunroll
    v[1] += v[0];
    v[2] += v[1];
    v[3] += v[2];
    cpart[t] = v[3];
    workgroupBarrier();
    var off = above;
    for (var k = 0u; k < r; k++) {
        off += cpart[k * 16u + q];
    }
    var rs = vec4<{{T}}>({{T}}(0));
#unroll J 4
    {
        let a = v[{{J}}] + off;
        let b = vec4<{{T}}>(a.x, a.x + a.y, a.x + a.y + a.z, (a.x + a.y) + (a.z + a.w));
        v[{{J}}] = b;
        rs[{{J}}] = b.w;
    }
#endunroll
    rpart[t] = rs;
    workgroupBarrier();
    for (var k = 0u; k < q; k++) {
        left += rpart[r * 16u + k];
    }
    if (xok) {
#unroll J 4
        if (y0 + {{J}}u < params.H) {
            dst[(y0 + {{J}}u) * W4 + x4] = v[{{J}}] + vec4<{{T}}>(left[{{J}}]);
        }
#endunroll
    }
}
#endif

// Summed-area table, stage S.1: per tile, column sums, row prefixes and the tile total (TILE_SUMS). See sat/sat_common.wgsl.

#include "sat/sat_common.wgsl"
#if VEC4
#if SAME
@group(0) @binding(1) var<storage, read> input: array<vec4<{{T}}>>;
#else
@group(0) @binding(1) var<storage, read> input: array<{{IN_STORE}}>;
#endif
@group(0) @binding(2) var<storage, read_write> colsum: array<vec4<{{T}}>>;
#else
@group(0) @binding(1) var<storage, read> input: array<{{IN_STORE}}>;
@group(0) @binding(2) var<storage, read_write> colsum: array<{{T}}>;
#endif
@group(0) @binding(3) var<storage, read_write> rowpref: array<{{T}}>;
@group(0) @binding(4) var<storage, read_write> blocktot: array<{{T}}>;

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
    // Vertical prefix of RPT rows per thread, then across the NG thread groups.
    var p: array<{{T}}, {{RPT}}>;
    let x = X + c;
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
    workgroupBarrier();
    var off = {{T}}(0);
    for (var k = 0u; k < g; k++) {
        off = combine(off, part[k * TS + c]);
    }
#unroll R RPT
    tile[(g * RPT + {{R}}u) * TP + c] = combine(p[{{R}}], off);
#endunroll
    workgroupBarrier();
    if (g == 0u && x < params.W) {
        colsum[(ch * params.nby + m) * params.W + x] = tile[(TS - 1u) * TP + c];
    }
    // Row sums of the vertically prefixed tile = prefix (over rows) of the tile's row sums.
    let i = t % TS;
    let h = t / TS;
    var s = {{T}}(0);
    for (var k = 0u; k < RPT; k++) {
        s = combine(s, tile[i * TP + h * RPT + k]);
    }
    workgroupBarrier();
    part[h * TS + i] = s;
    workgroupBarrier();
    if (h == 0u) {
        var tot = part[i];
        for (var k = 1u; k < NG; k++) {
            tot = combine(tot, part[k * TS + i]);
        }
        let y = Y + i;
        if (y < params.H) {
            rowpref[(ch * params.nbx + n) * params.H + y] = tot;
        }
        if (i == TS - 1u) {
            blocktot[(ch * params.nby + m) * params.nbx + n] = tot;
        }
    }
}
#else
// VEC4 (C = 1, W a multiple of 4, T not a word pair; TS = 64): thread t holds rows 4r..4r+3 (r = t / 16) of the
// tile's vec4 column q = t % 16, so each half-warp loads a 256-byte row segment. Column and row
// sums reduce in registers, then across threads in workgroup memory.
var<workgroup> cpart: array<vec4<{{T}}>, 256>;
var<workgroup> rpart: array<vec4<{{T}}>, 256>;
var<workgroup> rt: array<vec4<{{T}}>, 16>;

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
    var cs = vec4<{{T}}>({{T}}(0));
    var rs = vec4<{{T}}>({{T}}(0));
#unroll J 4
    cs += v[{{J}}];
    rs[{{J}}] = (v[{{J}}].x + v[{{J}}].y) + (v[{{J}}].z + v[{{J}}].w);
#endunroll
    cpart[t] = cs;
    rpart[t] = rs;
    workgroupBarrier();
    // Warps 0-1: the four row sums of row group t (t < 16); warp 2: the column sums (t - 64 < 16).
    if (t < 16u) {
        var s4 = vec4<{{T}}>({{T}}(0));
#unroll K 16
        s4 += rpart[t * 16u + {{K}}u];
#endunroll
        rt[t] = s4;
    }
    let tc = t - 64u;
    if (tc < 16u && n * 16u + tc < W4) {
        var c = vec4<{{T}}>({{T}}(0));
#unroll K 16
        c += cpart[{{K}}u * 16u + tc];
#endunroll
        colsum[(params.nby * wid.z + m) * W4 + n * 16u + tc] = c;
    }
    workgroupBarrier();
    // Inclusive prefix over the tile's rows: whole row groups before t's, then inside its own.
    if (t < 64u) {
        let g = t / 4u;
        var acc4 = vec4<{{T}}>({{T}}(0));
        for (var k = 0u; k < g; k++) {
            acc4 += rt[k];
        }
        let own = rt[g];
        var tot = (acc4.x + acc4.y) + (acc4.z + acc4.w) + own.x;
        let j = t % 4u;
        if (j >= 1u) {
            tot += own.y;
        }
        if (j >= 2u) {
            tot += own.z;
        }
        if (j == 3u) {
            tot += own.w;
        }
        let y = m * TS + t;
        if (y < params.H) {
            rowpref[(wid.z * params.nbx + n) * params.H + y] = tot;
        }
        if (t == TS - 1u) {
            blocktot[(wid.z * params.nby + m) * params.nbx + n] = tot;
        }
    }
}
#endif

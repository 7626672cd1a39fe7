// Summed-area tables: the overlapped algorithm of Nehab, Maximo, Lima and Hoppe (2011), stages S.1
// to S.4, plus the one-thread-per-row/column baseline (RT).
//
// The image (H x W, C interleaved channels; channel = workgroup_id.z) is cut into 64 x 64 tiles,
// tile (m, n) having origin (Y, X) = (64 m, 64 n). With S the SAT and I the image:
//   S(Y+i, X+j) = L(m, n, i) + sum_{j' <= j} [ A(m, X+j') + V(i, j') ]
// where V is the tile's own vertical inclusive prefix, A(m, x) = sum_{y < Y} I(y, x) (the column
// sums of the tiles above) and L(m, n, i) = S(Y+i, X-1) (the full SAT just left of the tile).
//   tile_sums (S.1)  per tile: column sums colsum[m][x], row prefixes rowpref[n][y] (the sum of the
//                    tile's rows Y..y), the tile total blocktot[m][n].  Reads the image once.
//   scan_cols (S.2)  per column: colsum -> A (exclusive scan over m); per tile column: blocktot ->
//                    sum of the tiles above (exclusive scan over m).
//   scan_rows (S.3)  per row: rowpref -> L (exclusive scan over n of tiles-above + row prefix).
//   tile_final (S.4) per tile: reads the image again, writes S.  So: image read twice, written once.
// Defines: T (f32, u32, i32: the accumulation and output type), SRC_T (the input word type),
// U8 (input is uint8 packed four to a u32 word).

struct Params {
    H: u32,
    W: u32,
    C: u32,
    nbx: u32,   // tiles across
    nby: u32,   // tiles down
}

@group(0) @binding(0) var<uniform> params: Params;

#if RT_ROWS
@group(0) @binding(1) var<storage, read> src: array<{{SRC_T}}>;
@group(0) @binding(2) var<storage, read_write> dst: array<{{T}}>;
#elif RT_COLS
@group(0) @binding(1) var<storage, read_write> dst: array<{{T}}>;
#elif TILE_SUMS
#if VEC4
@group(0) @binding(1) var<storage, read> src: array<vec4<{{T}}>>;
@group(0) @binding(2) var<storage, read_write> colsum: array<vec4<{{T}}>>;
#else
@group(0) @binding(1) var<storage, read> src: array<{{SRC_T}}>;
@group(0) @binding(2) var<storage, read_write> colsum: array<{{T}}>;
#endif
@group(0) @binding(3) var<storage, read_write> rowpref: array<{{T}}>;
@group(0) @binding(4) var<storage, read_write> blocktot: array<{{T}}>;
#elif SCAN_COLS
@group(0) @binding(1) var<storage, read_write> colsum: array<{{T}}>;
@group(0) @binding(2) var<storage, read_write> blocktot: array<{{T}}>;
#elif SCAN_ROWS
@group(0) @binding(1) var<storage, read_write> rowpref: array<{{T}}>;
@group(0) @binding(2) var<storage, read> blocktot: array<{{T}}>;
#elif TILE_FINAL
#if VEC4
@group(0) @binding(1) var<storage, read> src: array<vec4<{{T}}>>;
@group(0) @binding(2) var<storage, read> colsum: array<vec4<{{T}}>>;
@group(0) @binding(3) var<storage, read> rowpref: array<{{T}}>;
@group(0) @binding(4) var<storage, read_write> dst: array<vec4<{{T}}>>;
#else
@group(0) @binding(1) var<storage, read> src: array<{{SRC_T}}>;
@group(0) @binding(2) var<storage, read> colsum: array<{{T}}>;
@group(0) @binding(3) var<storage, read> rowpref: array<{{T}}>;
@group(0) @binding(4) var<storage, read_write> dst: array<{{T}}>;
#endif
#endif

const TS: u32 = 64u;        // tile side
const TP: u32 = 65u;        // padded shared-memory row (no bank conflicts column-wise)
const RPT: u32 = 16u;       // rows (or columns) per thread: 64 / 4 thread groups

#if !SCAN_COLS
#if !SCAN_ROWS
#if !RT_COLS
#if !VEC4
fn load(y: u32, x: u32, ch: u32) -> {{T}} {
    let e = (y * params.W + x) * params.C + ch;
#if U8
    return {{T}}((src[e >> 2u] >> ((e & 3u) * 8u)) & 0xffu);
#else
    return {{T}}(src[e]);
#endif
}
#endif
#endif
#endif
#endif

#if RT_ROWS
// One thread per (row, channel): inclusive prefix along the row.
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let y = gid.x;
    let ch = gid.y;
    if (y >= params.H) {
        return;
    }
    var acc = {{T}}(0);
    for (var x = 0u; x < params.W; x++) {
        acc += load(y, x, ch);
        dst[(y * params.W + x) * params.C + ch] = acc;
    }
}
#endif

#if RT_COLS
// One thread per (column, channel): inclusive prefix down the column, in place.
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let x = gid.x;
    let ch = gid.y;
    if (x >= params.W) {
        return;
    }
    var acc = {{T}}(0);
    for (var y = 0u; y < params.H; y++) {
        let e = (y * params.W + x) * params.C + ch;
        acc += dst[e];
        dst[e] = acc;
    }
}
#endif

#if TILE_SUMS
#if !VEC4
var<workgroup> tile: array<{{T}}, 4160>;   // 64 x 65
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
    // Vertical prefix of 16 rows per thread, then across the 4 thread groups.
    var p: array<{{T}}, 16>;
    let x = X + c;
    // All 16 loads first (in flight together), then the prefix.
#unroll R 16
    {
        let y = Y + g * RPT + {{R}}u;
        p[{{R}}] = {{T}}(0);
        if (x < params.W && y < params.H) {
            p[{{R}}] = load(y, x, ch);
        }
    }
#endunroll
    var acc = {{T}}(0);
#unroll R 16
    acc += p[{{R}}];
    p[{{R}}] = acc;
#endunroll
    part[g * TS + c] = acc;
    workgroupBarrier();
    var off = {{T}}(0);
    for (var k = 0u; k < g; k++) {
        off += part[k * TS + c];
    }
#unroll R 16
    tile[(g * RPT + {{R}}u) * TP + c] = p[{{R}}] + off;
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
        s += tile[i * TP + h * RPT + k];
    }
    workgroupBarrier();
    part[h * TS + i] = s;
    workgroupBarrier();
    if (h == 0u) {
        let tot = part[i] + part[TS + i] + part[2u * TS + i] + part[3u * TS + i];
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
// VEC4 (C = 1, W a multiple of 4, 32-bit input): thread t holds rows 4r..4r+3 (r = t / 16) of the
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
        v[{{J}}] = src[(y0 + {{J}}u) * W4 + x4];
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
#endif

#if SCAN_COLS
var<workgroup> part: array<{{T}}, 256>;

// Exclusive scan over tile rows m, for 32 columns per workgroup: 8 threads per column each take a
// contiguous eighth of the m range (independent loads, so their latencies overlap), then the 8
// partial sums are scanned in workgroup memory. Columns 0..W-1 are colsum's, W..W+nbx-1 blocktot's.
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let cl = t % 32u;
    let sg = t / 32u;
    let col = wid.x * 32u + cl;
    let ch = wid.y;
    let nby = params.nby;
    let seg = (nby + 7u) / 8u;
    let m0 = min(sg * seg, nby);
    let m1 = min(m0 + seg, nby);
    var base = 0u;
    var stride = 0u;
    let valid = col < params.W + params.nbx;
    let is_col = col < params.W;
    if (is_col) {
        base = ch * nby * params.W + col;
        stride = params.W;
    } else {
        base = ch * nby * params.nbx + (col - params.W);
        stride = params.nbx;
    }
    var acc = {{T}}(0);
    if (valid) {
        for (var m = m0; m < m1; m++) {
            if (is_col) {
                acc += colsum[base + m * stride];
            } else {
                acc += blocktot[base + m * stride];
            }
        }
    }
    part[t] = acc;
    workgroupBarrier();
    var off = {{T}}(0);
    for (var k = 0u; k < sg; k++) {
        off += part[k * 32u + cl];
    }
    if (valid) {
        for (var m = m0; m < m1; m++) {
            let i = base + m * stride;
            if (is_col) {
                let v = colsum[i];
                colsum[i] = off;
                off += v;
            } else {
                let v = blocktot[i];
                blocktot[i] = off;
                off += v;
            }
        }
    }
}
#endif

#if SCAN_ROWS
var<workgroup> part: array<{{T}}, 256>;

// Per image row y: L(n, y) = S(y, 64 n - 1), an exclusive scan over tile columns n of
// (sum of the tiles above) + (row prefix); 32 rows per workgroup, 8 threads per row as above.
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let rl = t % 32u;
    let sg = t / 32u;
    let y = wid.x * 32u + rl;
    let ch = wid.y;
    let nbx = params.nbx;
    let seg = (nbx + 7u) / 8u;
    let n0 = min(sg * seg, nbx);
    let n1 = min(n0 + seg, nbx);
    let valid = y < params.H;
    let m = y / TS;
    let base = ch * nbx * params.H + y;
    let tb = (ch * params.nby + m) * nbx;
    var acc = {{T}}(0);
    if (valid) {
        for (var n = n0; n < n1; n++) {
            acc += rowpref[base + n * params.H] + blocktot[tb + n];
        }
    }
    part[t] = acc;
    workgroupBarrier();
    var off = {{T}}(0);
    for (var k = 0u; k < sg; k++) {
        off += part[k * 32u + rl];
    }
    if (valid) {
        for (var n = n0; n < n1; n++) {
            let i = base + n * params.H;
            let v = rowpref[i] + blocktot[tb + n];
            rowpref[i] = off;
            off += v;
        }
    }
}
#endif

#if TILE_FINAL
#if !VEC4
var<workgroup> tile: array<{{T}}, 4160>;   // 64 x 65
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
    var p: array<{{T}}, 16>;
    // All 16 loads first (in flight together), then the prefix.
#unroll R 16
    {
        let y = Y + g * RPT + {{R}}u;
        p[{{R}}] = {{T}}(0);
        if (x < params.W && y < params.H) {
            p[{{R}}] = load(y, x, ch);
        }
    }
#endunroll
    var acc = {{T}}(0);
#unroll R 16
    acc += p[{{R}}];
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
        off += part[k * TS + c];
    }
#unroll R 16
    tile[(g * RPT + {{R}}u) * TP + c] = p[{{R}}] + off;
#endunroll
    workgroupBarrier();
    // Horizontal inclusive prefix of each row, plus L (the SAT just left of the tile).
    let i = t % TS;
    let h = t / TS;
    var s = {{T}}(0);
#unroll K 16
    s += tile[i * TP + h * RPT + {{K}}u];
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
        left += part[k * TS + i];
    }
#unroll K 16
    tile[i * TP + h * RPT + {{K}}u] = p[{{K}}] + left;
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
        v[{{J}}] = src[(y0 + {{J}}u) * W4 + x4];
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
#endif

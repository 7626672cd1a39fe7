// Spine of bracket matching: one workgroup scans the partitions' bicyclic summaries (a, b) into
// the stack size at each partition's start, and builds a min segment tree over each partition's
// minimum stack size (ends included): leaves at [tree_size, 2 tree_size), padding leaves = INF.
// info[0] = closes left unmatched, info[1] = opens left unclosed (the final stack size).

struct Params {
    n_parts: u32,
    chunk: u32,      // partitions per invocation: ceil(n_parts / WG) rounded up to a multiple of 4
    tree_size: u32,
    pad: u32,
}

const WG: u32 = {{WG}}u;
const INF: u32 = 0xffffffffu;

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> part_bic: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read_write> part_start: array<u32>;
@group(0) @binding(3) var<storage, read_write> tree: array<u32>;
@group(0) @binding(4) var<storage, read_write> info: array<u32>;

var<workgroup> sh_a: array<u32, WG>;
var<workgroup> sh_b: array<u32, WG>;

fn bic_combine(x: vec2<u32>, y: vec2<u32>) -> vec2<u32> {
    let m = min(x.y, y.x);
    return vec2<u32>(x.x + y.x - m, x.y + y.y - m);
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32) {
    let first = lid * params.chunk;
    var acc = vec2<u32>(0u, 0u);
    let n = params.n_parts;
    // Four independent loads per trip (past the end: the identity), then combined in order.
    for (var i = 0u; i < params.chunk; i += 4u) {
        var v: array<vec2<u32>, 4>;
#unroll K 4
        v[{{K}}] = select(vec2<u32>(0u), part_bic[min(first + i + {{K}}u, n - 1u)], first + i + {{K}}u < n);
#endunroll
#unroll K 4
        acc = bic_combine(acc, v[{{K}}]);
#endunroll
    }
    sh_a[lid] = acc.x;
    sh_b[lid] = acc.y;
    workgroupBarrier();
    for (var d = 1u; d < WG; d = d << 1u) {
        var v = vec2<u32>(sh_a[lid], sh_b[lid]);
        if (lid >= d) {
            v = bic_combine(vec2<u32>(sh_a[lid - d], sh_b[lid - d]), v);
        }
        workgroupBarrier();
        sh_a[lid] = v.x;
        sh_b[lid] = v.y;
        workgroupBarrier();
    }
    var stack = 0u;
    if (lid > 0u) {
        stack = sh_b[lid - 1u];
    }
    let size = params.tree_size;
    for (var i = 0u; i < params.chunk; i += 4u) {
        var v: array<vec2<u32>, 4>;
#unroll K 4
        v[{{K}}] = part_bic[min(first + i + {{K}}u, n - 1u)];
#endunroll
#unroll K 4
        {
            let q = first + i + {{K}}u;
            if (q < n) {
                let s = v[{{K}}];
                part_start[q] = stack;
                let low = max(stack, s.x) - s.x;
                tree[size + q] = low;
                stack = low + s.y;
            }
        }
#endunroll
    }
    if (lid == WG - 1u) {
        info[0] = sh_a[WG - 1u];
        info[1] = sh_b[WG - 1u];
    }
    let pad_per = (size - params.n_parts + WG - 1u) / WG;
    for (var i = 0u; i < pad_per; i++) {
        let q = params.n_parts + lid + i * WG;
        if (q < size) {
            tree[size + q] = INF;
        }
    }
    storageBarrier();
    workgroupBarrier();
    for (var level = size >> 1u; level >= 1u; level = level >> 1u) {
        let per = (level + WG - 1u) / WG;
        for (var i = 0u; i < per; i += 2u) {
            let n0 = level + lid + i * WG;
            let n1 = n0 + WG;
            let c0 = min(n0, 2u * level - 1u);
            let c1 = min(n1, 2u * level - 1u);
            let a0 = tree[2u * c0];
            let b0 = tree[2u * c0 + 1u];
            let a1 = tree[2u * c1];
            let b1 = tree[2u * c1 + 1u];
            if (n0 < 2u * level) {
                tree[n0] = min(a0, b0);
            }
            if (n1 < 2u * level && i + 1u < per) {
                tree[n1] = min(a1, b1);
            }
        }
        storageBarrier();
        workgroupBarrier();
    }
}

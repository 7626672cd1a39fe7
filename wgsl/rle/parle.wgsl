// The PARLE reference pipeline (Balevic; as in Erkaman/parle-cuda), one element per invocation:
//   FLAGS:   flags[i] = 1 where a run starts (RLE: i == 0 or x[i] != x[i-1], compared as bits),
//            where mask[i] != 0 (COMPACT), or where x[i] != 0 (NONZERO); else 0
//   (the library's inclusive scan of flags, recorded in the same batch)
//   SCATTER: idx[scan[i] - 1] = i where flags[i]; the last invocation records the total, the RLE
//            sentinel idx[total] = n and the grid of rle/finish.wgsl, which writes values/counts.
// Defines: EB8 (x is uint8 packed four to a word), RLE | COMPACT | NONZERO, MASK_U8, FLAGS | SCATTER.

struct Params {
    n: u32,
    n_groups: u32,
    fin_per_group: u32,
    max_groups: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
#if FLAGS
#if !COMPACT
@group(0) @binding(1) var<storage, read> x: array<u32>;
#else
@group(0) @binding(2) var<storage, read> mask: array<u32>;
#endif
@group(0) @binding(3) var<storage, read_write> flags: array<u32>;
#else
@group(0) @binding(3) var<storage, read> flags: array<u32>;
@group(0) @binding(4) var<storage, read> scanned: array<u32>;
@group(0) @binding(5) var<storage, read_write> idx: array<u32>;
@group(0) @binding(6) var<storage, read_write> info: array<u32>;
#endif

const WG: u32 = 256u;

#if FLAGS
#if !COMPACT
fn element(i: u32) -> u32 {
#if EB8
    return (x[i / 4u] >> (8u * (i % 4u))) & 0xffu;
#else
    return x[i];
#endif
}
#endif
#endif

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = gid.x + gid.y * nwg.x * WG;
    if (i >= params.n) {
        return;
    }
#if FLAGS
#if RLE
    flags[i] = select(u32(element(i) != element(max(i, 1u) - 1u)), 1u, i == 0u);
#elif COMPACT
#if MASK_U8
    flags[i] = u32(((mask[i / 4u] >> (8u * (i % 4u))) & 0xffu) != 0u);
#else
    flags[i] = u32(mask[i] != 0u);
#endif
#else
    flags[i] = u32(element(i) != 0u);
#endif
#else
    let s = scanned[i];
    if (flags[i] != 0u) {
        idx[s - 1u] = i;
    }
    if (i == params.n - 1u) {
        info[0] = s;
#if RLE
        idx[s] = params.n;
#endif
        let groups = (s + params.fin_per_group - 1u) / params.fin_per_group;
        let gy = (groups + params.max_groups - 1u) / params.max_groups;
        info[4] = select((groups + gy - 1u) / max(gy, 1u), 0u, groups == 0u);
        info[5] = select(gy, 0u, groups == 0u);
        info[6] = select(1u, 0u, groups == 0u);
    }
#endif
}

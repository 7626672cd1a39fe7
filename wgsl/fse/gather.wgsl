// Compaction: params.slices workgroups per block copy its payload to its final, word-aligned
// place, each a 1/slices share of the block's largest range (the raw bytes or the lane streams;
// slice 0 also copies the header and lane counts), so that one large block is not one
// workgroup's latency.
// gplan[3b .. 3b+3) = (kind, dst word offset, aux): kind 0 raw (copy the input block), 1 RLE
// (aux = the byte), 2 reference FSE (aux = payload bytes, from the stage slot), 3 interleaved
// (aux = header bytes; counts and lane streams are packed from the stage slot). Copies move 4
// words per invocation and trip (independent loads in flight); the lane streams are copied as one
// flat range, each invocation tracking which lane its words come from.

struct Params {
    n_bytes: u32,
    block_size: u32,
    n_blocks: u32,
    stage_words: u32,
    lane_cap: u32,
    lanes: u32,
    slices: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read> stage: array<u32>;
@group(0) @binding(3) var<storage, read> gplan: array<u32>;
@group(0) @binding(4) var<storage, read_write> dst: array<u32>;

const WG: u32 = 256u;
const HDR_WORDS: u32 = 128u;

var<workgroup> sh_kind: u32;
var<workgroup> loff: array<u32, 257>;

// dst[o + i] = src[s0 + i] for lo <= i < nw; 4 words a trip
fn copy_from_src(lid: u32, s0: u32, o: u32, lo: u32, nw: u32, nd: u32) {
    var i = lo + lid;
    for (; i + 3u * WG < nw; i += 4u * WG) {
        var v: array<u32, 4>;
#unroll Q 4
        v[{{Q}}] = src[s0 + i + {{Q}}u * WG];
#endunroll
#unroll Q 4
        if (o + i + {{Q}}u * WG < nd) {
            dst[o + i + {{Q}}u * WG] = v[{{Q}}];
        }
#endunroll
    }
    for (; i < nw; i += WG) {
        let v = src[s0 + i];
        if (o + i < nd) {
            dst[o + i] = v;
        }
    }
}

// dst[o + i] = stage[s0 + i] for lo <= i < nw; 4 words a trip
fn copy_from_stage(lid: u32, s0: u32, o: u32, lo: u32, nw: u32, nd: u32) {
    var i = lo + lid;
    for (; i + 3u * WG < nw; i += 4u * WG) {
        var v: array<u32, 4>;
#unroll Q 4
        v[{{Q}}] = stage[s0 + i + {{Q}}u * WG];
#endunroll
#unroll Q 4
        if (o + i + {{Q}}u * WG < nd) {
            dst[o + i + {{Q}}u * WG] = v[{{Q}}];
        }
#endunroll
    }
    for (; i < nw; i += WG) {
        let v = stage[s0 + i];
        if (o + i < nd) {
            dst[o + i] = v;
        }
    }
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let wg = wid.x + wid.y * nwg.x;
    let b = wg / params.slices;
    let slice = wg % params.slices;
    if (b >= params.n_blocks) {
        return;
    }
    if (lid == 0u) {
        sh_kind = gplan[3u * b];
    }
    let kind = workgroupUniformLoad(&sh_kind);
    let o = gplan[3u * b + 1u];
    let aux = gplan[3u * b + 2u];
    let nd = arrayLength(&dst);
    let start = b * params.block_size;
    let len = min(params.block_size, params.n_bytes - start);
    let sbase = b * params.stage_words;
    if (kind == 0u) {
        let nfull = len / 4u;
        let share = (nfull + params.slices - 1u) / params.slices;
        copy_from_src(lid, start / 4u, o, slice * share, min(nfull, (slice + 1u) * share), nd);
        let rem = len - 4u * nfull;
        if (lid == 0u && slice == 0u && rem > 0u && o + nfull < nd) {
            dst[o + nfull] = src[start / 4u + nfull] & ((1u << (8u * rem)) - 1u);
        }
    } else if (kind == 1u) {
        if (lid == 0u && slice == 0u && o < nd) {
            dst[o] = aux & 255u;
        }
    } else if (kind == 2u) {
        let nw = (aux + 3u) / 4u;
        let share = (nw + params.slices - 1u) / params.slices;
        copy_from_stage(lid, sbase, o, slice * share, min(nw, (slice + 1u) * share), nd);
    } else {
        let lanes = params.lanes;
        let hw = (aux + 3u) / 4u;
        if (slice == 0u) {
            copy_from_stage(lid, sbase, o, 0u, hw, nd);
        }
        for (var i = lid; i < select(0u, lanes / 2u, slice == 0u); i += WG) {
            let c = stage[sbase + HDR_WORDS + 2u * i] | (stage[sbase + HDR_WORDS + 2u * i + 1u] << 16u);
            if (o + hw + i < nd) {
                dst[o + hw + i] = c;
            }
        }
        if (lid < lanes) {
            loff[lid] = stage[sbase + HDR_WORDS + lid];
        }
        workgroupBarrier();
        if (lid == 0u) {
            var t = 0u;
            for (var j = 0u; j < lanes; j++) {
                let c = loff[j];
                loff[j] = t;
                t += c;
            }
            loff[lanes] = t;
        }
        workgroupBarrier();
        // the lane streams as one flat range of loff[lanes] words: word i is word i - loff[j] of
        // lane j's slot, loff[j] <= i < loff[j + 1]; j only grows along an invocation's words
        let ob = o + hw + lanes / 2u;
        let share = (loff[lanes] + params.slices - 1u) / params.slices;
        let total = min(loff[lanes], (slice + 1u) * share);
        let slots = sbase + HDR_WORDS + lanes;
        var j = 0u;
        var i = slice * share + lid;
        for (; i + 3u * WG < total; i += 4u * WG) {
            var v: array<u32, 4>;
#unroll Q 4
            while (j + 1u < lanes && loff[j + 1u] <= i + {{Q}}u * WG) {
                j += 1u;
            }
            v[{{Q}}] = stage[slots + j * params.lane_cap + i + {{Q}}u * WG - loff[j]];
#endunroll
#unroll Q 4
            if (ob + i + {{Q}}u * WG < nd) {
                dst[ob + i + {{Q}}u * WG] = v[{{Q}}];
            }
#endunroll
        }
        for (; i < total; i += WG) {
            while (j + 1u < lanes && loff[j + 1u] <= i) {
                j += 1u;
            }
            if (ob + i < nd) {
                dst[ob + i] = stage[slots + j * params.lane_cap + i - loff[j]];
            }
        }
    }
}

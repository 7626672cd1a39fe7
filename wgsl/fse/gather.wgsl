// Compaction: one workgroup per block copies its payload to its final, word-aligned place.
// gplan[3b .. 3b+3) = (kind, dst word offset, aux): kind 0 raw (copy the input block), 1 RLE
// (aux = the byte), 2 reference FSE (aux = payload bytes, from the stage slot), 3 interleaved
// (aux = header bytes; counts and lane streams are packed from the stage slot).

struct Params {
    n_bytes: u32,
    block_size: u32,
    n_blocks: u32,
    stage_words: u32,
    lane_cap: u32,
    lanes: u32,
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

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let b = wid.x + wid.y * nwg.x;
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
        let nw = (len + 3u) / 4u;
        for (var i = lid; i < nw; i += WG) {
            var w = src[start / 4u + i];
            let rem = len - 4u * i;
            if (rem < 4u) {
                w &= (1u << (8u * rem)) - 1u;
            }
            if (o + i < nd) {
                dst[o + i] = w;
            }
        }
    } else if (kind == 1u) {
        if (lid == 0u && o < nd) {
            dst[o] = aux & 255u;
        }
    } else if (kind == 2u) {
        let nw = (aux + 3u) / 4u;
        for (var i = lid; i < nw; i += WG) {
            if (o + i < nd) {
                dst[o + i] = stage[sbase + i];
            }
        }
    } else {
        let lanes = params.lanes;
        let hw = (aux + 3u) / 4u;
        for (var i = lid; i < hw; i += WG) {
            if (o + i < nd) {
                dst[o + i] = stage[sbase + i];
            }
        }
        for (var i = lid; i < lanes / 2u; i += WG) {
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
        let ob = o + hw + lanes / 2u;
        for (var j = 0u; j < lanes; j++) {
            let c = loff[j + 1u] - loff[j];
            let fromw = sbase + HDR_WORDS + lanes + j * params.lane_cap;
            for (var i = lid; i < c; i += WG) {
                if (ob + loff[j] + i < nd) {
                    dst[ob + loff[j] + i] = stage[fromw + i];
                }
            }
        }
    }
}

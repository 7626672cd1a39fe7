// Placement of one group's payloads, in one workgroup: each block's final kind and size (a coded
// block that came out too large, or ran past its slot, is stored raw, the reference's rule), then
// an exclusive scan of the word-padded sizes gives each block's place, so that gather.wgsl copies
// the payloads in the same submission and the host learns the sizes from the same readback.
//
// info[3b .. 3b+3) = (kind before coding, block bytes, the RLE byte)
// status[2b .. 2b+2) = the coders' (header bytes, payload bytes or 0xffffffff); read for coded kinds only
// out: gplan[3b .. 3b+3) = (kind, dst word offset, aux) for gather.wgsl, offsets from params.base;
//      rec[3b .. 3b+3) = (kind, payload bytes, checksum: fmix32 of hist.wgsl's sum + block bytes), what the host reads back
//      (words [0, 3 n_blocks) of the payload buffer; the payloads follow at word params.base)

struct Params {
    n_blocks: u32,
    base: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> info: array<u32>;
@group(0) @binding(2) var<storage, read> status: array<u32>;
@group(0) @binding(3) var<storage, read_write> gplan: array<u32>;
@group(0) @binding(4) var<storage, read_write> rec: array<u32>;
@group(0) @binding(5) var<storage, read> hist: array<u32>;

const WG: u32 = 256u;
const PER: u32 = 4u;  // blocks per invocation and trip

var<workgroup> sums: array<u32, 256>;

#include "fse/fmix.wgsl"

// (kind, payload bytes, aux) of block b
fn settle(b: u32) -> vec3<u32> {
    var kind = info[3u * b];
    let len = info[3u * b + 1u];
    var csize = select(1u, len, kind == 0u);
    var aux = 0u;
    if (kind >= 2u) {
        let fs = status[2u * b + 1u];
        // reference blocks must save at least two bytes, interleaved ones one
        let lim = select(len, len - 1u, kind == 2u);
        if (fs != 0xffffffffu && fs < lim) {
            csize = fs;
            aux = select(status[2u * b], fs, kind == 2u);
        } else {
            kind = 0u;
            csize = len;
        }
    } else if (kind == 1u) {
        aux = info[3u * b + 2u];
    }
    return vec3<u32>(kind, csize, aux);
}

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) lid: u32) {
    let n = params.n_blocks;
    var carry = params.base;
    for (var c = 0u; c < n; c += WG * PER) {
        var got: array<vec3<u32>, PER>;
        var own = 0u;
        for (var k = 0u; k < PER; k++) {
            let b = c + lid * PER + k;
            if (b < n) {
                got[k] = settle(b);
                own += (got[k].y + 3u) / 4u;
            }
        }
        sums[lid] = own;
        workgroupBarrier();
        for (var d = 1u; d < WG; d <<= 1u) {  // inclusive scan of the invocations' words
            var v = sums[lid];
            if (lid >= d) {
                v += sums[lid - d];
            }
            workgroupBarrier();
            sums[lid] = v;
            workgroupBarrier();
        }
        var at = carry + sums[lid] - own;
        for (var k = 0u; k < PER; k++) {
            let b = c + lid * PER + k;
            if (b < n) {
                gplan[3u * b] = got[k].x;
                gplan[3u * b + 1u] = at;
                gplan[3u * b + 2u] = got[k].z;
                rec[3u * b] = got[k].x;
                rec[3u * b + 1u] = got[k].y;
                rec[3u * b + 2u] = fmix(hist[257u * b + 256u] + info[3u * b + 1u]);
                at += (got[k].y + 3u) / 4u;
            }
        }
        carry += sums[WG - 1u];
        workgroupBarrier();
    }
}

// FSE block decoder. One workgroup per block. Invocation 0 parses the block's NCount header; all
// invocations build the decoding table in workgroup memory. REF (phase 1 of 2): the table goes to
// `dtabs` and refdec.wgsl decodes many blocks per workgroup. IL: each of the WG lanes decodes its
// own stream (the bytes of words j, j + WG, ... of the block). Entry `copy` handles raw and
// single-symbol blocks.
//
// plan[3b .. 3b+3) = (kind, payload word offset in comp, payload bytes). Every read of comp is
// bounded; every write of dst is bounded; status[b] gets a nonzero code when the stream is
// malformed (the host raises CorruptDataError).

struct Params {
    n_bytes: u32,
    block_size: u32,
    n_blocks: u32,
    comp_words: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> comp: array<u32>;
@group(0) @binding(2) var<storage, read> plan: array<u32>;
@group(0) @binding(3) var<storage, read_write> dst: array<u32>;
@group(0) @binding(4) var<storage, read_write> status: array<u32>;

const WG: u32 = {{WG}}u;
const TSIZE: u32 = {{TSIZE}}u;
const MAXTL: u32 = {{MAXTL}}u;

var<workgroup> normv: array<i32, 256>;
var<workgroup> nxt: array<u32, 256>;
var<workgroup> dtab: array<u32, TSIZE>;   // new_state | symbol << 16 | nb_bits << 24
var<workgroup> sh_kind: u32;
var<workgroup> sh_ok: u32;
var<workgroup> sh_tl: u32;
var<workgroup> sh_hw: u32;
var<workgroup> lerr: atomic<u32>;
var<workgroup> sh_maxsv: u32;
#include "fse/spread.wgsl"
#if REF
@group(0) @binding(5) var<storage, read_write> dtabs: array<u32>;   // TSIZE words per block
@group(0) @binding(6) var<storage, read_write> info: array<u32>;    // tl | header bytes << 8 | ok << 31
#else
var<workgroup> loff: array<u32, WG + 1u>;
#endif

var<private> err: u32;
var<private> maxsv: u32;

fn highbit(x: u32) -> u32 {
    return 31u - countLeadingZeros(max(x, 1u));
}

#include "fse/bitreader.wgsl"

// k (<= 16) bits at bit p of the stream starting at word bw, least significant first.
fn fwd(bw: u32, p: u32, k: u32) -> u32 {
    let w = bw + (p >> 5u);
    let o = p & 31u;
    var v = cw(w) >> o;
    if (o + k > 32u) {
        v |= cw(w + 1u) << (32u - o);
    }
    return v & ((1u << k) - 1u);
}

// Parse the normalised counts; returns the header length in bits (sets err on malformed input).
fn parse_ncount(bw: u32, limit: u32) -> u32 {
    let tl = fwd(bw, 0u, 4u) + 5u;
    var p = 4u;
    if (tl > MAXTL) {
        err = 1u;
        return 0u;
    }
    sh_tl = tl;
    let size = i32(1u << tl);
    var remaining = size + 1;
    var threshold = size;
    var nbits = tl + 1u;
    var ch = 0u;
    var prev0 = false;
    loop {
        if (remaining <= 1 || ch > 255u || p > limit) {
            break;
        }
        if (prev0) {
            var n0 = ch;
            while (fwd(bw, p, 16u) == 0xffffu && n0 <= 255u && p <= limit) {
                n0 += 24u;
                p += 16u;
            }
            while (fwd(bw, p, 2u) == 3u && n0 <= 255u && p <= limit) {
                n0 += 3u;
                p += 2u;
            }
            n0 += fwd(bw, p, 2u);
            p += 2u;
            if (n0 > 255u) {
                err = 2u;
                return 0u;
            }
            while (ch < n0) {
                normv[ch] = 0;
                ch += 1u;
            }
        }
        let mx = (2 * threshold - 1) - remaining;
        var count = i32(fwd(bw, p, nbits - 1u));
        if (count < mx) {
            p += nbits - 1u;
        } else {
            count = i32(fwd(bw, p, nbits));
            if (count >= threshold) {
                count -= mx;
            }
            p += nbits;
        }
        count -= 1;
        remaining -= abs(count);
        normv[ch] = count;
        ch += 1u;
        prev0 = count == 0;
        if (remaining < 1) {
            err = 3u;
            return 0u;
        }
        while (remaining < threshold && threshold > 1) {
            nbits -= 1u;
            threshold >>= 1u;
        }
    }
    if (remaining != 1 || p > limit || ch == 0u) {
        err = 4u;
        return 0u;
    }
    maxsv = ch - 1u;
    return p;
}



@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let b = wid.x + wid.y * nwg.x;
    if (b >= params.n_blocks) {
        return;
    }
    if (lid == 0u) {
        sh_kind = plan[3u * b];
        atomicStore(&lerr, 0u);
    }
    let kind = workgroupUniformLoad(&sh_kind);
    if (kind < 2u) {
        return;
    }
    let bw = plan[3u * b + 1u];
    let csize = plan[3u * b + 2u];
    let start = b * params.block_size;
    let len = min(params.block_size, params.n_bytes - start);
    let ow = start / 4u;
    let nd = arrayLength(&dst);
    err = 0u;
#if REF
    // phase 1 of 2: header checks and the decoding table, stored in dtabs for refdec.wgsl
    if (lid == 0u) {
        var code = 10u;
        if (kind == 2u && csize >= 2u) {
            let hbits = parse_ncount(bw, 8u * csize);
            let hb = (hbits + 7u) / 8u;
            let lb = (cw(bw + (csize - 1u) / 4u) >> (8u * ((csize - 1u) & 3u))) & 255u;
            if (err == 0u && (hb >= csize || lb == 0u || len < 3u)) {
                err = 7u;
            }
            code = err;
            sh_hw = hb;
            sh_maxsv = maxsv;
        }
        sh_ok = select(0u, 1u, code == 0u);
        if (code != 0u) {
            status[b] = code;
            info[b] = 0u;
        }
    }
    if (workgroupUniformLoad(&sh_ok) == 0u) {
        return;
    }
#else
    if (lid == 0u) {
        var ok = kind == 3u && csize % 4u == 0u;
        if (ok) {
            let hbits = parse_ncount(bw, 8u * csize);
            sh_hw = (hbits + 31u) / 32u;
            sh_maxsv = maxsv;
            ok = err == 0u;
        }
        sh_ok = select(0u, 1u, ok);
        if (!ok) {
            status[b] = max(err, 11u);
        }
    }
    if (workgroupUniformLoad(&sh_ok) == 0u) {
        return;
    }
#endif
    // decoding table, built by all invocations; the first 32 fill it, lid owning symbols s % 32 == lid
    {
        let tl = sh_tl;
        let msv = sh_maxsv;
        let size = 1u << tl;
        for (var s = lid; s <= msv; s += WG) {
            nxt[s] = select(u32(max(normv[s], 0)), 1u, normv[s] == -1);
        }
        parallel_spread(lid, tl, msv);
        if (lid < 32u) {
            for (var w = 0u; w < size / 4u; w++) {
                let word = atomicLoad(&spr[w]);
                for (var q = 0u; q < 4u; q++) {
                    let s = (word >> (8u * q)) & 255u;
                    if ((s & 31u) == lid) {
                        let x = max(nxt[s], 1u);
                        nxt[s] = x + 1u;
                        let nb = min(tl - min(highbit(x), tl), 15u);
                        dtab[4u * w + q] = (((x << nb) - size) & 0xffffu) | (s << 16u) | (nb << 24u);
                    }
                }
            }
        }
    }
#if REF
    workgroupBarrier();
    for (var u = lid; u < TSIZE; u += WG) {
        dtabs[b * TSIZE + u] = dtab[u];
    }
    if (lid == 0u) {
        info[b] = sh_tl | (sh_hw << 8u) | (1u << 31u);
    }
#else
    loff[lid] = (cw(bw + sh_hw + lid / 2u) >> (16u * (lid & 1u))) & 0xffffu;
    workgroupBarrier();
    if (lid == 0u) {
        let hw = sh_hw;
        var ok = true;
        {
            var t = 0u;
            for (var j = 0u; j < WG; j++) {
                let c = loff[j];
                loff[j] = t;
                t += c;
            }
            loff[WG] = t;
            ok = hw + WG / 2u + t == csize / 4u;
        }
        sh_ok = select(0u, 1u, ok);
        if (!ok) {
            status[b] = 15u;
        }
    }
    if (workgroupUniformLoad(&sh_ok) == 0u) {
        return;
    }
    let tl = sh_tl;
    let tmask = (1u << tl) - 1u;
    let j = lid;
    let nw = (len + 3u) / 4u;
    var kw = 0u;
    if (j < nw) {
        kw = (nw - 1u - j) / WG + 1u;
    }
    var m = 4u * kw;
    if (kw > 0u && ((nw - 1u) % WG) == j) {
        m -= 4u * nw - len;
    }
    let lb = bw + sh_hw + WG / 2u + loff[j];
    let cnt = loff[j + 1u] - loff[j];
    if (m == 0u) {
        if (cnt != 0u) {
            err = 12u;
        }
    } else {
        let last = cw(lb + max(cnt, 1u) - 1u);
        if (cnt == 0u || last == 0u) {
            err = 13u;
        } else {
            var rb = rb_init(lb, (cnt - 1u) * 32u + highbit(last), 0u);
            var st = rb_read(&rb, tl);
            // all but the lane's last word: four symbols, each followed by a state update
            for (var k = 0u; k + 1u < kw; k++) {
                let widx = j + WG * k;
                let e1 = dtab[st & tmask];
                st = (e1 & 0xffffu) + rb_read(&rb, e1 >> 24u);
                let e2 = dtab[st & tmask];
                st = (e2 & 0xffffu) + rb_read(&rb, e2 >> 24u);
                let e3 = dtab[st & tmask];
                st = (e3 & 0xffffu) + rb_read(&rb, e3 >> 24u);
                let e4 = dtab[st & tmask];
                st = (e4 & 0xffffu) + rb_read(&rb, e4 >> 24u);
                let w = ((e1 >> 16u) & 255u) | (((e2 >> 16u) & 255u) << 8u) | (((e3 >> 16u) & 255u) << 16u)
                      | (((e4 >> 16u) & 255u) << 24u);
                if (ow + widx < nd) {
                    dst[ow + widx] = w;
                }
            }
            var t = 4u * (kw - 1u);
            for (var k = kw - 1u; k < kw; k++) {
                let widx = j + WG * k;
                let nv = min(4u, len - 4u * widx);
                var w = 0u;
                for (var q = 0u; q < nv; q++) {
                    let e = dtab[st & tmask];
                    w |= ((e >> 16u) & 255u) << (8u * q);
                    t += 1u;
                    if (t < m) {
                        st = (e & 0xffffu) + rb_read(&rb, e >> 24u);
                    }
                }
                if (ow + widx < nd) {
                    dst[ow + widx] = w;
                }
            }
            if (rb.pos != 0u) {
                err = 14u;
            }
        }
    }
    if (err != 0u) {
        atomicMax(&lerr, err);
    }
    workgroupBarrier();
    if (lid == 0u) {
        status[b] = atomicLoad(&lerr);
    }
#endif
}

@compute @workgroup_size(WG)
fn copy(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let b = wid.x + wid.y * nwg.x;
    if (b >= params.n_blocks) {
        return;
    }
    let kind = plan[3u * b];
    if (kind >= 2u) {
        if (kind > 3u && lid == 0u) {
            status[b] = 20u;
        }
        return;
    }
    let bw = plan[3u * b + 1u];
    let start = b * params.block_size;
    let len = min(params.block_size, params.n_bytes - start);
    let ow = start / 4u;
    let nd = arrayLength(&dst);
    let nw = (len + 3u) / 4u;
    let fill = (cw(bw) & 255u) * 0x01010101u;
    for (var i = lid; i < nw; i += WG) {
        var w = select(cw(bw + i), fill, kind == 1u);
        let rem = len - 4u * i;
        if (rem < 4u) {
            w &= (1u << (8u * rem)) - 1u;
        }
        if (ow + i < nd) {
            dst[ow + i] = w;
        }
    }
}

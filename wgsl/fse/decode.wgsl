// FSE block decoder. One workgroup per block. Invocation 0 parses the block's NCount header and
// builds the decoding table in workgroup memory. REF: invocation 0 then decodes the two-state
// reference bitstream. IL: each of the WG lanes decodes its own stream (the bytes of words
// j, j + WG, ... of the block). Entry `copy` handles raw and single-symbol blocks.
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
#if REF
// REF runs in two entries: `ref_tables` (compiled with TABLES; one workgroup per block: header,
// decoding table, checks) writes the table to `dtabs` and the reader's start to `rec`; `main`
// then decodes WG blocks per workgroup, one per invocation, reading the tables through the cache
// hierarchy. (The NVIDIA Vulkan driver gives workgroup memory a carve-out of about 48 KiB per SM:
// with its own table in workgroup memory, only about 4 coders ran per SM.)
// rec[4b .. 4b+4) = (start bit or 0xffffffff, stop bit, table log, prefetch sink).
@group(0) @binding(5) var<storage, read_write> rec: array<u32>;
#if TABLES
@group(0) @binding(6) var<storage, read_write> dtabs: array<u32>;
#else
@group(0) @binding(6) var<storage, read> dtabs: array<u32>;
#endif
#endif

const WG: u32 = {{WG}}u;
const TSIZE: u32 = {{TSIZE}}u;
const MAXTL: u32 = {{MAXTL}}u;

var<workgroup> normv: array<i32, 256>;
#if !REF
var<workgroup> dtab: array<u32, TSIZE>;   // new_state | symbol << 16 | nb_bits << 24
#endif
var<workgroup> sh_kind: u32;
var<workgroup> sh_ok: u32;
var<workgroup> sh_tl: u32;
var<workgroup> sh_hw: u32;
var<workgroup> lerr: atomic<u32>;
var<workgroup> sh_maxsv: u32;
#if !REF
var<workgroup> loff: array<u32, WG + 1u>;
#endif
#include "fse/spread.wgsl"

var<private> err: u32;
var<private> maxsv: u32;

fn highbit(x: u32) -> u32 {
    return 31u - countLeadingZeros(max(x, 1u));
}

fn cw(i: u32) -> u32 {
    if (i < params.comp_words && i < arrayLength(&comp)) {
        return comp[i];
    }
    return 0u;
}

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

#if TABLES
#if REF
var<private> dtab_base: u32;   // REF: the table goes straight to dtabs[dtab_base + slot]
fn dtab_put(u: u32, v: u32) {
    dtabs[dtab_base + u] = v;
}
#else
fn dtab_put(u: u32, v: u32) {
    dtab[u] = v;
}
#endif

// The decoding table built by all WG invocations together after the header is parsed (normv
// filled; tl and msv uniform): the spread in parallel, then the entries chunk by chunk. Slot u of
// symbol s gets x = count(s) + (slots of s before u).
fn build_dtable_parallel(lid: u32, tl: u32, msv: u32) {
    let size = 1u << tl;
    for (var s = lid; s <= msv; s += WG) {
        snext[s] = select(u32(max(normv[s], 0)), 1u, normv[s] == -1);
    }
    parallel_spread(lid, tl, msv);
    for (var c = 0u; c < size; c += WG) {
        let q = spread_next(lid, c + lid, size);
        if (q.x < 256u) {
            let x = q.y;
            let nb = min(tl - min(highbit(x), tl), 15u);
            dtab_put(c + lid, (((x << nb) - size) & 0xffffu) | (q.x << 16u) | (nb << 24u));
        }
    }
}
#endif

// Backward bit reader over the stream at word bw: fields are read from bit `pos` downwards,
// never below bit `sb`. A two-word window (hi = word p1, lo = word p1 - 1) is refilled one
// word at a time. Function-scope state passed by pointer, so several readers can coexist (on the
// H100 this measured the same speed as module-scope private state).
struct Rb {
    bw: u32,
    pos: u32,
    sb: u32,
    p1: u32,
    hi: u32,
    lo: u32,
    nx: u32,   // word p1 - 2, loaded a word ahead so that no read waits on memory
    touch: u32,
}

fn rb_init(bw: u32, pos: u32, sb: u32) -> Rb {
    var r: Rb;
    r.bw = bw;
    r.pos = pos;
    r.sb = sb;
    r.p1 = (max(pos, 1u) - 1u) >> 5u;
    r.hi = cw(bw + r.p1);
    r.lo = select(0u, cw(bw + r.p1 - 1u), r.p1 > 0u);
    r.nx = select(0u, cw(bw + r.p1 - 2u), r.p1 > 1u);
    r.touch = 0u;
    return r;
}

// No per-read underflow test: a stream that reads past its start leaves pos != sb at the
// end (checked by the caller), and every load stays bounded meanwhile. Each refill also touches
// the word 8 below, so the next 32-byte sector is on its way before it is needed (`touch` must
// be stored somewhere by the caller, or the load is optimised away).
fn rb_read(rb: ptr<function, Rb>, k: u32) -> u32 {
    let pos = (*rb).pos - k;
    (*rb).pos = pos;
    let p1 = (*rb).p1;
    let hi = (*rb).hi;
    let lo = (*rb).lo;
    let r = pos + 32u - p1 * 32u;   // field start within the 64-bit window (lo at bit 0)
    let a = (lo >> (r & 31u)) | (hi << ((32u - r) & 31u));
    let v = select(a, hi >> ((r - 32u) & 31u), r >= 32u);
    if (pos > 0u && ((pos - 1u) >> 5u) < p1) {
        (*rb).p1 = p1 - 1u;
        (*rb).hi = lo;
        (*rb).lo = (*rb).nx;
        (*rb).nx = select(0u, cw((*rb).bw + p1 - 3u), p1 > 2u);
        (*rb).touch ^= select(0u, cw((*rb).bw + p1 - 11u), p1 > 10u);
    }
    return v & ((1u << k) - 1u);
}

#if REF
fn sym(rb: ptr<function, Rb>, s1: ptr<function, u32>, s2: ptr<function, u32>, tb: u32, tmask: u32, i: u32, n: u32) -> u32 {
    if (i >= n) {
        return 0u;
    }
    if ((i & 1u) == 0u) {
        let e = dtabs[tb + (*s1 & tmask)];
        if (i + 2u < n) {
            *s1 = (e & 0xffffu) + rb_read(rb, e >> 24u);
        }
        return (e >> 16u) & 255u;
    }
    let e = dtabs[tb + (*s2 & tmask)];
    if (i + 2u < n) {
        *s2 = (e & 0xffffu) + rb_read(rb, e >> 24u);
    }
    return (e >> 16u) & 255u;
}
#endif

#if REF
#if TABLES
@compute @workgroup_size(WG)
fn ref_tables(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) lid: u32) {
    let b = wid.x + wid.y * nwg.x;
    if (b >= params.n_blocks) {
        return;
    }
    if (lid == 0u) {
        var start_bit = 0xffffffffu;
        let kind = plan[3u * b];
        let bw = plan[3u * b + 1u];
        let csize = plan[3u * b + 2u];
        let len = min(params.block_size, params.n_bytes - b * params.block_size);
        err = 0u;
        if (kind >= 2u) {
            if (kind != 2u || csize < 2u) {
                err = 10u;
            }
            var hbits = 0u;
            if (err == 0u) {
                hbits = parse_ncount(bw, 8u * csize);
            }
            let hb = (hbits + 7u) / 8u;
            let lb = (cw(bw + (csize - 1u) / 4u) >> (8u * ((csize - 1u) & 3u))) & 255u;
            if (err == 0u && (hb >= csize || lb == 0u || len < 3u)) {
                err = 7u;
            }
            if (err != 0u) {
                status[b] = err;
            } else {
                start_bit = (csize - 1u) * 8u + highbit(lb);
                rec[4u * b + 1u] = hb * 8u;
                rec[4u * b + 2u] = sh_tl;
            }
        }
        rec[4u * b] = start_bit;
        sh_maxsv = maxsv;
        sh_ok = select(0u, 1u, start_bit != 0xffffffffu);
    }
    if (workgroupUniformLoad(&sh_ok) == 0u) {
        return;
    }
    dtab_base = b * TSIZE;
    build_dtable_parallel(lid, workgroupUniformLoad(&sh_tl), workgroupUniformLoad(&sh_maxsv));
}
#endif

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
    let b = (wid.x + wid.y * nwg.x) * WG + lid;
    if (b >= params.n_blocks) {
        return;
    }
    let start_bit = rec[4u * b];
    if (start_bit == 0xffffffffu) {
        return;
    }
    let bw = plan[3u * b + 1u];
    let tl = min(rec[4u * b + 2u], MAXTL);
    let len = min(params.block_size, params.n_bytes - b * params.block_size);
    let ow = b * params.block_size / 4u;
    let nd = arrayLength(&dst);
    let tb = b * TSIZE;
    let tmask = (1u << tl) - 1u;
    err = 0u;
    var rb = rb_init(bw, start_bit, rec[4u * b + 1u]);
    var s1 = rb_read(&rb, tl);
    var s2 = rb_read(&rb, tl);
    let nw = (len + 3u) / 4u;
    // words whose 4 symbols are all followed by a state update (4q + 5 < len): no tests
    let nfast = select(0u, (len - 2u) / 4u, len >= 6u);
    for (var q = 0u; q < nfast; q++) {
        let e1 = dtabs[tb + (s1 & tmask)];
        s1 = (e1 & 0xffffu) + rb_read(&rb, e1 >> 24u);
        let e2 = dtabs[tb + (s2 & tmask)];
        s2 = (e2 & 0xffffu) + rb_read(&rb, e2 >> 24u);
        let e3 = dtabs[tb + (s1 & tmask)];
        s1 = (e3 & 0xffffu) + rb_read(&rb, e3 >> 24u);
        let e4 = dtabs[tb + (s2 & tmask)];
        s2 = (e4 & 0xffffu) + rb_read(&rb, e4 >> 24u);
        let w = ((e1 >> 16u) & 255u) | (((e2 >> 16u) & 255u) << 8u) | (((e3 >> 16u) & 255u) << 16u)
              | (((e4 >> 16u) & 255u) << 24u);
        if (ow + q < nd) {
            dst[ow + q] = w;
        }
    }
    for (var q = nfast; q < nw; q++) {
        let i = 4u * q;
        var w = sym(&rb, &s1, &s2, tb, tmask, i, len);
        w |= sym(&rb, &s1, &s2, tb, tmask, i + 1u, len) << 8u;
        w |= sym(&rb, &s1, &s2, tb, tmask, i + 2u, len) << 16u;
        w |= sym(&rb, &s1, &s2, tb, tmask, i + 3u, len) << 24u;
        if (ow + q < nd) {
            dst[ow + q] = w;
        }
    }
    if (err == 0u && rb.pos != rb.sb) {
        err = 8u;
    }
    rec[4u * b + 3u] = rb.touch;   // keeps the prefetching loads
    status[b] = err;
}
#else
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
    build_dtable_parallel(lid, workgroupUniformLoad(&sh_tl), workgroupUniformLoad(&sh_maxsv));
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
}
#endif

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

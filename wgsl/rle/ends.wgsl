// Run ends (inclusive scan of the run lengths) of a fused 32-bit encoding, without scanning the
// worst-case-sized counts: the fused pass recorded, per tile T, the index R_T of its first run
// and that run's start p_T (head[2T], head[2T + 1]; 0xffffffff when no run starts in T). The runs
// R_T .. R_{T+1} - 1 all start in tile T, so their ends are p_T plus a scan of their lengths,
// which number at most a tile's elements: one workgroup per tile scans them in chunks of WG * CH,
// each loaded into workgroup memory with coalesced reads, scanned there (each invocation CH
// consecutive entries, then the invocations' sums), and written back coalesced.

struct Params {
    n_tiles: u32,
    n_groups: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> info: array<u32>;
@group(0) @binding(2) var<storage, read> head: array<u32>;
@group(0) @binding(3) var<storage, read> counts: array<u32>;
@group(0) @binding(4) var<storage, read_write> ends: array<u32>;

const WG: u32 = 256u;
const PER: u32 = {{PER}}u;  // runs per invocation: a tile has at most WG * PER runs (its elements)
const CH: u32 = 8u;         // entries per invocation per chunk
const CHUNK: u32 = WG * CH;

var<workgroup> buf: array<u32, CHUNK + CHUNK / 32u>;  // entry j at j + j / 32: fewer bank conflicts
var<workgroup> sums: array<u32, WG>;
var<workgroup> wg_cnt: u32;

fn at(j: u32) -> u32 {
    return j + j / 32u;
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = wid.x + wid.y * nwg.x;
    if (t >= params.n_tiles) {
        return;
    }
    let r0 = head[2u * t];
    let p0 = head[2u * t + 1u];
    if (lid == 0u) {
        var r1 = info[0];
        if (t + 1u < params.n_tiles) {
            r1 = head[2u * t + 2u];
        }
        wg_cnt = select(min(r1 - r0, WG * PER), 0u, p0 == 0xffffffffu || r1 <= r0);
    }
    let cnt = workgroupUniformLoad(&wg_cnt);
    var carry = p0;
    let n_chunks = (cnt + CHUNK - 1u) / CHUNK;
    for (var c = 0u; c < n_chunks; c++) {
        let base = c * CHUNK;
        for (var k = 0u; k < CH; k++) {
            let j = k * WG + lid;
            buf[at(j)] = select(0u, counts[r0 + min(base + j, cnt - 1u)], base + j < cnt);
        }
        workgroupBarrier();
        var acc = 0u;
        for (var k = 0u; k < CH; k++) {
            acc += buf[at(lid * CH + k)];
        }
        sums[lid] = acc;
        workgroupBarrier();
        for (var d = 1u; d < WG; d = d << 1u) {
            var v = sums[lid];
            if (lid >= d) {
                v += sums[lid - d];
            }
            workgroupBarrier();
            sums[lid] = v;
            workgroupBarrier();
        }
        var run = carry + sums[lid] - acc;
        for (var k = 0u; k < CH; k++) {
            run += buf[at(lid * CH + k)];
            buf[at(lid * CH + k)] = run;
        }
        carry += sums[WG - 1u];
        workgroupBarrier();
        for (var k = 0u; k < CH; k++) {
            let j = k * WG + lid;
            if (base + j < cnt) {
                ends[r0 + base + j] = buf[at(j)];
            }
        }
        workgroupBarrier();
    }
}

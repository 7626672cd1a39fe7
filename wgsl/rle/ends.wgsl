// Run ends (inclusive scan of the run lengths) of a fused 32-bit encoding, without scanning the
// worst-case-sized counts: the fused pass recorded, per tile T, the index R_T of its first run
// and that run's start p_T (head[2T], head[2T + 1]; 0xffffffff when no run starts in T). The runs
// R_T .. R_{T+1} - 1 all start in tile T, so their ends are p_T plus a scan of their lengths,
// which number at most a tile's elements: one workgroup per tile scans them in workgroup memory.

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

var<workgroup> sums: array<u32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    let t = wid.x + wid.y * nwg.x;
    if (t >= params.n_tiles) {
        return;
    }
    let r0 = head[2u * t];
    let p0 = head[2u * t + 1u];
    var r1 = info[0];
    if (t + 1u < params.n_tiles) {
        r1 = head[2u * t + 2u];
    }
    let cnt = select(min(r1 - r0, WG * PER), 0u, p0 == 0xffffffffu || r1 <= r0);
    let first = lid * PER;
    var acc = 0u;
    for (var k = 0u; k < PER; k++) {
        if (first + k < cnt) {
            acc += counts[r0 + first + k];
        }
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
    var run = p0 + sums[lid] - acc;
    for (var k = 0u; k < PER; k++) {
        if (first + k < cnt) {
            run += counts[r0 + first + k];
            ends[r0 + first + k] = run;
        }
    }
}

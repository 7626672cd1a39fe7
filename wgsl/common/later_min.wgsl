// The minimum over the workgroup's later invocations: an inclusive suffix minimum (Hillis-Steele)
// in workgroup memory of its own. Expects `const WG: u32` (invocations, the workgroup size).

var<workgroup> sh_later: array<u32, WG>;

// The minimum of `v` over invocations lid + 1 .. WG - 1 (`none` for the last one). Every invocation
// of the workgroup calls it (barriers), at most once per dispatch.
fn later_minimum(lid: u32, v: u32, none: u32) -> u32 {
    sh_later[lid] = v;
    workgroupBarrier();
    for (var s = 1u; s < WG; s <<= 1u) {
        var x = sh_later[lid];
        if (lid + s < WG) {
            x = min(x, sh_later[lid + s]);
        }
        workgroupBarrier();
        sh_later[lid] = x;
        workgroupBarrier();
    }
    var later = none;
    if (lid + 1u < WG) {
        later = sh_later[lid + 1u];
    }
    return later;
}

// Arms the repair pass on the GPU, with no host round trip: if the single-pass scan gave up
// (status word set), write the reduce-then-scan grid into the indirect-dispatch arguments;
// otherwise zeros, so the repair dispatches run no workgroups.

struct Params {
    tiles_x: u32,
    tiles_y: u32,
    rows: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> tile_state: array<u32>;
@group(0) @binding(2) var<storage, read_write> args: array<u32>;

@compute @workgroup_size(1)
fn main() {
    let failed = tile_state[1] != 0u;
    args[0] = select(0u, params.tiles_x, failed);
    args[1] = select(0u, params.tiles_y, failed);
    args[2] = select(0u, 1u, failed);
    args[3] = select(0u, params.rows, failed);
    args[4] = select(0u, 1u, failed);
    args[5] = select(0u, 1u, failed);
}

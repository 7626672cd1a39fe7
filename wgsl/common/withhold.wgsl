// The test switch that forces the decoupled fallback: tile (partition) t withholds its published
// state when t % period == period - 1 (period 0: none).
fn withholds(tile: u32, period: u32) -> bool {
    return period != 0u && tile % period == period - 1u;
}

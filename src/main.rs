//! The `sluice` binary: parses flags, builds the configuration, binds, and calls `sluice::serve`.

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    Ok(())
}

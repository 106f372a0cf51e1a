//! `agent-guard explain`.

use std::process::ExitCode;

/// Arguments of `agent-guard explain`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs the subcommand.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`agent-guard explain` is not available in this build yet")
}

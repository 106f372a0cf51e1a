//! `agent-guard bash`.

use std::process::ExitCode;

/// Arguments of `agent-guard bash`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs the subcommand.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`agent-guard bash` is not available in this build yet")
}

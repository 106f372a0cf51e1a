//! `agent-guard check`.

use std::process::ExitCode;

/// Arguments of `agent-guard check`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs the subcommand.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`agent-guard check` is not available in this build yet")
}

//! `agent-guard exec`.

use std::process::ExitCode;

/// Arguments of `agent-guard exec`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs the subcommand.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`agent-guard exec` is not available in this build yet")
}

//! `agent-guard claude-hook`.

use std::process::ExitCode;

/// Arguments of `agent-guard claude-hook`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs the subcommand.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`agent-guard claude-hook` is not available in this build yet")
}

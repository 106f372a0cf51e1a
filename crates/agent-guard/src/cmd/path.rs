//! `agent-guard path`.

use std::process::ExitCode;

/// Arguments of `agent-guard path`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs the subcommand.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`agent-guard path` is not available in this build yet")
}

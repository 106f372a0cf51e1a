//! `agent-guard test`.

use std::process::ExitCode;

/// Arguments of `agent-guard test`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs the subcommand.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`agent-guard test` is not available in this build yet")
}

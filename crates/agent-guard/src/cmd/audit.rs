//! `agent-guard audit`.

use std::process::ExitCode;

/// Arguments of `agent-guard audit`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs the subcommand.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`agent-guard audit` is not available in this build yet")
}

//! `agent-guard lint`.

use std::process::ExitCode;

/// Arguments of `agent-guard lint`.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Runs the subcommand.
pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`agent-guard lint` is not available in this build yet")
}

//! `agent-guard cancel`: the fleet kill switch. Records a cancellation in the audit database;
//! every guard sharing that database denies the session's calls within a second.

use std::path::PathBuf;
use std::process::ExitCode;

use perm_hooks::{AuditTarget, KillSwitch};

/// Arguments of `agent-guard cancel`.
#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("which").required(true).args(["session", "all"])))]
pub(crate) struct Args {
    /// The session to stop.
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Stop every session using this database, now and until the cancellation is removed.
    #[arg(long)]
    pub all: bool,
    /// The shared database: a `postgres://` URL or an existing SQLite file (default: the
    /// policy's `hooks.audit_db`, else `audit.db` in the guard's state directory).
    #[arg(long, visible_alias = "db", value_name = "URL|FILE")]
    pub audit_db: Option<PathBuf>,
    /// A policy file to take `hooks.audit_db` from.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Why (stored with the cancellation).
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub reason: String,
}

/// Runs the subcommand.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let target = super::audit::target(args.audit_db.as_deref(), args.policy.as_deref())?;
    let spec = match &target {
        AuditTarget::Sqlite(path) => {
            // A cancellation recorded where no guard looks cancels nothing: a database that
            // does not exist is a wrong path (a relative one from another directory), never
            // one to create.
            if !path.is_file() {
                eprintln!(
                    "error: audit database `{}` does not exist, so no guard records there and \
                     nothing was cancelled (pass the database the hooks use: --db FILE|URL, or --policy FILE)",
                    path.display()
                );
                return Ok(ExitCode::from(2));
            }
            path.display().to_string()
        }
        AuditTarget::Postgres(url) => url.clone(),
    };
    let session = if args.all {
        None
    } else {
        args.session.as_deref()
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let result = rt.block_on(async {
        let switch = KillSwitch::open(&spec).await?;
        switch.cancel_with_reason(session, &args.reason).await
    });
    if let Err(err) = result {
        eprintln!("error: {err}");
        return Ok(ExitCode::from(2));
    }
    match session {
        Some(id) => println!("cancelled session `{id}` in {target}"),
        None => println!("cancelled every session in {target}"),
    }
    Ok(ExitCode::SUCCESS)
}

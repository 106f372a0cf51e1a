//! `agent-guard serve`: the approval broker. Clients (`run --approve http://ADDR`, the hooks'
//! `--approve-via`) post each Ask to `POST /api/requests` and wait on that one request for the
//! answer; people answer from the web page (or any HTTP client) with `POST
//! /api/permissions/{id}`; everything that happens is streamed on `GET /api/events` (SSE).
//!
//! The broker keeps no state on disk: a restart denies every waiting call (its client sees the
//! connection drop and answers deny with its own reason code), never leaves one hanging.

pub(crate) mod api;
pub(crate) mod broker;
pub(crate) mod client;
pub(crate) mod listen;
pub(crate) mod wire;

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;

const AFTER_HELP: &str = "\
Endpoints (all under /api/ need `Authorization: Bearer <token>`):
  GET  /api/events               server-sent events: PermissionRequest, PermissionResolved,
                                 ToolResult, SessionStop, SessionCancelled
  GET  /api/permissions          pending requests and recent resolutions
  POST /api/permissions/{id}     {\"decision\":\"allow\"|\"deny\",\"scope\":\"once\"|\"session\"}
                                 404 unknown id, 409 answered twice, 410 past its deadline
  POST /api/chat/cancel          {\"session\":\"...\"}: denies its pending requests, stops its run
  GET  /api/sessions             sessions seen
  GET  /api/audit                audit rows; filters: session, tool, status, since, until, limit, last
  POST /api/requests             (clients) an Ask; the response is its resolution
  POST /api/report               (clients) SessionStart, ToolResult, SessionStop
The page at / reads the token from the URL fragment: open http://ADDR/#token=<token>.

Exit status:
  0  stopped by Ctrl-C
  2  bad arguments, an unusable token file, or the address cannot be bound";

/// Arguments of `agent-guard serve`.
#[derive(clap::Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub(crate) struct Args {
    /// The address to listen on. Loopback only unless --allow-remote.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8917")]
    pub listen: SocketAddr,
    /// Listen on a non-loopback address (anyone who can reach it and holds the token answers).
    #[arg(long)]
    pub allow_remote: bool,
    /// The bearer token's file: read when it exists, else created (mode 0600) with a random
    /// token. Default: ~/.agent-guard/serve.token.
    #[arg(long, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// Seconds a request waits for a person before it is denied.
    #[arg(long, value_name = "SECS", default_value_t = 120)]
    pub timeout_secs: u64,
    /// The audit log `GET /api/audit` and the page's "recent decisions" read.
    #[arg(long, value_name = "FILE")]
    pub audit_db: Option<PathBuf>,
    /// Open connections at most; a connection past it is closed at once.
    #[arg(long, value_name = "N", default_value_t = 128)]
    pub max_connections: usize,
    /// Seconds a connection may take to send a request head, and may stay idle between
    /// requests, before it is closed (a held request or the event stream is not idle).
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    pub header_timeout_secs: u64,
    /// Requests a second with the token (bursts of ten times that); without it, a tenth.
    #[arg(long, value_name = "N", default_value_t = 50)]
    pub rate_limit: u32,
}

/// Reads the token, or creates the file with a new one (0600, parent 0700). An existing file
/// must be this user's own and private ([`wire::check_private`]).
fn token(path: &Path) -> anyhow::Result<String> {
    use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
    if path.exists() {
        return wire::read_token(path);
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .with_context(|| format!("cannot create `{}`", dir.display()))?;
    }
    let token = wire::random_hex(32)?;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot create the token file `{}`", path.display()))?;
    writeln!(file, "{token}").with_context(|| format!("cannot write `{}`", path.display()))?;
    Ok(token)
}

/// Runs the subcommand.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        args.listen.ip().is_loopback() || args.allow_remote,
        "`{}` is not a loopback address; pass --allow-remote to listen there on purpose",
        args.listen
    );
    anyhow::ensure!(args.timeout_secs > 0, "--timeout-secs must be at least 1");
    anyhow::ensure!(
        args.max_connections > 0 && args.header_timeout_secs > 0 && args.rate_limit > 0,
        "--max-connections, --header-timeout-secs and --rate-limit must be at least 1"
    );
    let token_file = args
        .token_file
        .clone()
        .map_or_else(wire::default_token_file, Ok)?;
    let token = token(&token_file)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("cannot listen on `{}`", args.listen))?;
        let addr = listener.local_addr()?;
        let broker = broker::Broker::new(Duration::from_secs(args.timeout_secs));
        let app = api::AppState {
            broker: Arc::clone(&broker),
            token: Arc::from(token.as_str()),
            audit_db: args.audit_db.clone(),
            rate: Arc::new(listen::RateLimits::new(args.rate_limit)),
        };
        let limits = listen::ConnLimits {
            max_connections: args.max_connections,
            header_timeout: Duration::from_secs(args.header_timeout_secs),
        };
        // The first line is for scripts and tests (the port when --listen asked for port 0).
        // Written, not `println!`: a reader that closed our stdout must not stop the server.
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "agent-guard serve: listening on http://{addr}");
        let _ = writeln!(
            out,
            "  open http://{addr}/#token=<the token in {}>",
            token_file.display()
        );
        let _ = out.flush();
        drop(out);
        let stop = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        listen::serve(listener, api::router(app), limits, stop).await;
        // Waiting calls get a deny now; the long-lived event streams are simply cut.
        broker.stop_all();
        tokio::time::sleep(Duration::from_millis(200)).await;
        Ok(ExitCode::SUCCESS)
    })
}

//! The backends every audit-log behaviour test runs against: SQLite always, PostgreSQL when
//! `AGENT_GUARD_TEST_PG_URL` names a server (`.ci/pg.sh start DIR` prints one). Without it the
//! PostgreSQL half fails under `CI` and is reported as skipped, on the terminal, otherwise.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use sqlx::Connection;

pub(crate) const PG_ENV: &str = "AGENT_GUARD_TEST_PG_URL";

/// One fresh, empty database.
pub(crate) struct Target {
    /// What to pass to `AuditLog::open` / `KillSwitch::open`.
    pub url: String,
    pub kind: &'static str,
    _dir: Option<tempfile::TempDir>,
}

impl Target {
    pub(crate) fn is_postgres(&self) -> bool {
        self.kind == "postgres"
    }
}

/// The server's URL, or `None` after saying loudly that the PostgreSQL half is skipped.
pub(crate) fn pg_url(test: &str) -> Option<String> {
    match std::env::var(PG_ENV) {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var_os("CI").is_some() => panic!(
            "{PG_ENV} is not set but CI is: the PostgreSQL half of `{test}` cannot run \
             (.ci/run starts a server; locally: .ci/pg.sh start DIR)"
        ),
        _ => {
            // Straight to the terminal: libtest captures only the print macros.
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED: the PostgreSQL half of `{test}` ({PG_ENV} is not set; \
                 `.ci/pg.sh start DIR` prints a URL)"
            );
            None
        }
    }
}

/// `url` with its database name replaced.
pub(crate) fn with_database(url: &str, db: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, format!("?{q}")),
        None => (url, String::new()),
    };
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let host_part = match base[scheme_end..].find('/') {
        Some(i) => &base[..scheme_end + i],
        None => base,
    };
    format!("{host_part}/{db}{query}")
}

/// A new PostgreSQL database named after the test (dropped first if a previous run left it).
pub(crate) async fn fresh_pg_database(admin_url: &str, test: &str) -> String {
    let name: String = format!("ag_{test}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .take(60)
        .collect();
    let mut admin = sqlx::PgConnection::connect(admin_url).await.unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
    )))
    .execute(&mut admin)
    .await
    .unwrap();
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&mut admin)
        .await
        .unwrap();
    admin.close().await.unwrap();
    with_database(admin_url, &name)
}

/// A fresh SQLite file, and a fresh PostgreSQL database when a server is available.
pub(crate) async fn targets(test: &str) -> Vec<Target> {
    let dir = tempfile::tempdir().unwrap();
    let mut out = vec![Target {
        url: dir.path().join("audit.db").display().to_string(),
        kind: "sqlite",
        _dir: Some(dir),
    }];
    if let Some(admin) = pg_url(test) {
        out.push(Target {
            url: fresh_pg_database(&admin, test).await,
            kind: "postgres",
            _dir: None,
        });
    }
    out
}

/// A private PostgreSQL server (for tests that stop and restart it), stopped on drop.
pub(crate) struct PrivateServer {
    pub url: String,
    dir: tempfile::TempDir,
}

fn pg_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.ci/pg.sh")
}

fn pg_sh(action: &str, dir: &std::path::Path) -> String {
    let out = Command::new("bash")
        .arg(pg_script())
        .arg(action)
        .arg(dir)
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(out.status.success(), ".ci/pg.sh {action} failed");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

impl PrivateServer {
    pub(crate) fn start() -> PrivateServer {
        let dir = tempfile::tempdir().unwrap();
        let url = pg_sh("start", dir.path());
        PrivateServer { url, dir }
    }

    /// Stops the server as a crash would.
    pub(crate) fn kill(&self) {
        pg_sh("kill", self.dir.path());
    }

    pub(crate) fn restart(&self) {
        pg_sh("start", self.dir.path());
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(pg_script())
            .arg("stop")
            .arg(self.dir.path())
            .status();
    }
}

#[test]
fn with_database_replaces_only_the_name() {
    assert_eq!(
        with_database("postgres://u@localhost/postgres?host=/tmp/x/sock", "t1"),
        "postgres://u@localhost/t1?host=/tmp/x/sock"
    );
    assert_eq!(
        with_database("postgres://u:p@h:5432/db", "t2"),
        "postgres://u:p@h:5432/t2"
    );
}

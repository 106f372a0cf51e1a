//! The session ledger on both backends: exact counts under concurrency, runs of identical
//! calls, and allow-once grants that bind to one call, expire, and are consumed once.

use std::time::Duration;

use perm_hooks::*;

use crate::backends::targets;

/// The ledger with its grant key in a temp dir (never the tester's home).
async fn open(url: &str, keys: &tempfile::TempDir) -> Ledger {
    Ledger::open(url)
        .await
        .unwrap()
        .with_grant_key_file(keys.path().join("grant.key"))
}

fn key<'a>(session: &'a str, args: &'a str) -> CallKey<'a> {
    CallKey {
        session_id: session,
        tool_name: "Bash",
        args,
        cwd: "/proj",
    }
}

fn refusal<'a>(key: CallKey<'a>, because: Option<&'a str>) -> Refusal<'a> {
    Refusal {
        key,
        reason_code: "unknown_command",
        summary: "[bash-guard] unknown_command: ...",
        not_liftable_because: because,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counts_and_runs_are_per_session() {
    for t in targets("ledger_counts").await {
        let l = Ledger::open(&t.url).await.unwrap();
        assert_eq!(l.tally("s1").await.unwrap(), None);
        assert_eq!(
            l.count_call("s1", "Read", "h1").await.unwrap(),
            Tally { calls: 1, run: 1 }
        );
        assert_eq!(
            l.count_call("s1", "Read", "h1").await.unwrap(),
            Tally { calls: 2, run: 2 }
        );
        // Another session is its own count; another call resets the run.
        assert_eq!(
            l.count_call("s2", "Read", "h1").await.unwrap(),
            Tally { calls: 1, run: 1 }
        );
        assert_eq!(
            l.count_call("s1", "Read", "h2").await.unwrap(),
            Tally { calls: 3, run: 1 },
            "{}",
            t.kind
        );
        assert_eq!(
            l.count_call("s1", "Grep", "h2").await.unwrap(),
            Tally { calls: 4, run: 1 },
            "same hash, other tool: a new run"
        );
        assert_eq!(
            l.tally("s1").await.unwrap(),
            Some(Tally { calls: 4, run: 1 })
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_handles_lose_no_count() {
    for t in targets("ledger_concurrent").await {
        // Create and migrate once, as the first hook call of a session does.
        Ledger::open(&t.url).await.unwrap();
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let url = t.url.clone();
            tasks.push(tokio::spawn(async move {
                let l = Ledger::open(&url).await.unwrap();
                let mut runs = Vec::new();
                for _ in 0..5 {
                    runs.push(l.count_call("s", "Read", "same").await.unwrap().calls);
                }
                runs
            }));
        }
        let mut all = Vec::new();
        for task in tasks {
            all.extend(task.await.unwrap());
        }
        all.sort_unstable();
        assert_eq!(
            all,
            (1..=40).collect::<Vec<u64>>(),
            "{}: every count once",
            t.kind
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_lets_exactly_its_call_through_once() {
    for t in targets("ledger_grant").await {
        let keys = tempfile::tempdir().unwrap();
        let l = open(&t.url, &keys).await;
        let call = key("s", r#"{"command":"make deploy"}"#);
        let code = l.offer(&refusal(call.clone(), None)).await.unwrap();
        assert_eq!(normalize_code(&code).as_deref(), Some(code.as_str()));
        let now = 1_000_000;
        assert_eq!(
            l.take_grant(&call, now).await.unwrap(),
            None,
            "not granted yet"
        );

        let GrantOutcome::Granted(offer) = l.grant(&code, now, ALLOW_ONCE_WINDOW).await.unwrap()
        else {
            panic!("{}: not granted", t.kind)
        };
        assert_eq!(offer.tool_name, "Bash");
        assert_eq!(
            offer.expires_at,
            Some(now + 600_000),
            "ten minutes from the grant"
        );
        assert!(matches!(
            l.grant(&code, now, ALLOW_ONCE_WINDOW).await.unwrap(),
            GrantOutcome::AlreadyGranted(_)
        ));

        // Another call, another session, another cwd: not this grant.
        let other = key("s", r#"{"command":"make deploy --prod"}"#);
        assert_eq!(l.take_grant(&other, now + 1).await.unwrap(), None);
        assert_eq!(
            l.take_grant(&key("s2", call.args), now + 1).await.unwrap(),
            None
        );
        let elsewhere = CallKey {
            cwd: "/other",
            ..call.clone()
        };
        assert_eq!(l.take_grant(&elsewhere, now + 1).await.unwrap(), None);

        assert_eq!(
            l.take_grant(&call, now + 1).await.unwrap().as_deref(),
            Some(code.as_str())
        );
        assert_eq!(
            l.take_grant(&call, now + 2).await.unwrap(),
            None,
            "{}: consumed",
            t.kind
        );
        assert!(l.lookup(&code).await.unwrap().unwrap().used_at.is_some());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_grant_lets_nothing_through() {
    for t in targets("ledger_expiry").await {
        let keys = tempfile::tempdir().unwrap();
        let l = open(&t.url, &keys).await;
        let call = key("s", "{}");
        let code = l.offer(&refusal(call.clone(), None)).await.unwrap();
        let now = 5_000;
        l.grant(&code, now, Duration::from_secs(60)).await.unwrap();
        assert_eq!(
            l.take_grant(&call, now + 60_000).await.unwrap(),
            None,
            "{}",
            t.kind
        );
        assert_eq!(
            l.take_grant(&call, now + 59_999).await.unwrap().as_deref(),
            Some(code.as_str())
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_allow_once_cannot_lift_is_never_granted() {
    for t in targets("ledger_not_liftable").await {
        let keys = tempfile::tempdir().unwrap();
        let l = open(&t.url, &keys).await;
        let call = key("s", r#"{"command":"rm -rf ~"}"#);
        let code = l
            .offer(&refusal(call.clone(), Some("a catastrophic command")))
            .await
            .unwrap();
        match l.grant(&code, 0, ALLOW_ONCE_WINDOW).await.unwrap() {
            GrantOutcome::NotLiftable(o) => {
                assert_eq!(
                    o.not_liftable_because.as_deref(),
                    Some("a catastrophic command")
                );
            }
            other => panic!("{}: {other:?}", t.kind),
        }
        assert_eq!(l.take_grant(&call, 1).await.unwrap(), None);
        assert_eq!(
            l.grant("ZZZZ-ZZZZ", 0, ALLOW_ONCE_WINDOW).await.unwrap(),
            GrantOutcome::Unknown
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_processes_consume_a_grant_once() {
    for t in targets("ledger_race").await {
        let keys = tempfile::tempdir().unwrap();
        let l = open(&t.url, &keys).await;
        let args = r#"{"command":"make"}"#;
        let code = l.offer(&refusal(key("s", args), None)).await.unwrap();
        l.grant(&code, 0, ALLOW_ONCE_WINDOW).await.unwrap();
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let url = t.url.clone();
            let key_file = keys.path().join("grant.key");
            tasks.push(tokio::spawn(async move {
                let l = Ledger::open(&url)
                    .await
                    .unwrap()
                    .with_grant_key_file(key_file);
                l.take_grant(&key("s", r#"{"command":"make"}"#), 1)
                    .await
                    .unwrap()
            }));
        }
        let mut won = 0;
        for task in tasks {
            won += usize::from(task.await.unwrap().is_some());
        }
        assert_eq!(won, 1, "{}", t.kind);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grant_written_into_the_database_by_hand_is_not_honoured() {
    for t in targets("ledger_forged").await {
        let keys = tempfile::tempdir().unwrap();
        let l = open(&t.url, &keys).await;
        let call = key("s", r#"{"command":"make"}"#);
        // A real grant elsewhere makes the key exist.
        let real = l.offer(&refusal(key("s", "{}"), None)).await.unwrap();
        l.grant(&real, 0, ALLOW_ONCE_WINDOW).await.unwrap();
        assert!(keys.path().join("grant.key").exists());

        let code = l.offer(&refusal(call.clone(), None)).await.unwrap();
        // What an agent with write access to the database file could do.
        let forge = "UPDATE agent_guard_allow_once SET granted_at = 1, expires_at = 9999999999999, \
                     grant_mac = '00ff' WHERE code = ";
        if t.is_postgres() {
            let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&t.url)
                .await
                .unwrap();
            sqlx::query(sqlx::AssertSqlSafe(format!("{forge}$1")))
                .bind(&code)
                .execute(&mut conn)
                .await
                .unwrap();
        } else {
            let mut conn = <sqlx::SqliteConnection as sqlx::Connection>::connect(&t.url)
                .await
                .unwrap();
            sqlx::query(sqlx::AssertSqlSafe(format!("{forge}?")))
                .bind(&code)
                .execute(&mut conn)
                .await
                .unwrap();
        }
        assert_eq!(l.take_grant(&call, 2).await.unwrap(), None, "{}", t.kind);

        // Without the key file no grant is valid at all.
        let code = l.offer(&refusal(key("s2", "{}"), None)).await.unwrap();
        l.grant(&code, 0, ALLOW_ONCE_WINDOW).await.unwrap();
        let keyless = Ledger::open(&t.url)
            .await
            .unwrap()
            .with_grant_key_file(keys.path().join("missing.key"));
        assert_eq!(keyless.take_grant(&key("s2", "{}"), 1).await.unwrap(), None);
        assert!(l.take_grant(&key("s2", "{}"), 1).await.unwrap().is_some());
    }
}

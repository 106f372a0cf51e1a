//! The kill switch: a cancellation recorded by one process is seen by every guard sharing the
//! database within a second, on both backends.

use std::io::{BufRead, BufReader};
use std::time::{Duration, Instant};

use perm_hooks::*;

use crate::backends::targets;
use crate::faults::{runtime, spawn_child};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancellation_reaches_every_handle_and_token() {
    for t in targets("killswitch_handles").await {
        let issuer = KillSwitch::open(&t.url).await.unwrap();
        let guard = KillSwitch::open(&t.url).await.unwrap();
        let victim = guard.watch("victim");
        let bystander = guard.watch("bystander");
        assert!(!guard.is_cancelled("victim"));
        assert!(!guard.check_now("victim").await.unwrap());

        issuer.cancel(Some("victim")).await.unwrap();
        assert!(issuer.is_cancelled("victim"), "the issuer sees it at once");
        tokio::time::timeout(Duration::from_secs(1), victim.cancelled())
            .await
            .unwrap_or_else(|_| panic!("{}: not seen within 1 s", t.kind));
        assert!(guard.is_cancelled("victim"));
        assert!(guard.check_now("victim").await.unwrap());
        assert!(!guard.is_cancelled("bystander"));
        assert!(!bystander.is_cancelled());
        assert!(
            guard.watch("victim").is_cancelled(),
            "a late watch fires at once"
        );

        issuer.cancel(None).await.unwrap();
        tokio::time::timeout(Duration::from_secs(1), bystander.cancelled())
            .await
            .unwrap_or_else(|_| panic!("{}: --all not seen within 1 s", t.kind));
        assert!(guard.is_cancelled("never-seen-before"));
        assert!(guard.check_now("never-seen-before").await.unwrap());

        // A guard opened later starts from the recorded state.
        let late = KillSwitch::open(&t.url).await.unwrap();
        assert!(late.is_cancelled("anything"));
    }
}

const KS_ENV: &str = "PERM_HOOKS_KILLSWITCH_DB";

/// Not a test on its own: the guard process of `a_cancellation_from_another_process_...`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "child process of `a_cancellation_from_another_process_is_seen_within_a_second`, which runs it"]
async fn killswitch_child() {
    let target = std::env::var(KS_ENV)
        .unwrap_or_else(|_| panic!("{KS_ENV} is not set: this is the child half of another test"));
    let ks = KillSwitch::open(&target).await.unwrap();
    let token = ks.watch("victim");
    assert!(!ks.is_cancelled("victim"));
    println!("READY");
    tokio::time::timeout(Duration::from_secs(5), token.cancelled())
        .await
        .expect("not cancelled within 5 s");
    assert!(ks.is_cancelled("victim"));
    assert!(!ks.is_cancelled("bystander"));
    println!("CANCELLED");
}

#[test]
fn a_cancellation_from_another_process_is_seen_within_a_second() {
    let rt = runtime();
    for t in rt.block_on(targets("killswitch_processes")) {
        let issuer = rt.block_on(KillSwitch::open(&t.url)).unwrap();
        let mut child = spawn_child("killswitch::killswitch_child", &[(KS_ENV, &t.url)]);
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut next = |want: &str| loop {
            let line = lines.next().expect("child ended early").unwrap();
            if line.contains(want) {
                return;
            }
        };
        next("READY");
        let start = Instant::now();
        rt.block_on(issuer.cancel(Some("victim"))).unwrap();
        next("CANCELLED");
        let seen = start.elapsed();
        assert!(child.wait().unwrap().success());
        assert!(
            seen < Duration::from_secs(1),
            "{}: the other process saw the cancellation after {seen:?}",
            t.kind
        );
    }
}

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! Overhead of a guarded (and confined) run of `true` against a bare `bash -c true` spawn.

use std::time::Duration;

use bash_guard::{Confinement, ExecConfig, ExecRequest, Runner};
use criterion::{Criterion, criterion_group, criterion_main};
use tokio_util::sync::CancellationToken;

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = ExecConfig::default();
    let runner =
        Runner::new(config.clone()).with_trampoline(env!("CARGO_BIN_EXE_bash-guard-sandbox-exec"));
    let cancel = CancellationToken::new();
    let plain = ExecRequest {
        command: "true".into(),
        cwd: dir.path().to_path_buf(),
        timeout: None,
        confinement: None,
    };
    let confined = ExecRequest {
        confinement: Some(Confinement::from_config(
            &config,
            vec![],
            vec![dir.path().to_path_buf()],
        )),
        ..plain.clone()
    };
    // Prove the confined case really is confined before timing it.
    let r = rt.block_on(runner.run(&confined, &cancel)).unwrap();
    assert!(
        r.confinement.cgroup
            && r.confinement.landlock.network_blocked
            && r.confinement.seccomp
            && r.confinement.private_proc,
        "{r:?}"
    );

    let mut g = c.benchmark_group("exec");
    g.measurement_time(Duration::from_secs(3)).sample_size(30);
    g.bench_function("bare_bash_c_true", |b| {
        b.iter(|| {
            let st = std::process::Command::new("/bin/bash")
                .args(["--noprofile", "--norc", "-c", "true"])
                .status()
                .unwrap();
            assert!(st.success());
        });
    });
    g.bench_function("guarded_true", |b| {
        b.iter(|| rt.block_on(runner.run(&plain, &cancel)).unwrap());
    });
    g.bench_function("guarded_confined_true", |b| {
        b.iter(|| rt.block_on(runner.run(&confined, &cancel)).unwrap());
    });
    // The same profile without the cgroup v1 join (PID-namespace task cap, RLIMIT_AS): on a v2
    // machine this equals the case above.
    let no_join = Runner::new(ExecConfig {
        join_cgroup_v1: false,
        ..config.clone()
    })
    .with_trampoline(env!("CARGO_BIN_EXE_bash-guard-sandbox-exec"));
    let r = rt.block_on(no_join.run(&confined, &cancel)).unwrap();
    assert!(
        r.confinement.seccomp && r.confinement.pid_max.is_some(),
        "{r:?}"
    );
    g.bench_function("guarded_confined_true_no_v1_join", |b| {
        b.iter(|| rt.block_on(no_join.run(&confined, &cancel)).unwrap());
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

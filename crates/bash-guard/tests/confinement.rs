#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]
//! The confined child, tried as an attacker would: each test writes a script the analyzer cannot
//! see into, runs it confined, and checks that the escape fails, and (where an escape could
//! pass unnoticed) that the same probe succeeds unconfined, so no test passes vacuously.
//!
//! Where this machine lacks a kernel feature a test needs, the test fails and says which: there
//! is no silent skip. The report of every confined run is checked for the protections in force.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bash_guard::{Confinement, ExecConfig, ExecRequest, ExecResult, LandlockState, Runner};
use tokio_util::sync::CancellationToken;

const PY: &str = "/usr/bin/python3";

fn config() -> ExecConfig {
    ExecConfig {
        kill_grace_ms: 200,
        ..ExecConfig::default()
    }
}

fn runner_with(cfg: ExecConfig) -> Runner {
    Runner::new(cfg).with_trampoline(env!("CARGO_BIN_EXE_bash-guard-sandbox-exec"))
}

struct Run {
    root: tempfile::TempDir,
}

impl Run {
    fn new() -> Self {
        Run {
            root: tempfile::tempdir().unwrap(),
        }
    }

    fn root(&self) -> PathBuf {
        std::fs::canonicalize(self.root.path()).unwrap()
    }

    /// Writes `body` to a script file in the root: the command line names only the file.
    fn script(&self, name: &str, body: &str) -> String {
        let path = self.root().join(name);
        std::fs::write(&path, body).unwrap();
        path.display().to_string()
    }

    fn request(&self, command: &str, cfg: &ExecConfig) -> ExecRequest {
        let mut conf = Confinement::from_config(cfg, vec![], vec![self.root()]);
        conf.require_confinement = true;
        ExecRequest {
            command: command.to_string(),
            cwd: self.root(),
            timeout: Some(Duration::from_secs(20)),
            confinement: Some(conf),
        }
    }

    async fn confined_with(&self, command: &str, cfg: ExecConfig) -> ExecResult {
        let request = self.request(command, &cfg);
        let r = runner_with(cfg)
            .run(&request, &CancellationToken::new())
            .await
            .unwrap();
        assert_isolated(&r);
        r
    }

    async fn confined(&self, command: &str) -> ExecResult {
        self.confined_with(command, config()).await
    }

    async fn unconfined(&self, command: &str) -> ExecResult {
        let request = ExecRequest {
            confinement: None,
            ..self.request(command, &config())
        };
        runner_with(config())
            .run(&request, &CancellationToken::new())
            .await
            .unwrap()
    }
}

/// Every confined run of this suite must have had the whole profile; a machine without one of
/// these features fails here, naming it.
fn assert_isolated(r: &ExecResult) {
    let c = &r.confinement;
    assert_eq!(
        c.landlock.status,
        LandlockState::FullyEnforced,
        "landlock: {c:?}"
    );
    assert!(
        c.namespaces.iter().any(|n| n == "pid") && c.private_proc,
        "no PID namespace with its own /proc: {c:?}"
    );
    assert!(c.capabilities_dropped, "capabilities kept: {c:?}");
    assert!(c.seccomp, "no seccomp filter: {c:?}");
    assert!(c.cgroup, "no pids cgroup: {c:?}");
    assert!(c.memory_max.is_some(), "no memory cap: {c:?}");
}

#[tokio::test]
async fn the_parents_environment_is_out_of_reach() {
    let t = Run::new();
    // cargo sets CARGO_MANIFEST_DIR in this test's environment; the child's own is filtered.
    let me = std::process::id();
    let script = t.script(
        "environ.sh",
        &format!(
            "cat /proc/{me}/environ 2>/dev/null | tr '\\0' '\\n' | grep -c CARGO_MANIFEST_DIR
cat /proc/$PPID/environ 2>/dev/null | tr '\\0' '\\n' | grep -c CARGO_MANIFEST_DIR
cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c CARGO_MANIFEST_DIR
ls /proc | grep -c '^[0-9]'
true"
        ),
    );
    let cmd = format!("bash {script}");
    let open = t.unconfined(&cmd).await;
    assert!(
        open.stdout.starts_with("1\n"),
        "the probe must work unconfined: {open:?}"
    );
    let r = t.confined(&cmd).await;
    let counts: Vec<u32> = r.stdout.lines().map(|l| l.parse().unwrap()).collect();
    assert_eq!(&counts[..3], &[0, 0, 0], "{r:?}");
    // bash, its pipeline: a handful of processes, none of the host's.
    assert!(counts[3] < 10, "{} processes visible", counts[3]);
}

/// The mount points that start with `prefix`, from this process's mount table.
fn mounts_below(prefix: &str) -> Vec<String> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter_map(|l| l.split(' ').nth(4))
        .filter(|point| point.starts_with(prefix))
        .map(str::to_string)
        .collect()
}

/// Both ways of hiding `/etc`'s secrets: through an overlay that whites them out (the secrets are
/// gone from view) and entry by entry (they stay listed but unreadable).
#[tokio::test]
async fn etc_is_readable_except_its_secrets() {
    let secrets: Vec<String> = ["/etc/shadow", "/etc/gshadow", "/etc/sudoers"]
        .iter()
        .map(|s| (*s).to_string())
        .chain(
            std::fs::read_dir("/etc/ssh")
                .into_iter()
                .flatten()
                .filter_map(|e| e.ok())
                .map(|e| e.path().display().to_string())
                .filter(|p| p.starts_with("/etc/ssh/ssh_host_") && p.ends_with("_key")),
        )
        .filter(|p| Path::new(p).exists())
        .collect();
    assert!(
        secrets.iter().any(|s| s == "/etc/shadow"),
        "this machine has no /etc/shadow to hide"
    );
    for overlay in [true, false] {
        let t = Run::new();
        let script = t.script(
            "etc.sh",
            &format!(
                "for f in /etc/passwd /etc/hostname /etc/os-release; do
  [ -e $f ] || continue; cat $f >/dev/null && echo read $f || echo denied $f
done
ls /etc >/dev/null && echo listed /etc
for f in {}; do
  cat $f >/dev/null 2>&1 && echo LEAKED $f || echo hidden $f
done
ls /etc | grep -qx shadow && echo listed shadow
touch /etc/agent-guard-probe 2>/dev/null && echo LEAKED write
true",
                secrets.join(" ")
            ),
        );
        let cfg = ExecConfig {
            hide_by_overlay: overlay,
            ..config()
        };
        let r = t.confined_with(&format!("bash {script}"), cfg).await;
        assert!(r.stdout.contains("read /etc/passwd"), "{r:?}");
        assert!(r.stdout.contains("listed /etc"), "{r:?}");
        for secret in &secrets {
            assert!(r.stdout.contains(&format!("hidden {secret}\n")), "{r:?}");
        }
        assert!(!r.stdout.contains("LEAKED"), "{r:?}");
        assert!(!r.stdout.contains("denied /etc/passwd"), "{r:?}");
        let masked: &[PathBuf] = if overlay {
            &[PathBuf::from("/etc")][..]
        } else {
            &[]
        };
        // A machine where the overlay cannot be used says why (it reads /etc entry by entry).
        assert_eq!(
            r.confinement.hidden_by_overlay,
            masked,
            "mounts below /etc (read entry by entry then): {:?}; notes: {:?}",
            mounts_below("/etc/"),
            r.confinement.notes
        );
        // Whited out, the secret's name is gone too; entry by entry it stays listed.
        assert_eq!(!r.stdout.contains("listed shadow"), overlay, "{r:?}");
    }
    assert!(!Path::new("/etc/agent-guard-probe").exists());
}

/// A tree of secrets (a fixed name, a `*` pattern, one below a directory, a link to a secret, one
/// created and one replaced on the host while the command runs), hidden both ways.
#[tokio::test]
async fn a_filtered_tree_hides_its_secrets_whatever_happens_to_them_during_the_run() {
    for overlay in [true, false] {
        let t = Run::new();
        let tree_dir = tempfile::tempdir().unwrap();
        let tree = std::fs::canonicalize(tree_dir.path()).unwrap();
        let write = |rel: &str, text: &str| {
            let p = tree.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        write("conf", "public");
        write("secret", "SECRET-fixed");
        write("keys/host_rsa_key", "SECRET-glob");
        write("keys/host_rsa_key.pub", "public-key");
        write("deep/dir/token", "SECRET-deep");
        write("deep/dir/readme", "public-deep");
        std::os::unix::fs::symlink(tree.join("secret"), tree.join("innocent")).unwrap();
        let tree_text = tree.display().to_string();
        let cfg = ExecConfig {
            hide_by_overlay: overlay,
            filtered_read_paths: vec![tree.clone()],
            hidden_paths: ["secret", "later", "keys/host_*_key", "deep/dir/token"]
                .iter()
                .map(|p| format!("{tree_text}/{p}"))
                .collect(),
            ..config()
        };
        let script = t.script(
            "tree.sh",
            &format!(
                "cd {tree_text}
cat conf keys/host_rsa_key.pub deep/dir/readme; echo
for f in secret innocent keys/host_rsa_key deep/dir/token; do
  cat $f 2>/dev/null && echo LEAKED $f
done
while [ ! -e {root}/go ]; do sleep 0.02; done
cat later secret 2>/dev/null && echo LEAKED during the run
true",
                root = t.root().display()
            ),
        );
        let request = t.request(&format!("bash {script}"), &cfg);
        let runner = runner_with(cfg);
        let cancel = CancellationToken::new();
        let run = runner.run(&request, &cancel);
        let host = async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            // The secret replaced (a new file renamed over it, as `passwd` does), another
            // created: neither is readable by the command that is running.
            std::fs::write(tree.join("secret.new"), "SECRET-replaced").unwrap();
            std::fs::rename(tree.join("secret.new"), tree.join("secret")).unwrap();
            std::fs::write(tree.join("later"), "SECRET-later").unwrap();
            std::fs::write(t.root().join("go"), "").unwrap();
        };
        let (r, ()) = tokio::join!(run, host);
        let r = r.unwrap();
        assert_isolated(&r);
        assert_eq!(r.stdout, "publicpublic-keypublic-deep\n", "{r:?}");
        assert!(!r.stdout.contains("SECRET"), "{r:?}");
        assert_eq!(
            r.confinement.hidden_by_overlay.contains(&tree),
            overlay,
            "{r:?}"
        );
    }
}

/// An overlay is read-only: a filtered tree that holds one of the run's roots is read entry by
/// entry instead, and the root stays writable.
#[tokio::test]
async fn a_filtered_tree_holding_a_root_is_read_entry_by_entry() {
    let tree_dir = tempfile::tempdir().unwrap();
    let tree = std::fs::canonicalize(tree_dir.path()).unwrap();
    std::fs::write(tree.join("secret"), "SECRET").unwrap();
    std::fs::write(tree.join("conf"), "public").unwrap();
    let project = tree.join("project");
    std::fs::create_dir(&project).unwrap();
    let cfg = ExecConfig {
        filtered_read_paths: vec![tree.clone()],
        hidden_paths: vec![format!("{}/secret", tree.display())],
        ..config()
    };
    let mut conf = Confinement::from_config(&cfg, vec![], vec![project.clone()]);
    conf.require_confinement = true;
    let request = ExecRequest {
        command: "cat ../conf; echo written > out.txt; cat ../secret 2>/dev/null && echo LEAKED"
            .into(),
        cwd: project.clone(),
        timeout: Some(Duration::from_secs(20)),
        confinement: Some(conf),
    };
    let r = runner_with(cfg)
        .run(&request, &CancellationToken::new())
        .await
        .unwrap();
    assert_isolated(&r);
    assert_eq!(r.stdout, "public", "{r:?}");
    assert_eq!(
        std::fs::read_to_string(project.join("out.txt")).unwrap(),
        "written\n"
    );
    assert!(r.confinement.hidden_by_overlay.is_empty(), "{r:?}");
}

#[tokio::test]
async fn the_home_directory_stays_unreadable_but_its_toolchains_run() {
    let t = Run::new();
    let home = tempfile::tempdir().unwrap();
    let home_path = std::fs::canonicalize(home.path()).unwrap();
    std::fs::create_dir_all(home_path.join(".ssh")).unwrap();
    std::fs::write(home_path.join(".ssh/id_ed25519"), "PRIVATE").unwrap();
    std::fs::create_dir_all(home_path.join(".cargo/bin")).unwrap();
    std::fs::write(home_path.join(".cargo/credentials.toml"), "token").unwrap();
    let tool = home_path.join(".cargo/bin/mytool");
    std::fs::write(&tool, "#!/bin/sh\necho tool-ran\n").unwrap();
    std::fs::set_permissions(&tool, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::write(home_path.join("notes.txt"), "private").unwrap();

    let mut cfg = config();
    cfg.env_set
        .insert("HOME".into(), home_path.display().to_string());
    cfg.env_set.insert(
        "PATH".into(),
        format!("{}/.cargo/bin:/usr/bin:/bin", home_path.display()),
    );
    let script = t.script(
        "home.sh",
        "mytool
cat $HOME/.ssh/id_ed25519 2>/dev/null && echo LEAKED ssh
cat $HOME/.cargo/credentials.toml 2>/dev/null && echo LEAKED credentials
cat $HOME/notes.txt 2>/dev/null && echo LEAKED notes
ls $HOME 2>/dev/null && echo LEAKED listing
echo x > $HOME/.cargo/bin/mytool 2>/dev/null && echo LEAKED write
true",
    );
    let r = t.confined_with(&format!("bash {script}"), cfg).await;
    assert_eq!(r.stdout, "tool-ran\n", "{r:?}");
    assert!(
        r.confinement
            .toolchains
            .contains(&home_path.join(".cargo/bin")),
        "{:?}",
        r.confinement
    );
    assert_eq!(
        std::fs::read_to_string(&tool).unwrap(),
        "#!/bin/sh\necho tool-ran\n"
    );
}

#[tokio::test]
async fn python_cargo_and_node_from_path_still_run() {
    let t = Run::new();
    let script = t.script(
        "tools.sh",
        "set -e
python3 -c 'print(1)'
cargo --version >/dev/null && echo cargo-ok
node --version >/dev/null && echo node-ok
echo data > written.txt && mkdir -p sub/dir && cp written.txt sub/dir/ && cat sub/dir/written.txt",
    );
    let r = t.confined(&format!("bash {script}")).await;
    assert_eq!(r.stdout, "1\ncargo-ok\nnode-ok\ndata\n", "{r:?}");
    assert_eq!(r.exit_code, Some(0), "{r:?}");
}

#[tokio::test]
async fn udp_and_tcp_to_loopback_fail() {
    let t = Run::new();
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let script = t.script(
        "net.py",
        &format!(
            "import socket
try:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(b'leak', ('127.0.0.1', {udp}))
    print('udp sent')
except OSError as e:
    print('udp denied', e.errno)
try:
    socket.create_connection(('127.0.0.1', {tcp}), timeout=2)
    print('tcp connected')
except OSError as e:
    print('tcp denied', e.errno)
",
            udp = udp.local_addr().unwrap().port(),
            tcp = tcp.local_addr().unwrap().port()
        ),
    );
    let cmd = format!("{PY} {script}");
    let open = t.unconfined(&cmd).await;
    assert!(
        open.stdout.contains("udp sent") && open.stdout.contains("tcp connected"),
        "{open:?}"
    );
    let mut buf = [0u8; 8];
    assert!(
        udp.recv(&mut buf).is_ok(),
        "the unconfined datagram arrives"
    );

    let r = t.confined(&cmd).await;
    assert!(r.stdout.contains("udp denied"), "{r:?}");
    assert!(r.stdout.contains("tcp denied"), "{r:?}");
    assert!(udp.recv(&mut buf).is_err(), "a confined datagram arrived");
    assert!(r.confinement.namespaces.iter().any(|n| n == "net"));
}

#[tokio::test]
async fn unix_sockets_pathname_and_abstract_fail_but_socketpair_works() {
    use std::os::linux::net::SocketAddrExt;
    let t = Run::new();
    let outside = tempfile::tempdir_in("/var/tmp").unwrap();
    let path = outside.path().join("daemon.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let name = format!("agent-guard-test-{}", std::process::id());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()).unwrap();
    let _abstract = std::os::unix::net::UnixListener::bind_addr(&addr).unwrap();
    let script = t.script(
        "unix.py",
        &format!(
            "import socket
for label, target in (('path', {path:?}), ('abstract', '\\0{name}')):
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(target)
        print(label, 'connected')
    except OSError as e:
        print(label, 'denied', e.errno)
a, b = socket.socketpair()
a.sendall(b'pair')
print('socketpair', b.recv(4).decode())
",
            path = path.display().to_string()
        ),
    );
    let cmd = format!("{PY} {script}");
    let open = t.unconfined(&cmd).await;
    assert!(
        open.stdout.contains("path connected") && open.stdout.contains("abstract connected"),
        "{open:?}"
    );
    let r = t.confined(&cmd).await;
    assert!(r.stdout.contains("path denied"), "{r:?}");
    assert!(r.stdout.contains("abstract denied"), "{r:?}");
    assert!(r.stdout.contains("socketpair pair"), "{r:?}");
}

#[tokio::test]
async fn raw_and_packet_sockets_fail() {
    let t = Run::new();
    let script = t.script(
        "raw.py",
        "import socket
for label, args in (('raw', (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)),
                    ('packet', (socket.AF_PACKET, socket.SOCK_RAW, 0)),
                    ('netlink', (socket.AF_NETLINK, socket.SOCK_RAW, 0))):
    try:
        socket.socket(*args)
        print(label, 'opened')
    except OSError as e:
        print(label, 'denied', e.errno)
",
    );
    let cmd = format!("{PY} {script}");
    let open = t.unconfined(&cmd).await;
    assert!(open.stdout.contains("raw opened"), "{open:?}");
    let r = t.confined(&cmd).await;
    for label in ["raw", "packet", "netlink"] {
        assert!(r.stdout.contains(&format!("{label} denied")), "{r:?}");
    }
}

#[tokio::test]
async fn signals_reach_nothing_outside_and_kill_minus_one_stays_inside() {
    let t = Run::new();
    let mut sentinel = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let me = std::process::id();
    let script = t.script(
        "signal.sh",
        &format!(
            "kill -0 {me} 2>/dev/null && echo SIGNALLED parent
kill -0 {sentinel} 2>/dev/null && echo SIGNALLED sentinel
# Only inside a PID namespace of its own may this run: anywhere else it would kill the host.
if [ $$ -ne 1 ] || [ $(ls /proc | grep -c '^[0-9]') -gt 10 ]; then echo NOT ISOLATED; exit 99; fi
sleep 30 & inner=$!
kill -9 -1
wait $inner; echo inner-status $?",
            sentinel = sentinel.id()
        ),
    );
    let r = t.confined(&format!("bash {script}")).await;
    assert!(!r.stdout.contains("NOT ISOLATED"), "{r:?}");
    assert!(!r.stdout.contains("SIGNALLED"), "{r:?}");
    // The namespace's own process did die: `kill -9 -1` works, inside.
    assert!(r.stdout.contains("inner-status 137"), "{r:?}");
    assert!(sentinel.try_wait().unwrap().is_none(), "the sentinel died");
    sentinel.kill().unwrap();
    let _ = sentinel.wait();
}

#[tokio::test]
async fn ptrace_mount_and_every_denied_syscall_fail() {
    let t = Run::new();
    let me = std::process::id();
    let table: Vec<String> = bash_guard::exec::DENIED_SYSCALLS
        .iter()
        .map(|(name, nr)| format!("({name:?}, {nr})"))
        .collect();
    let script = t.script(
        "syscalls.py",
        &format!(
            "import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
PTRACE_ATTACH = 16
if libc.ptrace(PTRACE_ATTACH, {me}, 0, 0) == 0:
    print('LEAKED ptrace attach')
os.makedirs('mnt', exist_ok=True)
if libc.mount(b'none', b'mnt', b'tmpfs', 0, None) == 0:
    print('LEAKED mount')
for name, nr in [{table}]:
    r = libc.syscall(nr, 0, 0, 0, 0, 0, 0)
    err = ctypes.get_errno()
    print(name, 'EPERM' if r == -1 and err == 1 else 'r=%d errno=%d' % (r, err))
",
            table = table.join(", ")
        ),
    );
    let r = t.confined(&format!("{PY} {script}")).await;
    assert!(!r.stdout.contains("LEAKED"), "{r:?}");
    for (name, _) in bash_guard::exec::DENIED_SYSCALLS {
        assert!(
            r.stdout.lines().any(|l| l == format!("{name} EPERM")),
            "{name} was not denied: {r:?}"
        );
    }
}

#[tokio::test]
async fn a_write_outside_through_a_symlink_fails() {
    let t = Run::new();
    let outside = tempfile::tempdir_in("/var/tmp").unwrap();
    std::os::unix::fs::symlink(outside.path(), t.root().join("link")).unwrap();
    let script = t.script(
        "symlink.sh",
        "echo escaped > link/f 2>/dev/null && echo LEAKED
mkdir link/d 2>/dev/null && echo LEAKED mkdir
ln -s /etc/passwd link/p 2>/dev/null && echo LEAKED ln
echo inside > ok.txt && cat ok.txt",
    );
    let r = t.confined(&format!("bash {script}")).await;
    assert_eq!(r.stdout, "inside\n", "{r:?}");
    assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none());
}

#[tokio::test]
async fn exceeding_the_memory_cap_fails() {
    let t = Run::new();
    let cfg = ExecConfig {
        memory_max_bytes: 64 << 20,
        ..config()
    };
    let script = t.script(
        "memory.py",
        "chunks = []
for _ in range(32):
    chunks.append(bytearray(16 << 20))
print('LEAKED allocated', len(chunks) * 16, 'MiB')
",
    );
    let cmd = format!("{PY} {script}");
    let r = t.confined_with(&cmd, cfg).await;
    assert!(!r.stdout.contains("LEAKED"), "{r:?}");
    assert_ne!(r.exit_code, Some(0), "{r:?}");
    let cap = r.confinement.memory_max.clone().unwrap();
    assert!(cap.ends_with("67108864"), "{cap}");
    // The same allocation passes under the default cap: the cap, not the script, stopped it.
    let r = t.confined(&cmd).await;
    assert!(r.stdout.contains("LEAKED allocated 512 MiB"), "{r:?}");
}

#[tokio::test]
async fn a_fork_bomb_hits_the_process_cap() {
    let t = Run::new();
    let cfg = ExecConfig {
        max_processes: 32,
        ..config()
    };
    // Bombs only once the cap is verified from inside: pids.max of its own cgroup is 32.
    let script = t.script(
        "bomb.sh",
        "cg=$(grep -E '^[0-9]+:pids:|^0::' /proc/self/cgroup | head -1 | cut -d: -f3)
max=$(cat /sys/fs/cgroup/pids$cg/pids.max 2>/dev/null || cat /sys/fs/cgroup$cg/pids.max)
[ \"$max\" = 32 ] || { echo NO CAP \"$max\"; exit 99; }
bomb() { bomb | bomb & }
bomb
sleep 1
echo survived",
    );
    let mut request = t.request(&format!("bash {script}"), &cfg);
    request.timeout = Some(Duration::from_secs(4));
    let r = runner_with(cfg)
        .run(&request, &CancellationToken::new())
        .await
        .unwrap();
    assert_isolated(&r);
    assert!(!r.stdout.contains("NO CAP"), "{r:?}");
    assert!(
        r.stderr.contains("Resource temporarily unavailable") || r.stderr.contains("fork"),
        "{r:?}"
    );
    assert_eq!(r.confinement.cgroup_pids_max.as_deref(), Some("32"));
}

#[tokio::test]
async fn the_report_names_every_protection() {
    let t = Run::new();
    let r = t.confined("true").await;
    let c = &r.confinement;
    let mut ns = c.namespaces.clone();
    ns.sort();
    assert_eq!(ns, ["ipc", "mount", "net", "pid"], "{c:?}");
    assert!(c.landlock.network_blocked);
    assert!(Path::new("/etc").is_dir());
}

#[tokio::test]
async fn without_a_cgroup_the_pid_namespace_caps_processes() {
    let t = Run::new();
    let cfg = ExecConfig {
        max_processes: 32,
        join_cgroup_v1: false,
        ..config()
    };
    // A bounded loop (600 spawns), never an unbounded bomb: with no cap at all it would still
    // end.
    let script = t.script(
        "spawn.py",
        "import subprocess
ok, fail, procs = 0, 0, []
for _ in range(600):
    try:
        procs.append(subprocess.Popen(['sleep', '5'])); ok += 1
    except OSError:
        fail += 1
for p in procs: p.kill()
print(ok, fail)
",
    );
    let mut request = t.request(&format!("{PY} {script}"), &cfg);
    request.timeout = Some(Duration::from_secs(30));
    let r = runner_with(cfg)
        .run(&request, &CancellationToken::new())
        .await
        .unwrap();
    // 300 reserved pids + the cap + 1 (PID 1 itself holds one).
    assert_eq!(r.confinement.pid_max, Some(333), "{:?}", r.confinement);
    let counts: Vec<u32> = r
        .stdout
        .split_whitespace()
        .map(|w| w.parse().unwrap())
        .collect();
    assert_eq!(counts.len(), 2, "{r:?}");
    assert!(counts[0] <= 332, "{} spawns succeeded", counts[0]);
    assert!(counts[1] >= 268, "{} spawns failed", counts[1]);
    if r.confinement.cgroup {
        // cgroup v2: the flag does not apply and the pids cgroup still holds the cap of 32.
        assert!(counts[0] < 32, "{r:?}");
    } else {
        assert_eq!(
            r.confinement.memory_max.as_deref(),
            Some(format!("rlimit-as:{}", 4u64 << 30).as_str())
        );
    }
}

#[tokio::test]
async fn an_unprivileged_user_is_isolated_through_a_user_namespace() {
    // The trampoline runs as `nobody` (setpriv drops root before it starts); it must reach the
    // same isolation by way of a user namespace that maps only its own ids.
    let setpriv = Path::new("/usr/bin/setpriv");
    assert!(
        setpriv.exists(),
        "this test needs util-linux's setpriv to run the trampoline as another user"
    );
    let t = Run::new();
    std::fs::set_permissions(
        t.root(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let script = t.script(
        "user.sh",
        "id -u; echo pid=$$; grep CapEff /proc/self/status; echo x > mine && cat mine
cat /proc/1/environ >/dev/null && echo own-environ",
    );
    let runner = Runner::new(config()).with_trampoline_args(
        setpriv,
        [
            "--reuid=65534".into(),
            "--regid=65534".into(),
            "--clear-groups".into(),
            std::ffi::OsString::from(env!("CARGO_BIN_EXE_bash-guard-sandbox-exec")),
        ],
    );
    let mut request = t.request(&format!("bash {script}"), &config());
    // No cgroup to join as nobody: the PID namespace is the process cap.
    request.confinement.as_mut().unwrap().max_processes = None;
    let r = runner
        .run(&request, &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(
        r.stdout, "65534\npid=1\nCapEff:\t0000000000000000\nx\nown-environ\n",
        "{r:?}"
    );
    let c = &r.confinement;
    assert!(c.namespaces.iter().any(|n| n == "user"), "{c:?}");
    assert!(
        c.private_proc && c.capabilities_dropped && c.seccomp,
        "{c:?}"
    );
    assert_eq!(c.landlock.status, LandlockState::FullyEnforced);
    // The overlay over /etc is mounted inside the user namespace too.
    assert_eq!(c.hidden_by_overlay, [PathBuf::from("/etc")], "{c:?}");
}

#[tokio::test]
async fn the_command_and_its_children_are_in_the_runs_pids_and_memory_cgroups() {
    let t = Run::new();
    // A child of the shell too: the trampoline joins by moving its one thread (v1 `tasks`), and
    // everything forked after it must inherit the run's groups.
    let script = t.script(
        "cgroups.sh",
        "if grep -qE '^[0-9]+:pids:' /proc/self/cgroup; then pat='^[0-9]+:(pids|memory):'; n=2
else pat='^0::'; n=1; fi
echo $n
grep -E \"$pat\" /proc/self/cgroup
bash -c \"grep -E '$pat' /proc/self/cgroup\"",
    );
    let r = t.confined(&format!("bash {script}")).await;
    let mut lines = r.stdout.lines();
    // Per process: the pids and memory lines on v1, the one unified line on v2.
    let per_process: usize = lines.next().unwrap().parse().unwrap();
    let lines: Vec<&str> = lines.collect();
    assert_eq!(lines.len(), 2 * per_process, "{r:?}");
    for line in &lines {
        assert!(
            line.contains("/bash-guard-"),
            "not in the run's cgroup: {line} ({r:?})"
        );
    }
}

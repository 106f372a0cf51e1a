//! What the execution tests share: the runner's settings, the requests they run and how they
//! tell that a process is gone. Each test crate uses part of it.
#![allow(dead_code)]

use std::path::Path;

use bash_guard::{Confinement, ExecConfig, ExecRequest};

/// The default settings with a short kill grace.
pub(crate) fn config() -> ExecConfig {
    ExecConfig {
        kill_grace_ms: 200,
        ..ExecConfig::default()
    }
}

/// `command` run in `cwd`, unconfined.
pub(crate) fn req(command: &str, cwd: &Path) -> ExecRequest {
    ExecRequest {
        command: command.to_string(),
        cwd: cwd.to_path_buf(),
        timeout: None,
        confinement: None,
    }
}

/// `command` run in `root`, its one write root, confined as [`config`] says, confinement
/// required.
pub(crate) fn confined(command: &str, root: &Path) -> ExecRequest {
    let mut conf = Confinement::from_config(&config(), vec![], vec![root.to_path_buf()]);
    conf.require_confinement = true;
    ExecRequest {
        confinement: Some(conf),
        ..req(command, root)
    }
}

/// `pid` is running: a zombie has been killed; only a running process counts as a survivor.
pub(crate) fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
        Err(_) => false,
    }
}

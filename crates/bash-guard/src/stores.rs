//! Lexical deny lists that hold whatever the judge says: credential stores (read or written,
//! never allowed) and files that run code later when written. Knowledge, imported by the
//! walker's path judgement.

use std::path::Path;

/// Credential stores, by absolute lexically-normalised path.
pub(crate) fn credential_store(abs: &Path, home: Option<&str>) -> Option<&'static str> {
    let s = abs.to_str()?;
    const SYSTEM_SECRETS: &[&str] = &[
        "/etc/shadow",
        "/etc/gshadow",
        "/etc/sudoers",
        "/etc/shadow-",
        "/etc/master.passwd",
    ];
    if SYSTEM_SECRETS.iter().any(|p| at_or_under(s, p)) || s.starts_with("/etc/ssh/ssh_host_") {
        return Some("a system credential store");
    }
    const HOME_SECRETS: &[&str] = &[
        ".ssh",
        ".aws",
        ".config/gcloud",
        ".gnupg",
        ".kube",
        ".docker/config.json",
        ".netrc",
        ".git-credentials",
        ".pgpass",
        ".azure",
        ".config/gh",
        ".npmrc",
        ".pypirc",
        ".cargo/credentials",
        ".cargo/credentials.toml",
        ".password-store",
        ".vault-token",
        ".terraform.d/credentials.tfrc.json",
    ];
    // Every path judged passes here: compare in place, without building `{base}/{p}`.
    let under = |base: &str| {
        s.strip_prefix(base)
            .and_then(|rest| rest.strip_prefix('/'))
            .is_some_and(|rest| HOME_SECRETS.iter().any(|p| at_or_under(rest, p)))
    };
    if let Some(h) = home
        && under(h.trim_end_matches('/'))
    {
        return Some("a credential store in the home directory");
    }
    // Other users' homes and root's too.
    let mut parts = s.split('/').skip(1);
    if let (Some("home"), Some(user)) = (parts.next(), parts.next())
        && s.get(.."/home/".len() + user.len()).is_some_and(under)
    {
        return Some("a credential store in a home directory");
    }
    if under("/root") {
        return Some("root's credential store");
    }
    None
}

/// `s` is `prefix` or a path below it.
fn at_or_under(s: &str, prefix: &str) -> bool {
    s.strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// Files that run code later when written (shell rc files, git hooks and config).
pub(crate) fn runs_code_later(abs: &Path) -> Option<&'static str> {
    const RC: &[&str] = &[
        ".bashrc",
        ".bash_profile",
        ".bash_login",
        ".bash_logout",
        ".profile",
        ".zshrc",
        ".zshenv",
        ".zprofile",
        ".zlogin",
        ".zlogout",
        ".inputrc",
        ".kshrc",
        ".cshrc",
        ".tcshrc",
        ".xprofile",
        ".xinitrc",
        ".envrc",
    ];
    let name = abs.file_name()?.to_str()?;
    if RC.contains(&name) {
        return Some("a shell startup file");
    }
    let s = abs.to_str()?;
    if s.contains("/.git/hooks/") || s.ends_with("/.git/hooks") || s.ends_with("/.git/config") {
        return Some("git configuration or a git hook");
    }
    if s.contains("/.config/fish/")
        || s.starts_with("/etc/profile")
        || s.starts_with("/etc/bash")
        || s.contains("/.config/autostart/")
        || s.contains("/.config/systemd/")
    {
        return Some("a startup file");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_match_whole_components_only() {
        let home = Some("/home/me/");
        let store = |p: &str| credential_store(Path::new(p), home);
        assert!(store("/home/me/.ssh").is_some());
        assert!(store("/home/me/.ssh/id_ed25519").is_some());
        assert!(store("/home/me/.cargo/credentials.toml").is_some());
        assert!(store("/home/other/.aws/credentials").is_some());
        assert!(store("/root/.kube/config").is_some());
        assert!(store("/etc/shadow").is_some());
        assert!(store("/etc/sudoers/x").is_some());
        assert!(store("/etc/ssh/ssh_host_rsa_key").is_some());
        assert!(store("/home/me/.sshx").is_none());
        assert!(store("/home/me/.ssh.bak").is_none());
        assert!(store("/home/me/src/.ssh").is_none());
        assert!(store("/home/.ssh").is_none());
        assert!(store("/etc/shadowed").is_none());
        assert!(store("/rootx/.ssh").is_none());
        assert!(credential_store(Path::new("/.ssh/id"), Some("/")).is_some());
    }
}

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
    if SYSTEM_SECRETS
        .iter()
        .any(|p| s == *p || s.starts_with(&format!("{p}/")))
        || s.starts_with("/etc/ssh/ssh_host_")
    {
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
    let under = |base: &str| {
        HOME_SECRETS.iter().any(|p| {
            let full = format!("{base}/{p}");
            s == full || s.starts_with(&format!("{full}/"))
        })
    };
    if let Some(h) = home
        && under(h.trim_end_matches('/'))
    {
        return Some("a credential store in the home directory");
    }
    // Other users' homes and root's too.
    let mut parts = s.split('/').skip(1);
    if let (Some("home"), Some(user)) = (parts.next(), parts.next())
        && under(&format!("/home/{user}"))
    {
        return Some("a credential store in a home directory");
    }
    if under("/root") {
        return Some("root's credential store");
    }
    None
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

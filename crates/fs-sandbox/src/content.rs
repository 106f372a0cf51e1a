//! Secrets by content: a file is judged by what it holds, not only by what it is called.
//!
//! The sensitive table names stores where their programs put them; a key copied to
//! `deploy/prod-access`, a token file under a name no list spells, a store a variable moved:
//! each is caught by reading its head. Before a read is allowed, a regular file outside the
//! project (a read-only root, or no root at all) and any file inside it whose name is not plainly
//! source is sniffed ([`SNIFF_BYTES`](crate::SNIFF_BYTES), opened non-blocking after its type is
//! checked: see `head.rs`) by a [`ContentSniffer`]. fs-sandbox is a leaf: its own sniffer knows
//! private key blocks only; agent-core wires in the redaction's detectors (cloud and forge
//! tokens, registry `auth` JSON, kubeconfig credentials).
//!
//! A project source file (`*.rs`, `*.py`, ...) is not sniffed: it is what the agent reads all
//! day, a secret pasted into one is the redaction's job on the way out, and a read of one costs
//! what it cost before.

use std::path::Path;

/// Where the sniffed file is: the project's files are the agent's everyday reading, so a
/// sniffer may hold back its generic shapes there (`PASSWORD=...` in a compose file) and use
/// every detector outside it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SniffScope {
    /// Inside a read-write root.
    Project,
    /// In a read-only root, or in no root.
    Outside,
}

/// Recognises a secret in the first bytes of a file.
pub trait ContentSniffer: Send + Sync + std::fmt::Debug {
    /// The name of the detector that recognises a secret in `head` (`private-key`,
    /// `github-token`), or `None`.
    fn secret_in(&self, head: &[u8], scope: SniffScope) -> Option<String>;
}

/// The sniffer fs-sandbox has on its own: private key blocks of every text format.
#[derive(Debug, Clone, Copy, Default)]
pub struct KeyBlockSniffer;

impl ContentSniffer for KeyBlockSniffer {
    fn secret_in(&self, head: &[u8], _: SniffScope) -> Option<String> {
        crate::sensitive::private_key_in(head).then(|| "private-key".to_owned())
    }
}

/// Extensions of files that are plainly source or prose: read without a sniff inside the
/// project. Configuration formats (`json`, `yaml`, `toml`, `ini`, `conf`, `cfg`, `xml`,
/// `properties`), key-ish ones and files without an extension are sniffed.
pub const PLAINLY_SOURCE: &[&str] = &[
    "rs", "py", "pyi", "js", "mjs", "cjs", "jsx", "ts", "mts", "cts", "tsx", "go", "c", "h", "cc",
    "cpp", "cxx", "hpp", "hh", "hxx", "m", "mm", "java", "kt", "kts", "scala", "swift", "rb",
    "php", "cs", "fs", "ex", "exs", "erl", "hs", "ml", "mli", "clj", "lua", "dart", "zig", "nim",
    "jl", "r", "vue", "svelte", "css", "scss", "sass", "less", "html", "htm", "md", "markdown",
    "rst", "adoc", "tex", "sql", "proto", "graphql", "elm", "sol", "v", "vhd", "sv", "asm", "s",
];

/// Whether the file name marks `path` as plainly source (see [`PLAINLY_SOURCE`]).
pub fn plainly_source(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|ext| PLAINLY_SOURCE.iter().any(|s| s.eq_ignore_ascii_case(ext)))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

    use super::*;

    #[test]
    fn every_source_extension_is_plain_and_config_is_not() {
        for ext in PLAINLY_SOURCE {
            assert!(
                plainly_source(Path::new(&format!("/p/src/x.{ext}"))),
                "{ext}"
            );
            assert!(
                plainly_source(Path::new(&format!("/p/X.{}", ext.to_uppercase()))),
                "{ext}"
            );
        }
        for name in [
            "/p/config.json",
            "/p/.env.local",
            "/p/deploy/prod-access",
            "/p/auth.yaml",
            "/p/settings.toml",
            "/p/server.key",
            "/p/Makefile",
            "/p/x.pem",
            "/p/creds.ini",
        ] {
            assert!(!plainly_source(Path::new(name)), "{name}");
        }
    }

    #[test]
    fn the_builtin_sniffer_knows_key_blocks_only() {
        let s = KeyBlockSniffer;
        for key in [
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n",
            "-----BEGIN RSA PRIVATE KEY-----\nMII\n",
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMII\n",
            "-----BEGIN PGP PRIVATE KEY BLOCK-----\n",
            "PuTTY-User-Key-File-3: ssh-ed25519\n",
            "# created: 2024\nAGE-SECRET-KEY-1QQQ\n",
        ] {
            for scope in [SniffScope::Project, SniffScope::Outside] {
                assert_eq!(
                    s.secret_in(key.as_bytes(), scope).as_deref(),
                    Some("private-key")
                );
            }
        }
        for public in [
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI u@h\n",
            "-----BEGIN PUBLIC KEY-----\nMII\n",
            "-----BEGIN CERTIFICATE-----\nMII\n",
            "fn main() {}\n",
        ] {
            assert_eq!(
                s.secret_in(public.as_bytes(), SniffScope::Outside),
                None,
                "{public}"
            );
        }
    }
}

//! fs-sandbox's [`ContentSniffer`] backed by perm-hooks' secret detectors: a file is refused
//! for reading when the redaction would mask something in its head.
//!
//! fs-sandbox is a leaf and knows only private key blocks; the redaction's table knows the
//! token formats (cloud, forge, registry `auth`, kubeconfig key data). One table, two uses:
//! what the redaction would hide from the output, the sandbox refuses to read at all.

use fs_sandbox::{ContentSniffer, SniffScope};
use perm_hooks::SharedScanner;

/// Detectors of container shapes and `NAME=value` assignments: they catch a secret wherever
/// it sits, and so also a compose file's `POSTGRES_PASSWORD: devpass1` that the project reads
/// every day. Inside the project they do not refuse a read (the redaction still masks the
/// output); outside it (dotfiles, toolchains, anything not the project) they do.
pub const PROJECT_TOLERATED: &[&str] = &[
    "secret-assignment",
    "bearer-token",
    "basic-auth",
    "url-password",
    "jwt",
];

/// The redaction's detectors as a content sniffer.
#[derive(Debug, Clone)]
pub struct DetectorSniffer {
    scanner: SharedScanner,
}

impl DetectorSniffer {
    /// A sniffer over `scanner` (the policy's `[hooks.redaction]` set; a [`SharedScanner`]
    /// compiles the built-in set only when a file is sniffed).
    pub fn new(scanner: impl Into<SharedScanner>) -> Self {
        DetectorSniffer {
            scanner: scanner.into(),
        }
    }
}

impl ContentSniffer for DetectorSniffer {
    fn secret_in(&self, head: &[u8], scope: SniffScope) -> Option<String> {
        // The fs-sandbox markers first: a key block is a key in any scope, and the scan is
        // a few memchr passes.
        if let Some(found) = fs_sandbox::KeyBlockSniffer.secret_in(head, scope) {
            return Some(found);
        }
        let text = String::from_utf8_lossy(head);
        // Detection only: the answer `find` would give (its first refused finding), without
        // the findings, and inside the project without the `NAME=value` pass.
        self.scanner
            .get()
            .sniff(&text, |id| {
                scope == SniffScope::Outside || !PROJECT_TOLERATED.contains(&id)
            })
            .map(|id| id.to_string())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

    use super::*;
    use perm_hooks::SecretScanner;

    fn sniffer() -> DetectorSniffer {
        DetectorSniffer::new(SecretScanner::default_set_arc())
    }

    #[test]
    fn every_tolerated_id_is_a_detector() {
        let ids = SecretScanner::default_set().detector_ids();
        for id in PROJECT_TOLERATED {
            assert!(ids.contains(id), "{id}");
        }
    }

    #[test]
    fn stores_are_recognised_by_what_they_hold() {
        let s = sniffer();
        for (text, detector) in [
            (
                "{\"auths\":{\"quay.io\":{\"auth\":\"Ym90OnM0TXBsZVBhc3N3b3JkMTIz\"}}}",
                "registry-auth",
            ),
            (
                "users:\n- name: u\n  user:\n    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpncmNPN244YVVEbSs4SDdDTkg4R2J0Q1BYY2RSSkVmalFFTUFBbXR1VkZXVW9HVm9YV1RFbUF1NDFGUktoeUdwCg==\n",
                "private-key-base64",
            ),
            (
                "gitlab.com:\n    token: glpat-Ab3dEf6hIj9kLm2nOp5q\n",
                "gitlab-token",
            ),
            (
                "[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLQ\n",
                "aws-access-key-id",
            ),
            ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl\n", "private-key"),
        ] {
            for scope in [SniffScope::Project, SniffScope::Outside] {
                assert_eq!(
                    s.secret_in(text.as_bytes(), scope).as_deref(),
                    Some(detector),
                    "{text}"
                );
            }
        }
    }

    #[test]
    fn generic_shapes_refuse_only_outside_the_project() {
        let s = sniffer();
        let compose =
            "services:\n  db:\n    environment:\n      POSTGRES_PASSWORD: k8sDevPassw0rd9\n";
        assert_eq!(s.secret_in(compose.as_bytes(), SniffScope::Project), None);
        assert_eq!(
            s.secret_in(compose.as_bytes(), SniffScope::Outside)
                .as_deref(),
            Some("secret-assignment")
        );
        for plain in [
            "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIK u@h\n",
            "[core]\n\tbare = false\n",
        ] {
            for scope in [SniffScope::Project, SniffScope::Outside] {
                assert_eq!(s.secret_in(plain.as_bytes(), scope), None, "{plain}");
            }
        }
    }
}

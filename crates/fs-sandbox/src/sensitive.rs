//! Sensitive paths: credential stores and keys, as data.
//!
//! The principle: a path is sensitive when its content lets whoever reads it act as the user (or
//! as the machine) somewhere else: passwords, tokens, private keys, session cookies, another
//! process's environment. Reading such a file hands the secret to the model (and to whatever the
//! model talks to); writing one plants or destroys a credential. Both are refused whatever the
//! roots say, and the refusal is judged on the physical file (after symlinks) and on the path as
//! given, so a symlink to `~/.ssh/id_rsa` and `~/.ssh/id_rsa` itself are both caught.
//!
//! Pattern forms (one interpreter, [`Sensitive::compile`]):
//! - `~/x` is anchored at the home directory given to the builder (default `$HOME`, never the
//!   cwd; both the home as given and its canonical form), and at every other account's home
//!   (`OTHER_HOMES`: `/root`, `/home/*`, `/Users/*`): another user's SSH keys are as secret as
//!   one's own;
//! - `/x` is an absolute glob;
//! - anything else matches at any depth (`.env` is `/**/.env`);
//! - `dir/**` is a tree: the directory itself and everything below it. Every other pattern names
//!   a file and never matches a directory (a Python virtualenv called `.env` is not a secret).
//!
//! Public certificates share the `.pem` extension with private keys, so `*.pem` is judged by
//! content: a `.pem` file is sensitive when it holds a `PRIVATE KEY` block or cannot be read
//! (fail closed); a `.pem` that does not exist yet, or holds only certificates and public keys,
//! is not.

use std::path::{Component, Path, PathBuf};

use globset::{Candidate, Glob, GlobBuilder, GlobSet, GlobSetBuilder};

use std::collections::HashMap;

use crate::head::{Head, SNIFF_BYTES, read_head};
use crate::lazy::OnFirstUse;
use crate::stores::Located;

use crate::error::SandboxError;

/// When a matching path is sensitive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SensitiveWhen {
    /// Always.
    Always,
    /// When the file holds a `PRIVATE KEY` block or cannot be read; a missing file is not.
    HoldsPrivateKey,
    /// When the file holds a URL with a credential in it (`https://user:token@host`, or a
    /// token-long user name: `https://ghp_...@github.com`) or cannot be read; a missing file
    /// is not. A repository's `.git/config` is ordinary until a remote embeds one.
    HoldsUrlCredential,
    /// Unless its content is plainly a document of another kind that shares the extension
    /// (a Keynote `.key` is a zip archive); missing or unreadable counts as sensitive.
    UnlessDocument,
}

/// One entry of the sensitive-path table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SensitivePattern {
    /// The glob (see the module docs for the forms).
    pub pattern: &'static str,
    /// What the path holds, for messages (`an SSH private key`).
    pub what: &'static str,
    /// A path the pattern must match (`~` = the home directory); the tests check every entry.
    pub example: &'static str,
    /// When a match is sensitive.
    pub when: SensitiveWhen,
}

const fn always(
    pattern: &'static str,
    what: &'static str,
    example: &'static str,
) -> SensitivePattern {
    SensitivePattern {
        pattern,
        what,
        example,
        when: SensitiveWhen::Always,
    }
}

/// The sensitive paths, extended (never replaced) by the policy's `sensitive = [...]`.
pub const DEFAULT_SENSITIVE: &[SensitivePattern] = &[
    // Environment files with secrets, at any depth.
    always(".env", "an environment file with secrets", "/p/.env"),
    always(
        ".env.*",
        "an environment file with secrets",
        "/p/.env.production",
    ),
    always(
        "*.env",
        "an environment file with secrets",
        "/p/config/prod.env",
    ),
    // Per-user credential stores.
    always("~/.ssh/**", "an SSH key or configuration", "~/.ssh/id_rsa"),
    always("~/.aws/**", "AWS credentials", "~/.aws/credentials"),
    always(
        "~/.config/gcloud/**",
        "Google Cloud credentials",
        "~/.config/gcloud/application_default_credentials.json",
    ),
    always(
        "~/.azure/**",
        "Azure credentials",
        "~/.azure/accessTokens.json",
    ),
    always(
        "~/.docker/config.json",
        "Docker registry credentials",
        "~/.docker/config.json",
    ),
    always(
        "~/.kube/config",
        "a Kubernetes credential",
        "~/.kube/config",
    ),
    always(
        "~/.claude/.credentials.json",
        "Claude Code's login token",
        "~/.claude/.credentials.json",
    ),
    always(
        "~/.codex/auth.json",
        "Codex's login token",
        "~/.codex/auth.json",
    ),
    always(
        "~/.gemini/oauth_creds.json",
        "Gemini CLI's login token",
        "~/.gemini/oauth_creds.json",
    ),
    always(
        "~/.gnupg/**",
        "a GnuPG keyring",
        "~/.gnupg/private-keys-v1.d/x.key",
    ),
    always(
        "~/.password-store/**",
        "a pass password store",
        "~/.password-store/mail.gpg",
    ),
    always(
        "~/.config/gh/hosts.yml",
        "the GitHub CLI's token",
        "~/.config/gh/hosts.yml",
    ),
    always("~/.config/hub", "the hub CLI's token", "~/.config/hub"),
    always(
        "~/.cargo/credentials.toml",
        "a crates.io token",
        "~/.cargo/credentials.toml",
    ),
    always(
        "~/.cargo/credentials",
        "a crates.io token",
        "~/.cargo/credentials",
    ),
    always(
        "~/.gem/credentials",
        "a RubyGems token",
        "~/.gem/credentials",
    ),
    always(
        "~/.terraform.d/credentials.tfrc.json",
        "a Terraform Cloud token",
        "~/.terraform.d/credentials.tfrc.json",
    ),
    always(
        "~/.vault-token",
        "a HashiCorp Vault token",
        "~/.vault-token",
    ),
    always(
        "~/.local/share/keyrings/**",
        "a desktop keyring",
        "~/.local/share/keyrings/login.keyring",
    ),
    // The guard's allow-once signing key: whoever reads it can forge grants.
    always(
        "~/.agent-guard/grant.key",
        "agent-guard's grant signing key",
        "~/.agent-guard/grant.key",
    ),
    // The audit chain's key: whoever reads it can rewrite the audit log undetected.
    always(
        "~/.agent-guard/audit.key",
        "agent-guard's audit chain key",
        "~/.agent-guard/audit.key",
    ),
    // The approval server's bearer token: whoever reads it answers the guard's own asks.
    always(
        "~/.agent-guard/serve.token",
        "agent-guard's approval server token",
        "~/.agent-guard/serve.token",
    ),
    // Shell and REPL histories: people type passwords, tokens and `export KEY=...` there.
    always(
        "~/.bash_history",
        "a shell history (typed secrets)",
        "~/.bash_history",
    ),
    always(
        "~/.zsh_history",
        "a shell history (typed secrets)",
        "~/.zsh_history",
    ),
    always(
        "~/.histfile",
        "a shell history (typed secrets)",
        "~/.histfile",
    ),
    always(
        "~/.sh_history",
        "a shell history (typed secrets)",
        "~/.sh_history",
    ),
    always(
        "~/.local/share/fish/fish_history",
        "a shell history (typed secrets)",
        "~/.local/share/fish/fish_history",
    ),
    always(
        "~/.python_history",
        "a REPL history (typed secrets)",
        "~/.python_history",
    ),
    always(
        "~/.node_repl_history",
        "a REPL history (typed secrets)",
        "~/.node_repl_history",
    ),
    always(
        "~/.psql_history",
        "a database client history (typed secrets)",
        "~/.psql_history",
    ),
    always(
        "~/.mysql_history",
        "a database client history (typed secrets)",
        "~/.mysql_history",
    ),
    always(
        "~/.rediscli_history",
        "a database client history (typed secrets)",
        "~/.rediscli_history",
    ),
    // More per-user credential stores.
    always("~/.my.cnf", "MySQL passwords", "~/.my.cnf"),
    always("~/.s3cfg", "S3 credentials (s3cmd)", "~/.s3cfg"),
    always("~/.boto", "cloud storage credentials (boto)", "~/.boto"),
    always("~/.oci/**", "Oracle Cloud credentials", "~/.oci/config"),
    always(
        "~/.config/rclone/rclone.conf",
        "cloud storage credentials (rclone)",
        "~/.config/rclone/rclone.conf",
    ),
    always(
        "~/.config/doctl/config.yaml",
        "a DigitalOcean token",
        "~/.config/doctl/config.yaml",
    ),
    always(
        "~/.config/hcloud/cli.toml",
        "a Hetzner Cloud token",
        "~/.config/hcloud/cli.toml",
    ),
    always(
        "~/.config/git/credentials",
        "stored git passwords (XDG location)",
        "~/.config/git/credentials",
    ),
    always(
        "~/.config/containers/auth.json",
        "container registry credentials (podman, buildah, skopeo)",
        "~/.config/containers/auth.json",
    ),
    always(
        "~/.config/glab-cli/config.yml",
        "the GitLab CLI's token",
        "~/.config/glab-cli/config.yml",
    ),
    always(
        "~/.config/github-copilot/**",
        "GitHub Copilot OAuth tokens",
        "~/.config/github-copilot/apps.json",
    ),
    always(
        "~/.config/sops/age/keys.txt",
        "age private keys (sops)",
        "~/.config/sops/age/keys.txt",
    ),
    always("~/.databrickscfg", "a Databricks token", "~/.databrickscfg"),
    always(
        "~/.composer/auth.json",
        "Composer registry tokens",
        "~/.composer/auth.json",
    ),
    always(
        "~/.m2/settings.xml",
        "Maven repository passwords",
        "~/.m2/settings.xml",
    ),
    always(
        "~/.gradle/gradle.properties",
        "Gradle repository tokens",
        "~/.gradle/gradle.properties",
    ),
    always(
        "~/.config/configstore/**",
        "CLI login tokens (configstore: firebase, vercel ...)",
        "~/.config/configstore/firebase-tools.json",
    ),
    always(
        "~/.mozilla/firefox/*/logins.json",
        "browser-saved passwords",
        "~/.mozilla/firefox/abc.default/logins.json",
    ),
    always(
        "~/.mozilla/firefox/*/key4.db",
        "the browser's password key",
        "~/.mozilla/firefox/abc.default/key4.db",
    ),
    always(
        "~/.mozilla/firefox/*/cookies.sqlite",
        "browser session cookies",
        "~/.mozilla/firefox/abc.default/cookies.sqlite",
    ),
    always(
        "~/.config/google-chrome/**",
        "a browser profile (saved passwords, cookies)",
        "~/.config/google-chrome/Default/Login Data",
    ),
    always(
        "~/.config/chromium/**",
        "a browser profile (saved passwords, cookies)",
        "~/.config/chromium/Default/Cookies",
    ),
    // The same browsers installed as snaps or flatpaks keep their profiles elsewhere.
    always(
        "~/snap/firefox/common/.mozilla/**",
        "a browser profile (saved passwords, cookies)",
        "~/snap/firefox/common/.mozilla/firefox/abc.default/logins.json",
    ),
    always(
        "~/snap/chromium/common/chromium/**",
        "a browser profile (saved passwords, cookies)",
        "~/snap/chromium/common/chromium/Default/Login Data",
    ),
    always(
        "~/.var/app/org.mozilla.firefox/.mozilla/**",
        "a browser profile (saved passwords, cookies)",
        "~/.var/app/org.mozilla.firefox/.mozilla/firefox/abc.default/key4.db",
    ),
    always(
        "~/.var/app/com.google.Chrome/config/google-chrome/**",
        "a browser profile (saved passwords, cookies)",
        "~/.var/app/com.google.Chrome/config/google-chrome/Default/Cookies",
    ),
    always(
        "~/.var/app/org.chromium.Chromium/config/chromium/**",
        "a browser profile (saved passwords, cookies)",
        "~/.var/app/org.chromium.Chromium/config/chromium/Default/Login Data",
    ),
    // Credential files that may sit in a project as well as in the home directory.
    always(".npmrc", "an npm token", "/p/.npmrc"),
    always(".pypirc", "a PyPI token", "~/.pypirc"),
    always(".netrc", "machine passwords (netrc)", "~/.netrc"),
    always("_netrc", "machine passwords (netrc)", "~/_netrc"),
    always(
        ".git-credentials",
        "stored git passwords",
        "~/.git-credentials",
    ),
    always(".pgpass", "PostgreSQL passwords", "~/.pgpass"),
    always(
        ".htpasswd",
        "web server password hashes",
        "/srv/site/.htpasswd",
    ),
    // Private keys, wherever they are.
    always("id_rsa", "an SSH private key", "/p/keys/id_rsa"),
    always("id_dsa", "an SSH private key", "/p/keys/id_dsa"),
    always("id_ecdsa", "an SSH private key", "/p/keys/id_ecdsa"),
    always("id_ed25519", "an SSH private key", "/p/keys/id_ed25519"),
    always("id_ecdsa_sk", "an SSH private key", "/p/keys/id_ecdsa_sk"),
    always(
        "id_ed25519_sk",
        "an SSH private key",
        "/p/keys/id_ed25519_sk",
    ),
    SensitivePattern {
        pattern: "*.key",
        what: "a private key",
        example: "/p/tls/server.key",
        when: SensitiveWhen::UnlessDocument,
    },
    always("*.p12", "a PKCS#12 key bundle", "/p/cert.p12"),
    always("*.pfx", "a PKCS#12 key bundle", "/p/cert.pfx"),
    always("*.keystore", "a Java keystore", "/p/release.keystore"),
    always("*.jks", "a Java keystore", "/p/trust.jks"),
    always("*.ppk", "a PuTTY private key", "/p/server.ppk"),
    always("*.kdbx", "a KeePass database", "/p/passwords.kdbx"),
    SensitivePattern {
        pattern: "*.pem",
        what: "a PEM file holding a private key",
        example: "/p/tls/key.pem",
        when: SensitiveWhen::HoldsPrivateKey,
    },
    SensitivePattern {
        pattern: ".git/config",
        what: "a git config whose remote URL embeds a credential",
        example: "/p/.git/config",
        when: SensitiveWhen::HoldsUrlCredential,
    },
    // System secrets.
    always("/etc/shadow", "the system's password hashes", "/etc/shadow"),
    always(
        "/etc/shadow-",
        "the system's password hashes",
        "/etc/shadow-",
    ),
    always(
        "/etc/gshadow",
        "the system's group passwords",
        "/etc/gshadow",
    ),
    always(
        "/etc/gshadow-",
        "the system's group passwords",
        "/etc/gshadow-",
    ),
    always(
        "/etc/security/opasswd",
        "old password hashes",
        "/etc/security/opasswd",
    ),
    always(
        "/etc/master.passwd",
        "the system's password hashes",
        "/etc/master.passwd",
    ),
    always("/etc/sudoers", "the sudo rules", "/etc/sudoers"),
    always(
        "/etc/sudoers.d/**",
        "the sudo rules",
        "/etc/sudoers.d/90-cloud",
    ),
    always(
        "/etc/ssh/ssh_host_*_key",
        "an SSH host private key",
        "/etc/ssh/ssh_host_ed25519_key",
    ),
    // Secrets mounted into containers: Kubernetes service-account tokens, Docker secrets.
    always(
        "/run/secrets/**",
        "a container's mounted secrets",
        "/run/secrets/kubernetes.io/serviceaccount/token",
    ),
    always(
        "/var/run/secrets/**",
        "a container's mounted secrets",
        "/var/run/secrets/kubernetes.io/serviceaccount/token",
    ),
    always(
        "/proc/*/environ",
        "another process's environment (API keys)",
        "/proc/1/environ",
    ),
    always(
        "/proc/*/task/*/environ",
        "another process's environment (API keys)",
        "/proc/1/task/1/environ",
    ),
    always("/proc/*/mem", "another process's memory", "/proc/1/mem"),
    always("/proc/kcore", "the kernel's memory", "/proc/kcore"),
    always(
        "/proc/*/task/*/mem",
        "another process's memory",
        "/proc/1/task/1/mem",
    ),
];

/// Names that look like environment files but are templates checked into repositories.
pub const NOT_SENSITIVE: &[&str] = &[
    ".env.example",
    ".env.*.example",
    "*.env.example",
    ".env.sample",
    ".env.*.sample",
    "*.env.sample",
    ".env.template",
    ".env.*.template",
    "*.env.template",
    ".env.dist",
    ".env.*.dist",
    "*.env.dist",
    ".env.schema",
];

/// A search filter glob (ripgrep's `--glob`, Claude Code Grep's `glob`) that selects the file
/// of some default sensitive entry's example: what the entry holds and the example's name.
///
/// A filter glob is a whitelist, and ripgrep searches what it whitelists even when the file
/// is hidden or ignored (`rg -g '.en?' KEY` reads `.env`), so a glob that can select a
/// secret's name makes the search read the secret. A glob without `/` matches a file name at
/// any depth; one with `/` is tried against every tail of the example's path. Negated globs
/// (`!x`) exclude and select nothing.
pub fn search_glob_selects_sensitive(glob: &str) -> Option<(&'static str, &'static str)> {
    if glob.starts_with('!') {
        return None;
    }
    let matcher = GlobBuilder::new(glob.trim_start_matches("./"))
        .literal_separator(true)
        .build()
        .map(|g| g.compile_matcher());
    // A glob the guard cannot read is judged as selecting everything (fail closed).
    let Ok(matcher) = matcher else {
        return DEFAULT_SENSITIVE.first().map(|e| (e.what, e.example));
    };
    // Only the entries that match at any depth (`.env`, `id_rsa`, `*.key`): a search below a
    // project reaches those; the anchored ones (`~/.docker/config.json`, `/etc/shadow`) live
    // in hidden or system directories that a name glob does not open, and a search of such
    // a directory itself is judged as `sensitive_below`. (`*.json` must stay searchable.)
    let mut anywhere = DEFAULT_SENSITIVE
        .iter()
        .filter(|e| !e.pattern.starts_with(['~', '/']))
        // `.git/config` is a secret by its content only, and ripgrep never enters `.git`.
        .filter(|e| e.when != SensitiveWhen::HoldsUrlCredential);
    anywhere.find_map(|entry| {
        let example = entry.example.trim_start_matches("~/");
        let parts: Vec<&str> = example.split('/').filter(|p| !p.is_empty()).collect();
        let selected = (0..parts.len()).any(|i| {
            let tail = parts.get(i..).unwrap_or_default().join("/");
            (glob.contains('/') || i + 1 == parts.len()) && matcher.is_match(&tail)
        });
        selected.then_some((entry.what, entry.example))
    })
}

/// Where other accounts' home directories are, so `~/.ssh/**` covers them too: absolute, each
/// component literal or `*` (any one component; [`Sensitive::home_rests`] reads no other syntax).
pub(crate) const OTHER_HOMES: &[&str] = &["/root", "/home/*", "/Users/*"];

/// What a policy-added pattern is called in messages.
const POLICY_WHAT: &str = "a path the policy marks sensitive";

/// The table, each set compiled the first time a match needs it (see `lazy.rs`): a directory
/// check needs only `trees`, a tree reader only `anchored`.
#[derive(Debug)]
pub(crate) struct Sensitive {
    /// Patterns naming files (never a directory), with per glob the table entry's index (the
    /// first entry that matches names the file), what it holds and when it counts.
    files: Sets<(usize, &'static str, SensitiveWhen)>,
    /// `dir/**` patterns: the directory and everything below it.
    trees: Sets<(usize, &'static str)>,
    /// The builder's home forms (as given, canonical).
    homes: Vec<PathBuf>,
    except: OnFirstUse<Vec<SetForm>, FoldedSet>,
    /// The anchored forms (not `/**/...`) by component, for [`Sensitive::below`].
    anchored: OnFirstUse<Vec<AnchoredForm>, Vec<(Vec<Part>, &'static str)>>,
    /// Stores where the environment moved them (see `stores.rs`), physical paths.
    located: Vec<Located>,
    /// (device, inode) of every store file the table can name at a fixed place, gathered the
    /// first time a file with more than one link is judged.
    identities: OnFirstUse<(Vec<PathBuf>, Vec<Located>), Identities>,
}

/// One kind of pattern in two sets: absolute globs, and the `~/` patterns relative to a home,
/// matched against what follows a home directory in the path (see [`Sensitive::home_rests`]).
/// One relative glob per `~/` pattern instead of one per home form: `/home/*/.ssh/**` as an
/// absolute glob needs a regex, `.ssh/**` a prefix test, and the per-home globs were most of a
/// hook call's compile time.
#[derive(Debug)]
struct Sets<M> {
    absolute: OnFirstUse<Vec<SetForm>, FoldedSet>,
    absolute_meta: Vec<M>,
    home: OnFirstUse<Vec<SetForm>, FoldedSet>,
    home_meta: Vec<M>,
}

impl<M: Copy> Sets<M> {
    fn new(absolute: (Vec<SetForm>, Vec<M>), home: (Vec<SetForm>, Vec<M>)) -> Self {
        Sets {
            absolute: OnFirstUse::new(absolute.0, build_set),
            absolute_meta: absolute.1,
            home: OnFirstUse::new(home.0, build_set),
            home_meta: home.1,
        }
    }

    /// What matches the absolute `candidate` and each home `rest`; `None` when a set it needed
    /// failed to compile (callers refuse the path).
    fn hits(&self, path: &Folded, rests: &[Folded]) -> Option<Vec<M>> {
        let absolute = self.absolute.get().ok()?;
        let mut hits: Vec<M> = Vec::new();
        if !absolute.each_match(path, |hit| hits.extend(self.absolute_meta.get(hit))) {
            return None;
        }
        if !rests.is_empty() {
            let home = self.home.get().ok()?;
            for rest in rests {
                if !home.each_match(rest, |hit| hits.extend(self.home_meta.get(hit))) {
                    return None;
                }
            }
        }
        Some(hits)
    }
}

/// An anchored form as written: the pattern it came from (for errors), the form, what it holds.
type AnchoredForm = (String, String, &'static str);

/// What every path is when a set of the table could not be compiled: the guard cannot tell a
/// credential store from any other file then, so it refuses them all.
pub(crate) const UNCOMPILED: &str =
    "any path while the sensitive-path table cannot be compiled (fix the policy's patterns)";

/// One glob of a sensitive set: the table pattern it came from (for errors), the form.
type SetForm = (String, String);

/// A compiled sensitive set, matched against [`Folded`] paths. The forms of the simple shapes
/// (most of the table) are looked up by hand, exactly as their regexes read, without a glob
/// parse; the rest go to globset, case folded (see [`glob_of`]).
#[derive(Debug, Default)]
struct FoldedSet {
    /// A form without glob syntax (`/etc/shadow`, `.docker/config.json`): the whole path.
    literal: ShapeMap,
    /// `/**/name`: a rooted path whose last component is `name`.
    name: ShapeMap,
    /// `/**/*.ext` (`ext` without a dot): a rooted path whose last component ends in `.ext`,
    /// keyed by `.ext`.
    ext: ShapeMap,
    /// `dir/**`: a path that starts with `dir/`.
    prefix: Vec<(Vec<u8>, usize)>,
    /// Every other form, the index of each, and whether it may match only a rooted path.
    /// Compiled when a path first contains the text one of them requires (`glob_needs`): most
    /// paths a process judges name none of `.env.`, `/proc`, `ssh_host_` or a browser's
    /// profile, and compiling these few globs into a regex set was most of a first check.
    globs: std::sync::OnceLock<Option<GlobSet>>,
    glob_list: Vec<Glob>,
    glob_index: Vec<(usize, bool)>,
    /// Per glob, a searcher for folded text that every path it matches contains (`None`: no
    /// such text is known, so every path needs the set).
    glob_needs: Vec<Option<memchr::memmem::Finder<'static>>>,
}

impl FoldedSet {
    /// Calls `hit` with the index of each form `path` matches, in no order (callers order
    /// the hits by table entry). `false` when the globs could not be compiled: the answer is
    /// then incomplete, and the caller must fail closed.
    fn each_match(&self, path: &Folded, mut hit: impl FnMut(usize)) -> bool {
        use std::os::unix::ffi::OsStrExt as _;
        let bytes = path.lower.as_os_str().as_bytes();
        let mut found = |indexes: Option<&Vec<usize>>| {
            indexes.into_iter().flatten().for_each(|&index| hit(index));
        };
        found(self.literal.get(bytes));
        if path.rooted {
            let last = bytes.rsplit(|&b| b == b'/').next().unwrap_or(bytes);
            found(self.name.get(last));
            found(
                memchr::memrchr(b'.', last)
                    .and_then(|dot| last.get(dot..))
                    .and_then(|ext| self.ext.get(ext)),
            );
        }
        for (prefix, index) in &self.prefix {
            if bytes.starts_with(prefix) {
                hit(*index);
            }
        }
        // Once compiled, the set answers faster than the texts are searched.
        let needed = self.globs.get().is_some()
            || self
                .glob_needs
                .iter()
                .any(|need| need.as_ref().is_none_or(|text| text.find(bytes).is_some()));
        if needed {
            let compiled = self.globs.get_or_init(|| {
                let mut set = GlobSetBuilder::new();
                for glob in &self.glob_list {
                    set.add(glob.clone());
                }
                set.build().ok()
            });
            let Some(globs) = compiled else {
                return false;
            };
            for matched in globs.matches_candidate(&Candidate::new(&path.lower)) {
                if let Some((index, absolute_only)) = self.glob_index.get(matched)
                    && (path.rooted || !absolute_only)
                {
                    hit(*index);
                }
            }
        }
        true
    }
}

/// Folded text that every path `form` matches contains: its longest run of plain characters
/// (a literal run of one path component), ASCII lowercased as paths are. `None` when the form
/// has alternations or escapes (a run there may be optional or not what it reads as), or no
/// run of two characters.
fn required_text(form: &str) -> Option<Vec<u8>> {
    if form.contains(['{', '}', '\\']) {
        return None;
    }
    let bytes = form.as_bytes();
    let mut plain: Vec<u8> = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&c) = bytes.get(i) {
        if c == b'[' {
            // A class stands for one character: skip it. `]` right after `[` or `[!` is a
            // member, not the end.
            let mut end = i + 1;
            if matches!(bytes.get(end), Some(b'!' | b'^')) {
                end += 1;
            }
            if bytes.get(end) == Some(&b']') {
                end += 1;
            }
            let close = bytes.get(end..)?.iter().position(|&b| b == b']')?;
            plain.push(b'/');
            i = end + close + 1;
            continue;
        }
        plain.push(if matches!(c, b'*' | b'?' | b']') {
            b'/'
        } else {
            c
        });
        i += 1;
    }
    // A rooted form whose first component is plain text matches only paths that begin with
    // that component between slashes, so that text, slashes included, is required as well:
    // `/proc/*/task/*/mem` requires `/proc/`, not just `task` (which `xtask` holds).
    let first = form
        .strip_prefix('/')
        .and_then(|rest| rest.split_once('/'))
        .map(|(first, _)| first)
        .filter(|first| !first.is_empty() && !first.contains(['*', '?', '[', ']']))
        .map(|first| format!("/{first}/").into_bytes());
    plain
        .split(|&b| b == b'/')
        .chain(first.as_deref())
        .max_by_key(|run| run.len())
        .filter(|run| run.len() >= 2)
        .map(<[u8]>::to_ascii_lowercase)
}

/// Form indexes by folded text. The keys are the table's, and a path is only looked up, so
/// a path cannot crowd a bucket: FNV-1a instead of SipHash, which was a sixth of a check.
type ShapeMap = HashMap<Vec<u8>, Vec<usize>, std::hash::BuildHasherDefault<Fnv>>;

/// FNV-1a, 64 bits.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl std::hash::Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = (self.0 ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// The shapes [`FoldedSet`] matches by hand.
enum Shape {
    Literal(Vec<u8>),
    Name(Vec<u8>),
    Ext(Vec<u8>),
    Prefix(Vec<u8>),
}

/// The hand-matched shape of `form`, folded, if it has one: the parts are plain text (no glob
/// syntax, not empty), and the rooted `/**/` forms name only a last component.
fn shape(form: &str) -> Option<Shape> {
    let plain =
        |text: &str| !text.is_empty() && !text.contains(['*', '?', '[', ']', '{', '}', '\\']);
    let lower = |text: &str| text.to_ascii_lowercase().into_bytes();
    if plain(form) {
        return Some(Shape::Literal(lower(form)));
    }
    if let Some(last) = form.strip_prefix("/**/").filter(|last| !last.contains('/')) {
        if plain(last) {
            return Some(Shape::Name(lower(last)));
        }
        if let Some(ext) = last
            .strip_prefix("*.")
            .filter(|ext| plain(ext) && !ext.contains('.'))
        {
            return Some(Shape::Ext(lower(&format!(".{ext}"))));
        }
    }
    let dir = form.strip_suffix("/**").filter(|dir| plain(dir))?;
    Some(Shape::Prefix(lower(&format!("{dir}/"))))
}

/// A path as the sensitive sets read it: ASCII letters lowercased (globset's own case
/// folding is ASCII-only too: its regexes are `(?-u)(?i)`), other bytes as they are.
#[derive(Debug)]
struct Folded {
    lower: PathBuf,
    /// Whether the path starts with `/`: a `/**/` form matches no other.
    rooted: bool,
}

impl Folded {
    fn new(path: &Path) -> Self {
        use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
        let bytes = path.as_os_str().as_bytes();
        Folded {
            lower: PathBuf::from(std::ffi::OsString::from_vec(bytes.to_ascii_lowercase())),
            rooted: bytes.first() == Some(&b'/'),
        }
    }
}

#[allow(
    clippy::ptr_arg,
    reason = "an `OnFirstUse` compile function takes `&I`"
)]
fn build_set(forms: &Vec<SetForm>) -> Result<FoldedSet, SandboxError> {
    let mut compiled = FoldedSet::default();
    for (index, (pattern, form)) in forms.iter().enumerate() {
        match shape(form) {
            Some(Shape::Literal(key)) => compiled.literal.entry(key).or_default().push(index),
            Some(Shape::Name(key)) => compiled.name.entry(key).or_default().push(index),
            Some(Shape::Ext(key)) => compiled.ext.entry(key).or_default().push(index),
            Some(Shape::Prefix(prefix)) => compiled.prefix.push((prefix, index)),
            None => {
                let (glob, absolute_only) = glob_of(pattern, form)?;
                compiled.glob_list.push(glob);
                compiled.glob_index.push((index, absolute_only));
                compiled.glob_needs.push(
                    required_text(form).map(|text| memchr::memmem::Finder::new(&text).into_owned()),
                );
            }
        }
    }
    Ok(compiled)
}

fn build_anchored(
    forms: &Vec<AnchoredForm>,
) -> Result<Vec<(Vec<Part>, &'static str)>, SandboxError> {
    forms
        .iter()
        .map(|(pattern, form, what)| {
            let parts = form
                .split('/')
                .filter(|c| !c.is_empty())
                .map(|c| Part::parse(pattern, c))
                .collect::<Result<Vec<_>, _>>()?;
            Ok((parts, *what))
        })
        .collect()
}

/// One component of an anchored pattern.
#[derive(Debug)]
enum Part {
    Literal(String),
    Glob(globset::GlobMatcher),
    /// `**`: anything from here down.
    Any,
}

impl Part {
    fn parse(pattern: &str, component: &str) -> Result<Self, SandboxError> {
        if component == "**" {
            return Ok(Part::Any);
        }
        if component.contains(['*', '?', '[', '{', '\\']) {
            return Ok(Part::Glob(
                insensitive_glob(pattern, component)?.compile_matcher(),
            ));
        }
        Ok(Part::Literal(component.to_owned()))
    }

    fn matches(&self, component: &std::ffi::OsStr) -> bool {
        match self {
            Part::Literal(text) => component
                .to_str()
                .map_or(component == text.as_str(), |c| c.eq_ignore_ascii_case(text)),
            Part::Glob(glob) => glob.is_match(component),
            Part::Any => true,
        }
    }
}

impl Sensitive {
    /// Checks that every `extra` policy pattern parses, in every form [`compile`] gives it,
    /// without compiling any set (the default table is checked by its tests).
    ///
    /// [`compile`]: Sensitive::compile
    pub(crate) fn validate(extra: &[String], homes: &[PathBuf]) -> Result<(), SandboxError> {
        for pattern in extra {
            for form in absolute_forms(pattern, homes)? {
                glob_of(pattern, &form)?;
                if !form.starts_with("/**/") {
                    for component in form.split('/').filter(|c| !c.is_empty()) {
                        Part::parse(pattern, component)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Reads the default table plus `extra` policy patterns against the home forms: every
    /// policy glob is parsed here (a bad pattern is an error now), each set compiles on first
    /// use.
    #[cfg(test)]
    pub(crate) fn compile(extra: &[String], homes: &[PathBuf]) -> Result<Self, SandboxError> {
        Self::compile_located(extra, homes, Vec::new())
    }

    /// [`compile`](Sensitive::compile), with the stores the environment moved.
    pub(crate) fn compile_located(
        extra: &[String],
        homes: &[PathBuf],
        located: Vec<Located>,
    ) -> Result<Self, SandboxError> {
        // (forms, metas) for the absolute and the home-relative sets of each kind.
        let mut files = (Vec::new(), Vec::new());
        let mut trees = (Vec::new(), Vec::new());
        let mut home_files = (Vec::new(), Vec::new());
        let mut home_trees = (Vec::new(), Vec::new());
        let mut anchored = Vec::new();
        let entries = DEFAULT_SENSITIVE
            .iter()
            .map(|e| (e.pattern, e.what, e.when))
            .chain(
                extra
                    .iter()
                    .map(|p| (p.as_str(), POLICY_WHAT, SensitiveWhen::Always)),
            );
        for (order, (pattern, what, when)) in entries.enumerate() {
            let forms = absolute_forms(pattern, homes)?;
            for form in &forms {
                if !form.starts_with("/**/") {
                    anchored.push((pattern.to_owned(), form.clone(), what));
                }
            }
            // `absolute_forms` refused every other `~` spelling.
            let home_rest = pattern.trim_end_matches('/').strip_prefix("~/");
            let (forms, trees, files) = match home_rest {
                Some(rest) => (vec![rest.to_owned()], &mut home_trees, &mut home_files),
                None => (forms, &mut trees, &mut files),
            };
            for form in forms {
                // The policy's globs are parsed now (a bad one is an error, not a set that
                // fails on first use); the default table's by its tests. Each set is built
                // from the forms as text on first use.
                if order >= DEFAULT_SENSITIVE.len() {
                    glob_of(pattern, &form)?;
                    if let Some(base) = form.strip_suffix("/**") {
                        glob_of(pattern, base)?;
                    }
                }
                if let Some(base) = form.strip_suffix("/**") {
                    trees.0.push((pattern.to_owned(), base.to_owned()));
                    trees.1.push((order, what));
                    trees.0.push((pattern.to_owned(), form.clone()));
                    trees.1.push((order, what));
                } else {
                    files.0.push((pattern.to_owned(), form));
                    files.1.push((order, what, when));
                }
            }
        }
        let except = NOT_SENSITIVE
            .iter()
            .map(|pattern| ((*pattern).to_owned(), format!("/**/{pattern}")))
            .collect();
        Ok(Sensitive {
            files: Sets::new(files, home_files),
            trees: Sets::new(trees, home_trees),
            homes: homes.to_vec(),
            except: OnFirstUse::new(except, build_set),
            anchored: OnFirstUse::new(anchored, build_anchored),
            identities: OnFirstUse::new((homes.to_vec(), located.clone()), |(homes, located)| {
                Ok(store_identities(homes, located))
            }),
            located,
        })
    }

    /// What store `absolute` is by identity: a regular file with more than one link that is
    /// a hard link of a store file (the same device and inode as one).
    pub(crate) fn identity(&self, absolute: &Path) -> Option<&'static str> {
        use std::os::unix::fs::MetadataExt as _;
        let meta = std::fs::metadata(absolute).ok()?;
        if !meta.is_file() || meta.nlink() < 2 {
            return None;
        }
        match self.identities.get() {
            Ok(ids) => ids.get(&(meta.dev(), meta.ino())).copied(),
            Err(_) => Some(UNCOMPILED),
        }
    }

    /// The store the environment moved that `absolute` is in or is.
    fn located_at(&self, absolute: &Path) -> Option<&'static str> {
        self.located
            .iter()
            .find(|l| {
                if l.tree {
                    absolute.starts_with(&l.path)
                } else {
                    absolute == l.path
                }
            })
            .map(|l| l.what)
    }

    /// What sensitive location lies at or below the directory `absolute` (`/` holds
    /// `/etc/shadow`, `/home` holds every `~/.ssh`), for readers that descend a whole tree.
    /// Only anchored patterns count: `.env` or `id_rsa` may be anywhere, and a tree reader
    /// in a project is not refused for what a project might hold.
    pub(crate) fn below(&self, absolute: &Path, hidden: bool) -> Option<&'static str> {
        let components: Vec<&std::ffi::OsStr> = absolute
            .components()
            .filter_map(|c| match c {
                Component::Normal(name) => Some(name),
                _ => None,
            })
            .collect();
        if let Some(moved) = self.located.iter().find(|l| l.path.starts_with(absolute)) {
            return Some(moved.what);
        }
        let Ok(anchored) = self.anchored.get() else {
            return Some(UNCOMPILED);
        };
        'patterns: for (parts, what) in anchored {
            for (index, component) in components.iter().enumerate() {
                match parts.get(index) {
                    Some(Part::Any) => return Some(what),
                    Some(part) if part.matches(component) => {}
                    // Below a whole file pattern (`/etc/shadow/x`) or off the pattern's path.
                    _ => continue 'patterns,
                }
            }
            // Every component of the directory matched: the pattern's location is at or below,
            // unless the reader skips dot-names and the way down has one (`~/.ssh`).
            let hidden_way = parts
                .get(components.len()..)
                .unwrap_or(&[])
                .iter()
                .any(|p| matches!(p, Part::Literal(name) if name.starts_with('.')));
            if hidden || !hidden_way {
                return Some(what);
            }
        }
        self.matching(absolute)
    }

    /// What follows each home directory `absolute` is below: the builder's home forms, then
    /// every account's (`OTHER_HOMES`, where `*` is one whole component). `/home/al/.ssh/x`
    /// gives `.ssh/x`; the home itself gives the empty path.
    fn home_rests<'a>(&'a self, absolute: &'a Path) -> impl Iterator<Item = &'a Path> + 'a {
        let own = self
            .homes
            .iter()
            .filter_map(move |home| absolute.strip_prefix(home).ok());
        let others = OTHER_HOMES.iter().filter_map(move |other| {
            let mut rest = absolute.components();
            if rest.next() != Some(Component::RootDir) {
                return None;
            }
            for want in other.split('/').filter(|c| !c.is_empty()) {
                match rest.next() {
                    Some(Component::Normal(name))
                        if want == "*"
                            || name.to_str().is_some_and(|n| n.eq_ignore_ascii_case(want)) => {}
                    _ => return None,
                }
            }
            Some(rest.as_path())
        });
        own.chain(others)
    }

    /// What `absolute` holds when it is sensitive. `absolute` is matched as it is (no
    /// resolution); the filesystem is consulted only after a pattern matched (is it a directory,
    /// does a `.pem` hold a private key).
    pub(crate) fn matching(&self, absolute: &Path) -> Option<&'static str> {
        if let Some(what) = self.located_at(absolute) {
            return Some(what);
        }
        // One folded path shared by the absolute sets, one per home the path is below for
        // the home sets.
        let candidate = Folded::new(absolute);
        let rests: Vec<Folded> = self.home_rests(absolute).map(Folded::new).collect();
        // The first table entry that matches names the path, whichever set holds it.
        let Some(tree_hits) = self.trees.hits(&candidate, &rests) else {
            return Some(UNCOMPILED);
        };
        if let Some((_, what)) = tree_hits.into_iter().min_by_key(|(order, _)| *order)
            && !is_public_half(absolute)
        {
            return Some(what);
        }
        // A file pattern never matches a directory: until the file set is compiled anyway, one
        // `stat` answers for a directory (a working directory, a tree's root) instead of a
        // compile of a few hundred globs. Same answer either way.
        let is_dir = |path: &Path| std::fs::metadata(path).is_ok_and(|m| m.is_dir());
        if !self.files.absolute.is_compiled() && is_dir(absolute) {
            return None;
        }
        let Some(mut hits) = self.files.hits(&candidate, &rests) else {
            return Some(UNCOMPILED);
        };
        // An exception set that failed to compile excepts nothing (fail closed).
        let excepted = self.except.get().is_ok_and(|except| {
            let mut any = false;
            except.each_match(&candidate, |_| any = true) && any
        });
        if hits.is_empty() || excepted {
            return None;
        }
        let meta = std::fs::metadata(absolute);
        if meta.as_ref().is_ok_and(std::fs::Metadata::is_dir) {
            return None;
        }
        hits.sort_by_key(|(order, _, _)| *order);
        for (_, what, when) in hits {
            match when {
                SensitiveWhen::Always => return Some(what),
                SensitiveWhen::HoldsPrivateKey => {
                    if meta.is_ok() && holds_private_key(absolute) {
                        return Some(what);
                    }
                }
                SensitiveWhen::HoldsUrlCredential => {
                    if meta.is_ok() && holds_url_credential(absolute) {
                        return Some(what);
                    }
                }
                SensitiveWhen::UnlessDocument => {
                    if !is_document(absolute) {
                        return Some(what);
                    }
                }
            }
        }
        None
    }
}

/// Store files by (device, inode).
type Identities = HashMap<(u64, u64), &'static str>;

/// How many entries of a store directory are looked at for identities.
const IDENTITY_CAP: usize = 512;

/// (device, inode) of the store files at fixed places: each literal `~/` or `/` entry below
/// the builder's homes, the files of literal store trees (two levels down) and the located
/// stores.
fn store_identities(homes: &[PathBuf], located: &[Located]) -> HashMap<(u64, u64), &'static str> {
    use std::os::unix::fs::MetadataExt as _;
    let mut places: Vec<(PathBuf, bool, &'static str)> = Vec::new();
    for entry in DEFAULT_SENSITIVE {
        let (rest, tree) = match entry.pattern.strip_suffix("/**") {
            Some(dir) => (dir, true),
            None => (entry.pattern, false),
        };
        if rest.contains(['*', '?', '[', '{', '\\']) {
            continue;
        }
        if let Some(below) = rest.strip_prefix("~/") {
            places.extend(homes.iter().map(|h| (h.join(below), tree, entry.what)));
        } else if rest.starts_with('/') {
            places.push((PathBuf::from(rest), tree, entry.what));
        }
    }
    places.extend(located.iter().map(|l| (l.path.clone(), l.tree, l.what)));
    let mut ids = HashMap::new();
    let mut seen = 0usize;
    let add = |path: &Path, what: &'static str, ids: &mut HashMap<(u64, u64), &'static str>| {
        if let Ok(meta) = std::fs::metadata(path)
            && meta.is_file()
        {
            ids.entry((meta.dev(), meta.ino())).or_insert(what);
        }
    };
    for (path, tree, what) in places {
        if !tree {
            add(&path, what, &mut ids);
            continue;
        }
        let mut dirs = vec![(path, 0u8)];
        while let Some((dir, depth)) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                seen += 1;
                if seen > IDENTITY_CAP {
                    return ids;
                }
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                if kind.is_dir() && depth < 2 {
                    dirs.push((entry.path(), depth + 1));
                } else if kind.is_file() {
                    add(&entry.path(), what, &mut ids);
                }
            }
        }
    }
    ids
}

/// Leading bytes of document formats that share an extension with key files.
pub(crate) const DOCUMENT_MAGIC: &[(&[u8], &str)] = &[
    (
        b"PK\x03\x04",
        "a zip archive (Keynote, OpenDocument, Office)",
    ),
    (b"%PDF-", "a PDF document"),
];

/// Whether `path` is a regular file whose head is a document format ([`DOCUMENT_MAGIC`]).
fn is_document(path: &Path) -> bool {
    match read_head(path, 8) {
        Ok(Head::Bytes(head)) => DOCUMENT_MAGIC
            .iter()
            .any(|(magic, _)| head.starts_with(magic)),
        _ => false,
    }
}

/// Whether `path` is the public half of a key pair: a regular `.pub` file with no private key
/// block in it (`~/.ssh/id_ed25519.pub` is handed out on purpose; a private key renamed
/// `.pub` is still a key).
fn is_public_half(path: &Path) -> bool {
    let public = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("pub"));
    public
        && matches!(read_head(path, SNIFF_BYTES), Ok(Head::Bytes(head)) if !private_key_in(&head))
}

/// Whether a file holds a private key block; unreadable or not a regular file counts as yes
/// (fail closed; a FIFO is never opened).
fn holds_private_key(path: &Path) -> bool {
    match read_head(path, SNIFF_BYTES) {
        Ok(Head::Bytes(head)) => private_key_in(&head),
        Ok(Head::Missing) => false,
        _ => true,
    }
}

/// Whether `head` holds a private key block of any format the guard knows.
pub(crate) fn private_key_in(head: &[u8]) -> bool {
    PRIVATE_KEY_MARKERS
        .iter()
        .any(|marker| memchr::memmem::find(head, marker.as_bytes()).is_some())
}

/// What starts a private key in a text file: PEM blocks of every kind (`PRIVATE KEY`, `RSA
/// PRIVATE KEY`, `OPENSSH PRIVATE KEY`, `ENCRYPTED PRIVATE KEY`, PGP's `PRIVATE KEY BLOCK`),
/// PuTTY's key files and age identities.
pub(crate) const PRIVATE_KEY_MARKERS: &[&str] =
    &["PRIVATE KEY", "PuTTY-User-Key-File-", "AGE-SECRET-KEY-1"];

/// Whether a file holds a URL whose user part is a credential; unreadable counts as yes.
fn holds_url_credential(path: &Path) -> bool {
    match read_head(path, SNIFF_BYTES) {
        Ok(Head::Bytes(head)) => url_credential_in(&String::from_utf8_lossy(&head)),
        Ok(Head::Missing) => false,
        _ => true,
    }
}

/// Shortest user name (with no password) taken for a token: `git@` and `alice@` are names,
/// `ghp_...@` and `glpat-...@` are tokens.
const TOKEN_USER_MIN: usize = 16;

/// Whether `text` has a `scheme://userinfo@host` whose userinfo holds a password or is
/// token-long.
fn url_credential_in(text: &str) -> bool {
    text.match_indices("://").any(|(at, _)| {
        let rest = text.get(at + 3..).unwrap_or_default();
        let authority = rest
            .split(|c: char| c == '/' || c == '?' || c == '#' || c.is_whitespace() || c == '"')
            .next()
            .unwrap_or_default();
        let Some((userinfo, _host)) = authority.rsplit_once('@') else {
            return false;
        };
        match userinfo.split_once(':') {
            Some((_, password)) => !password.is_empty(),
            None => userinfo.len() >= TOKEN_USER_MIN,
        }
    })
}

/// The absolute glob forms of one table pattern.
fn absolute_forms(pattern: &str, homes: &[PathBuf]) -> Result<Vec<String>, SandboxError> {
    let bad = |message: &str| SandboxError::BadPattern {
        pattern: pattern.to_owned(),
        message: message.to_owned(),
    };
    let trimmed = pattern.trim_end_matches('/');
    if trimmed.is_empty() {
        return Err(bad("an empty sensitive pattern would match nothing"));
    }
    if let Some(rest) = trimmed.strip_prefix("~/") {
        // The builder's home forms (escaped: a home is a literal path), then every account's.
        let mut forms: Vec<String> = homes
            .iter()
            .filter_map(|home| home.to_str())
            .map(|home| format!("{}/{rest}", globset::escape(home.trim_end_matches('/'))))
            .collect();
        for other in OTHER_HOMES {
            let form = format!("{other}/{rest}");
            if !forms.contains(&form) {
                forms.push(form);
            }
        }
        return Ok(forms);
    }
    if trimmed.starts_with('~') {
        return Err(bad("only `~/` (the home directory) is understood"));
    }
    if trimmed.starts_with('/') {
        return Ok(vec![trimmed.to_owned()]);
    }
    Ok(vec![format!("/**/{trimmed}")])
}

/// Sensitive globs ignore ASCII case: on a case-insensitive filesystem (macOS, Windows, a
/// `casefold` ext4 directory) `.ENV` and `.SSH/ID_RSA` open the secrets themselves, and on any
/// other a file so named is as likely to hold one.
///
/// globset compiles every case-insensitive glob into one regex set: the whole table, paid by
/// every process on its first file check; a case-sensitive glob of a simple shape is a hash
/// or literal lookup instead (and [`FoldedSet`] matches the simplest shapes without globset). So the case is folded here: the form is lowercased
/// and matched against the lowercased path ([`Folded`]), which is what `(?-u)(?i)` does to a
/// literal, `?`, `*` and `**`. Kept case-insensitive (a regex either way), matched against
/// the same lowercased path, which a case-insensitive glob cannot tell from the original:
/// a class (`[Z-a]` lowercased is no range, `[0-Z]` lowercased takes in `[\]^_`), and a form
/// ending in `.`, which could match a final `..` that globset's basename and extension
/// strategies never see. `tests::folded_sets_answer_as_case_insensitive_globsets` holds the
/// two constructions to the same matches.
fn glob_of(pattern: &str, form: &str) -> Result<(Glob, bool), SandboxError> {
    if !form.contains('[') && !form.ends_with('.') {
        // `/**/x` only as `**/x` reaches globset's cheap strategies; the same on absolute
        // paths unless `x` could itself start a path (`**`, an alternation).
        let (folded, absolute_only) = match form.strip_prefix("/**/") {
            Some(rest) if !rest.contains("**") && !rest.contains('{') => {
                (format!("**/{rest}"), true)
            }
            _ => (form.to_owned(), false),
        };
        // Letter case is no glob syntax outside a class: this parses exactly when the form
        // as written does. A form that does not is parsed as written below, for its error.
        if let Ok(glob) = GlobBuilder::new(&folded.to_ascii_lowercase())
            .literal_separator(true)
            .backslash_escape(true)
            .build()
        {
            return Ok((glob, absolute_only));
        }
    }
    Ok((insensitive_glob(pattern, form)?, false))
}

/// The glob `form` as written, ASCII case ignored.
fn insensitive_glob(pattern: &str, form: &str) -> Result<Glob, SandboxError> {
    GlobBuilder::new(form)
        .case_insensitive(true)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|err| SandboxError::BadPattern {
            pattern: pattern.to_owned(),
            message: err.kind().to_string(),
        })
}

/// The home forms to anchor `~/` patterns at: the absolute path as given (`.` dropped) and its
/// canonical form when it differs.
pub(crate) fn home_forms(home: Option<&Path>) -> Vec<PathBuf> {
    let Some(home) = home.filter(|h| h.is_absolute()) else {
        return Vec::new();
    };
    let given: PathBuf = home
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect();
    let mut forms = vec![given];
    if let Ok(real) = std::fs::canonicalize(home)
        && !forms.contains(&real)
    {
        forms.push(real);
    }
    forms
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

    use super::*;

    const HOME: &str = "/home/u";

    fn table() -> Sensitive {
        Sensitive::compile(&["secrets/**".to_owned()], &[PathBuf::from(HOME)]).unwrap()
    }

    fn expand(example: &str) -> PathBuf {
        match example.strip_prefix("~/") {
            Some(rest) => Path::new(HOME).join(rest),
            None => PathBuf::from(example),
        }
    }

    #[test]
    fn search_globs_that_select_a_secret_are_found() {
        for glob in [
            ".env",
            ".en?",
            ".e*",
            "*",
            "**/*",
            "[.]env",
            ".{env,x}",
            "id_*",
            "*.key",
            ".npm*",
            "keys/id_*",
        ] {
            assert!(search_glob_selects_sensitive(glob).is_some(), "{glob}");
        }
        for glob in [
            "*.rs",
            "src/**/*.ts",
            "!.env",
            "*.md",
            "Cargo.toml",
            ".env.example",
            "*.json",
            "*.yml",
            "config*",
        ] {
            assert_eq!(search_glob_selects_sensitive(glob), None, "{glob}");
        }
    }

    #[test]
    fn every_entry_matches_its_example() {
        let dir = tempfile::tempdir().unwrap();
        let t = table();
        for entry in DEFAULT_SENSITIVE {
            let path = match entry.when {
                SensitiveWhen::Always => expand(entry.example),
                SensitiveWhen::HoldsPrivateKey => {
                    // Judged by content: the example must exist and hold a key.
                    let p = dir.path().join("key.pem");
                    std::fs::write(&p, "-----BEGIN PRIVATE KEY-----\nMII\n").unwrap();
                    p
                }
                SensitiveWhen::UnlessDocument => {
                    let p = dir.path().join("server.key");
                    std::fs::write(&p, "-----BEGIN PRIVATE KEY-----\nMII\n").unwrap();
                    p
                }
                SensitiveWhen::HoldsUrlCredential => {
                    let p = dir.path().join(".git/config");
                    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
                    std::fs::write(
                        &p,
                        "[remote \"origin\"]\n\turl = https://bot:s3cret@git.example.com/r.git\n",
                    )
                    .unwrap();
                    p
                }
            };
            assert_eq!(
                t.matching(&path),
                Some(entry.what),
                "{} does not match its example {}",
                entry.pattern,
                path.display()
            );
        }
    }

    #[test]
    fn near_misses_are_not_sensitive() {
        let t = table();
        for path in [
            "/p/.env.example",
            "/p/.env.sample",
            "/p/.env.template",
            "/p/.env.dist",
            "/p/.env.local.example",
            "/p/prod.env.example",
            "/p/.envrc",
            "/p/environment.ts",
            "/p/keys/id_rsa.pub",
            "/p/id_ed25519.pub",
            "/p/src/env.rs",
            "/p/keyboard.rs",
            "/p/src/key.rs",
            "/home/u/.sshx/config",
            "/home/u/.ssh_notes",
            "/home/u/.docker/daemon.json",
            "/home/u/.kube/cache/x",
            "/home/u/.claude/settings.json",
            "/home/u/.codex/config.toml",
            "/home/other/.sshkeys/id_rsa.pub",
            "/home/a/b/.ssh/config",
            "/etc/passwd",
            "/etc/ssh/ssh_host_ed25519_key.pub",
            "/etc/ssh/sshd_config",
            "/proc/1/status",
            "/proc/self/cmdline",
            "/p/README.md",
            "/p/notes/secrets.md",
        ] {
            assert_eq!(t.matching(Path::new(path)), None, "{path}");
        }
    }

    #[test]
    fn other_accounts_homes_are_covered() {
        let t = table();
        for path in [
            "/root/.ssh/id_ed25519",
            "/home/bob/.aws/credentials",
            "/Users/al/.netrc",
        ] {
            assert!(t.matching(Path::new(path)).is_some(), "{path}");
        }
    }

    #[test]
    fn below_finds_anchored_locations_under_a_directory() {
        let t = table();
        for dir in [
            "/",
            "/etc",
            "/home",
            "/home/u",
            "/home/u/.ssh",
            "/home/u/.ssh/keys",
            "/proc",
            "/proc/1",
            "/root",
            "/Users",
            "/home/u/.mozilla",
        ] {
            assert!(
                t.below(Path::new(dir), true).is_some(),
                "{dir} holds a secret"
            );
        }
        for dir in [
            "/home/u/src/app",
            "/etc/nginx",
            "/usr",
            "/tmp/p",
            "/proc/1/fd",
            "/home/u/.config/nvim",
            "/home/u/.mozilla/firefox/abc/extensions",
        ] {
            assert_eq!(t.below(Path::new(dir), true), None, "{dir}");
        }
    }

    #[test]
    fn a_reader_that_skips_dot_names_does_not_reach_home_stores() {
        let t = table();
        // `/etc/shadow` has no dot-name on the way; `~/.ssh` has.
        assert!(t.below(Path::new("/etc"), false).is_some());
        assert!(t.below(Path::new("/"), false).is_some());
        // Below the home, only the snap browser profile has no dot-name on its way.
        assert_eq!(
            t.below(Path::new("/home/u"), false),
            Some("a browser profile (saved passwords, cookies)")
        );
        assert_eq!(t.below(Path::new("/home/u/src"), false), None);
        assert!(t.below(Path::new("/home/u/.ssh"), false).is_some());
        assert!(t.below(Path::new("/home/u"), true).is_some());
    }

    #[test]
    fn policy_patterns_extend_the_table() {
        let t = table();
        assert_eq!(t.matching(Path::new("/p/secrets/k")), Some(POLICY_WHAT));
        assert_eq!(t.matching(Path::new("/p/a/secrets")), Some(POLICY_WHAT));
    }

    #[test]
    fn trees_match_the_directory_itself_files_never_match_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::create_dir_all(home.join("proj/.env/bin")).unwrap();
        let t = Sensitive::compile(&[], &home_forms(Some(&home))).unwrap();
        assert!(t.matching(&home.join(".ssh")).is_some());
        assert_eq!(t.matching(&home.join("proj/.env")), None, "a venv");
        assert_eq!(t.matching(&home.join("proj/.env/bin/python")), None);
    }

    #[test]
    fn public_halves_and_documents_named_like_keys_are_not_secrets() {
        let dir = tempfile::tempdir().unwrap();
        let home = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        let t = Sensitive::compile(&[], &home_forms(Some(&home))).unwrap();
        let public = home.join(".ssh/id_ed25519.pub");
        std::fs::write(&public, "ssh-ed25519 AAAAC3Nza u@h\n").unwrap();
        assert_eq!(t.matching(&public), None);
        std::fs::write(&public, "-----BEGIN OPENSSH PRIVATE KEY-----\n").unwrap();
        assert!(t.matching(&public).is_some(), "a key renamed .pub");
        assert!(t.matching(&home.join(".ssh/known_hosts")).is_some());
        let talk = home.join("talk.key");
        std::fs::write(&talk, b"PK\x03\x04\x14\x00").unwrap();
        assert_eq!(t.matching(&talk), None, "a Keynote file");
        std::fs::write(&talk, "-----BEGIN EC PRIVATE KEY-----\n").unwrap();
        assert!(t.matching(&talk).is_some());
        std::fs::write(&talk, "3f9a0c1b2d").unwrap();
        assert!(t.matching(&talk).is_some(), "a raw key (Rails master.key)");
        assert!(t.matching(&home.join("new.key")).is_some(), "not there yet");
    }

    #[test]
    fn pem_is_judged_by_content() {
        let dir = tempfile::tempdir().unwrap();
        let t = table();
        let cert = dir.path().join("cert.pem");
        std::fs::write(&cert, "-----BEGIN CERTIFICATE-----\nMII\n").unwrap();
        assert_eq!(t.matching(&cert), None);
        let key = dir.path().join("server.pem");
        std::fs::write(&key, "-----BEGIN RSA PRIVATE KEY-----\nMII\n").unwrap();
        assert!(t.matching(&key).is_some());
        assert_eq!(t.matching(&dir.path().join("new.pem")), None);
    }

    #[test]
    fn bad_patterns_are_errors() {
        // `/x/{a/b}` parses whole but not component by component (`{a`): the validation the
        // builder runs must refuse whatever the compile on first use would.
        for bad in ["", "~user/x", "a/[z"] {
            let err = Sensitive::compile(&[bad.to_owned()], &[]).unwrap_err();
            assert_eq!(err.code(), "bad_pattern", "{bad}");
        }
        for bad in ["", "~user/x", "a/[z", "/x/{a/b}"] {
            let err = Sensitive::validate(&[bad.to_owned()], &[]).unwrap_err();
            assert_eq!(err.code(), "bad_pattern", "validate {bad}");
        }
        // Had the builder not refused it, the anchored set would fail to compile on first use
        // and every tree read would be refused (fail closed).
        let t = Sensitive::compile(&["/x/{a/b}".to_owned()], &[]).unwrap();
        assert_eq!(t.below(Path::new("/srv"), true), Some(UNCOMPILED));
        for good in ["secrets/**", "~/.config/x/*.json", "/srv/keys/{a,b}"] {
            Sensitive::validate(&[good.to_owned()], &[PathBuf::from(HOME)]).unwrap();
            Sensitive::compile(&[good.to_owned()], &[PathBuf::from(HOME)]).unwrap();
        }
    }

    #[test]
    fn a_git_config_is_a_secret_only_when_a_url_embeds_a_credential() {
        for (text, secret) in [
            ("url = https://alice:hunter2@github.com/o/r.git", true),
            (
                "url = https://ghp_0123456789abcdefABCDEF@github.com/o/r",
                true,
            ),
            ("url = https://oauth2:glpat-xyz@gitlab.com/o/r.git", true),
            ("url = git@github.com:o/r.git", false),
            ("url = ssh://git@github.com/o/r.git", false),
            ("url = https://github.com/o/r.git", false),
            ("url = https://alice@github.com/o/r.git", false),
            ("url = https://alice:@github.com/o/r.git", false),
            (
                "[user]\n\temail = a@b.c\n[remote \"o\"]\n\turl = https://x.org/r",
                false,
            ),
        ] {
            assert_eq!(url_credential_in(text), secret, "{text}");
        }
        let t = table();
        let dir = tempfile::tempdir().unwrap();
        let git = dir.path().join(".git");
        std::fs::create_dir(&git).unwrap();
        std::fs::write(git.join("config"), "[core]\n\tbare = false\n").unwrap();
        assert_eq!(t.matching(&git.join("config")), None);
        std::fs::write(git.join("config"), "url = https://u:p4ss@h/r\n").unwrap();
        assert!(t.matching(&git.join("config")).is_some());
        // Not there yet: nothing to read, nothing secret (a write is judged as protected).
        assert_eq!(t.matching(&dir.path().join("new/.git/config")), None);
    }

    #[test]
    fn case_variants_of_secrets_are_secrets() {
        let t = table();
        for hit in [
            "/p/.ENV".to_owned(),
            "/p/.Env.Production".to_owned(),
            format!("{HOME}/.SSH/config"),
            "/HOME/bob/.Aws/Credentials".to_owned(),
            "/ETC/SHADOW".to_owned(),
        ] {
            assert!(t.matching(Path::new(&hit)).is_some(), "{hit}");
        }
        // The exceptions fold too: a template is no secret in any case.
        assert_eq!(t.matching(Path::new("/p/.ENV.EXAMPLE")), None);
        assert!(t.below(Path::new("/HOME"), true).is_some());
    }

    #[test]
    fn other_homes_use_only_literal_components_and_stars() {
        for home in OTHER_HOMES {
            assert!(home.starts_with('/'), "{home}");
            for c in home.split('/').filter(|c| !c.is_empty()) {
                assert!(
                    c == "*" || !c.contains(['*', '?', '[', '{', '\\']),
                    "{home}"
                );
            }
        }
    }

    #[test]
    fn home_patterns_match_below_every_home_and_nowhere_else() {
        let t = Sensitive::compile(&["~/.config/tool/token".to_owned()], &[PathBuf::from(HOME)])
            .unwrap();
        for hit in [
            format!("{HOME}/.ssh/id_ed25519"),
            format!("{HOME}/.config/tool/token"),
            "/root/.aws/credentials".to_owned(),
            "/home/bob/.ssh/config".to_owned(),
            "/Users/carol/.ssh".to_owned(),
            "/home/bob/.config/tool/token".to_owned(),
        ] {
            assert!(t.matching(Path::new(&hit)).is_some(), "{hit}");
        }
        for miss in [
            "/srv/.ssh/id_rsa_notes.txt",
            "/home/.ssh/config",
            "/home/bob/x/.config/tool/token",
            "/home/bob/../.aws/credentials",
            "/rootx/.aws/credentials",
        ] {
            assert_eq!(t.matching(Path::new(miss)), None, "{miss}");
        }
    }

    #[test]
    fn a_directory_is_answered_without_compiling_the_file_set() {
        let t = table();
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("project.env");
        std::fs::create_dir(&project).unwrap();
        // `*.env` names files; the directory is not one, and no set of files was compiled.
        assert_eq!(t.matching(&project), None);
        assert!(!t.files.absolute.is_compiled());
        let file = dir.path().join("prod.env");
        std::fs::write(&file, "KEY=1").unwrap();
        assert!(t.matching(&file).is_some());
        assert!(t.files.absolute.is_compiled());
        // Compiled or not, the set gives a directory the same answer.
        assert_eq!(t.matching(&project), None);
    }

    #[test]
    fn a_sandbox_with_a_bad_pattern_is_not_built() {
        // The sets compile on first use; a bad pattern is still refused when the sandbox is built.
        let dir = tempfile::tempdir().unwrap();
        let err = crate::Sandbox::builder(dir.path())
            .sensitive("a/[z")
            .build()
            .unwrap_err();
        assert_eq!(err.code(), "bad_pattern");
        let err = crate::Sandbox::builder(dir.path())
            .protected("")
            .build()
            .unwrap_err();
        assert_eq!(err.code(), "bad_pattern");
    }

    #[test]
    fn home_forms_never_include_a_relative_path() {
        assert!(home_forms(Some(Path::new("relative"))).is_empty());
        assert!(home_forms(None).is_empty());
        // HOME=/ (some containers): `~/.ssh/**` is `/.ssh/**`, not `//.ssh/**`.
        let root_home = Sensitive::compile(&[], &home_forms(Some(Path::new("/")))).unwrap();
        assert!(root_home.matching(Path::new("/.ssh/id_rsa")).is_some());
    }

    /// Paths made of the table's own pieces (components of every form, `*` filled in),
    /// other accounts' homes, relative paths, `.`/`..`, non-ASCII case partners of ASCII
    /// letters (the Kelvin sign, the long s: globset's folding is ASCII-only) and random case.
    fn generated_path() -> impl proptest::strategy::Strategy<Value = PathBuf> {
        use proptest::prelude::*;
        let mut pieces: Vec<String> = Vec::new();
        let patterns = DEFAULT_SENSITIVE
            .iter()
            .map(|e| e.pattern)
            .chain(NOT_SENSITIVE.iter().copied());
        for pattern in patterns {
            for component in pattern.split('/').filter(|c| !c.is_empty()) {
                for fill in ["", "x", "prod", "1"] {
                    let piece = component.replace("**", fill).replace('*', fill);
                    if !pieces.contains(&piece) {
                        pieces.push(piece);
                    }
                }
            }
        }
        for extra in [
            "",
            ".",
            "..",
            "x",
            "home",
            "u",
            "root",
            "Users",
            "bob",
            "p",
            "\u{212a}ey",
            ".\u{17f}sh",
            "caf\u{e9}.env",
            "a\nb",
            "id_rsa.pub",
            ".env.example.bak",
        ] {
            pieces.push(extra.to_owned());
        }
        let prefixes = [
            "/",
            "/home/u/",
            "/root/",
            "/Users/Bob/",
            "/HOME/x/",
            "",
            "./",
            "//",
        ];
        (
            prop::collection::vec(0..pieces.len(), 1..7),
            0..prefixes.len(),
            any::<u64>(),
            any::<bool>(),
        )
            .prop_map(move |(picks, prefix, case, slash)| {
                let mut path = prefixes.get(prefix).copied().unwrap_or("/").to_owned();
                let joined: Vec<&str> = picks
                    .iter()
                    .filter_map(|&i| pieces.get(i).map(String::as_str))
                    .collect();
                path.push_str(&joined.join("/"));
                if slash {
                    path.push('/');
                }
                let cased: String = path
                    .chars()
                    .enumerate()
                    .map(|(i, c)| {
                        if case >> (i % 64) & 1 == 1 {
                            c.to_ascii_uppercase()
                        } else {
                            c
                        }
                    })
                    .collect();
                PathBuf::from(cased)
            })
    }

    /// Each set of the table compiled the old way: one case-insensitive globset of the forms
    /// as written, matched against the path as it is.
    fn insensitive_set(forms: &[SetForm]) -> GlobSet {
        let mut set = GlobSetBuilder::new();
        for (pattern, form) in forms {
            set.add(insensitive_glob(pattern, form).unwrap());
        }
        set.build().unwrap()
    }

    #[test]
    fn a_globs_required_text_is_a_literal_run_of_one_component() {
        let need = |form: &str| required_text(form).map(|t| String::from_utf8(t).unwrap());
        assert_eq!(need("/proc/*/environ").as_deref(), Some("environ"));
        // Or a rooted form's first component with its slashes, when that is longer.
        assert_eq!(need("/proc/*/task/*/mem").as_deref(), Some("/proc/"));
        assert_eq!(need("/Proc/*/x").as_deref(), Some("/proc/"));
        assert_eq!(need("/**/*/task/*/mem").as_deref(), Some("task"));
        assert_eq!(need("**/.env.*").as_deref(), Some(".env."));
        assert_eq!(
            need("/etc/ssh/ssh_host_*_key").as_deref(),
            Some("ssh_host_")
        );
        assert_eq!(need("**/Cookies[-_]X*").as_deref(), Some("cookies"));
        assert_eq!(need("**/[]x]abc").as_deref(), Some("abc"));
        // Alternations, escapes, an unclosed class and one-letter runs promise nothing.
        for form in ["**/{a,bb}", "**/a\\*b", "**/[ab", "**/a*b"] {
            assert_eq!(need(form), None, "{form}");
        }
    }

    #[test]
    fn the_globs_compile_only_for_a_path_that_could_match_one() {
        let forms: Vec<SetForm> = vec![
            ("p".into(), "/**/id_rsa".into()),
            ("p".into(), "/proc/*/environ".into()),
        ];
        let set = build_set(&forms).unwrap();
        let mut hits = Vec::new();
        assert!(set.each_match(&Folded::new(Path::new("/w/src/lib.rs")), |i| hits.push(i)));
        assert!(hits.is_empty());
        assert!(
            set.globs.get().is_none(),
            "compiled for a path no glob can match"
        );
        assert!(set.each_match(&Folded::new(Path::new("/PROC/1/Environ")), |i| hits.push(i)));
        assert_eq!(hits, vec![1]);
        assert!(set.globs.get().is_some());

        // A component that merely holds a required run does not compile a rooted form.
        let forms: Vec<SetForm> = vec![("p".into(), "/proc/*/task/*/mem".into())];
        let set = build_set(&forms).unwrap();
        let mut hits = Vec::new();
        let xtask = Folded::new(Path::new("/w/xtask-bench/src/m0.rs"));
        assert!(set.each_match(&xtask, |i| hits.push(i)));
        assert!(hits.is_empty() && set.globs.get().is_none());
        assert!(
            set.each_match(&Folded::new(Path::new("/proc/7/task/8/mem")), |i| hits
                .push(i))
        );
        assert_eq!(hits, vec![0]);
    }

    #[test]
    fn folded_sets_answer_as_case_insensitive_globsets() {
        use proptest::test_runner::{Config, TestCaseError, TestRunner};
        // Policy patterns with every shape the table lacks: classes (ranges across the case
        // boundary), alternations, escapes, a leading `**`, a trailing dot.
        let extra: Vec<String> = [
            "[A-Z]*.Secret",
            "[Z-a]x",
            "[0-Z]y",
            "cred{s,entials}.TXT",
            "\\Ke\\y",
            "**/tok",
            "Dir/**",
            "x.",
            "*.",
            "~/.Tool/[a-c]*",
            "/Srv/{A,b}/**",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        let homes = [PathBuf::from("/home/u"), PathBuf::from("/Home/U")];
        let t = Sensitive::compile(&extra, &homes).unwrap();
        let sets: Vec<(GlobSet, FoldedSet)> = [
            t.files.absolute.input(),
            t.files.home.input(),
            t.trees.absolute.input(),
            t.trees.home.input(),
            t.except.input(),
        ]
        .into_iter()
        .map(|globs| (insensitive_set(globs), build_set(globs).unwrap()))
        .collect();
        let mut runner = TestRunner::new(Config::with_cases(20_000));
        runner
            .run(&generated_path(), |path| {
                let folded = Folded::new(&path);
                for (old, new) in &sets {
                    let want = old.matches(&path);
                    let mut got = Vec::new();
                    assert!(new.each_match(&folded, |index| got.push(index)));
                    got.sort_unstable();
                    if want != got {
                        return Err(TestCaseError::fail(format!(
                            "{:?}: case-insensitive {want:?}, folded {got:?}",
                            path
                        )));
                    }
                }
                Ok(())
            })
            .unwrap();
    }
}

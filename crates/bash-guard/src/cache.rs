//! A bounded LRU cache of verdicts: agents repeat the same commands constantly.

use std::hash::{BuildHasher, Hash, Hasher};
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::analyze::Analyzer;
use crate::judge::PathJudge;
use crate::verdict::Verdict;

struct Entry {
    command: String,
    cwd: PathBuf,
    policy: (u64, u64),
    verdict: Arc<Verdict>,
    /// Verdicts that consulted the path judge depend on the filesystem (a symlink can be
    /// retargeted), so they expire; verdicts that did not are pure functions of the key.
    expires: Option<Instant>,
}

/// An [`Analyzer`] with its [`PathJudge`] and a bounded LRU of verdicts keyed by
/// (command, cwd, analyzer fingerprint, judge fingerprint). The cache belongs to one judge, so
/// a verdict is never reused under other roots; a judge whose answers change must change its
/// [`PathJudge::fingerprint`].
pub struct CachedAnalyzer {
    analyzer: Analyzer,
    judge: Arc<dyn PathJudge>,
    hasher: std::collections::hash_map::RandomState,
    path_ttl: Duration,
    cache: Mutex<lru::LruCache<u64, Entry>>,
}

impl std::fmt::Debug for CachedAnalyzer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedAnalyzer")
            .field("analyzer", &self.analyzer)
            .finish_non_exhaustive()
    }
}

impl CachedAnalyzer {
    /// Caches up to `capacity` verdicts (at least one); verdicts that consulted the judge live
    /// for 2 seconds.
    pub fn new(analyzer: Analyzer, judge: Arc<dyn PathJudge>, capacity: usize) -> CachedAnalyzer {
        CachedAnalyzer {
            analyzer,
            judge,
            hasher: std::collections::hash_map::RandomState::new(),
            path_ttl: Duration::from_secs(2),
            cache: Mutex::new(lru::LruCache::new(
                NonZeroUsize::new(capacity).unwrap_or(NonZeroUsize::MIN),
            )),
        }
    }

    /// Sets how long a verdict that depended on path judgements stays valid.
    pub fn with_path_ttl(mut self, ttl: Duration) -> CachedAnalyzer {
        self.path_ttl = ttl;
        self
    }

    /// The wrapped analyzer.
    pub fn analyzer(&self) -> &Analyzer {
        &self.analyzer
    }

    /// Classifies `command` in `cwd`, answering from the cache when it can.
    pub fn analyze(&self, command: &str, cwd: &Path) -> Arc<Verdict> {
        let policy = (self.analyzer.fingerprint(), self.judge.fingerprint());
        let mut h = self.hasher.build_hasher();
        command.hash(&mut h);
        cwd.hash(&mut h);
        policy.hash(&mut h);
        let key = h.finish();
        if let Ok(mut cache) = self.cache.lock()
            && let Some(e) = cache.get(&key)
            && e.command == command
            && e.cwd == cwd
            && e.policy == policy
            && e.expires.is_none_or(|t| Instant::now() < t)
        {
            return Arc::clone(&e.verdict);
        }
        let (verdict, judged) = self
            .analyzer
            .analyze_tracked(command, cwd, self.judge.as_ref());
        let verdict = Arc::new(verdict);
        if let Ok(mut cache) = self.cache.lock() {
            cache.put(
                key,
                Entry {
                    command: command.to_owned(),
                    cwd: cwd.to_path_buf(),
                    policy,
                    verdict: Arc::clone(&verdict),
                    expires: judged.then(|| Instant::now() + self.path_ttl),
                },
            );
        }
        verdict
    }

    /// Forgets every cached verdict.
    pub fn clear(&self) {
        if let Ok(mut cache) = self.cache.lock() {
            cache.clear();
        }
    }
}
/// Longest command whose split is kept; longer ones are split every time (they are rare, and
/// the cache's memory stays bounded at `SPLIT_CAPACITY` times this).
const SPLIT_MAX_LEN: usize = 4096;
const SPLIT_CAPACITY: usize = 512;

type SplitKey = (String, Option<String>);
type SplitCache = lru::LruCache<SplitKey, Result<Vec<String>, crate::ParseError>>;

/// [`crate::simple_commands`] behind a process-wide LRU keyed by the command and `HOME` (which
/// `~` expands to). Permission rules split every `run_bash` command the analyzer also judges,
/// and a parse costs tens of microseconds; agents repeat the same commands constantly.
pub fn simple_commands_cached(command: &str) -> Result<Vec<String>, crate::ParseError> {
    static CACHE: std::sync::LazyLock<Mutex<SplitCache>> = std::sync::LazyLock::new(|| {
        Mutex::new(lru::LruCache::new(
            NonZeroUsize::new(SPLIT_CAPACITY).unwrap_or(NonZeroUsize::MIN),
        ))
    });
    if command.len() > SPLIT_MAX_LEN {
        return crate::simple_commands(command);
    }
    let key = (command.to_owned(), std::env::var("HOME").ok());
    if let Some(hit) = CACHE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(&key)
    {
        return hit.clone();
    }
    let split = crate::simple_commands(command);
    CACHE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .put(key, split.clone());
    split
}

#[cfg(test)]
mod split_tests {
    #[test]
    fn the_cached_split_is_the_split_and_keeps_errors() {
        for cmd in [
            "ls && cat a | wc -l",
            "echo $(rm -rf /tmp/x)",
            "if then fi",
            "( (ls) )",
        ] {
            assert_eq!(
                super::simple_commands_cached(cmd),
                crate::simple_commands(cmd),
                "{cmd}"
            );
            // Twice: the second answer comes from the cache.
            assert_eq!(
                super::simple_commands_cached(cmd),
                crate::simple_commands(cmd),
                "{cmd}"
            );
        }
        assert!(super::simple_commands_cached("if then fi").is_err());
    }
}

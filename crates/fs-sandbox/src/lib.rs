#![doc = include_str!("../README.md")]

mod config;
mod content;
mod error;
#[doc(hidden)]
pub mod fuzz;
mod gitconfig;
mod glob;
mod head;
mod lazy;
mod mounts;
mod open;
mod protected;
mod roles;
mod sandbox;
mod sensitive;
mod stores;

pub use config::SandboxConfig;
pub use content::{ContentSniffer, KeyBlockSniffer, PLAINLY_SOURCE, SniffScope, plainly_source};
pub use error::SandboxError;
pub use glob::GlobOutcome;
pub use head::{Head, SNIFF_BYTES, read_head, read_small_text};
pub use mounts::{SCRATCH_FILESYSTEMS, ScratchFilesystem};
pub use open::{DirEntryInfo, EntryKind, WriteMode};
pub use protected::{DEFAULT_PROTECTED, GIT_DIR_PROTECTED, HOME_PROTECTED};
pub use roles::DIRENV_LOADERS;
pub use sandbox::{Access, Op, ResolveMode, Root, Sandbox, SandboxBuilder, SandboxPath};
pub use sensitive::{
    DEFAULT_SENSITIVE, NOT_SENSITIVE, SensitivePattern, SensitiveWhen,
    search_glob_selects_sensitive,
};
pub use stores::{Moves, RELOCATIONS, Relocation, XDG_BASES};

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn sandbox_is_send_and_sync() {
        assert_send_sync::<Sandbox>();
        assert_send_sync::<SandboxPath>();
    }
}

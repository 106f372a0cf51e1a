#![doc = include_str!("../README.md")]

mod checker;
mod config;
mod decision;
mod error;
pub mod fuzz;
mod mode;
mod precedence;
mod rule;
mod subjects;

pub use checker::{PermissionChecker, PermissionResult};
pub use config::{
    ConfigLayer, ENV_ALLOW, ENV_ASK, ENV_DENY, ENV_MODE, Origin, PermissionsConfig, split_rule_list,
};
pub use decision::Decision;
pub use error::Error;
pub use mode::PermissionMode;
pub use precedence::{
    Finding, HookBlock, HookPermissionRequest, PrecedenceInputs, Priority, Resolution,
    resolve_permission_precedence,
};
pub use rule::{PermissionRule, RuleKind, RuleSource};
pub use subjects::{ContentSubjects, DefaultSubjects, Subjects, split_simple_commands};

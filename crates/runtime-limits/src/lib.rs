#![doc = include_str!("../README.md")]

mod breaker;
mod budget;
#[cfg(feature = "tokio")]
mod cancel;
mod config;
mod duplicate;
mod error;
mod intervention;
mod limits;
mod session;
mod step;

pub use breaker::CompactionCircuitBreaker;
pub use budget::{BudgetLevel, TokenBudget, estimate_tokens};
#[cfg(feature = "tokio")]
pub use cancel::CancellationRegistry;
pub use config::LimitsConfig;
pub use duplicate::{DuplicateDetector, canonical_hash};
pub use error::Error;
pub use intervention::{Action, Intervention};
pub use limits::Limits;
pub use session::SessionLimits;
pub use step::StepLimit;
#[cfg(feature = "tokio")]
pub use tokio_util::sync::CancellationToken;

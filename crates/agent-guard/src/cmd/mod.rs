//! One module per subcommand: each has a clap `Args` and a `run` returning the exit code.

pub mod audit;
pub mod bash;
pub mod check;
pub mod claude_hook;
mod claude_post;
pub mod codex_hook;
pub mod demo;
pub mod exec;
pub mod explain;
pub mod gemini_hook;
mod hook;
pub mod lint;
pub mod path;
pub mod run;
pub mod serve;
pub mod session;
pub mod test;

//! One module per subcommand: each has a clap `Args` and a `run` returning the exit code.

pub mod audit;
pub mod bash;
pub mod check;
pub mod exec;
pub mod path;

#![doc = include_str!("../README.md")]

pub mod exec;
pub use exec::{
    Confinement, ConfinementReport, ExecConfig, ExecError, ExecRequest, ExecResult, LandlockReport,
    LandlockState, Runner, trampoline_main,
};

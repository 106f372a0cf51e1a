#![doc = include_str!("../README.md")]

mod decision;

pub use decision::Decision;

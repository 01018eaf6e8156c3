//! The verification contract (DESIGN.md): a candidate is accepted only if it is as accurate as
//! the naive kernel on every test. This crate holds the accuracy rule; the input families,
//! anti-cheat protocol and certificates join it with the verifier issue.

mod accuracy;

pub use accuracy::{judge, Inaccuracy, Tolerance};

//! The verification contract (DESIGN.md): a candidate is accepted only if it is as accurate as
//! the naive kernel on every test. This crate holds the accuracy rule and the input families;
//! the anti-cheat protocol and certificates join them with the rest of the verifier issue.

mod accuracy;
mod family;

pub use accuracy::{judge, Inaccuracy, Tolerance};
pub use family::Family;

//! The verification contract (docs/verification.md): a candidate is accepted only if it is as accurate as
//! the naive kernel on every test. This crate holds the accuracy rule, the input families and
//! the protocol that runs a candidate through them, and the static screen a kernel written
//! outside ollie passes before it is compiled.

mod accuracy;
mod error;
mod family;
mod index;
mod input_sets;
mod oracle;
mod order;
mod screen;
mod timing;
mod values;
mod verify;

pub use accuracy::{judge, Figures, Inaccuracy, Storage, Target, Tolerance};
pub use timing::{bench, bench_with, prepare, median_interval, BenchConfig, BenchReport, EarlyStop, Timing, FAR_PAIRS};
pub use family::Family;
pub use index::IndexTarget;
pub use input_sets::InputSet;
pub use screen::{flag_allowed, screen, screen_preprocessed, Screened};
pub use oracle::{memory_needed, Baseline, Costs, Oracle, DISK_BYTES, ORACLE_BYTES};
pub use error::VerifyError;
pub use verify::{verify, verify_with, Certificate, Rejection, Report, TestId, TestRecord, VerifyConfig};

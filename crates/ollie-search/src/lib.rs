//! The stochastic optimizer (STOKE-style): Markov chain Monte Carlo over candidates with
//! Metropolis–Hastings acceptance on log run time, restarts from the best, and a bandit that
//! shifts effort between proposers by their accepted improvements.
//!
//! The search knows nothing of runners or stores: proposers and the evaluator are traits the
//! driver implements (and so are its tests). The candidate the driver searches over, `Kernel`,
//! `mutate`, the proposer over schedules, `sketch`, whole schedules from structural rules, and
//! `rewrite`, kernels for the graphs algebraic rewriting finds, live here.

pub mod cost_model;
mod kernel;
mod mutate;
mod offers;
pub mod physics;
mod rewrite;
mod search;
mod sketch;
mod space;

pub use kernel::{EmitError, Form, Kernel, StoredError, Variant};
pub use mutate::Mutate;
pub use rewrite::Rewrite;
pub use sketch::{explain, sketches, Rule, RuleNote, RuleVerdict, Sketch};
pub use space::{initial_schedule, Caches, Target, BASE_FLAGS};
pub use search::{Ablation, Evaluation, Event, Evaluate, Proposal, Propose, Search, SearchConfig, StopReason};

//! The `llm` proposer's means: a client for OpenAI-compatible chat-completions endpoints (hosted
//! APIs, vLLM, llama.cpp's server, Ollama) with time limits, retries and token accounting; a
//! dispatcher that keeps several calls in flight; prompts rendered from template files; and the
//! extraction of a kernel from a reply.
//!
//! Nothing here knows of searches or verifiers: the driver decides what to ask and judges what
//! comes back like any other candidate.

mod client;
mod dispatch;
mod extract;
mod prompt;
pub mod scripted;

pub use client::{ApiKey, Client, ClientConfig, LlmError, Message, Reply, Usage, KEY_VARIABLES};
pub use dispatch::{Abandoned, Dispatcher, Done, Job};
pub use extract::{extract, Extracted, Unusable};
pub use prompt::{MachineFacts, PromptError, Prompts, Rejected, Shot, Shown, Task, TEMPLATES};

//! The chat-completions client: one `POST {base}/chat/completions` per call, OpenAI's protocol,
//! with a time limit per attempt and retries with backoff on 429 and 5xx.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// `system`, `user` or `assistant`.
    pub role: String,
    pub content: String,
}

impl Message {
    pub fn system(content: impl Into<String>) -> Message {
        Message { role: "system".into(), content: content.into() }
    }
    pub fn user(content: impl Into<String>) -> Message {
        Message { role: "user".into(), content: content.into() }
    }
    pub fn assistant(content: impl Into<String>) -> Message {
        Message { role: "assistant".into(), content: content.into() }
    }
}

/// An API key. It is sent as a bearer token and never shown: its `Debug` is redacted, and
/// nothing in this crate writes it anywhere else.
#[derive(Clone)]
pub struct ApiKey(String);

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(redacted)")
    }
}

/// The environment variables a key is read from, first found first.
pub const KEY_VARIABLES: &[&str] = &["OLLIE_LLM_API_KEY", "OPENAI_API_KEY"];

impl ApiKey {
    pub fn new(key: impl Into<String>) -> ApiKey {
        ApiKey(key.into())
    }

    /// The key from `OLLIE_LLM_API_KEY`, else `OPENAI_API_KEY`; none when both are unset or
    /// empty (local servers need none).
    pub fn from_env() -> Option<ApiKey> {
        KEY_VARIABLES.iter().filter_map(|v| std::env::var(v).ok()).find(|k| !k.trim().is_empty()).map(|k| ApiKey(k.trim().to_string()))
    }

    /// [`ApiKey::from_env`], removing the variables from this process's environment so that no
    /// child (a compiler, a kernel's worker) inherits the key. Call it before starting threads.
    pub fn take_from_env() -> Option<ApiKey> {
        let key = ApiKey::from_env();
        for v in KEY_VARIABLES {
            std::env::remove_var(v);
        }
        key
    }
}

#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// The base URL as OpenAI's clients take it, e.g. `http://localhost:8000/v1`.
    pub base_url: String,
    pub model: String,
    pub api_key: Option<ApiKey>,
    /// The longest one attempt may take, from connecting to the last byte of the reply.
    pub timeout: Duration,
    /// Further attempts after a 429 or 5xx answer.
    pub retries: u32,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
}

impl ClientConfig {
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> ClientConfig {
        ClientConfig { base_url: base_url.into(), model: model.into(), api_key: None, timeout: Duration::from_secs(300), retries: 4, temperature: None, max_tokens: None }
    }
}

/// Tokens a call used, as the endpoint reported them (or estimated, where it reported none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Some endpoints (OpenRouter, for one) report the call's price in dollars.
    pub cost: Option<f64>,
    /// The endpoint reported no usage: the counts are characters / 4.
    pub estimated: bool,
}

impl Usage {
    pub fn total(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
}

/// A completed call.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub content: String,
    pub usage: Usage,
    /// The model that answered, as the endpoint names it.
    pub model: String,
    /// Attempts it took (more than one after 429 or 5xx answers).
    pub attempts: u32,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    #[error("no reply within {seconds} s")]
    Timeout { seconds: f64 },
    #[error("cannot reach {url}: {message}")]
    Unreachable { url: String, message: String },
    #[error("HTTP {status} (after {attempts} attempts): {body}")]
    Status { status: u16, body: String, attempts: u32 },
    #[error("the answer is not a chat completion: {0}")]
    Malformed(String),
}

impl LlmError {
    /// The short kind a store records.
    pub fn kind(&self) -> &'static str {
        match self {
            LlmError::Timeout { .. } => "timeout",
            LlmError::Unreachable { .. } => "unreachable",
            LlmError::Status { .. } => "http-error",
            LlmError::Malformed(_) => "malformed",
        }
    }

    /// An error no later call will escape: a wrong key, URL or model name.
    pub fn is_fatal(&self) -> bool {
        matches!(self, LlmError::Status { status: 401 | 403 | 404, .. })
    }
}

pub struct Client {
    config: ClientConfig,
    agent: ureq::Agent,
}

/// How much of an error answer's body an error keeps.
const BODY_LIMIT: usize = 2000;

impl Client {
    pub fn new(config: ClientConfig) -> Client {
        let agent = ureq::Agent::config_builder().timeout_global(Some(config.timeout)).http_status_as_error(false).build().into();
        Client { config, agent }
    }

    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    fn url(&self) -> String {
        format!("{}/chat/completions", self.config.base_url.trim_end_matches('/'))
    }

    /// Sends the conversation and returns the model's answer.
    pub fn chat(&self, messages: &[Message]) -> Result<Reply, LlmError> {
        let mut body = serde_json::json!({ "model": self.config.model, "messages": messages });
        if let Some(t) = self.config.temperature {
            body["temperature"] = t.into();
        }
        if let Some(m) = self.config.max_tokens {
            body["max_tokens"] = m.into();
        }
        let url = self.url();
        let mut attempts = 0;
        loop {
            attempts += 1;
            let started = Instant::now();
            let mut request = self.agent.post(&url).header("Content-Type", "application/json");
            if let Some(ApiKey(key)) = &self.config.api_key {
                request = request.header("Authorization", format!("Bearer {key}"));
            }
            let mut response = request.send_json(&body).map_err(|e| self.transport(e, &url))?;
            let status = response.status().as_u16();
            let retry_after = response.headers().get("retry-after").and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<f64>().ok());
            let text = response.body_mut().read_to_string().map_err(|e| self.transport(e, &url))?;
            tracing::debug!(status, attempts, seconds = started.elapsed().as_secs_f64(), "chat completion");
            if status == 200 {
                return parse(&text, messages, attempts);
            }
            let retryable = status == 429 || (500..600).contains(&status);
            if !retryable || attempts > self.config.retries {
                let body: String = text.chars().take(BODY_LIMIT).collect();
                return Err(LlmError::Status { status, body, attempts });
            }
            let wait = backoff(attempts, retry_after);
            tracing::info!(status, attempts, wait = wait.as_secs_f64(), "the endpoint asked to retry");
            std::thread::sleep(wait);
        }
    }

    fn transport(&self, e: ureq::Error, url: &str) -> LlmError {
        match e {
            ureq::Error::Timeout(_) => LlmError::Timeout { seconds: self.config.timeout.as_secs_f64() },
            e => LlmError::Unreachable { url: url.to_string(), message: e.to_string() },
        }
    }
}

/// The wait before attempt `attempts + 1`: the server's `Retry-After` if it gave one (at most
/// a minute), else half a second doubled per attempt (at most 16 s), plus up to a quarter more
/// so that concurrent shots do not come back together.
fn backoff(attempts: u32, retry_after: Option<f64>) -> Duration {
    let base = match retry_after {
        Some(s) => s.clamp(0.0, 60.0),
        None => (0.5 * 2f64.powi(attempts as i32 - 1)).min(16.0),
    };
    let jitter = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos()) as f64 / 1e9 * 0.25;
    Duration::from_secs_f64(base * (1.0 + jitter))
}

#[derive(Deserialize)]
struct Completion {
    choices: Vec<Choice>,
    usage: Option<ReportedUsage>,
    #[serde(default)]
    model: String,
}

#[derive(Deserialize)]
struct Choice {
    message: ChoiceMessage,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    content: Option<String>,
}

#[derive(Deserialize)]
struct ReportedUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    cost: Option<f64>,
}

fn parse(text: &str, messages: &[Message], attempts: u32) -> Result<Reply, LlmError> {
    let completion: Completion = serde_json::from_str(text).map_err(|e| LlmError::Malformed(format!("{e}; it begins {:?}", text.chars().take(200).collect::<String>())))?;
    let content = completion.choices.into_iter().next().and_then(|c| c.message.content).ok_or_else(|| LlmError::Malformed("no choice with message content".into()))?;
    let usage = match completion.usage {
        Some(u) => Usage { prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens, cost: u.cost, estimated: false },
        None => {
            let prompt: usize = messages.iter().map(|m| m.content.len()).sum();
            Usage { prompt_tokens: prompt as u64 / 4, completion_tokens: content.len() as u64 / 4, cost: None, estimated: true }
        }
    };
    Ok(Reply { content, usage, model: completion.model, attempts })
}

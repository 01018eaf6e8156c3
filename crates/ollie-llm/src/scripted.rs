//! A scripted chat-completions endpoint on 127.0.0.1 for tests: it speaks the same protocol as
//! the real ones and answers each request with the next prepared answer — a reply, an HTTP
//! error, a malformed body, or silence — and records what it was asked.

use std::sync::{Arc, Mutex};

/// One prepared answer.
#[derive(Debug, Clone)]
pub enum Answer {
    /// A chat completion whose message is this text, with usage (tokens: characters / 4).
    Reply(String),
    /// An error status, with a `Retry-After` in seconds if given.
    Status(u16, Option<u32>),
    /// Status 200 with this body as it is.
    Raw(String),
    /// No answer at all: the connection stays open until the server is dropped.
    Silence,
}

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Asked {
    pub authorization: Option<String>,
    pub body: serde_json::Value,
}

pub struct ScriptedServer {
    /// The base URL to give a client, `http://127.0.0.1:PORT/v1`.
    pub url: String,
    asked: Arc<Mutex<Vec<Asked>>>,
    server: Arc<tiny_http::Server>,
}

impl ScriptedServer {
    /// Serves `script` in order, then `then` for every later request.
    pub fn start(script: Vec<Answer>, then: Answer) -> ScriptedServer {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("a port on 127.0.0.1"));
        let port = server.server_addr().to_ip().expect("an IP address").port();
        let asked = Arc::new(Mutex::new(Vec::new()));
        let (s, a) = (server.clone(), asked.clone());
        std::thread::spawn(move || {
            let mut script = script.into_iter();
            // Requests left unanswered on purpose.
            let mut held = Vec::new();
            for mut request in s.incoming_requests() {
                let mut body = String::new();
                let _ = request.as_reader().read_to_string(&mut body);
                let authorization = request.headers().iter().find(|h| h.field.equiv("Authorization")).map(|h| h.value.to_string());
                let body: serde_json::Value = serde_json::from_str(&body).unwrap_or(serde_json::Value::Null);
                let prompt: usize = body["messages"].as_array().map_or(0, |m| m.iter().map(|m| m["content"].as_str().map_or(0, str::len)).sum());
                a.lock().expect("not poisoned").push(Asked { authorization, body });
                let json = tiny_http::Header::from_bytes("Content-Type", "application/json").expect("a valid header");
                let response = match script.next().unwrap_or_else(|| then.clone()) {
                    Answer::Reply(text) => {
                        let completion = serde_json::json!({
                            "id": "scripted", "object": "chat.completion", "model": "scripted",
                            "choices": [{ "index": 0, "message": { "role": "assistant", "content": text }, "finish_reason": "stop" }],
                            "usage": { "prompt_tokens": prompt / 4, "completion_tokens": text.len() / 4, "total_tokens": prompt / 4 + text.len() / 4 },
                        });
                        tiny_http::Response::from_string(completion.to_string()).with_header(json)
                    }
                    Answer::Status(code, retry_after) => {
                        let mut r = tiny_http::Response::from_string(format!("{{\"error\": {{\"message\": \"scripted {code}\"}}}}")).with_status_code(code).with_header(json);
                        if let Some(s) = retry_after {
                            r = r.with_header(tiny_http::Header::from_bytes("Retry-After", s.to_string()).expect("a valid header"));
                        }
                        r
                    }
                    Answer::Raw(body) => tiny_http::Response::from_string(body).with_header(json),
                    Answer::Silence => {
                        held.push(request);
                        continue;
                    }
                };
                let _ = request.respond(response);
            }
        });
        ScriptedServer { url: format!("http://127.0.0.1:{port}/v1"), asked, server }
    }

    /// The requests so far, in order.
    pub fn asked(&self) -> Vec<Asked> {
        self.asked.lock().expect("not poisoned").clone()
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        self.server.unblock();
    }
}

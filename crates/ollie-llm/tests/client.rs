//! The client against the scripted endpoint on 127.0.0.1: replies and their usage, the key sent
//! as a bearer token, retries after 429 and 5xx, fatal and malformed answers, silence that
//! costs only the time limit, a dead port, and the dispatcher's concurrency.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ollie_llm::scripted::{Answer, ScriptedServer};
use ollie_llm::{ApiKey, Client, ClientConfig, Dispatcher, Job, LlmError, Message};

fn client(url: &str, timeout: Duration) -> Client {
    Client::new(ClientConfig { api_key: Some(ApiKey::new("sk-test-123")), timeout, ..ClientConfig::new(url, "kernel-writer") })
}

fn ask() -> Vec<Message> {
    vec![Message::system("You write kernels."), Message::user("Write one.")]
}

#[test]
fn a_reply_comes_back_with_its_usage_and_the_request_carries_model_and_key() {
    let server = ScriptedServer::start(vec![Answer::Reply("```c\nvoid k(float *out) { out[0] = 1; }\n```".into())], Answer::Status(500, None));
    let reply = client(&server.url, Duration::from_secs(10)).chat(&ask()).unwrap();
    assert!(reply.content.contains("void k"));
    assert_eq!(reply.attempts, 1);
    assert!(reply.usage.prompt_tokens > 0 && reply.usage.completion_tokens > 0 && !reply.usage.estimated, "{:?}", reply.usage);
    let asked = server.asked();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].authorization.as_deref(), Some("Bearer sk-test-123"));
    assert_eq!(asked[0].body["model"], "kernel-writer");
    assert_eq!(asked[0].body["messages"][1]["content"], "Write one.");
    assert!(!format!("{:?}", client(&server.url, Duration::from_secs(1)).config()).contains("sk-test-123"), "the key is never shown");
}

#[test]
fn too_many_requests_and_server_errors_are_retried_with_backoff() {
    let server = ScriptedServer::start(vec![Answer::Status(429, Some(1)), Answer::Status(503, None), Answer::Reply("ok".into())], Answer::Status(500, None));
    let started = Instant::now();
    let reply = client(&server.url, Duration::from_secs(10)).chat(&ask()).unwrap();
    assert_eq!((reply.content.as_str(), reply.attempts), ("ok", 3));
    // Retry-After: 1 s, then half a second.
    assert!(started.elapsed() >= Duration::from_millis(1500), "{:?}", started.elapsed());

    let failing = ScriptedServer::start(Vec::new(), Answer::Status(502, Some(0)));
    let config = ClientConfig { retries: 2, ..ClientConfig::new(&failing.url, "m") };
    match Client::new(config).chat(&ask()) {
        Err(LlmError::Status { status: 502, attempts: 3, .. }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_wrong_key_is_fatal_at_once_and_a_malformed_body_is_an_error() {
    let server = ScriptedServer::start(vec![Answer::Status(401, None), Answer::Raw("{\"choices\": [".into()), Answer::Raw("{\"choices\": []}".into())], Answer::Status(500, None));
    let c = client(&server.url, Duration::from_secs(10));
    let e = c.chat(&ask()).unwrap_err();
    assert!(e.is_fatal() && e.kind() == "http-error", "{e:?}");
    assert_eq!(server.asked().len(), 1, "401 is not retried");
    assert_eq!(c.chat(&ask()).unwrap_err().kind(), "malformed");
    assert_eq!(c.chat(&ask()).unwrap_err().kind(), "malformed");
}

#[test]
fn an_endpoint_that_never_answers_costs_its_time_limit_and_a_dead_one_nothing() {
    let server = ScriptedServer::start(Vec::new(), Answer::Silence);
    let started = Instant::now();
    let e = client(&server.url, Duration::from_millis(700)).chat(&ask()).unwrap_err();
    assert_eq!(e.kind(), "timeout", "{e:?}");
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(600) && took < Duration::from_secs(5), "{took:?}");

    // A port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let started = Instant::now();
    let e = client(&format!("http://127.0.0.1:{port}/v1"), Duration::from_secs(30)).chat(&ask()).unwrap_err();
    assert_eq!(e.kind(), "unreachable", "{e:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn the_dispatcher_keeps_several_calls_in_flight() {
    // Two silent requests hold two threads; the third thread still answers.
    let server = ScriptedServer::start(vec![Answer::Silence, Answer::Silence], Answer::Reply("third".into()));
    let mut d = Dispatcher::new(Arc::new(client(&server.url, Duration::from_secs(3))), 3);
    for tag in 0..3 {
        d.submit(Job { tag, messages: ask() });
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(d.in_flight(), 3);
    let started = Instant::now();
    let first = loop {
        if let Some(done) = d.try_next() {
            break done;
        }
        assert!(started.elapsed() < Duration::from_secs(2), "the free thread answers before the others time out");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!((first.tag, first.result.unwrap().content.as_str()), (2, "third"));
    assert_eq!(d.in_flight(), 2);
}

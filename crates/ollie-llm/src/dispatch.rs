//! Concurrent calls: a fixed number of threads (the concurrency limit) take conversations from
//! a queue and hand back replies. The threads are never joined: a call that hangs holds only its
//! own thread until its time limit, and dropping the `Dispatcher` lets them end.

use std::collections::HashMap;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::{Client, LlmError, Message, Reply};

/// A conversation to send, tagged by the caller.
pub struct Job {
    pub tag: u64,
    pub messages: Vec<Message>,
}

/// A finished call.
pub struct Done {
    pub tag: u64,
    pub messages: Vec<Message>,
    pub result: Result<Reply, LlmError>,
    /// Wall time of the call, retries included.
    pub seconds: f64,
}

/// A call still in flight when its caller stopped waiting.
pub struct Abandoned {
    pub tag: u64,
    pub messages: Vec<Message>,
    /// Since it was submitted.
    pub seconds: f64,
}

pub struct Dispatcher {
    jobs: Sender<Job>,
    done: Receiver<Done>,
    /// Calls submitted and not handed back, by tag: their messages and when they were sent.
    in_flight: HashMap<u64, (Vec<Message>, Instant)>,
}

impl Dispatcher {
    /// Starts `concurrency` threads (at least one) calling `client`.
    pub fn new(client: Arc<Client>, concurrency: usize) -> Dispatcher {
        let (jobs, queue) = channel::<Job>();
        let (finished, done) = channel();
        let queue = Arc::new(Mutex::new(queue));
        for _ in 0..concurrency.max(1) {
            let (queue, finished, client) = (queue.clone(), finished.clone(), client.clone());
            std::thread::spawn(move || loop {
                let Ok(job) = queue.lock().map_err(drop).and_then(|q| q.recv().map_err(drop)) else { return };
                let started = Instant::now();
                let result = client.chat(&job.messages);
                let done = Done { tag: job.tag, messages: job.messages, result, seconds: started.elapsed().as_secs_f64() };
                if finished.send(done).is_err() {
                    return;
                }
            });
        }
        Dispatcher { jobs, done, in_flight: HashMap::new() }
    }

    /// Sends a conversation; its tag must not be in flight already.
    pub fn submit(&mut self, job: Job) {
        let (tag, messages) = (job.tag, job.messages.clone());
        if self.jobs.send(job).is_ok() {
            self.in_flight.insert(tag, (messages, Instant::now()));
        }
    }

    /// A finished call, if one is ready.
    pub fn try_next(&mut self) -> Option<Done> {
        let done = self.done.try_recv().ok()?;
        self.in_flight.remove(&done.tag);
        Some(done)
    }

    /// Calls submitted and not yet handed back.
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Stops waiting for the calls in flight: they are handed back as abandoned (their threads
    /// end with their time limit; a reply that comes later is dropped).
    pub fn abandon(&mut self) -> Vec<Abandoned> {
        let mut abandoned: Vec<Abandoned> = self.in_flight.drain().map(|(tag, (messages, sent))| Abandoned { tag, messages, seconds: sent.elapsed().as_secs_f64() }).collect();
        abandoned.sort_by_key(|a| a.tag);
        abandoned
    }
}

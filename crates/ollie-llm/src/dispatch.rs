//! Concurrent calls: a fixed number of threads (the concurrency limit) take conversations from
//! a queue and hand back replies. The threads are never joined: a call that hangs holds only its
//! own thread until its time limit, and dropping the `Dispatcher` lets them end.

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

pub struct Dispatcher {
    jobs: Sender<Job>,
    done: Receiver<Done>,
    in_flight: usize,
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
        Dispatcher { jobs, done, in_flight: 0 }
    }

    pub fn submit(&mut self, job: Job) {
        if self.jobs.send(job).is_ok() {
            self.in_flight += 1;
        }
    }

    /// A finished call, if one is ready.
    pub fn try_next(&mut self) -> Option<Done> {
        let done = self.done.try_recv().ok()?;
        self.in_flight -= 1;
        Some(done)
    }

    /// Calls submitted and not yet handed back.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }
}

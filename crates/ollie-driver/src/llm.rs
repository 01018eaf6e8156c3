//! The `llm` proposer: conversations with a language model, several at a time, each asked for a
//! faster kernel with what the search knows so far (the incumbent, a few other good kernels, the
//! latest rejections). A usable reply becomes a `Kernel::Written` candidate judged like any
//! other; a reply without a usable kernel, or whose kernel does not compile, gets a repair turn
//! in the same conversation. Every call is logged for the store.

use std::collections::{HashMap, VecDeque};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::time::Duration;

use ollie_graph::Graph;
use ollie_llm::{ApiKey, Client, ClientConfig, Dispatcher, Job, MachineFacts, Message, Prompts, Rejected, Shot, Shown, Task};
use ollie_loops::LoopNest;
use ollie_search::{Evaluation, Event, Kernel, Proposal, Propose, BASE_FLAGS};
use ollie_store::{Candidate, CandidateId, LlmCall};
use rand_chacha::ChaCha8Rng;
use sha2::Digest;

use crate::stored::hash;
use crate::{report, Note, Reason};

/// What the command line says about the LLM.
#[derive(Clone)]
pub struct LlmOptions {
    pub url: String,
    pub model: String,
    pub key: Option<ApiKey>,
    /// Conversations open at once.
    pub concurrency: usize,
    /// Budgets over the whole run (all sessions): calls made, tokens used.
    pub calls: Option<u64>,
    pub tokens: Option<u64>,
    pub timeout: Duration,
    /// Repair turns one conversation may take.
    pub repairs: u32,
    /// The templates, loaded (and so checked) before the search starts.
    pub prompts: Prompts,
    /// Dollars per million prompt and completion tokens, to price calls the endpoint does not.
    pub price: Option<(f64, f64)>,
}

/// The proposer's running totals over the whole run (all sessions).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LlmTotals {
    /// Calls made (sent).
    pub made: u64,
    pub tokens: u64,
    pub cost: f64,
    /// Why the proposer stopped asking, if it gave up.
    pub gave_up: Option<String>,
}

/// What the proposer tells the driver as it goes.
enum News {
    /// A call finished (or was abandoned): for the store.
    Call(LlmCall),
    Totals(LlmTotals),
}

/// The driver's end of the proposer's news: the calls finished since it last looked, and the
/// latest totals.
pub struct LlmWatch {
    news: Receiver<News>,
    totals: LlmTotals,
}

impl LlmWatch {
    /// The calls finished since the last look, in order.
    pub fn calls(&mut self) -> Vec<LlmCall> {
        let mut calls = Vec::new();
        for news in self.news.try_iter() {
            match news {
                News::Call(call) => calls.push(call),
                News::Totals(totals) => self.totals = totals,
            }
        }
        calls
    }

    /// The totals as of the last look.
    pub fn totals(&self) -> &LlmTotals {
        &self.totals
    }
}

struct Conversation {
    messages: Vec<Message>,
    repairs: u32,
}

/// Rejections shown in a prompt, at most.
const REJECTIONS: usize = 3;
/// Failed calls in a row after which the endpoint is taken for gone.
const FAILURES: u32 = 3;
/// Other kernels shown beside the incumbent, at most.
const OTHERS: usize = 3;
/// The timed kernels kept to choose them from: the fastest this many, distinct (a long search
/// times thousands, each source tens of KB).
const TIMED: usize = 256;
/// Characters of a compiler log sent back for repair, at most.
const LOG_LIMIT: usize = 4000;

pub struct LlmProposer<'a> {
    options: LlmOptions,
    dispatcher: Dispatcher,
    task: Task,
    naive: &'a LoopNest,
    symbol: String,
    params: usize,
    scale: Scale,
    conversations: HashMap<u64, Conversation>,
    next_conversation: u64,
    ready: VecDeque<Kernel>,
    /// Kernels from replies not yet judged (those still `ready` among them), with their
    /// conversation.
    pending: HashMap<Kernel, u64>,
    incumbent: Shown,
    /// Correct kernels timed so far, with their times: the fastest few hundred.
    timed: Vec<(f64, Shown)>,
    rejections: VecDeque<Rejected>,
    failures: u32,
    totals: LlmTotals,
    news: Sender<News>,
}

/// Times as prompts show them: against the naive kernel and the roofline floor.
struct Scale {
    naive_seconds: f64,
    floor_seconds: f64,
}

impl Scale {
    fn shown(&self, source: String, flags: String, seconds: f64, proposer: &str) -> Shown {
        Shown { source, flags, time: report::seconds(seconds), roofline_percent: 100.0 * self.floor_seconds / seconds, speedup: self.naive_seconds / seconds, proposer: proposer.to_string() }
    }

    fn shown_kernel(&self, naive: &LoopNest, kernel: &Kernel, seconds: f64, proposer: &str) -> Shown {
        let (source, flags) = kernel.emit(naive).unwrap_or_default();
        self.shown(source, flags.join(" "), seconds, proposer)
    }
}

/// What the proposer is told when it starts.
pub struct Setup<'a> {
    pub graph: &'a Graph,
    pub spec_source: &'a str,
    pub machine: &'a ollie_runner::Machine,
    pub floor: &'a ollie_runner::Floor,
    pub naive_seconds: f64,
    /// The search's best so far: the prompt's first incumbent.
    pub best: (&'a Kernel, f64, &'a str),
    /// The run's candidates and LLM calls so far (a resumed run's).
    pub history: &'a [(CandidateId, Candidate)],
    pub calls: &'a [LlmCall],
}

impl<'a> LlmProposer<'a> {
    /// The proposer, and the driver's end of its news.
    pub fn new(options: LlmOptions, naive: &'a LoopNest, s: Setup<'_>) -> (LlmProposer<'a>, LlmWatch) {
        let graph = s.graph;
        let mut buffers: Vec<String> = graph.params.iter().map(|p| format!("{}: {} (input)", p.name, p.ty)).collect();
        buffers.extend((0..graph.outputs.len()).map(|k| format!("{}: {} (output)", graph.output_name(k), graph.ty(graph.outputs[k]))));
        let cost = graph.work();
        let m = s.machine;
        let task = Task {
            kernel: graph.name.clone(),
            spec: s.spec_source.trim_end().to_string(),
            signature: format!("{};", ollie_loops::prototype(naive)),
            buffers,
            flops: cost.flops,
            bytes: cost.min_bytes,
            base_flags: BASE_FLAGS.join(" "),
            machine: MachineFacts {
                cpu: m.cpu.clone(),
                isa: m.isa.clone(),
                threads: m.ceilings.iter().map(|c| c.threads).max().unwrap_or(1),
                last_level_cache_bytes: m.last_level_cache_bytes,
                ceilings: m.ceilings.iter().map(|c| (c.threads, c.peak_gflops, c.bandwidth_gbs)).collect(),
            },
            floor: report::seconds(s.floor.seconds),
            memory_bound: s.floor.memory_bound,
        };
        // A resumed run's budget counts what it has spent already.
        let mut totals = LlmTotals::default();
        if let Some(t) = report::LlmTally::of(s.calls) {
            (totals.made, totals.tokens, totals.cost) = (t.calls as u64, t.prompt_tokens + t.completion_tokens, t.cost.unwrap_or(0.0));
        }
        let (news, watch) = channel();
        let watch = LlmWatch { news: watch, totals: totals.clone() };
        let client = Client::new(ClientConfig { api_key: options.key.clone(), timeout: options.timeout, ..ClientConfig::new(&options.url, &options.model) });
        let dispatcher = Dispatcher::new(Arc::new(client), options.concurrency);
        let (best, best_seconds, best_proposer) = s.best;
        let scale = Scale { naive_seconds: s.naive_seconds, floor_seconds: s.floor.seconds };
        let incumbent = scale.shown_kernel(naive, best, best_seconds, best_proposer);
        let mut proposer = LlmProposer {
            dispatcher,
            task,
            naive,
            symbol: graph.name.clone(),
            params: graph.params.len() + graph.outputs.len(),
            scale,
            conversations: HashMap::new(),
            next_conversation: s.calls.iter().map(|c| c.conversation + 1).max().unwrap_or(0),
            ready: VecDeque::new(),
            pending: HashMap::new(),
            incumbent,
            timed: Vec::new(),
            rejections: VecDeque::new(),
            failures: 0,
            totals,
            news,
            options,
        };
        let mut timed = Vec::new();
        for (_, c) in s.history {
            match (&c.timing, c.reason.as_deref().map(Reason::from_code)) {
                (Some(t), None) => timed.push((t.estimate, c)),
                (_, Some(Some(reason))) => proposer.remember_rejection(reason, c.detail.as_deref().unwrap_or(""), &c.proposer, &c.source),
                _ => {}
            }
        }
        // The fastest, emitted again from what the store kept (a scheduled kernel's source is
        // not read back).
        timed.sort_by(|a, b| a.0.total_cmp(&b.0));
        for (seconds, c) in timed.into_iter().take(TIMED) {
            if let Ok(kernel) = crate::stored::kernel(c) {
                let shown = proposer.scale.shown_kernel(naive, &kernel, seconds, &c.proposer);
                proposer.remember_timed(seconds, shown);
            }
        }
        (proposer, watch)
    }

    /// Keeps a timed kernel among those `others` chooses from: the fastest [`TIMED`] distinct.
    fn remember_timed(&mut self, seconds: f64, shown: Shown) {
        self.timed.push((seconds, shown));
        if self.timed.len() > 2 * TIMED {
            self.timed.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut seen = std::collections::HashSet::new();
            self.timed.retain(|t| seen.insert(t.1.source.clone()));
            self.timed.truncate(TIMED);
        }
    }

    fn remember_rejection(&mut self, reason: Reason, detail: &str, proposer: &str, source: &str) {
        // Only the verifier's verdicts teach something about correctness.
        if !reason.is_verdict() {
            return;
        }
        let source = (proposer == "llm").then(|| source.to_string());
        self.rejections.push_back(Rejected { reason: reason.code().to_string(), detail: detail.to_string(), proposer: proposer.to_string(), source });
        if self.rejections.len() > REJECTIONS {
            self.rejections.pop_front();
        }
        // Only the latest shows its source.
        let last = self.rejections.len().saturating_sub(1);
        for (k, r) in self.rejections.iter_mut().enumerate() {
            if k != last {
                r.source = None;
            }
        }
    }

    fn spent(&self) -> bool {
        let t = &self.totals;
        self.options.calls.is_some_and(|c| t.made >= c) || self.options.tokens.is_some_and(|n| t.tokens >= n)
    }

    /// The totals, to the driver (which may have gone: then nobody is listening).
    fn tell_totals(&self) {
        let _ = self.news.send(News::Totals(self.totals.clone()));
    }

    fn send(&mut self, conversation: u64) {
        let messages = self.conversations[&conversation].messages.clone();
        self.totals.made += 1;
        self.tell_totals();
        self.dispatcher.submit(Job { tag: conversation, messages });
    }

    /// Opens conversations up to the concurrency limit, while the budget lasts. A conversation
    /// counts while its call is in flight or its kernel waits for a verdict (`pending` holds the
    /// kernels ready to propose too).
    fn open(&mut self) {
        while self.totals.gave_up.is_none() && !self.spent() && self.dispatcher.in_flight() + self.pending.len() < self.options.concurrency {
            let shot = Shot { task: &self.task, incumbent: self.incumbent.clone(), others: self.others(), rejections: self.rejections.iter().cloned().collect() };
            let messages = match self.options.prompts.open(&shot) {
                Ok(m) => m,
                Err(e) => {
                    self.give_up(format!("{e}"));
                    return;
                }
            };
            let id = self.next_conversation;
            self.next_conversation += 1;
            self.conversations.insert(id, Conversation { messages, repairs: 0 });
            self.send(id);
        }
    }

    /// A few of the best kernels and the one most different from the incumbent.
    fn others(&self) -> Vec<Shown> {
        let mut timed: Vec<&(f64, Shown)> = Vec::new();
        for t in &self.timed {
            if t.1.source != self.incumbent.source && !timed.iter().any(|u| u.1.source == t.1.source) {
                timed.push(t);
            }
        }
        timed.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut chosen: Vec<&(f64, Shown)> = timed.iter().take(OTHERS - 1).copied().collect();
        fn lines(s: &str) -> std::collections::HashSet<&str> {
            s.lines().map(str::trim).collect()
        }
        let incumbent = lines(&self.incumbent.source);
        let distance = |s: &str| {
            let l = lines(s);
            1.0 - l.intersection(&incumbent).count() as f64 / l.union(&incumbent).count().max(1) as f64
        };
        if let Some(far) = timed.iter().skip(chosen.len()).max_by(|a, b| distance(&a.1.source).total_cmp(&distance(&b.1.source))) {
            chosen.push(far);
        }
        chosen.into_iter().map(|t| t.1.clone()).collect()
    }

    fn give_up(&mut self, why: String) {
        if self.totals.gave_up.is_none() {
            tracing::warn!("the llm proposer stops: {why}");
            self.totals.gave_up = Some(why);
            self.tell_totals();
        }
    }

    /// Answers a conversation's last reply with what was wrong with it, if it may have another
    /// turn.
    fn repair(&mut self, conversation: u64, problem: &str, detail: &str) {
        let Some(c) = self.conversations.get(&conversation) else { return };
        if c.repairs >= self.options.repairs || self.spent() || self.totals.gave_up.is_some() {
            self.conversations.remove(&conversation);
            return;
        }
        let detail: String = detail.chars().take(LOG_LIMIT).collect();
        match self.options.prompts.repair(&self.task, problem, &detail) {
            Ok(message) => {
                let c = self.conversations.get_mut(&conversation).expect("present");
                c.messages.push(message);
                c.repairs += 1;
                self.send(conversation);
            }
            Err(e) => self.give_up(e.to_string()),
        }
    }

    /// The record of a call in `conversation` with `messages`, before its outcome is known.
    fn call_record(&self, conversation: u64, messages: &[Message], seconds: f64) -> LlmCall {
        let prompt = serde_json::to_string(messages).expect("serializable");
        let prompt_hash: String = sha2::Sha256::digest(prompt.as_bytes()).iter().take(16).map(|b| format!("{b:02x}")).collect();
        LlmCall {
            conversation,
            turn: self.conversations.get(&conversation).map_or(0, |c| c.repairs),
            prompt_hash,
            prompt,
            model: self.options.model.clone(),
            reply: None,
            prompt_tokens: 0,
            completion_tokens: 0,
            cost: None,
            seconds,
            attempts: 1,
            outcome: String::new(),
            detail: None,
            source_hash: None,
            at_seconds: 0.0,
        }
    }

    /// The search is over: the calls that finished are taken in, and those still in flight are
    /// logged as `abandoned`, with how long they had waited.
    pub fn abandon(&mut self) {
        self.poll();
        for a in self.dispatcher.abandon() {
            let call = LlmCall {
                outcome: "abandoned".into(),
                detail: Some(format!("no reply after {:.1} s, when the search's budget ended", a.seconds)),
                ..self.call_record(a.tag, &a.messages, a.seconds)
            };
            let _ = self.news.send(News::Call(call));
        }
    }

    /// Takes in the calls that finished.
    fn poll(&mut self) {
        while let Some(done) = self.dispatcher.try_next() {
            let mut call = self.call_record(done.tag, &done.messages, done.seconds);
            match done.result {
                Ok(reply) => {
                    self.failures = 0;
                    let u = reply.usage;
                    let cost = u.cost.or_else(|| self.options.price.map(|(p, c)| (u.prompt_tokens as f64 * p + u.completion_tokens as f64 * c) / 1e6));
                    self.totals.tokens += u.total();
                    self.totals.cost += cost.unwrap_or(0.0);
                    self.tell_totals();
                    call = LlmCall { model: if reply.model.is_empty() { call.model } else { reply.model.clone() }, reply: Some(reply.content.clone()), prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens, cost, attempts: reply.attempts, ..call };
                    if let Some(c) = self.conversations.get_mut(&done.tag) {
                        c.messages.push(Message::assistant(reply.content.clone()));
                    }
                    match ollie_llm::extract(&reply.content, &self.symbol, self.params) {
                        Ok(e) => {
                            let mut flags: Vec<String> = BASE_FLAGS.iter().map(|f| f.to_string()).collect();
                            for f in e.flags {
                                if !flags.contains(&f) {
                                    flags.push(f);
                                }
                            }
                            call.source_hash = Some(hash(&e.source, &flags));
                            let kernel = Kernel::Written { source: e.source, flags };
                            if let Some(other) = self.pending.get(&kernel) {
                                // Judged once, for the conversation that brought it first.
                                call.outcome = "duplicate".into();
                                call.detail = Some(format!("the same kernel as conversation {other}'s, not yet judged"));
                                self.conversations.remove(&done.tag);
                            } else {
                                call.outcome = "kernel".into();
                                self.pending.insert(kernel.clone(), done.tag);
                                self.ready.push_back(kernel);
                            }
                        }
                        Err(unusable) => {
                            call.outcome = unusable.kind().into();
                            call.detail = Some(unusable.to_string());
                            self.repair(done.tag, unusable.kind(), &unusable.to_string());
                        }
                    }
                }
                Err(e) => {
                    self.failures += 1;
                    call.outcome = e.kind().into();
                    call.detail = Some(e.to_string());
                    if let ollie_llm::LlmError::Status { attempts, .. } = e {
                        call.attempts = attempts;
                    }
                    self.conversations.remove(&done.tag);
                    if e.is_fatal() {
                        self.give_up(format!("{e} (check --llm-url, --llm-model and the API key)"));
                    } else if self.failures >= FAILURES {
                        self.give_up(format!("{} calls in a row failed, the last: {e}", self.failures));
                    }
                }
            }
            tracing::debug!(conversation = call.conversation, outcome = %call.outcome, "llm call");
            let _ = self.news.send(News::Call(call));
        }
    }
}

impl Propose<Kernel, Note> for LlmProposer<'_> {
    fn name(&self) -> &str {
        "llm"
    }

    fn propose(&mut self, _current: &Kernel, _rng: &mut ChaCha8Rng) -> Proposal<Kernel> {
        self.poll();
        // Ready kernels first: they are the ones whose conversations count against the limit.
        let next = self.ready.pop_front();
        self.open();
        match next {
            Some(kernel) => Proposal::Candidate(kernel),
            None if self.dispatcher.in_flight() == 0 && (self.spent() || self.totals.gave_up.is_some()) => Proposal::Exhausted,
            None => Proposal::NotNow,
        }
    }

    /// A model's kernel cost a call: it is always measured.
    fn costly(&self) -> bool {
        true
    }

    fn observe(&mut self, event: &Event<Kernel, Note>) {
        self.poll();
        let own = self.pending.remove(&event.candidate);
        match &event.outcome {
            Evaluation::Timed { seconds, .. } | Evaluation::Slower { seconds, .. } => {
                let shown = self.scale.shown_kernel(self.naive, &event.candidate, *seconds, &event.proposer);
                if event.new_best {
                    self.incumbent = shown.clone();
                }
                self.remember_timed(*seconds, shown);
                if let Some(c) = own {
                    self.conversations.remove(&c);
                }
            }
            Evaluation::Rejected => {
                let (reason, detail) = event.note.rejected.clone().unwrap_or((Reason::Internal, String::new()));
                self.remember_rejection(reason, &detail, &event.proposer, &event.note.source);
                match own {
                    Some(c) if reason == Reason::CompileError => self.repair(c, reason.code(), &detail),
                    Some(c) => {
                        self.conversations.remove(&c);
                    }
                    None => {}
                }
            }
        }
        self.open();
    }
}

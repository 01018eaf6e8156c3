//! Many chains on one run: what a worker shares through the store and how its work is leased.
//! Each chain (the one `ollie optimize` runs, each `ollie worker` that joined) searches with its
//! own seed and times on its own cores; a candidate is leased before it is judged (the lease
//! renewed by a heartbeat thread, the verdict written only while the lease is still held), so a
//! worker killed mid-evaluation loses only that candidate, which another worker takes over once
//! the lease expires. Every few seconds a chain takes in what the others stored: their timings
//! train its cost model, their counterexamples join its verifications, and the `shared`
//! proposer offers taken-over candidates and their bests faster than its own (the island
//! model's migration).

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use ollie_runner::Machine;
use ollie_search::{Evaluate, Evaluation, Event, Kernel, Proposal, Propose};
use ollie_graph::Tensor;
use ollie_store::{CandidateId, Lease, Location, Run, RunId, Store, Work, WorkerId};
use rand_chacha::ChaCha8Rng;

use crate::evaluator::Evaluator;
use crate::stored;
use crate::{user_error, Error, Note};

/// How long a lease lasts unless renewed; the heartbeat renews every third of it.
pub const LEASE_SECONDS: f64 = 60.0;

/// What hosts must share for their timings to be compared: CPU model, ISA and thread count.
pub fn machine_class(machine: &Machine) -> String {
    format!("{} ({}, {} threads)", machine.cpu, machine.isa, machine.ceilings.len())
}

/// This host's name, as the report names a worker's.
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").ok().map(|h| h.trim().to_string()).filter(|h| !h.is_empty()).unwrap_or_else(|| "localhost".into())
}

/// The work a kernel is, as a lease holds it.
pub(crate) fn work_of(kernel: &Kernel) -> Work {
    let (source, flags) = match kernel {
        Kernel::Written { source, flags } => (source.clone(), flags.join(" ")),
        Kernel::Scheduled(s) | Kernel::Rewritten { schedule: s, .. } => (String::new(), s.flags.join(" ")),
    };
    Work { schedule: kernel.schedule_text(), graph: kernel.graph_text(), flags, source }
}

/// The run a worker joins: the oldest unfinished run in the store whose search time is not
/// over and whose final phase nobody has claimed, started on a host of this machine class;
/// polled for `wait` seconds when there is none yet. A run of another class is refused, with
/// both classes named.
pub fn choose_run(location: &Location, class: &str, wait: f64) -> Result<Run, Error> {
    let mut store = Store::connect(location).with_context(|| format!("opening the store {location}"))?;
    let started = Instant::now();
    loop {
        let now = stored::unix_now() as f64;
        let open: Vec<Run> = store.runs().context("reading the store")?.into_iter().filter(|r| !r.finished && r.finisher.is_none() && r.started_at as f64 + stored::option::<f64>(r, "time_seconds") > now + 5.0).collect();
        if let Some(run) = open.iter().find(|r| stored::option::<String>(r, "class") == class) {
            return Ok(run.clone());
        }
        if let Some(other) = open.first() {
            return Err(user_error(format!(
                "error: refusing to join run {} of `{}`: it was started on {}, and this host is {}; speedups are only compared between hosts of one machine class (CPU model, ISA, threads)",
                other.id.0,
                other.new.kernel,
                stored::option::<String>(other, "class"),
                class
            )));
        }
        if started.elapsed().as_secs_f64() >= wait {
            return Err(user_error(format!("error: the store {location} holds no search to join (none unfinished with search time left; start one with `ollie optimize SPEC --store {location}`)")));
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// Renews a worker's leases every third of their length, on its own connection, until dropped.
pub(crate) struct Heartbeat {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Heartbeat {
    pub fn start(store: &Store, worker: WorkerId, seconds: f64) -> Result<Heartbeat, Error> {
        let mut own = store.reopen().context("opening the store for the heartbeat")?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let every = Duration::from_secs_f64(seconds / 3.0);
        let thread = std::thread::spawn(move || {
            let mut last = Instant::now();
            while !flag.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(50).min(every));
                if last.elapsed() < every {
                    continue;
                }
                last = Instant::now();
                if let Err(e) = own.renew(worker, seconds) {
                    tracing::warn!(error = %e, "the heartbeat could not renew the leases");
                }
            }
        });
        Ok(Heartbeat { stop, thread: Some(thread) })
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What a chain's evaluator and its `shared` proposer share: the leases on candidates in
/// judgement, and what other workers left for the chain.
#[derive(Default)]
pub(crate) struct Held {
    /// Taken over from another worker, not yet prepared.
    pub taken: Vec<(Kernel, Lease)>,
    /// Prepared: leased, awaiting their verdicts.
    pub pending: Vec<(Kernel, Lease)>,
    /// For the `shared` proposer to offer: taken-over candidates and faster kernels found by
    /// other chains.
    pub offered: Vec<Kernel>,
    /// The chain's best time (on its scale), which a migrant must beat.
    pub best_seconds: f64,
}

impl Held {
    pub fn new(best_seconds: f64) -> Held {
        Held { best_seconds, ..Held::default() }
    }

    /// The lease a judged candidate was prepared under.
    pub fn settle(&mut self, kernel: &Kernel) -> Option<Lease> {
        let k = self.pending.iter().position(|(c, _)| c == kernel)?;
        Some(self.pending.remove(k).1)
    }
}

/// How often a chain looks at what other workers stored.
const LOOK_EVERY: Duration = Duration::from_secs(5);

/// Other workers' timed kernels read per look, at most.
const TIMED_PER_LOOK: usize = 256;

/// The evaluator with a lease on each candidate before it is judged, which also takes in, every
/// [`LOOK_EVERY`], what other workers stored: candidates whose lease expired unjudged (taken
/// over), their timings (the cost model's rows), their new bests faster than the chain's
/// (migrants), their counterexamples (tried first by every verification).
pub(crate) struct Leased<'a, 's> {
    pub inner: Evaluator<'a>,
    pub store: Store,
    pub run: RunId,
    pub worker: WorkerId,
    pub seconds: f64,
    pub held: Rc<RefCell<Held>>,
    /// A lease that could not be written (the store unreachable past its patience): the search
    /// stops on it.
    pub error: &'s RefCell<Option<ollie_store::StoreError>>,
    looked: Option<Instant>,
    /// The last of the others' candidates and counterexamples taken in.
    seen: (CandidateId, i64),
}

impl<'a, 's> Leased<'a, 's> {
    /// `seen`: the last candidate the chain's cost model was trained with at its start (the
    /// counterexamples stored by then were loaded with the verification's configuration).
    #[allow(clippy::too_many_arguments)]
    pub fn new(inner: Evaluator<'a>, mut store: Store, run: RunId, worker: WorkerId, seconds: f64, held: Rc<RefCell<Held>>, error: &'s RefCell<Option<ollie_store::StoreError>>, seen: CandidateId) -> Result<Leased<'a, 's>, ollie_store::StoreError> {
        let counterexamples = store.others_counterexamples(run, worker, 0)?.last().map_or(0, |(id, _)| *id);
        Ok(Leased { inner, store, run, worker, seconds, held, error, looked: None, seen: (seen, counterexamples) })
    }

    /// Takes in what other workers stored (at most every [`LOOK_EVERY`]); a store that fails is
    /// left alone until the next look: the chain goes on without it.
    fn look(&mut self) {
        if self.looked.is_some_and(|t| t.elapsed() < LOOK_EVERY) {
            return;
        }
        self.looked = Some(Instant::now());
        if let Err(e) = self.look_now() {
            tracing::warn!(error = %e, "could not read what other workers stored");
        }
    }

    fn look_now(&mut self) -> Result<(), ollie_store::StoreError> {
        let mut held = self.held.borrow_mut();
        // A taken-over candidate not yet judged is offered again until it is.
        let unjudged: Vec<Kernel> = held.taken.iter().map(|(k, _)| k.clone()).filter(|k| !held.offered.contains(k)).collect();
        held.offered.extend(unjudged);
        while let Some((lease, work)) = self.store.take_over(self.run, self.worker, self.seconds)? {
            match stored(&work) {
                Some(kernel) => {
                    tracing::info!(lease = lease.id, "took over a candidate whose worker's lease expired");
                    held.taken.push((kernel.clone(), lease));
                    held.offered.push(kernel);
                }
                None => tracing::warn!(lease = lease.id, "a leased kernel does not read back"),
            }
        }
        let mut migrant: Option<(f64, Kernel)> = None;
        for (id, estimate, new_best, work) in self.store.others_timed(self.run, self.worker, self.seen.0, TIMED_PER_LOOK)? {
            self.seen.0 = id;
            let Some(kernel) = stored(&work) else { continue };
            self.inner.learn_timing(&kernel, estimate);
            if new_best && estimate < held.best_seconds * 0.98 && migrant.as_ref().is_none_or(|(e, _)| estimate < *e) {
                migrant = Some((estimate, kernel));
            }
        }
        if let Some((estimate, kernel)) = migrant {
            tracing::info!(estimate, "another worker's best, offered to this chain");
            held.offered.push(kernel);
        }
        for (id, c) in self.store.others_counterexamples(self.run, self.worker, self.seen.1)? {
            self.seen.1 = id;
            self.inner.learn(c.shapes.into_iter().zip(c.data).filter_map(|(s, d)| Tensor::from_shape_vec(s, d).ok()).collect());
        }
        Ok(())
    }
}

/// A kernel as a lease or a candidate row holds it.
fn stored(work: &Work) -> Option<Kernel> {
    Kernel::from_stored(&work.schedule, &work.source, &work.flags, &work.graph).ok()
}

impl Evaluate<Kernel> for Leased<'_, '_> {
    type Note = Note;

    fn rank(&mut self, proposals: &[Kernel]) -> Option<Vec<f64>> {
        self.inner.rank(proposals)
    }

    fn ranks(&self) -> bool {
        self.inner.ranks()
    }

    fn prepare(&mut self, batch: &[Kernel]) {
        for kernel in batch {
            let mut held = self.held.borrow_mut();
            let lease = match held.taken.iter().position(|(k, _)| k == kernel) {
                Some(k) => held.taken.remove(k).1,
                None => match self.store.lease(self.run, self.worker, &work_of(kernel), self.seconds) {
                    Ok(lease) => lease,
                    Err(e) => {
                        *self.error.borrow_mut() = Some(e);
                        continue;
                    }
                },
            };
            held.pending.push((kernel.clone(), lease));
        }
        self.inner.prepare(batch);
        self.look();
    }

    fn prefetch(&mut self, batch: &[Kernel]) {
        self.inner.prefetch(batch);
    }

    fn evaluate(&mut self, candidate: &Kernel, current: &Kernel) -> (Evaluation, Note) {
        self.inner.evaluate(candidate, current)
    }

    fn confirm(&mut self, candidate: &Kernel, note: &mut Note) -> bool {
        self.inner.confirm(candidate, note)
    }
}

/// The `shared` proposer: offers what the evaluator took in from other workers (see
/// [`Leased`]), ahead of every other proposal. On a store no other worker can join, it is
/// exhausted once it has offered what the run's earlier sessions left: a search whose other
/// proposers are spent (`--proposers llm` past its calls) then ends instead of waiting out its
/// budget.
pub(crate) struct Shared {
    pub held: Rc<RefCell<Held>>,
    pub alone: bool,
}

impl Propose<Kernel, Note> for Shared {
    fn name(&self) -> &str {
        "shared"
    }

    fn propose(&mut self, _current: &Kernel, _rng: &mut ChaCha8Rng) -> Proposal<Kernel> {
        match self.held.borrow_mut().offered.pop() {
            Some(k) => Proposal::Candidate(k),
            None if self.alone => Proposal::Exhausted,
            None => Proposal::NotNow,
        }
    }

    /// Asked first whenever it has something: a taken-over candidate is owed a verdict, and a
    /// faster kernel found elsewhere is worth more than a mutation.
    fn leading(&self, _current: &Kernel) -> bool {
        !self.held.borrow().offered.is_empty()
    }
    fn observe(&mut self, event: &Event<Kernel, Note>) {
        if let (true, Evaluation::Timed { seconds, .. }) = (event.new_best, event.outcome) {
            let mut held = self.held.borrow_mut();
            held.best_seconds = held.best_seconds.min(seconds);
        }
    }
}

/// Waits, up to `patience`, for the run's other workers to leave (each stops at the same
/// deadline): the final phase then sees what they found. A worker not seen for a lease's
/// length before the latest seen one (both by the store's clock) is taken for dead.
pub(crate) fn wait_for_others(store: &mut Store, run: RunId, me: WorkerId, lease: f64, patience: Duration) -> Result<(), Error> {
    let started = Instant::now();
    while started.elapsed() < patience {
        let workers = store.workers(run).context("reading the store")?;
        let latest = workers.iter().map(|w| w.seen_at).fold(f64::NEG_INFINITY, f64::max);
        if !workers.iter().any(|w| w.id != me && w.left_at.is_none() && latest - w.seen_at < lease) {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    tracing::warn!(run = run.0, "other workers still searching when the final phase began");
    Ok(())
}

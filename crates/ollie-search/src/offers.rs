//! Kernels a proposer offers each in turn until each has been measured: a kernel the cost model
//! left out of a round is offered again in the next (the `sketch` and `rewrite` proposers).

use crate::{Kernel, Proposal};

pub(crate) struct Offers {
    pending: Vec<Kernel>,
    next: usize,
    /// Offers since the search last reported a step: a round gets each pending kernel once.
    offered: usize,
}

impl Offers {
    pub(crate) fn new(pending: Vec<Kernel>) -> Offers {
        Offers { pending, next: 0, offered: 0 }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Whether `kernel` is still to be measured.
    pub(crate) fn holds(&self, kernel: &Kernel) -> bool {
        self.pending.contains(kernel)
    }

    /// The next pending kernel, or `NotNow` once this round has had each.
    pub(crate) fn offer(&mut self) -> Proposal<Kernel> {
        if self.offered >= self.pending.len() {
            return Proposal::NotNow;
        }
        self.offered += 1;
        let k = self.next % self.pending.len();
        self.next = k + 1;
        Proposal::Candidate(self.pending[k].clone())
    }

    /// `kernel` is offered elsewhere: it leaves the pending kernels, and the round goes on.
    pub(crate) fn withdraw(&mut self, kernel: &Kernel) {
        self.pending.retain(|k| k != kernel);
    }

    /// The search measured `candidate` (or rejected it): a new round begins.
    pub(crate) fn seen(&mut self, candidate: &Kernel) {
        self.offered = 0;
        self.pending.retain(|k| k != candidate);
    }
}

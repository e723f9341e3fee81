//! The simulation's clock: what can happen ([`Event`]) and the queue that orders it
//! ([`EventQueue`]: by time, then by the order it was scheduled in, so ties replay the same way
//! on every run).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Something scheduled to happen at a simulated moment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Event {
    /// The step in flight ends: its tokens are sampled, then the next step is scheduled.
    StepEnd,
    /// The engine is up (weights loaded, graphs captured): held access lines are printed and the
    /// first step can start.
    Ready,
    /// The next open-loop request of workload stream `stream` arrives (Poisson or burst).
    Arrival { stream: u16 },
    /// A closed-loop client of workload stream `stream` sends its next request.
    ClientNext { stream: u16 },
    /// A client re-sends job `job` after its backoff.
    Retry { job: u32 },
    /// The client of attempt `req` stops waiting for it.
    Timeout { req: u32 },
    /// The engine logs its periodic stats line (every 10 s).
    Stats,
    /// Prometheus scrapes `/metrics` (every [`crate::output::SCRAPE_EVERY_NS`]).
    Scrape,
    /// The GPU telemetry takes a sample (every second, when GPUs are simulated).
    Gpu,
}

/// Scheduled events, earliest first.
#[derive(Default)]
pub(super) struct EventQueue {
    heap: BinaryHeap<Reverse<(u64, u64, Event)>>,
    /// How many events were ever scheduled: the tie-breaker between events at the same moment.
    scheduled: u64,
}

impl EventQueue {
    pub(super) fn push(&mut self, at_ns: u64, event: Event) {
        self.scheduled += 1;
        self.heap.push(Reverse((at_ns, self.scheduled, event)));
    }

    /// When the next event happens, if any.
    pub(super) fn next_ns(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse((at_ns, _, _))| *at_ns)
    }

    /// The next event and its moment, if it happens no later than `until_ns`.
    pub(super) fn pop_due(&mut self, until_ns: u64) -> Option<(u64, Event)> {
        if self.next_ns()? > until_ns {
            return None;
        }
        self.heap.pop().map(|Reverse((at_ns, _, event))| (at_ns, event))
    }
}

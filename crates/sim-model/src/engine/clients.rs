//! The synthetic clients: each workload stream issues jobs (open loop on its arrival process,
//! or closed loop: a client sends its next job when the last one ended and it has thought),
//! sends every attempt through the node's admission, gives up after its timeout and retries a
//! failure with exponential backoff.

use super::admission::Admission;
use super::events::Event;
use super::request::{Outcome, State};
use super::{OnDisconnect, Sim, secs};
use crate::output::vllm_log;
use crate::rng::Rng;
use crate::workload::Arrivals;

/// A workload stream's own random draws and progress.
pub(super) struct StreamState {
    pub(super) rng: Rng,
    /// Jobs issued so far (against the stream's `limit`).
    pub(super) issued: u64,
    /// Requests sent in the stream's burst arrivals so far.
    pub(super) burst_pos: u64,
}

/// A logical request of a synthetic client (its attempts are [`Req`](super::request::Req)s).
#[derive(Clone, Debug)]
pub(super) struct Job {
    pub(super) stream: u16,
    pub(super) prompt_tokens: u32,
    /// The answer's length if `max_tokens` does not cut it.
    pub(super) natural_tokens: u32,
    pub(super) attempts: u32,
    pub(super) closed_loop: bool,
}

impl Sim {
    /// Whether workload stream `stream` still sends: the gateway has not cut the node, and the
    /// stream has neither stopped nor reached its limit.
    fn stream_open(&self, stream: usize) -> bool {
        let spec = &self.cfg.workload.streams[stream];
        !self.cut()
            && spec.stop_s.is_none_or(|stop| self.now_ns < secs(stop))
            && spec.limit.is_none_or(|limit| self.streams[stream].issued < limit)
    }

    fn new_job(&mut self, stream: usize, closed_loop: bool) -> u32 {
        let spec = &self.cfg.workload.streams[stream];
        let (prompt_dist, output_dist) = (spec.prompt.clone(), spec.output.clone());
        let rng = &mut self.streams[stream].rng;
        let prompt_tokens = prompt_dist.sample(rng);
        let natural_tokens = output_dist.sample(rng).max(1);
        self.streams[stream].issued += 1;
        self.jobs.push(Job {
            stream: stream as u16,
            prompt_tokens,
            natural_tokens,
            attempts: 0,
            closed_loop,
        });
        (self.jobs.len() - 1) as u32
    }

    /// An open-loop arrival: send a new job and schedule the stream's next arrival.
    pub(super) fn arrival(&mut self, stream: u16) {
        let index = usize::from(stream);
        if !self.stream_open(index) {
            return;
        }
        let job = self.new_job(index, false);
        self.attempt(job);
        let next = match self.cfg.workload.streams[index].arrivals {
            Arrivals::Poisson { rate_per_s } => {
                self.now_ns + secs(self.streams[index].rng.exponential(1.0 / rate_per_s))
            }
            Arrivals::Bursts { every_s, size, spacing_s } => {
                let state = &mut self.streams[index];
                state.burst_pos += 1;
                let (burst, pos) = (state.burst_pos / u64::from(size), state.burst_pos % u64::from(size));
                let start = secs(self.cfg.workload.streams[index].start_s);
                start + secs(burst as f64 * every_s + pos as f64 * spacing_s)
            }
            Arrivals::Closed { .. } => return,
        };
        self.events.push(next, Event::Arrival { stream });
    }

    /// A closed-loop client sends its next job.
    pub(super) fn client_next(&mut self, stream: u16) {
        if !self.stream_open(usize::from(stream)) {
            return;
        }
        let job = self.new_job(usize::from(stream), true);
        self.attempt(job);
    }

    /// A synthetic client sends (or re-sends) job `job_id`.
    pub(super) fn attempt(&mut self, job_id: u32) {
        if self.cut() {
            return;
        }
        self.jobs[job_id as usize].attempts += 1;
        let job = self.jobs[job_id as usize].clone();
        let spec = &self.cfg.workload.streams[usize::from(job.stream)];
        let (max_tokens, timeout_s) = (spec.max_tokens, spec.client.timeout_s);
        let admitted = self.admit(Admission {
            job: Some(job_id),
            prompt_tokens: job.prompt_tokens,
            target_tokens: job.natural_tokens.min(max_tokens),
            max_tokens,
            attempt: job.attempts,
        });
        if let Ok(req) = admitted
            && let Some(timeout_s) = timeout_s
        {
            self.events.push(self.now_ns + secs(timeout_s), Event::Timeout { req });
        }
    }

    /// A client went away (timeout, or a live connection closed).
    pub(super) fn client_gone(&mut self, req_id: u32) {
        let req = &self.reqs[req_id as usize];
        if req.state == State::Done {
            return;
        }
        let was_running = req.state == State::Running;
        match req.state {
            State::Waiting => self.waiting.retain(|queued| *queued != req_id),
            State::Running => self.running.retain(|running| *running != req_id),
            State::Done => {}
        }
        let leak = self.cfg.engine.on_disconnect == OnDisconnect::Leak;
        if leak && was_running {
            // The serving layer forgets the request; its blocks stay allocated for good.
            self.reqs[req_id as usize].blocks = 0;
        } else if !leak {
            let id = self.request_id(req_id);
            vllm_log::aborted(&mut self.rec.log, self.now_ns, &id);
        }
        self.finish(req_id, Outcome::ClientGone);
        self.try_start();
    }

    /// What job `job_id`'s client does once an attempt of it ended with `outcome`: retry a
    /// failure after its backoff while retries are left, else (closed loop) think and send
    /// the next job.
    pub(super) fn after_attempt(&mut self, job_id: u32, outcome: Outcome) {
        let now = self.now_ns;
        let job = self.jobs[job_id as usize].clone();
        let client = self.cfg.workload.streams[usize::from(job.stream)].client.clone();
        let failed = matches!(outcome, Outcome::ClientGone | Outcome::Oom | Outcome::Rejected(429 | 500..));
        if failed && job.attempts <= client.max_retries {
            let backoff_s = client.backoff_s * f64::from(1u32 << (job.attempts - 1).min(16));
            self.events.push(now + secs(backoff_s), Event::Retry { job: job_id });
            return;
        }
        if job.closed_loop
            && let Arrivals::Closed { think_s, .. } =
                self.cfg.workload.streams[usize::from(job.stream)].arrivals
        {
            self.events.push(now + secs(think_s), Event::ClientNext { stream: job.stream });
        }
    }
}

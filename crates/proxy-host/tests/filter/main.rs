//! The stream-timer filter in the proxy-wasm test host, driven through the whole ABI lifecycle:
//! recorded streams at random chunk boundaries checked against core's offline timing, hosts
//! without metrics or with unexpected statuses, hostile bodies, other routes, bad
//! configurations, the guard, 10 000 concurrent streams, and the deployment files.

mod deploy;
mod guard;
mod hosts;
mod inputs;
mod load;
mod recorded;

use triage_proxy_host::{Filter, Finished, Options};

pub const MS: u64 = 1_000_000;

/// A recorded stream from `tests/data/sse`.
pub fn sse(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/sse").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every recorded stream and the path a client would post it to.
pub const STREAMS: [(&str, &str, &str); 9] = [
    ("openai_chat.sse", "/v1/chat/completions", "chat"),
    ("vllm_reasoning.sse", "/v1/chat/completions", "chat"),
    ("openai_tool_calls.sse", "/proxy/openai/v1/chat/completions?api-version=2", "chat"),
    ("openai_completions.sse", "/v1/completions", "completions"),
    ("openai_responses.sse", "/v1/responses", "responses"),
    ("anthropic_messages.sse", "/v1/messages", "messages"),
    ("anthropic_thinking.sse", "/v1/messages", "messages"),
    ("anthropic_tool_use.sse", "/anthropic/v1/messages", "messages"),
    ("anthropic_error.sse", "/v1/messages", "messages"),
];

/// splitmix64: small, seeded, the same everywhere.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }
}

/// Cut `bytes` at 0..=max_cuts random positions (duplicates give empty chunks, which are
/// dropped: a proxy does not deliver empty body callbacks mid-stream).
pub fn split(bytes: &[u8], rng: &mut Rng, max_cuts: u64) -> Vec<Vec<u8>> {
    let n = rng.below(max_cuts + 1) as usize;
    let mut cuts: Vec<usize> = (0..n).map(|_| rng.below(bytes.len() as u64) as usize).collect();
    cuts.sort_unstable();
    let mut out = Vec::new();
    let mut start = 0;
    for cut in cuts.into_iter().chain(std::iter::once(bytes.len())) {
        if cut > start {
            out.push(bytes[start..cut].to_vec());
            start = cut;
        }
    }
    out
}

/// Arrival times for `n` chunks after `start`: mostly decode-like gaps, some coalesced (0),
/// some stalls (above 100 ms).
pub fn times(rng: &mut Rng, n: usize, start: u64) -> Vec<u64> {
    let mut t = start;
    (0..n)
        .map(|_| {
            t += match rng.below(10) {
                0 => 0,
                1 => 120 * MS + rng.below(400 * MS),
                _ => rng.below(40 * MS) + 1,
            };
            t
        })
        .collect()
}

pub fn load(config: &str) -> Filter {
    Filter::load(Options::default().config(config)).unwrap_or_else(|e| panic!("loading the filter: {e}"))
}

/// The full name of a metric of the default configuration (Envoy label style).
pub fn metric(base: &str, route: &str, extra: Option<(&str, &str)>) -> String {
    let mut s = format!("llm_stream_{base}_route=.={route};.;");
    if let Some((k, v)) = extra {
        s.push_str(&format!("_{k}=.={v};.;"));
    }
    s
}

pub fn assert_all_continue(f: &Finished) {
    use triage_proxy_host::types::Action;
    assert!(f.actions.iter().all(|a| *a == Action::Continue), "{:?}", f.actions);
}

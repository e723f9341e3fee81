//! Rule `input-too-long`: one request asks for a large share of the GPU in a single allocation.

use super::{Rule, RuleDoc};
use crate::analyze::facts::Facts;
use crate::analyze::parsers::oom::{OomFacts, fmt_gib};
use crate::analyze::report::{Class, Finding};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: "input-too-long",
        class: Class::Oom,
        title: "A single over-long request exhausts memory",
        detects: "An OOM whose failed allocation (`Tried to allocate`) is at least a quarter of the GPU's total capacity — or more than the GPU holds at all.",
        why: "Activation and attention buffers grow with the length of one request. A request long enough needs more memory in one piece than the GPU can free, whatever the batch size or cache setting, and retrying it crashes the worker again.",
        example: "`Tried to allocate 200.00 GiB. GPU 0 has a total capacity of 139.80 GiB of which 139.19 GiB is free` (a real H200 capture): the GPU is empty and the one request is still too big.",
        fix: "Cap input length: `--max-model-len` on the server (longer prompts then get a 400 instead of crashing the engine) and a prompt-token limit at the gateway; reject or truncate over-long inputs; route real long-context traffic to a pool with more GPUs.",
    },
    check,
};

/// A failed allocation of at least this share of the GPU is one request's, not the batch's.
const LARGE_SHARE: f64 = 0.25;

fn check(f: &Facts) -> Option<Finding> {
    let (o, tried, total) = f
        .ooms
        .iter()
        .filter_map(|o| Some((o, o.tried_gib?, o.total_or_smi(&f.gpus)?)))
        .filter(|(_, tried, total)| *total > 0.0 && tried / total >= LARGE_SHARE)
        .max_by(|a, b| (a.1 / a.2).total_cmp(&(b.1 / b.2)))?;
    let share = tried / total;
    let gpu = o.gpu_name();
    let (confidence, scale) = if tried > total {
        (
            0.9,
            format!(
                "more than all of {gpu}'s {} — no cache or batch setting can make it fit",
                fmt_gib(total)
            ),
        )
    } else if share >= 0.5 {
        (0.8, format!("{:.0} % of {gpu}'s {}", share * 100.0, fmt_gib(total)))
    } else {
        (0.65, format!("{:.0} % of {gpu}'s {}", share * 100.0, fmt_gib(total)))
    };
    let empty = match OomFacts::share(o.free_gib, Some(total)) {
        Some(free) if free >= 0.9 => {
            format!(
                " The GPU was almost empty ({} free), so nothing else is to blame.",
                fmt_gib(free * total)
            )
        }
        _ => String::new(),
    };
    Some(RULE.doc.finding(
        confidence,
        format!(
            "The failed allocation asks for {} in one piece, {scale}: the buffers of one over-long request.{empty}",
            fmt_gib(tried)
        ),
        o.evidence.iter().take(2).cloned().collect(),
        &[
            "set --max-model-len to what the GPU can hold, so the server rejects longer prompts with a 400 instead of crashing",
            "enforce a prompt-token limit at the gateway; reject or truncate over-long inputs",
            "serve legitimate long-context traffic from a separate pool with more GPUs (--tensor-parallel-size) and chunked prefill",
            "restart the worker if it died; a client retrying the same request will crash it again",
        ],
        &[
            "find the request in flight at the OOM: the longest prompt_tokens in the request log",
            "compare the gateway's input limit with the server's --max-model-len",
        ],
    ))
}

#[cfg(test)]
mod tests {
    use super::super::fired;

    const H200: &str = include_str!("../../../../../tests/data/oom/h200_200gib.txt");

    #[test]
    fn fires_first_on_the_real_h200_oom() {
        let report = crate::analyze::analyze(&[("oom.txt", H200)]);
        let f = &report.findings[0];
        assert_eq!(f.rule, "input-too-long", "{:?}", report.findings);
        assert_eq!(f.confidence, 0.9);
        assert!(f.summary.contains("200.00 GiB") && f.summary.contains("139.80 GiB"), "{}", f.summary);
        assert!(f.summary.contains("139.19 GiB free"), "{}", f.summary);
        assert_eq!(f.evidence[0].line, 5);
        assert_eq!(report.findings.len(), 1, "{:?}", report.findings);
    }

    #[test]
    fn fires_on_a_large_share_with_the_total_from_nvidia_smi() {
        let oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 30.00 GiB. GPU 0 has a total capac\n";
        let smi = "index, memory.used [MiB], memory.total [MiB]\n0, 10000 MiB, 81559 MiB\n";
        let f = fired(&[("oom", oom), ("smi", smi)], "input-too-long").unwrap();
        assert_eq!(f.confidence, 0.65);
        assert!(f.summary.contains("38 % of GPU 0's 79.65 GiB"), "{}", f.summary);
    }

    #[test]
    fn quiet_on_a_small_allocation() {
        let oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.23 GiB is free.\n";
        assert!(fired(&[("oom", oom)], "input-too-long").is_none());
        assert!(fired(&[("oom", "RuntimeError: CUDA error: out of memory\n")], "input-too-long").is_none());
    }
}

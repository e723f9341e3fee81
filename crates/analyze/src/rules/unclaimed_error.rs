//! Rule `unclaimed-error`: an error line that no other rule explains.
//!
//! Not a check over the facts like the others: it runs after them ([`finding`]), because a
//! block of alarm lines is explained exactly when a rule that fired cites it, or a known message
//! in it belongs to a rule that fired (`signals/`).

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts};
use crate::facts::Facts;
use crate::facts::sse::StreamFacts;
use crate::report::{Class, Finding};
use crate::signals::{Alarm, BENIGN, Block, SIGNALS};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::UnclaimedError,
        class: Class::Inconclusive,
        title: "An error no rule explains",
        detects: "A line the engine or runtime marks as a failure — an `ERROR`/`CRITICAL`/`FATAL` level, a `Traceback`, an `…Error:` line, a Rust panic, an `Error:` exit, a JSON error body, an HTTP 5xx, a capacity figure at or below zero — that no other finding explains.",
        why: "Calling a system healthy while its log holds an error is the one mistake an on-call engineer cannot forgive. When the error names no cause the analyzer knows, the honest answer is that the evidence is not enough yet — and which evidence would settle it.",
        example: "`RuntimeError: CUDA error: an illegal memory access was encountered` with no other fault in the paste.",
        fix: "Paste more: the lines before the first error (the root cause is usually printed first), the whole traceback down to its last line, the engine's version and start-up arguments, and `nvidia-smi` from the same moment.",
        zh: RuleText {
            title: "有一条错误，没有规则能解释",
            detects: "引擎或运行时标记为失败的行——`ERROR`/`CRITICAL`/`FATAL` 级别、`Traceback`、`…Error:` 行、Rust panic、`Error:` 退出、JSON 错误体、HTTP 5xx、小于等于零的容量数字——而其他发现都解释不了它。",
            why: "日志里明明有错误，却说系统健康，这是值班工程师最不能原谅的错误。当错误本身没有指向已知的原因时，诚实的回答是：证据还不够——并说明什么证据能下结论。",
            example: "粘贴内容里只有 `RuntimeError: CUDA error: an illegal memory access was encountered`，没有其他故障。",
            fix: "多贴一些：第一条错误之前的日志（根因通常最先打印）、完整的 traceback 直到最后一行、引擎版本和启动参数，以及同一时刻的 `nvidia-smi`。",
        },
    },
    check: |_, _| None,
};

/// Blocks quoted at most.
const MAX_QUOTED: usize = 5;

/// The `unclaimed-error` finding, given the findings of every other rule.
pub(crate) fn finding(f: &Facts, found: &[Finding], lang: Lang) -> Option<Finding> {
    let (open, dropped) = unexplained_blocks(f, found);
    let broken = broken_streams(f, found);
    if open.is_empty() && dropped == 0 && broken.is_empty() {
        return None;
    }
    let n = open.len() as u64 + dropped + broken.len() as u64;
    let summary = summary(n, &open, &broken, lang);
    let next = what_to_paste(&open, &broken, lang);
    Some(RULE.doc.finding(
        lang,
        summary,
        FindingBody {
            confidence: 0.5,
            evidence: open.iter().map(|b| b.quote.clone()).chain(broken.iter().map(|s| s.evidence.clone())).take(MAX_QUOTED).collect(),
            remediation: texts(lang, &[(
                "change nothing on this evidence alone: if the service is down, restart it and keep the whole log of the failed run for the diagnosis",
                "仅凭这些证据不要改配置：如果服务已经挂了，先重启，并保留失败那次运行的完整日志用于诊断",
            )]),
            next_checks: next,
        },
    ))
}

/// The error blocks no finding explains, and how many more were dropped past the bound with a
/// line no finding claims.
fn unexplained_blocks<'a>(f: &'a Facts, found: &[Finding]) -> (Vec<&'a Block>, u64) {
    // A consequence (a dead engine) explains no error: the error that killed it needs a cause.
    let consequences = super::consequences(f);
    let fired = |rule: RuleId| found.iter().any(|x| x.rule == rule && !consequences.contains(&rule));
    let claimed_signal = |i: usize| SIGNALS[i].rules.iter().any(|&r| r == BENIGN || fired(r));
    let cited = |b: &Block| {
        found
            .iter()
            .filter(|x| !super::listed(consequences, &x.rule))
            .any(|x| x.evidence.iter().any(|e| *e.input == *b.input && (b.first..=b.last).contains(&e.line)))
    };
    // A block whose every alarm line is a known message of a rule that fired is explained too,
    // even by a consequence: a lone `EngineDeadError` says all there is to say.
    let all_known = |b: &Block| {
        b.unknown_lines == 0
            && b.signals
                .iter()
                .all(|&i| SIGNALS[i].rules.iter().any(|r| *r == BENIGN || found.iter().any(|x| x.rule == *r)))
    };
    // A block holding the words of a generic family whose rule fired is explained by it.
    let generic: u32 =
        found.iter().filter_map(|x| super::generic::family_of(&x.rule)).fold(0, |m, fam| m | fam.bit());
    let open: Vec<&Block> = f
        .signals
        .blocks
        .iter()
        .filter(|b| {
            !cited(b)
                && !b.signals.iter().any(|&i| claimed_signal(i))
                && !all_known(b)
                && b.families & generic == 0
        })
        .collect();
    let dropped =
        f.signals.dropped_unknown + u64::from(f.signals.dropped_signals.iter().any(|&i| !claimed_signal(i)));
    (open, dropped)
}

/// A stream that broke off (no terminal event, an error event) is an error too, unless a finding
/// cites it.
fn broken_streams<'a>(f: &'a Facts, found: &[Finding]) -> Vec<&'a StreamFacts> {
    f.streams
        .iter()
        .filter(|s| s.fault.is_some())
        .filter(|s| {
            !found
                .iter()
                .any(|x| x.evidence.iter().any(|e| e.input == s.evidence.input && e.line >= s.evidence.line))
        })
        .collect()
}

/// The finding's sentence: how many errors, and the first one's lines.
fn summary(n: u64, open: &[&Block], broken: &[&StreamFacts], lang: Lang) -> String {
    // The quote is the block's telling line — often its last (the exception after the
    // traceback) —, so the block's extent is said apart from the quoted line.
    let first =
        open.first().map(|b| ((b.first, b.last), b.quote.line, b.quote.text.as_str())).or_else(|| {
            broken
                .first()
                .map(|s| ((s.evidence.line, s.evidence.line), s.evidence.line, s.evidence.text.as_str()))
        });
    match first {
        Some(((from, to), line, text)) if from != to => lang.pick(
            format!("{n} error block(s) that no rule explains; the first spans lines {from}–{to}, and line {line} reads: {text}"),
            format!("有 {n} 处错误没有规则能解释；第一处在第 {from}–{to} 行，其中第 {line} 行：{text}"),
        ),
        Some((_, line, text)) => lang.pick(
            format!("{n} error block(s) that no rule explains; the first is line {line}: {text}"),
            format!("有 {n} 处错误没有规则能解释；第一处在第 {line} 行：{text}"),
        ),
        None => lang.pick(
            format!(
                "{n} error block(s) beyond the first {} that no rule explains",
                crate::signals::MAX_BLOCKS
            ),
            format!("前 {} 处之后还有 {n} 处错误没有规则能解释", crate::signals::MAX_BLOCKS),
        ),
    }
}

/// What to paste next: what the known messages in the blocks ask for, then what broken streams,
/// cut tracebacks and error answers need, then what any unexplained error needs.
fn what_to_paste(open: &[&Block], broken: &[&StreamFacts], lang: Lang) -> Vec<String> {
    let mut next: Vec<String> = Vec::new();
    for b in open {
        for &i in &b.signals {
            if let Some((en, zh)) = SIGNALS[i].next {
                let t = lang.pick(en, zh).to_owned();
                if !next.contains(&t) {
                    next.push(t);
                }
            }
        }
    }
    for s in broken {
        if let Some((kind, what)) = &s.fault {
            let t = lang.pick(
                format!("the stream broke off ({}: {what}): paste the server's log from the same seconds, and the client's error if it printed one", kind.as_str()),
                format!("流中途断开（{}：{what}）：请粘贴同一时间段的服务端日志，以及客户端打印的错误（如果有）", kind.as_str()),
            );
            if !next.contains(&t) {
                next.push(t);
            }
        }
    }
    if open.iter().any(|b| b.cut) {
        next.push(
            lang.pick(
                "the traceback was cut before its last line: paste it whole, down to the exception it ends with",
                "traceback 在最后一行之前被截断了：请完整粘贴，一直到它结尾的那个异常",
            )
            .to_owned(),
        );
    }
    if open.iter().any(|b| b.kinds.contains(&Alarm::ServerError) || b.kinds.contains(&Alarm::JsonError)) {
        next.push(
            lang.pick(
                "an error answer came back: paste the engine's log from the same seconds, which says why it answered so",
                "服务返回了错误响应：请粘贴同一时间段的引擎日志，那里会写明原因",
            )
            .to_owned(),
        );
    }
    next.extend(texts(lang, &[
        (
            "paste the 50 lines before the first error: the root cause is usually printed first, the errors after it are consequences",
            "粘贴第一条错误之前的 50 行：根因通常最先打印，之后的错误多是连锁反应",
        ),
        (
            "add the engine's version and start-up arguments (the `non-default args` / `ServerArgs` line) and `nvidia-smi` from the same moment",
            "补充引擎版本和启动参数（`non-default args` / `ServerArgs` 那一行），以及同一时刻的 `nvidia-smi`",
        ),
    ]));
    next
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use crate::report::Verdict;
    use crate::rules::RuleId;

    #[test]
    fn an_unexplained_error_is_never_healthy() {
        let stats = "INFO 05-12 10:00:01 [loggers.py:1] Engine 000: Avg prompt throughput: 100.0 tokens/s, Avg generation throughput: 50.0 tokens/s, Running: 2 reqs, Waiting: 0 reqs, GPU KV cache usage: 3.0%, Prefix cache hit rate: 0.0%\n";
        let log = format!("{stats}RuntimeError: the sampler returned an empty batch\n");
        let r = case(&[("vllm.log", &log)]).en;
        assert_eq!(r.verdict, Verdict::Inconclusive);
        assert_eq!(r.findings[0].rule, RuleId::UnclaimedError);
        let f =
            case(&[("vllm.log", &log)]).snapshot(RuleId::UnclaimedError, "unknown_runtime_error").unwrap();
        assert_eq!(f.evidence[0].line, 2);
        // A GPU fault is a failure any engine words alike: nothing is served, though no exact
        // rule names its cause; the known message's next check still comes along.
        let log = format!("{stats}RuntimeError: CUDA error: an illegal memory access was encountered\n");
        let r = case(&[("vllm.log", &log)]).en;
        assert_eq!(r.verdict, Verdict::ThroughputZero, "{:?}", r.findings);
        assert_eq!(r.findings[0].rule, RuleId::GenericGpuFault);
        assert!(r.findings.iter().all(|f| f.rule != RuleId::UnclaimedError), "{:?}", r.findings);
    }

    #[test]
    fn an_explained_error_is_claimed() {
        let log = "Traceback (most recent call last):\n  File \"x.py\", line 1, in f\nValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.\n";
        assert!(
            case(&[("vllm.log", log)]).snapshot(RuleId::UnclaimedError, "quiet_explained_error").is_none()
        );
    }

    /// The quote of a traceback is its last line: the summary says where the block starts and
    /// which line it quotes, never that the quoted (last) line is "the first".
    #[test]
    fn a_block_is_quoted_by_its_telling_line_and_its_extent_said() {
        let log = "ERROR 05-12 10:00:01 [core.py:1] EngineCore hit an exception\nTraceback (most recent call last):\n  File \"x.py\", line 1, in f\nRuntimeError: the sampler returned an empty batch\n";
        let r = case(&[("vllm.log", log)]).en;
        let f = r.findings.iter().find(|f| f.rule == RuleId::UnclaimedError).expect("unclaimed");
        assert_eq!(f.evidence[0].line, 4);
        assert!(
            f.summary.contains("the first spans lines 1–4, and line 4 reads: RuntimeError"),
            "{}",
            f.summary
        );
        assert!(!f.summary.contains("the first, line 4"), "{}", f.summary);
    }

    #[test]
    fn benign_alarms_are_claimed() {
        let log = "INFO 05-12 10:00:01 [loggers.py:1] Engine 000: Avg prompt throughput: 100.0 tokens/s, Avg generation throughput: 50.0 tokens/s, Running: 2 reqs, Waiting: 0 reqs, GPU KV cache usage: 3.0%, Prefix cache hit rate: 0.0%\nasyncio.exceptions.CancelledError\n";
        let r = case(&[("vllm.log", log)]).en;
        assert_eq!(r.verdict, Verdict::Healthy, "{:?}", r.findings);
    }

    #[test]
    fn nothing_that_shows_health_is_not_healthy() {
        let log = "INFO 05-12 10:00:01 [api_server.py:1] vLLM API server version 0.8.5\n";
        assert_eq!(case(&[("vllm.log", log)]).en.verdict, Verdict::Inconclusive);
    }

    crate::rules::snapshots! {
        corpus_inconclusive_vllm_bench_server_disconnected: [("inconclusive-vllm-bench-server-disconnected.txt", fixture!("incidents/bench/inconclusive-vllm-bench-server-disconnected.txt"))],
        corpus_inconclusive_openai_500_no_server_log: [("inconclusive-openai-500-no-server-log.log", fixture!("incidents/clients/inconclusive-openai-500-no-server-log.log"))],
    }
}

//! Rule ids, a leaf every module may name: the one declaration of every rule ([`rule_table!`]: its
//! [`RuleId`], the id a report writes for it and its entry, the module's `RULE`, in the order of
//! the article's trees) and the id type it declares. The entries are only tokens here:
//! `rules/registry.rs` turns them into [`RULES`](crate::rules::RULES), so the signal table, the
//! scan and the rule lists name ids without depending on the rules. The ids a GPU recording's
//! findings carry (the runner's GPU rules, `triage_gpu::GpuRule`) are ids too, without an entry;
//! `benign` marks known messages that look like failures but are not faults. Rule ids are
//! [`RuleId`] everywhere in code; the string is only the contract's (`triage.report/v1`'s
//! `findings[].rule`), written by [`RuleId::as_str`].

/// The one declaration of every rule: hands the table to `$then` (a macro of the same shape as
/// [`declare_ids`]). Add a rule here: its variant, the id reports write, its module's entry.
macro_rules! rule_table {
    ($then:ident) => {
        $then! {
            rules {
                // TTFT high
                QueueingExceedsCapacity = "queueing-exceeds-capacity" => queueing_exceeds_capacity::RULE,
                LongPromptBlocksPrefill = "long-prompt-blocks-prefill" => long_prompt_blocks_prefill::RULE,
                ChunkedPrefillOff = "chunked-prefill-off" => chunked_prefill_off::RULE,
                ColdStart = "cold-start" => cold_start::RULE,
                BenchOverloaded = "bench-overloaded" => bench_overloaded::RULE,
                BenchTtftTail = "bench-ttft-tail" => bench_ttft_tail::RULE,
                KvOffloadDegraded = "kv-offload-degraded" => kv_offload_degraded::RULE,
                PrefixCacheMissReprefill = "prefix-cache-miss-reprefill" => prefix_cache_miss_reprefill::RULE,
                PrefixCacheIneffective = "prefix-cache-ineffective" => prefix_cache_ineffective::RULE,
                PrefixCacheHitCollapse = "prefix-cache-hit-collapse" => prefix_cache_hit_collapse::RULE,
                ReplicaTtftSkewed = "replica-ttft-skewed" => replica_skewed::TTFT,
                TtftGrowsWithLoad = "ttft-grows-with-load" => ttft_grows_with_load::RULE,
                TtftAboveTarget = "ttft-above-target" => ttft_above_target::RULE,
                // TBT tail
                LongSequenceInBatch = "long-sequence-in-batch" => long_sequence_in_batch::RULE,
                KvPressurePreemption = "kv-pressure-preemption" => kv_pressure_preemption::RULE,
                SlowGpu = "slow-gpu" => slow_gpu::RULE,
                ReplicaItlSkewed = "replica-itl-skewed" => replica_skewed::ITL,
                SpecDecodeAcceptanceLow = "spec-decode-acceptance-low" => spec_decode_acceptance_low::RULE,
                BenchItlTail = "bench-itl-tail" => bench_itl_tail::RULE,
                DecodeSlowsWithContext = "decode-slows-with-context" => decode_slows_with_context::RULE,
                DecodeSlowerAtSameLoad = "decode-slower-at-same-load" => decode_slower_same_load::RULE,
                PrefillStallsDecode = "prefill-stalls-decode" => prefill_stalls_decode::RULE,
                CpuOffloadSplit = "cpu-offload-split" => cpu_offload_split::RULE,
                GpuNotDetected = "gpu-not-detected" => gpu_not_detected::RULE,
                DecodeRateCollapses = "decode-rate-collapses" => decode_rate_collapses::RULE,
                TbtAboveTarget = "tbt-above-target" => tbt_above_target::RULE,
                // OOM
                KvReservationTooLarge = "kv-reservation-too-large" => kv_reservation_too_large::RULE,
                InputTooLong = "input-too-long" => input_too_long::RULE,
                ActivationPeak = "activation-peak" => activation_peak::RULE,
                AllocatorFragmentation = "allocator-fragmentation" => allocator_fragmentation::RULE,
                ColocatedProcess = "colocated-process" => colocated_process::RULE,
                WarmupOom = "warmup-oom" => warmup_oom::RULE,
                KvPoolExhausted = "kv-pool-exhausted" => kv_pool_exhausted::RULE,
                WeightsExceedGpu = "weights-exceed-gpu" => weights_exceed_gpu::RULE,
                HostRamExhausted = "host-ram-exhausted" => host_ram_exhausted::RULE,
                // Throughput zero
                SchedulerStall = "scheduler-stall" => scheduler_stall::RULE,
                KvLeak = "kv-leak" => kv_leak::RULE,
                UpstreamCut = "upstream-cut" => upstream_cut::RULE,
                NcclHang = "nccl-hang" => nccl_hang::RULE,
                EngineDead = "engine-dead" => engine_dead::RULE,
                EngineStartFailed = "engine-start-failed" => engine_start_failed::RULE,
                WorkerDied = "worker-died" => worker_died::RULE,
                GpuHwError = "gpu-hw-error" => gpu_hw_error::RULE,
                // Config pitfalls
                BaseUrlWrong = "base-url-wrong" => base_url_wrong::RULE,
                ClientCallsMetricsPort = "client-calls-metrics-port" => client_calls_metrics_port::RULE,
                TimeoutTooShort = "timeout-too-short" => timeout_too_short::RULE,
                RetriesMaskFailures = "retries-mask-failures" => retries_mask_failures::RULE,
                NoAbortOnTimeout = "no-abort-on-timeout" => no_abort_on_timeout::RULE,
                MissingTimestamps = "missing-timestamps" => missing_timestamps::RULE,
                MeanNotP99 = "mean-not-p99" => mean_not_p99::RULE,
                ModelNotFound = "model-not-found" => model_not_found::RULE,
                ContextLengthExceeded = "context-length-exceeded" => context_length_exceeded::RULE,
                ClientRetriesFailing = "client-retries-failing" => client_retries_failing::RULE,
                UbatchTooSmall = "ubatch-too-small" => ubatch_too_small::RULE,
                ApiKeyRejected = "api-key-rejected" => api_key_rejected::RULE,
                MaxSeqLenReducedByKv = "max-seq-len-reduced-by-kv" => max_seq_len_reduced_by_kv::RULE,
                RequestExceedsBuildLimits = "request-exceeds-build-limits" => request_exceeds_build_limits::RULE,
                // The generic layer: words any format uses (`families.rs`), when no exact rule names a cause
                GenericOom = "generic-oom" => generic::GENERIC_OOM,
                GenericCollectiveTimeout = "generic-collective-timeout" => generic::GENERIC_COLLECTIVE,
                GenericGpuFault = "generic-gpu-fault" => generic::GENERIC_GPU_FAULT,
                GenericCrash = "generic-crash" => generic::GENERIC_CRASH,
                GenericCrashLoop = "generic-crash-loop" => generic::GENERIC_RESPAWN,
                GenericUnreachable = "generic-unreachable" => generic::GENERIC_UNREACHABLE,
                GenericAuthRejected = "generic-auth-rejected" => generic::GENERIC_AUTH,
                GenericNotFound = "generic-not-found" => generic::GENERIC_NOT_FOUND,
                GenericProviderMissing = "generic-provider-missing" => generic::GENERIC_PROVIDER,
                GenericContextTooLong = "generic-context-too-long" => generic::GENERIC_CONTEXT,
                // No class yet
                UnclaimedError = "unclaimed-error" => unclaimed_error::RULE,
            }
            recorded {
                GpuPowerCap = "gpu-power-cap",
                GpuHwThrottle = "gpu-hw-throttle",
                ThroughputZero = "throughput-zero",
                GpuXid = "gpu-xid",
                GpuEcc = "gpu-ecc",
            }
            marks {
                Benign = "benign",
            }
        }
    };
}
pub(crate) use rule_table;

/// Declares [`RuleId`] and its strings from [`rule_table!`].
macro_rules! declare_ids {
    (
        rules { $($(#[$m:meta])* $variant:ident = $id:literal => $module:ident :: $entry:ident,)* }
        recorded { $($gvariant:ident = $gid:literal,)* }
        marks { $($pvariant:ident = $pid:literal,)* }
    ) => {
        /// A rule's id. `as_str` is the id `triage.report/v1` writes.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum RuleId {
            $(#[doc = concat!("`", $id, "`")] $variant,)*
            $(#[doc = concat!("`", $gid, "` (a GPU recording's finding)")] $gvariant,)*
            $(#[doc = concat!("`", $pid, "`: marks known messages, never a finding's rule")] $pvariant,)*
        }

        impl RuleId {
            /// Every id: the rules in [`RULES`] order, the GPU recordings' own, then the marks.
            pub const ALL: &[RuleId] = &[$(RuleId::$variant,)* $(RuleId::$gvariant,)* $(RuleId::$pvariant,)*];

            /// The id as `triage.report/v1` writes it (`kv-leak`).
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(RuleId::$variant => $id,)*
                    $(RuleId::$gvariant => $gid,)*
                    $(RuleId::$pvariant => $pid,)*
                }
            }

            /// The id a report wrote, if it is one of ours.
            pub fn parse(s: &str) -> Option<RuleId> {
                match s {
                    $($id => Some(RuleId::$variant),)*
                    $($gid => Some(RuleId::$gvariant),)*
                    $($pid => Some(RuleId::$pvariant),)*
                    _ => None,
                }
            }
        }
    };
}

rule_table!(declare_ids);

impl std::fmt::Display for RuleId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a finding's `rule` (the contract's string) is one of `ids`.
pub fn listed(ids: &[RuleId], rule: &str) -> bool {
    ids.iter().any(|id| id.is(rule))
}

impl RuleId {
    /// Whether a finding's `rule` (the contract's string) is this id.
    pub fn is(self, rule: &str) -> bool {
        self.as_str() == rule
    }
}

/// A finding's `rule` compares with an id: `finding.rule == RuleId::KvLeak`.
impl PartialEq<RuleId> for String {
    fn eq(&self, id: &RuleId) -> bool {
        id.is(self)
    }
}

impl PartialEq<RuleId> for &str {
    fn eq(&self, id: &RuleId) -> bool {
        id.is(self)
    }
}

impl PartialEq<RuleId> for str {
    fn eq(&self, id: &RuleId) -> bool {
        id.is(self)
    }
}

/// Written as the contract's string (`"kv-leak"`), wherever a rule's docs are serialised.
impl serde::Serialize for RuleId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// The runner's GPU rules raise findings under these ids in a recording's report: every one is an
/// id of ours (a new GPU rule fails to compile here until it has one).
impl From<triage_gpu::GpuRule> for RuleId {
    fn from(r: triage_gpu::GpuRule) -> RuleId {
        use triage_gpu::GpuRule as G;
        match r {
            G::SlowGpu => RuleId::SlowGpu,
            G::GpuPowerCap => RuleId::GpuPowerCap,
            G::GpuHwThrottle => RuleId::GpuHwThrottle,
            G::KvLeak => RuleId::KvLeak,
            G::ThroughputZero => RuleId::ThroughputZero,
            G::GpuXid => RuleId::GpuXid,
            G::GpuEcc => RuleId::GpuEcc,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_read_back_and_gpu_rules_keep_their_strings() {
        for &id in RuleId::ALL {
            assert_eq!(RuleId::parse(id.as_str()), Some(id));
        }
        assert_eq!(RuleId::parse("no-such-rule"), None);
        for g in triage_gpu::GpuRule::ALL {
            assert_eq!(RuleId::from(g).as_str(), g.as_str());
        }
        let mut ids: Vec<&str> = RuleId::ALL.iter().map(|id| id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), RuleId::ALL.len(), "an id is declared twice");
    }
}

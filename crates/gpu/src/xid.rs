//! XID codes: the NVIDIA driver's error numbers for GPU faults, as NVIDIA's XID catalogue names
//! them, with how bad each is for a serving node.

/// What an XID means for the node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// The GPU (or its context) is gone until a reset or reboot: drain the node.
    Fatal,
    /// The application's context died or misbehaved; the GPU itself may be fine.
    App,
    /// Worth a look, not an outage by itself.
    Watch,
}

/// `(code, meaning, severity)`.
const XIDS: &[(u64, &str, Severity)] = &[
    (
        13,
        "graphics engine exception (often an application bug: illegal instruction or out-of-range access)",
        Severity::App,
    ),
    (31, "GPU memory page fault (illegal address in a kernel)", Severity::App),
    (43, "GPU stopped processing (the context was killed)", Severity::App),
    (45, "preemptive cleanup after an earlier error (a process was killed)", Severity::Watch),
    (48, "double-bit ECC error (uncorrectable memory error)", Severity::Fatal),
    (61, "internal micro-controller breakpoint/warning", Severity::Fatal),
    (62, "internal micro-controller halt", Severity::Fatal),
    (63, "ECC page retirement or row-remapping recorded", Severity::Watch),
    (64, "ECC page retirement or row-remapping failed", Severity::Fatal),
    (74, "NVLink error", Severity::Fatal),
    (79, "GPU has fallen off the bus", Severity::Fatal),
    (92, "high single-bit ECC error rate", Severity::Watch),
    (94, "contained ECC error (the affected application must restart)", Severity::App),
    (95, "uncontained ECC error (every application on the GPU is affected; reset the GPU)", Severity::Fatal),
    (109, "context switch timeout", Severity::App),
    (119, "GSP RPC timeout (the GPU's system processor stopped answering)", Severity::Fatal),
    (120, "GSP error", Severity::Fatal),
    (140, "unrecovered ECC error", Severity::Fatal),
];

/// Meaning and severity of `code`; unknown codes are [`Severity::Watch`].
pub fn describe(code: u64) -> (&'static str, Severity) {
    XIDS.iter().find(|(c, _, _)| *c == code).map_or(
        ("no description in llm-triage's table; see NVIDIA's XID catalogue", Severity::Watch),
        |(_, m, s)| (*m, *s),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_and_unknown_codes() {
        assert_eq!(describe(79).1, Severity::Fatal);
        assert!(describe(79).0.contains("fallen off the bus"));
        assert_eq!(describe(31).1, Severity::App);
        assert_eq!(describe(4242).1, Severity::Watch);
        assert!(XIDS.windows(2).all(|w| w[0].0 < w[1].0), "table sorted and unique");
    }
}

//! The generic layer under the engine rules: words that mean the same thing in any engine's,
//! runtime's, gateway's or SDK's format.
//!
//! The signal table (`signals/table.rs`) knows the exact templates the engines print, each mined
//! from their source. Strangers paste text from allocators, launchers and clients no table will
//! ever list — a Vulkan `ErrorOutOfDeviceMemory`, a TVM `CUDA: out of memory`, a Go runtime's
//! `SIGILL`, an app's `Restarting process … (Attempt 3/5)`, a gateway's `404 page not found` —
//! and those still say what happened. This table is reviewed data like the catalogue: each row
//! is a literal piece of text and the [`Family`] of failure it stands for, case variants listed
//! one by one (the line scan is one case-sensitive automaton). Rows are written for families, not
//! for one paste: a needle here must mean its family wherever it is printed.
//!
//! Exact templates win: the rules in `rules/generic.rs` that read these hits decide only when no
//! rule that knows an exact message named a cause, at lower confidence, and say so. The first
//! family in the input's order leads; a line that only *suggests* (`try lowering
//! --mem-fraction-static`, `If you see out of memory…`) is a hint, not a failure ([`is_hint`]).

/// A family of failure (or of health) that many formats word alike.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Family {
    /// Memory exhausted: any allocator saying it ran out (GPU or host).
    Memory,
    /// A distributed collective that never finished: watchdogs, NCCL/RCCL/Gloo timeouts.
    Collective,
    /// A GPU kernel fault: illegal memory access, launch failure, device-side assert.
    GpuFault,
    /// A process that died: a fatal signal, a core dump, an abort, an abnormal exit status.
    Crash,
    /// A supervisor restarting a process again and again.
    Respawn,
    /// The server (or a part of it) cannot be reached: refused, reset, empty reply, 502/503.
    Unreachable,
    /// The credential was rejected: 401/403, an invalid API key.
    Auth,
    /// The path or the model is not served: 404, model not found, invalid model name.
    NotFound,
    /// The gateway does not know which provider serves the model.
    Provider,
    /// The request does not fit the context window.
    ContextTooLong,
    /// A server (any engine, any HTTP framework) said it is up and listening.
    Started,
}

impl Family {
    /// Every family, in bit order.
    pub const ALL: [Family; 11] = [
        Family::Memory,
        Family::Collective,
        Family::GpuFault,
        Family::Crash,
        Family::Respawn,
        Family::Unreachable,
        Family::Auth,
        Family::NotFound,
        Family::Provider,
        Family::ContextTooLong,
        Family::Started,
    ];

    /// The family's bit in a scan's mask.
    pub const fn bit(self) -> u32 {
        1 << self as u32
    }

    /// A line that holds needles of several families belongs to the first of these (a `CUDA
    /// error: out of memory` is memory, not a GPU fault; a `401` inside a connection error is
    /// the credential).
    pub const PRECEDENCE: [Family; 10] = [
        Family::Memory,
        Family::ContextTooLong,
        Family::Provider,
        Family::Auth,
        Family::NotFound,
        Family::Collective,
        Family::GpuFault,
        Family::Respawn,
        Family::Crash,
        Family::Unreachable,
    ];
}

/// The words, each with its family. Case variants are rows of their own.
pub static WORDS: &[(&str, Family)] = {
    use Family::*;
    &[
        // Memory exhausted, whatever the allocator: PyTorch, CUDA runtime and driver, cuBLAS, ggml's
        // CUDA/Metal/Vulkan/CPU back-ends, Vulkan itself, TVM, TensorRT, the C++ runtime, Python.
        ("out of memory", Memory),
        ("Out of memory", Memory),
        ("OUT OF MEMORY", Memory),
        ("OutOfMemory", Memory),
        ("OutOfDeviceMemory", Memory),
        ("OutOfHostMemory", Memory),
        ("OUT_OF_MEMORY", Memory),
        ("cudaErrorMemoryAllocation", Memory),
        ("CUBLAS_STATUS_ALLOC_FAILED", Memory),
        ("hipErrorOutOfMemory", Memory),
        ("failed to allocate", Memory),
        ("Failed to allocate", Memory),
        ("memory allocation of", Memory),
        ("allocation failed", Memory),
        ("Not enough memory", Memory),
        ("not enough memory", Memory),
        ("Insufficient memory", Memory),
        ("insufficient memory", Memory),
        ("Cannot allocate memory", Memory),
        ("std::bad_alloc", Memory),
        ("MemoryError", Memory),
        ("OOMKilled", Memory),
        ("Out Of Memory", Memory),
        // Collectives that never finished.
        ("collective operation timeout", Collective),
        ("Watchdog caught", Collective),
        ("NCCL timeout", Collective),
        ("NCCL error", Collective),
        ("NCCL Error", Collective),
        ("ncclInternalError", Collective),
        ("ncclSystemError", Collective),
        ("ncclUnhandledCudaError", Collective),
        ("ncclRemoteError", Collective),
        ("RCCL error", Collective),
        ("DistBackendError", Collective),
        ("Timeout at NCCL work", Collective),
        ("heartbeat monitor", Collective),
        // GPU kernel faults.
        ("illegal memory access", GpuFault),
        ("an illegal instruction was encountered", GpuFault),
        ("unspecified launch failure", GpuFault),
        ("device-side assert", GpuFault),
        ("misaligned address", GpuFault),
        ("CUDA_ERROR_", GpuFault),
        ("cudaErrorIllegalAddress", GpuFault),
        ("cudaErrorLaunchFailure", GpuFault),
        ("hipErrorIllegalAddress", GpuFault),
        ("CUDA error: ", GpuFault),
        ("CUDA error", GpuFault),
        ("GPU has fallen off the bus", GpuFault),
        // A process that died.
        ("SIGILL", Crash),
        ("SIGSEGV", Crash),
        ("SIGABRT", Crash),
        ("SIGBUS", Crash),
        ("SIGFPE", Crash),
        ("Segmentation fault", Crash),
        ("segmentation fault", Crash),
        ("Illegal instruction", Crash),
        ("illegal instruction", Crash),
        ("core dumped", Crash),
        ("dumped core", Crash),
        ("code=dumped", Crash),
        ("code=killed", Crash),
        ("Abort was called", Crash),
        ("Aborted (core", Crash),
        ("ggml_abort", Crash),
        ("GGML_ASSERT", Crash),
        ("terminate called after", Crash),
        ("Fatal Python error", Crash),
        ("runner process has terminated", Crash),
        ("runner terminated", Crash),
        ("process has terminated", Crash),
        ("Process exited with code", Crash),
        ("process exited with code", Crash),
        ("exited with code", Crash),
        ("exit status ", Crash),
        ("\"ExitCode\": ", Crash),
        ("died unexpectedly", Crash),
        ("crashed unexpectedly", Crash),
        ("has crashed", Crash),
        ("Main process exited", Crash),
        // Supervisors restarting a process.
        ("Restarting process", Respawn),
        ("restart counter is at", Respawn),
        ("Back-off restarting", Respawn),
        ("CrashLoopBackOff", Respawn),
        ("Scheduled restart job", Respawn),
        // Cannot reach the server (or a part of it).
        ("Connection refused", Unreachable),
        ("connection refused", Unreachable),
        ("ECONNREFUSED", Unreachable),
        ("actively refused", Unreachable),
        ("error trying to connect", Unreachable),
        ("Failed to establish a new connection", Unreachable),
        ("Cannot connect to host", Unreachable),
        ("Empty reply from server", Unreachable),
        ("Connection reset by peer", Unreachable),
        ("connection reset by peer", Unreachable),
        ("ECONNRESET", Unreachable),
        ("Server disconnected", Unreachable),
        ("RemoteProtocolError", Unreachable),
        ("no healthy upstream", Unreachable),
        ("upstream connect error", Unreachable),
        ("Bad Gateway", Unreachable),
        ("StatusCode.UNAVAILABLE", Unreachable),
        // The credential was rejected.
        ("Unauthorized", Auth),
        ("authentication_error", Auth),
        ("AuthenticationError", Auth),
        ("invalid x-api-key", Auth),
        ("Invalid API key", Auth),
        ("invalid api key", Auth),
        ("Incorrect API key", Auth),
        ("invalid_api_key", Auth),
        ("Forbidden", Auth),
        ("PermissionDeniedError", Auth),
        // Not served: a path or a model.
        ("page not found", NotFound),
        ("NotFoundError", NotFound),
        ("model_not_found", NotFound),
        ("model not found", NotFound),
        ("Model not found", NotFound),
        ("Invalid model name", NotFound),
        ("invalid model name", NotFound),
        ("does not exist", NotFound),
        ("Unknown model", NotFound),
        ("unknown model", NotFound),
        // The gateway cannot tell the provider.
        ("LLM Provider NOT provided", Provider),
        ("Provider NOT provided", Provider),
        ("provider not provided", Provider),
        ("Unknown provider", Provider),
        ("unknown provider", Provider),
        // The request does not fit the context.
        ("exceed context window", ContextTooLong),
        ("exceeds context window", ContextTooLong),
        ("exceeds the context window", ContextTooLong),
        ("maximum context length", ContextTooLong),
        ("context length exceeded", ContextTooLong),
        ("context_length_exceeded", ContextTooLong),
        ("exceeds the maximum context", ContextTooLong),
        ("prompt is too long", ContextTooLong),
        ("input is too long", ContextTooLong),
        ("Input is too long", ContextTooLong),
        ("too many tokens", ContextTooLong),
        ("longer than the model's context length", ContextTooLong),
        ("exceeds max_model_len", ContextTooLong),
        ("must be <= ", ContextTooLong),
        // A server up and listening.
        ("Application startup complete", Started),
        ("Uvicorn running on", Started),
        ("server is listening on", Started),
        ("HTTP server listening", Started),
        ("Started HTTPService at", Started),
        ("Started GRPCInferenceService at", Started),
        ("The server is fired up and ready to roll", Started),
        ("Listening on http", Started),
        ("listening on http", Started),
        ("Ready to serve", Started),
        ("ready to serve", Started),
        ("llama runner started in", Started),
        ("Connected to", Started),
    ]
};

/// A line that suggests rather than reports: an engine's canned hint printed after a failure
/// (`Possible solutions: … --mem-fraction-static`), a warning of what *might* happen. Its words
/// name no failure that happened.
pub fn is_hint(line: &str) -> bool {
    const HINTS: &[&str] = &[
        " try ",
        "Try ",
        "try lowering",
        "try reducing",
        "try setting",
        "Possible solution",
        "possible solution",
        "Consider ",
        "consider ",
        "If you ",
        "if you ",
        "If this ",
        "to avoid",
        "To avoid",
        "you can ",
        "You can ",
        "might ",
        "may cause",
        "will be ",
        "Please ",
        // A step that failed and is tried another way (`… allocation failed, retrying without
        // pipeline parallelism`) recovered.
        "retrying without",
    ];
    HINTS.iter().any(|h| line.contains(h))
}

/// What a line's words mean: the family of the first family in [`Family::PRECEDENCE`] whose bit
/// is in `mask` (the [`Family::Started`] bit is separate: health, not failure).
pub fn lead(mask: u32) -> Option<Family> {
    Family::PRECEDENCE.into_iter().find(|f| mask & f.bit() != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_have_no_digits() {
        // The line scan caches by shape (digits read as 0): a needle with a digit would make two
        // lines of one shape differ. Statuses are read from the line's digits instead
        // (`signals::status_family`).
        for (w, _) in WORDS {
            assert!(!w.is_empty() && !w.bytes().any(|b| b.is_ascii_digit()), "{w:?}");
        }
    }

    #[test]
    fn precedence_lists_every_failure_family_once() {
        let mut seen = std::collections::BTreeSet::new();
        for f in Family::PRECEDENCE {
            assert!(seen.insert(f), "{f:?} twice");
        }
        assert_eq!(seen.len() + 1, Family::ALL.len());
        assert!(!seen.contains(&Family::Started));
        for (i, f) in Family::ALL.iter().enumerate() {
            assert_eq!(f.bit(), 1 << i);
        }
    }

    #[test]
    fn hints_are_not_failures() {
        assert!(is_hint("Possible solutions: 1. set --mem-fraction-static to a smaller value"));
        assert!(is_hint("If you see out of memory, try lowering --max-model-len"));
        assert!(!is_hint("ggml_vulkan: vk::Device::allocateMemory: ErrorOutOfDeviceMemory"));
    }
}

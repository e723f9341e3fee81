//! The site's text, English and Chinese, in one catalogue.
//!
//! Every string a page shows comes from [`t`]: a `match` on [`Msg`], so a missing translation is
//! a compile error rather than an empty label. Messages with numbers in them are templates with
//! `{name}` holes, filled by [`tf`]. What the analyzer writes (findings, rule docs, figure
//! definitions) comes from core in the same language: it is analysed with this `Lang`.

pub use triage_core::cards::Lang;

/// Every message the pages show.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Msg {
    Tagline,
    NavTriage,
    NavProbe,
    NavKv,
    NavPlaybook,
    NavCards,
    NavDrill,
    LangToggle,
    PrivacyNote,
    // Triage
    PastePlaceholder,
    AddFiles,
    Analyze,
    Analyzing,
    Example,
    Verdict,
    Findings,
    Evidence,
    WhatToChange,
    NextChecks,
    Inputs,
    Figures,
    NoFindingsHealthy,
    NoFindingsInconclusive,
    Confidence,
    Slowest,
    SourceView,
    /// Template: `{n}` is a line number.
    LineNo,
    WorkerUnavailable,
    /// Template: `{error}`.
    WorkerFailed,
    LegendQueue,
    LegendPrefill,
    LegendDecode,
    LegendRunning,
    LegendWaiting,
    ChartTtft,
    ChartTtftCdf,
    ChartVllmStats,
    ChartVllmKv,
    ChartSglangBatches,
    ChartSglangKv,
    ChartThroughput,
    ChartGpuClocks,
    // Probe
    ProbeUrl,
    ProbeApi,
    ProbeModel,
    ProbeKey,
    ProbeRemember,
    ProbeRememberWarning,
    ProbePrompt,
    ProbeMaxTokens,
    ProbeRequests,
    ProbeConcurrency,
    ProbeStart,
    ProbeRunning,
    ProbeConnLimit,
    ProbeLimits,
    ProbeSentWire,
    ProbeLive,
    ProbeCorsHelp,
    Failures,
    /// Template: `{ok}`, `{failed}`, `{stalls}`.
    ProbeSummaryLine,
    ProbeStatus,
    ProbeTokens,
    ProbeMax,
    ProbeMean,
    ChartItl,
    /// Template: `{error}`, `{url}`.
    ProbeRejected,
    /// Template: `{ms}`.
    ProbeNoHeaders,
    /// Template: `{ms}`.
    ProbeNoToken,
    /// Template: `{tokens}`, `{ms}`.
    ProbeStalled,
    /// Template: `{tokens}`, `{error}`.
    ProbeBroke,
    ProbeNoResponse,
    // KV
    KvModel,
    KvConfig,
    KvDtype,
    KvTp,
    KvGpu,
    KvUtil,
    KvMaxLen,
    KvAvailable,
    KvBytesPerToken,
    KvBlocks,
    KvTokens,
    KvConcurrency,
    KvFits,
    KvFormula,
    KvAssumptions,
    KvChart,
    KvChartX,
    // Playbook
    PlaybookIntro,
    TreeTtft,
    TreeTbt,
    TreeOom,
    TreeThroughput,
    Pitfalls,
    Unexplained,
    Generator,
    GeneratorBase,
    GeneratorTimeout,
    GeneratorRetries,
    GeneratorLint,
    Detects,
    Why,
    ExampleLabel,
    Fix,
    // Cards
    CardsDue,
    CardsNew,
    CardsLearning,
    CardsShow,
    Again,
    Hard,
    Good,
    Easy,
    CardsDone,
    CardsExport,
    CardsImport,
    CardsKeys,
    // Drill
    DrillIntro,
    DrillSeed,
    DrillNew,
    DrillSymptom,
    DrillFiles,
    DrillPick,
    DrillRight,
    DrillSameClass,
    DrillWrong,
    DrillEvidence,
}

/// The message in the language.
pub fn t(lang: Lang, m: Msg) -> &'static str {
    use Msg::*;
    let (en, zh) = match m {
        Tagline => (
            "From an LLM-serving alert to a root cause in ten minutes",
            "从告警到根因，十分钟定位大模型推理故障",
        ),
        NavTriage => ("Triage", "排查"),
        NavProbe => ("Probe", "探测"),
        NavKv => ("KV cache", "KV 缓存"),
        NavPlaybook => ("Playbook", "排查树"),
        NavCards => ("Flashcards", "面试卡片"),
        NavDrill => ("Drill", "故障演练"),
        // Reads in any font: "EN" needs no CJK glyphs, and the button's title says it in words.
        LangToggle => ("EN / 中文", "EN / 中文"),
        PrivacyNote => (
            "Everything runs in this page (WebAssembly). Nothing you paste is uploaded; the only network request is the probe you start.",
            "所有分析都在本页面内（WebAssembly）完成，粘贴的内容不会上传；唯一的网络请求是你自己发起的探测。",
        ),
        PastePlaceholder => (
            "Paste vLLM / SGLang / TGI logs, /metrics scrapes, nvidia-smi output, an OOM traceback, a request log or a client config — several at once is fine.",
            "粘贴 vLLM / SGLang / TGI 日志、/metrics 抓取、nvidia-smi 输出、OOM 堆栈、请求日志或客户端配置，可以混在一起。",
        ),
        AddFiles => ("Add files (or drop them here)", "添加文件（或拖到这里）"),
        Analyze => ("Analyze", "分析"),
        Analyzing => ("Analyzing…", "分析中…"),
        Example => ("Load an example incident", "载入示例故障"),
        Verdict => ("Verdict", "结论"),
        Findings => ("Causes, ranked", "根因（按可信度排序）"),
        Evidence => ("Evidence", "证据"),
        WhatToChange => ("What to change", "该改什么"),
        NextChecks => ("Next checks", "下一步检查"),
        Inputs => ("What was read", "识别出的输入"),
        Figures => ("Figures (each with its definition)", "指标（附定义）"),
        NoFindingsHealthy => ("Nothing wrong found in what was recognised.", "已识别的内容中没有发现问题。"),
        NoFindingsInconclusive => (
            "Nothing was recognised. Paste engine logs, /metrics, nvidia-smi output, OOM tracebacks, request logs or configs.",
            "没有识别出任何内容。请粘贴引擎日志、/metrics、nvidia-smi 输出、OOM 堆栈、请求日志或配置。",
        ),
        Confidence => ("confidence", "可信度"),
        Slowest => {
            ("Slowest requests: queue / prefill / decode (ms)", "最慢的请求：排队 / 预填充 / 解码（毫秒）")
        }
        SourceView => ("Your input, evidence lines highlighted", "你的输入（证据行高亮）"),
        LineNo => ("line {n}", "第 {n} 行"),
        WorkerUnavailable => ("the analysis worker could not start", "分析 Worker 无法启动"),
        WorkerFailed => ("could not start the analysis worker: {error}", "无法启动分析 Worker：{error}"),
        LegendQueue => ("queue", "排队"),
        LegendPrefill => ("prefill", "预填充"),
        LegendDecode => ("decode", "解码"),
        LegendRunning => ("running", "运行中"),
        LegendWaiting => ("waiting", "等待中"),
        ChartTtft => ("TTFT (ms)", "TTFT 首 token 延迟（毫秒）"),
        ChartTtftCdf => ("TTFT (ms) — cumulative share of requests", "TTFT（毫秒）—— 请求累计占比"),
        ChartVllmStats => ("seconds (vLLM stats lines)", "秒（vLLM 统计行）"),
        ChartVllmKv => ("seconds — GPU KV cache usage (%)", "秒 —— GPU KV 缓存使用率（%）"),
        ChartSglangBatches => ("seconds (SGLang batch lines)", "秒（SGLang batch 行）"),
        ChartSglangKv => ("seconds — KV token usage (%)", "秒 —— KV token 占用率（%）"),
        ChartThroughput => ("seconds — generation throughput (tokens/s)", "秒 —— 生成吞吐（tokens/s）"),
        ChartGpuClocks => ("median SM clock (MHz) per GPU", "每张 GPU 的 SM 时钟中位数（MHz）"),
        ProbeUrl => ("Endpoint (base URL or full URL)", "接口地址（基址或完整 URL）"),
        ProbeApi => ("API style", "接口类型"),
        ProbeModel => ("Model", "模型"),
        ProbeKey => ("API key (kept in memory only)", "API Key（只保存在内存中）"),
        ProbeRemember => ("Remember the key in this browser", "在本浏览器中记住 Key"),
        ProbeRememberWarning => (
            "Stored in localStorage in clear: any script on this origin can read it. Use only on your own machine.",
            "会以明文存入 localStorage，本站点下的任何脚本都能读取。只在自己的电脑上使用。",
        ),
        ProbePrompt => ("Prompt", "提示词"),
        ProbeMaxTokens => ("max_tokens", "max_tokens"),
        ProbeRequests => ("Requests", "请求数"),
        ProbeConcurrency => ("Concurrency", "并发"),
        ProbeStart => ("Start probe", "开始探测"),
        ProbeRunning => ("Probing…", "探测中…"),
        ProbeConnLimit => (
            "Browsers open at most 6 HTTP/1.1 connections per origin: above 6, requests queue in the browser and TTFT includes that wait. HTTP/2 endpoints multiplex and are not limited this way.",
            "浏览器对同一源最多开 6 个 HTTP/1.1 连接：并发超过 6 时请求会在浏览器里排队，TTFT 会包含这段等待。HTTP/2 接口可多路复用，不受此限制。",
        ),
        ProbeLimits => (
            "Browser timing: chunks are stamped with performance.now() when the stream yields them (resolution 0.1 ms here, coarser in some browsers); one chunk can carry several SSE events, which then share a time and show 0 ms gaps.",
            "浏览器计时：每个数据块在流读出时用 performance.now() 打点（这里精度 0.1 ms，有的浏览器更粗）；一个数据块可能包含多个 SSE 事件，这些事件时间相同，间隔显示为 0 ms。",
        ),
        ProbeLive => (
            "{requests} in flight · {tokens} tokens received so far (while a request streams, its TTFT counts from the fetch() call; its final figure replaces it)",
            "{requests} 个请求进行中 · 已收到 {tokens} 个 token（请求进行中时其 TTFT 从调用 fetch() 起算，结束后换成最终值）",
        ),
        ProbeSentWire => (
            "“Sent” for {wire} of {total} requests: when the browser began sending the request on its connection (Resource Timing requestStart, or connectStart for a new connection; the server allowed it with Timing-Allow-Origin). For the others it is when fetch() was called, which adds the browser's own 2–8 ms of hand-over before the request reaches the socket.",
            "{total} 个请求中有 {wire} 个的“发出”时刻取浏览器开始在连接上发送请求的时间（Resource Timing 的 requestStart，新连接取 connectStart；服务端以 Timing-Allow-Origin 允许读取）。其余请求取调用 fetch() 的时刻，其中包含浏览器自身 2–8 ms 的转交时间，之后请求才到达套接字。",
        ),
        ProbeCorsHelp => (
            "A browser can only read a cross-origin response the server allows: vLLM needs --allowed-origins '[\"*\"]' (or this site's origin); Anthropic's API needs the anthropic-dangerous-direct-browser-access: true header, which this probe sends.",
            "浏览器只能读取服务端允许的跨域响应：vLLM 需要 --allowed-origins '[\"*\"]'（或本站的源）；Anthropic 接口需要 anthropic-dangerous-direct-browser-access: true 请求头，本探测会自动带上。",
        ),
        Failures => ("Failures", "失败"),
        ProbeSummaryLine => {
            ("{ok} ok · {failed} failed · {stalls} stalls", "{ok} 成功 · {failed} 失败 · {stalls} 次停顿")
        }
        ProbeStatus => ("status", "状态"),
        ProbeTokens => ("tokens", "token 数"),
        ProbeMax => ("max", "最大"),
        ProbeMean => ("mean", "均值"),
        ChartItl => ("ITL (ms)", "ITL 逐 token 间隔（毫秒）"),
        ProbeRejected => (
            "the browser refused the response or could not connect ({error}): either nothing answers at {url}, or the server does not allow this origin (CORS) — vLLM: --allowed-origins '[\"*\"]'; a gateway: add Access-Control-Allow-Origin. `triage probe` from a terminal tells the two apart.",
            "浏览器拒绝了响应或无法连接（{error}）：要么 {url} 上没有服务在应答，要么服务端不允许本站的源（CORS）—— vLLM：--allowed-origins '[\"*\"]'；网关：加上 Access-Control-Allow-Origin。在终端里运行 `triage probe` 可以区分这两种情况。",
        ),
        ProbeNoHeaders => ("no response headers within {ms} ms", "{ms} ms 内没有收到响应头"),
        ProbeNoToken => {
            ("headers arrived but no token within {ms} ms", "收到了响应头，但 {ms} ms 内没有 token")
        }
        ProbeStalled => (
            "the stream stalled after {tokens} token events and the {ms} ms deadline passed",
            "流在 {tokens} 个 token 事件之后停住，超过了 {ms} ms 的截止时间",
        ),
        ProbeBroke => (
            "the stream broke after {tokens} token events: {error}",
            "流在 {tokens} 个 token 事件之后中断：{error}",
        ),
        ProbeNoResponse => ("no response", "没有响应"),
        KvModel => ("Model preset", "模型预设"),
        KvConfig => ("…or paste a config.json", "…或粘贴 config.json"),
        KvDtype => ("KV cache dtype", "KV cache 数据类型"),
        KvTp => ("Tensor parallel", "张量并行"),
        KvGpu => ("GPU", "GPU"),
        KvUtil => ("gpu_memory_utilization", "gpu_memory_utilization"),
        KvMaxLen => ("max_model_len", "max_model_len"),
        KvAvailable => (
            "Available KV GiB (from the startup log; overrides the budget)",
            "可用 KV GiB（取自启动日志，优先于预算）",
        ),
        KvBytesPerToken => ("KV bytes per token (each GPU)", "每 token KV 字节（单卡）"),
        KvBlocks => ("Blocks", "块数"),
        KvTokens => ("Tokens that fit", "可容纳 token"),
        KvConcurrency => ("Max concurrency at max_model_len", "max_model_len 下的最大并发"),
        KvFits => ("max_num_seqs that keeps KV resident", "保证 KV 常驻的 max_num_seqs"),
        KvFormula => ("Formula", "公式"),
        KvAssumptions => ("Assumptions", "假设"),
        KvChart => ("Max concurrency against context length", "最大并发 vs 上下文长度"),
        KvChartX => ("context length (tokens)", "上下文长度（token）"),
        PlaybookIntro => (
            "The four failure classes as decision trees. Open a branch for what to check, the commands, and the rule that detects it.",
            "四类故障的排查树。展开分支可以看到该查什么、用什么命令，以及对应的检测规则。",
        ),
        TreeTtft => ("TTFT high — prefill and queue", "TTFT 高 —— 预填充与排队"),
        TreeTbt => ("TBT tail — decode", "TBT 长尾 —— 解码"),
        TreeOom => ("Out of memory", "显存溢出（OOM）"),
        TreeThroughput => ("Throughput to zero", "吞吐跌零"),
        Pitfalls => ("Configuration pitfalls", "常见配置坑"),
        Unexplained => ("When the evidence is not enough", "证据不足时"),
        Generator => ("Client config generator (linted as you type)", "客户端配置生成器（实时检查）"),
        GeneratorBase => ("API base URL", "API 基址"),
        GeneratorTimeout => ("Timeout (ms)", "超时（毫秒）"),
        GeneratorRetries => ("max_retries", "max_retries"),
        GeneratorLint => ("Lint", "检查结果"),
        Detects => ("Detects", "检测内容"),
        Why => ("Why it matters", "为什么重要"),
        ExampleLabel => ("Example", "示例"),
        Fix => ("What to try", "怎么处理"),
        CardsDue => ("due", "待复习"),
        CardsNew => ("new", "新卡"),
        CardsLearning => ("learning", "学习中"),
        CardsShow => ("Show answer (space)", "显示答案（空格）"),
        Again => ("Again (1)", "重来 (1)"),
        Hard => ("Hard (2)", "困难 (2)"),
        Good => ("Good (3)", "良好 (3)"),
        Easy => ("Easy (4)", "简单 (4)"),
        CardsDone => ("Nothing due. Come back later, or review ahead.", "暂无待复习卡片，稍后再来。"),
        CardsExport => ("Export progress", "导出进度"),
        CardsImport => ("Import progress", "导入进度"),
        CardsKeys => ("Keys: space shows the answer, 1–4 rate it.", "快捷键：空格显示答案，1–4 评分。"),
        DrillIntro => (
            "A random incident, simulated in this page: read the files it left, pick the cause, then see the evidence the analyzer finds.",
            "在页面内模拟一次随机故障：阅读它留下的文件，选出根因，再看分析器找到的证据。",
        ),
        DrillSeed => ("Seed", "随机种子"),
        DrillNew => ("New incident", "新故障"),
        DrillSymptom => ("What users report", "用户反馈"),
        DrillFiles => ("Files from the incident", "故障留下的文件"),
        DrillPick => ("What is the cause?", "根因是什么？"),
        DrillRight => ("Right.", "正确。"),
        DrillSameClass => ("Right class, different cause.", "故障类别对了，根因不同。"),
        DrillWrong => ("Not this one.", "不是这个。"),
        DrillEvidence => ("What the analyzer finds in these files", "分析器在这些文件里找到的证据"),
    };
    match lang {
        Lang::En => en,
        Lang::Zh => zh,
    }
}

/// A template message with its `{name}` holes filled.
pub fn tf(lang: Lang, m: Msg, args: &[(&str, &str)]) -> String {
    let mut s = t(lang, m).to_owned();
    for (name, value) in args {
        s = s.replace(&format!("{{{name}}}"), value);
    }
    s
}

//! Rule `base-url-wrong`: the client's base URL is a web page, carries tracking parameters or
//! doubles a path, so requests are answered 404 — which clients report as "model unavailable".

use super::RuleId;
use super::{FindingBody, Lang, Rule, RuleDoc, RuleText, texts};
use crate::facts::Facts;
use crate::parsers::client_config::UrlSetting;
use crate::report::{Class, EvidenceLine, Finding};
use triage_base::endpoint::{Api, CLIENT_ENDPOINTS, UrlParts, split_url, tracking_params, web_page_segment};

pub(crate) const RULE: Rule = Rule {
    doc: RuleDoc {
        id: RuleId::BaseUrlWrong,
        class: Class::Config,
        title: "The base URL is not the API base",
        detects: "A client base URL (ANTHROPIC_BASE_URL, OPENAI_BASE_URL, Codex base_url …) that carries tracking parameters (utm_*, spm, from …), points at a web page (home page, /console, /chat, /docs …), already ends in an endpoint path, or doubles /v1; and API-server access lines answering 404 to such paths.",
        why: "Clients append the endpoint path to the base URL. A console or home-page URL, a query string in the middle of the path, or a doubled /v1 makes a path the gateway does not serve, so every request is answered 404 — and many clients report that 404 as \"model unavailable\" or \"model not found\", which sends the search to the model side instead of the config.",
        example: "ANTHROPIC_BASE_URL=https://taotoken.net/api?utm_source=blog → `\"POST /api/v1/messages?utm_source=blog HTTP/1.1\" 404`; the client says the model is unavailable.",
        fix: "Set the base URL to the provider's bare API base (the article's is https://taotoken.net/api): no query string, no console or home-page path, no endpoint path; OpenAI-compatible clients usually need the /v1 in it, Anthropic clients must not have it.",
        zh: RuleText {
            title: "base URL 不是 API 基址",
            detects: "客户端的 base URL（ANTHROPIC_BASE_URL、OPENAI_BASE_URL、Codex 的 base_url …）带了跟踪参数（utm_*、spm、from …）、指向网页（首页、/console、/chat、/docs …）、已经以接口路径结尾或重复了 /v1；以及 API server 访问日志中对这类路径返回的 404。",
            why: "客户端会把接口路径拼到 base URL 后面。控制台或首页地址、夹在路径中间的查询串、重复的 /v1，都会拼出网关不提供的路径，于是每个请求都返回 404——而很多客户端把这个 404 报成“模型不可用”或“找不到模型”，排查方向就被带偏到模型侧，而不是配置。",
            example: "ANTHROPIC_BASE_URL=https://taotoken.net/api?utm_source=blog → `\"POST /api/v1/messages?utm_source=blog HTTP/1.1\" 404`；客户端报模型不可用。",
            fix: "把 base URL 设成服务商纯净的 API 基址（文中的是 https://taotoken.net/api）：不带查询串、不带控制台或首页路径、不带接口路径；OpenAI 兼容客户端通常要带上 /v1，Anthropic 客户端则不能带。",
        },
    },
    check,
};

/// What is wrong with a base URL, with how strongly each problem alone suggests a 404.
fn problems(u: &UrlParts, api: Option<Api>, lang: Lang) -> Vec<(f64, String)> {
    let mut out = Vec::new();
    let path = u.path.to_ascii_lowercase();
    if let Some(q) = &u.query {
        let t = tracking_params(q);
        if !t.is_empty() {
            let t = t.join(", ");
            out.push((
                0.6,
                lang.pick(
                    format!("carries tracking parameters ({t}): the client appends the endpoint after the query string, so the path the server sees is wrong"),
                    format!("带了跟踪参数（{t}）：客户端把接口路径拼在查询串后面，服务端看到的路径就错了"),
                ),
            ));
        }
    }
    if u.fragment {
        out.push((
            0.4,
            lang.pick(
                "carries a #fragment, which is never part of an API base",
                "带了 #片段，API 基址里从来不会有它",
            )
            .to_owned(),
        ));
    }
    if let Some(seg) = web_page_segment(&path) {
        out.push((
            0.6,
            lang.pick(
                format!("points at a web page (/{seg}), not the API base"),
                format!("指向的是网页（/{seg}），不是 API 基址"),
            ),
        ));
    }
    if let Some(end) = CLIENT_ENDPOINTS.iter().find(|e| path.ends_with(*e)) {
        out.push((
            0.5,
            lang.pick(
                format!("already ends in the endpoint path {end}; the client appends it again"),
                format!("已经以接口路径 {end} 结尾；客户端还会再拼一次"),
            ),
        ));
    } else if api == Some(Api::Anthropic) && path.ends_with("/v1") {
        out.push((
            0.45,
            lang.pick(
                "ends in /v1: Anthropic clients append /v1/messages themselves, so requests go to …/v1/v1/messages",
                "以 /v1 结尾：Anthropic 客户端会自己拼上 /v1/messages，请求就发到了 …/v1/v1/messages",
            )
            .to_owned(),
        ));
    }
    if path.contains("/v1/v1") || path.contains("/api/api") {
        out.push((
            0.5,
            lang.pick("repeats a path segment (/v1/v1 or /api/api)", "路径段重复了（/v1/v1 或 /api/api）")
                .to_owned(),
        ));
    }
    if path.is_empty() {
        if u.host.starts_with("www.") {
            let host = &u.host;
            out.push((
                0.45,
                lang.pick(
                    format!("is a website's home page ({host}), not an API host"),
                    format!("是网站首页（{host}），不是 API 主机"),
                ),
            ));
        } else if api == Some(Api::Openai) {
            out.push((
                0.35,
                lang.pick(
                    "has no path: OpenAI-style clients append /chat/completions directly, and most OpenAI-compatible servers serve /v1/chat/completions",
                    "没有路径：OpenAI 风格的客户端会直接拼上 /chat/completions，而大多数 OpenAI 兼容服务提供的是 /v1/chat/completions",
                )
                .to_owned(),
            ));
        }
    }
    out
}

/// The bare API base to suggest: no query, no endpoint path, cut before a web page. `false` when
/// a web page was cut off: then only the site is known, not where its API lives.
fn suggest(u: &UrlParts, api: Option<Api>) -> (String, bool) {
    let mut path = u.path.clone();
    let lower = path.to_ascii_lowercase();
    let mut certain = true;
    if let Some(seg) = web_page_segment(&lower)
        && let Some(i) = lower.find(&format!("/{seg}"))
    {
        path.truncate(i);
        certain = false;
    }
    for e in CLIENT_ENDPOINTS {
        if path.to_ascii_lowercase().ends_with(e) {
            path.truncate(path.len() - e.len());
        }
    }
    while path.to_ascii_lowercase().contains("/v1/v1") {
        let i = path.to_ascii_lowercase().find("/v1/v1").unwrap_or(0);
        path.replace_range(i..i + 3, "");
    }
    if api == Some(Api::Anthropic) && path.to_ascii_lowercase().ends_with("/v1") {
        path.truncate(path.len() - 3);
    }
    (format!("{}{}", u.origin, path.trim_end_matches('/')), certain)
}

/// `… "POST /v1/chat/completions?utm_source=x HTTP/1.1" 404 …` → (`POST`, path).
fn request_of(line: &str) -> Option<(&str, &str)> {
    let start = line.find('"')?;
    let req = &line[start + 1..];
    let req = &req[..req.find('"')?];
    let mut parts = req.split_whitespace();
    Some((parts.next()?, parts.next()?))
}

/// What a 404 access line says, with its strength.
fn judge_404(line: &str, lang: Lang) -> Option<(f64, String)> {
    let (method, path) = request_of(line)?;
    let lower = path.to_ascii_lowercase();
    let (bare, query) = match lower.split_once('?') {
        Some((b, q)) => (b.to_owned(), Some(q.to_owned())),
        None => (lower.clone(), None),
    };
    // Browsers and probes fetch these from every server; they prove nothing.
    if method == "GET" && (bare == "/" || bare == "/favicon.ico" || bare == "/robots.txt") {
        return None;
    }
    if let Some(t) = query.as_deref().map(tracking_params).filter(|t| !t.is_empty()) {
        let t = t.join(", ");
        return Some((
            0.85,
            lang.pick(
                format!(
                    "{method} {path} was answered 404: the tracking parameters ({t}) are in the API path"
                ),
                format!("{method} {path} 返回了 404：跟踪参数（{t}）混进了 API 路径"),
            ),
        ));
    }
    let doubled =
        ["/v1/v1", "/api/api", "/chat/completions/chat", "/messages/v1"].iter().any(|d| bare.contains(d));
    if doubled {
        return Some((
            0.8,
            lang.pick(
                format!(
                    "{method} {path} was answered 404: the base URL already held part of the path, so it is doubled"
                ),
                format!("{method} {path} 返回了 404：base URL 里已经包含了部分路径，于是路径重复了"),
            ),
        ));
    }
    if let Some(seg) = web_page_segment(&bare) {
        return Some((
            0.7,
            lang.pick(
                format!("{method} {path} was answered 404: /{seg} is a web page, not an API path"),
                format!("{method} {path} 返回了 404：/{seg} 是网页，不是 API 路径"),
            ),
        ));
    }
    let known =
        ["/v1/chat/completions", "/v1/completions", "/v1/messages", "/v1/responses", "/v1/embeddings"];
    if known.contains(&bare.as_str()) {
        // A correct path: vLLM answers 404 for an unknown *model* on it too, so this is at best
        // corroboration.
        return Some((
            0.2,
            lang.pick(
                format!(
                    "{method} {path} was answered 404 (a valid path: the model name may be unknown instead)"
                ),
                format!("{method} {path} 返回了 404（路径本身是对的：可能是模型名不存在）"),
            ),
        ));
    }
    Some((
        0.6,
        lang.pick(
            format!("{method} {path} was answered 404: the server has no such route"),
            format!("{method} {path} 返回了 404：服务端没有这个路由"),
        ),
    ))
}

fn api_name(a: Option<Api>, lang: Lang) -> &'static str {
    match (a, lang) {
        (Some(Api::Anthropic), Lang::En) => "Anthropic-style",
        (Some(Api::Openai), Lang::En) => "OpenAI-style",
        (None, Lang::En) => "the",
        (Some(Api::Anthropic), Lang::Zh) => "Anthropic 风格的",
        (Some(Api::Openai), Lang::Zh) => "OpenAI 风格的",
        (None, Lang::Zh) => "",
    }
}

fn check(f: &Facts, lang: Lang) -> Option<Finding> {
    let mut evidence: Vec<EvidenceLine> = Vec::new();
    let mut reasons: Vec<String> = Vec::new();
    let mut suggestions: Vec<String> = Vec::new();
    let mut config: f64 = 0.0;

    let mut seen: Vec<&str> = Vec::new();
    for UrlSetting { name, api, url } in f.clients.iter().flat_map(|c| &c.base_urls) {
        if seen.contains(&url.value.as_str()) {
            continue;
        }
        seen.push(&url.value);
        let Some(u) = split_url(&url.value) else { continue };
        let found = problems(&u, *api, lang);
        let Some(strongest) = found.iter().map(|p| p.0).reduce(f64::max) else { continue };
        config = config.max(strongest);
        let what: Vec<&str> = found.iter().map(|p| p.1.as_str()).collect();
        reasons.push(lang.pick(
            format!("{name} = {} {}", url.value, what.join("; ")),
            format!("{name} = {} {}", url.value, what.join("；")),
        ));
        evidence.push(url.evidence.clone());
        let client = api_name(*api, lang);
        match suggest(&u, *api) {
            (better, true) if better != url.value.trim_end_matches('/') => suggestions.push(lang.pick(
                format!("set {name} to {better} — the bare API base ({client} client appends the endpoint path itself)"),
                format!("把 {name} 设为 {better}——纯净的 API 基址（{client}客户端会自己拼接口路径）"),
            )),
            (site, false) => suggestions.push(lang.pick(
                format!(
                    "set {name} to the API base under {site} that the provider's API docs give (often {site}/api or {site}/v1), not a web page's address"
                ),
                format!(
                    "把 {name} 设为服务商 API 文档给出的 {site} 下的 API 基址（常见的是 {site}/api 或 {site}/v1），而不是某个网页的地址"
                ),
            )),
            _ => {}
        }
    }

    let mut access: f64 = 0.0;
    for (count, example) in [
        (f.vllm.access.get(&404), f.vllm.access_examples.get(&404)),
        (f.sglang.access.get(&404), f.sglang.access_examples.get(&404)),
    ] {
        let (Some(n), Some(e)) = (count, example) else { continue };
        let Some((strength, what)) = judge_404(&e.text, lang) else { continue };
        access = access.max(strength);
        reasons.push(lang.pick(
            format!("{what} ({n} such line{})", if *n == 1 { "" } else { "s" }),
            format!("{what}（共 {n} 行）"),
        ));
        evidence.push(e.clone());
    }

    let confidence = match (config > 0.0, access >= 0.5) {
        (true, true) => (config.max(access) + 0.25).min(0.95),
        (true, false) if access > 0.0 => (config + 0.1).min(0.9),
        (true, false) => config,
        (false, _) => access,
    };
    if confidence < 0.3 {
        return None;
    }
    let mut remediation: Vec<String> = suggestions;
    remediation.extend(texts(lang, &[
        (
            "remove every query parameter from the base URL (utm_*, spm, from …): they belong to links for people, not to API calls",
            "去掉 base URL 里的所有查询参数（utm_*、spm、from …）：它们属于给人点的链接，不属于 API 调用",
        ),
        (
            "copy the API base from the provider's API documentation, not from the address bar of its console or home page",
            "从服务商的 API 文档里复制 API 基址，而不是从控制台或首页的地址栏里复制",
        ),
        (
            "after the change, send one request by hand (curl -N $BASE/v1/chat/completions or $BASE/v1/messages) and expect 200 with streamed tokens",
            "改完后手动发一个请求（curl -N $BASE/v1/chat/completions 或 $BASE/v1/messages），应返回 200 并流式输出 token",
        ),
    ]));
    // After the reasons: what such a URL leads to.
    let consequence = || {
        lang.pick(
            " Requests to such a URL are answered 404, and clients often report that 404 as \"model unavailable\" — the model side is not the problem.",
            "发往这种地址的请求会返回 404，而客户端常把这个 404 报成“模型不可用”——问题不在模型侧。",
        )
        .to_owned()
    };
    RULE.doc.finding_from_reasons_then(
        lang,
        ("The base URL is not a bare API base", "base URL 不是纯净的 API 基址"),
        &reasons,
        consequence,
        FindingBody {
            confidence,
            evidence,
            remediation,
            next_checks: texts(lang, &[
                (
                    "grep the gateway or API-server access log for 404s and look at the exact path the client sent",
                    "在网关或 API server 的访问日志里 grep 404，看客户端实际发出的完整路径",
                ),
                (
                    "list the models the server serves (GET /v1/models): vLLM also answers 404 when the model name is unknown",
                    "列出服务端提供的模型（GET /v1/models）：模型名不存在时 vLLM 也会返回 404",
                ),
            ]),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::super::case;
    use super::*;
    use crate::testutil::fixture;

    const SETTINGS_UTM: &str = fixture!("configs/claude_settings.json");
    const ARTICLE_SETTINGS: &str = fixture!("configs/claude_settings_oneline.json");
    const ARTICLE_TOML: &str = fixture!("configs/codex_oneline.toml");

    #[test]
    fn fires_on_tracking_parameters_and_more_with_a_404() {
        let f = case(&[("settings.json", SETTINGS_UTM)])
            .snapshot(RuleId::BaseUrlWrong, "fires_on_tracking_parameters_and_more_with_a_404")
            .unwrap();
        assert!((0.55..0.7).contains(&f.confidence), "{}", f.confidence);
        assert!(f.summary.contains("utm_source, utm_medium"), "{}", f.summary);
        assert!(f.summary.contains("model unavailable"));
        assert!(f.remediation[0].contains("https://gw.example.com/api "), "{:?}", f.remediation);
        assert_eq!(f.evidence[0].line, 4);
        assert!(!format!("{f:?}").contains("sk-ant"), "a key leaked");

        let access = "INFO:     10.1.2.3:5122 - \"POST /api/v1/messages?utm_source=blog&utm_medium=csdn HTTP/1.1\" 404 Not Found\n";
        let f = case(&[("settings.json", SETTINGS_UTM), ("api.log", access)])
            .snapshot(RuleId::BaseUrlWrong, "fires_on_tracking_parameters_and_more_with_a_404_2")
            .unwrap();
        assert!(f.confidence >= 0.9, "{}", f.confidence);
        assert_eq!(f.evidence.len(), 2);
        let f = case(&[("api.log", access)])
            .snapshot(RuleId::BaseUrlWrong, "fires_on_tracking_parameters_and_more_with_a_404_3")
            .unwrap();
        assert!(f.confidence >= 0.85, "{}", f.confidence);
    }

    #[test]
    fn fires_on_web_pages_endpoints_and_doubled_v1() {
        for (i, (url, want)) in [
            ("export OPENAI_BASE_URL=https://taotoken.net/console?utm_source=x\n", "/console"),
            ("export OPENAI_BASE_URL=https://taotoken.net/chat\n", "/chat"),
            ("export OPENAI_BASE_URL=http://gw:8000/v1/chat/completions\n", "/chat/completions"),
            ("export ANTHROPIC_BASE_URL=https://gw.example/api/v1\n", "/v1/v1/messages"),
            ("export OPENAI_BASE_URL=https://www.example.com\n", "home page"),
        ]
        .into_iter()
        .enumerate()
        {
            let name = format!("web_page_or_endpoint_{i}");
            let f = case(&[("env", url)])
                .snapshot(RuleId::BaseUrlWrong, &name)
                .unwrap_or_else(|| panic!("{url}"));
            assert!(f.summary.contains(want), "{url}: {}", f.summary);
        }
        let f = case(&[("env", "export OPENAI_BASE_URL=http://gw:8000/v1/chat/completions\n")])
            .snapshot(RuleId::BaseUrlWrong, "fires_on_web_pages_endpoints_and_doubled_v1_2")
            .unwrap();
        assert!(f.remediation[0].contains("http://gw:8000/v1 "), "{:?}", f.remediation);
    }

    #[test]
    fn quiet_on_the_articles_own_configs_and_plain_404s() {
        assert!(
            case(&[("settings.json", ARTICLE_SETTINGS)])
                .snapshot(RuleId::BaseUrlWrong, "quiet_on_the_articles_own_configs_and_plain_404s")
                .is_none()
        );
        assert!(
            case(&[("config.toml", ARTICLE_TOML)])
                .snapshot(RuleId::BaseUrlWrong, "quiet_on_the_articles_own_configs_and_plain_404s_2")
                .is_none()
        );
        for ok in [
            "export ANTHROPIC_BASE_URL=https://api.anthropic.com\n",
            "export OPENAI_BASE_URL=http://127.0.0.1:8000/v1\n",
            "export OPENAI_BASE_URL=https://open.bigmodel.cn/api/paas/v4\n",
        ] {
            assert!(case(&[("env", ok)]).fired(RuleId::BaseUrlWrong).is_none(), "{ok}");
        }
        // A 404 on a valid path is vLLM's answer to an unknown model name, and browsers' GET / is
        // noise.
        let log = "INFO:     1.2.3.4:1 - \"POST /v1/chat/completions HTTP/1.1\" 404 Not Found\nINFO:     1.2.3.4:1 - \"GET /favicon.ico HTTP/1.1\" 404 Not Found\n";
        assert!(
            case(&[("api.log", log)])
                .snapshot(RuleId::BaseUrlWrong, "quiet_on_the_articles_own_configs_and_plain_404s_4")
                .is_none()
        );
    }

    #[test]
    fn url_helpers() {
        let u = split_url("https://taotoken.net/console?utm_source=a&x=1#top").unwrap();
        assert_eq!((u.host.as_str(), u.path.as_str(), u.fragment), ("taotoken.net", "/console", true));
        assert_eq!(u.query.as_deref(), Some("utm_source=a&x=1"));
        assert_eq!(suggest(&u, None), ("https://taotoken.net".to_owned(), false));
        let u = split_url("https://gw.example/api/v1/v1/messages").unwrap();
        assert_eq!(suggest(&u, Some(Api::Anthropic)), ("https://gw.example/api".to_owned(), true));
        assert!(split_url("taotoken.net/api").is_none());
        assert_eq!(request_of("x \"POST /v1/a?b=c HTTP/1.1\" 404"), Some(("POST", "/v1/a?b=c")));
        assert!(judge_404("\"GET / HTTP/1.1\" 404", Lang::En).is_none());
        assert!(judge_404("\"POST /v1/v1/messages HTTP/1.1\" 404", Lang::En).unwrap().0 >= 0.8);
    }

    crate::rules::snapshots! {
        corpus_config_base_url_homepage_404: [("config-base-url-homepage-404.log", fixture!("incidents/clients/config-base-url-homepage-404.log"))],
        corpus_config_046_base_url_double_v1: [("config-046-base-url-double-v1.log", fixture!("incidents/sglang/config-046-base-url-double-v1.log"))],
    }
}

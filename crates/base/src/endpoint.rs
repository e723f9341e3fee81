//! Turning what a user typed into the exact request a probe sends, and keeping keys out of output.
//!
//! Shared by the CLI and the browser probe so both send the same bytes and give the same
//! warnings. The article's most common pitfall lives here: a base URL that points at a web
//! site, or carries tracking parameters, makes gateways answer 404, which clients then report as
//! "model unavailable".

use crate::lang::Lang;
use serde::{Deserialize, Serialize};

/// The wire API a probe speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    /// OpenAI Chat Completions (`/v1/chat/completions`, `Authorization: Bearer`).
    Openai,
    /// Anthropic Messages (`/v1/messages`, `x-api-key`).
    Anthropic,
}

impl Api {
    /// The API named by `s`, case-insensitive: `openai`/`oai`/`chat` or `anthropic`/`claude`/`messages`.
    pub fn parse(s: &str) -> Option<Api> {
        match s.to_ascii_lowercase().as_str() {
            "openai" | "oai" | "chat" => Some(Api::Openai),
            "anthropic" | "claude" | "messages" => Some(Api::Anthropic),
            _ => None,
        }
    }

    /// `openai` or `anthropic`.
    pub fn as_str(self) -> &'static str {
        match self {
            Api::Openai => "openai",
            Api::Anthropic => "anthropic",
        }
    }

    /// Environment variables a host looks in for the key, in order.
    pub fn default_key_envs(self) -> &'static [&'static str] {
        match self {
            Api::Openai => &["OPENAI_API_KEY", "TAOTOKEN_API_KEY"],
            Api::Anthropic => &["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "TAOTOKEN_API_KEY"],
        }
    }
}

/// Why a URL cannot be probed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum EndpointError {
    /// The URL (quoted) does not start with `http://` or `https://`.
    #[error("url must start with http:// or https:// (got {0:?})")]
    Scheme(String),
    /// The URL (quoted) has nothing between the scheme and the path.
    #[error("url has no host: {0:?}")]
    NoHost(String),
    /// The host or port cannot be right: `(url, what is wrong)`.
    #[error("url {0:?}: {1}")]
    Authority(String, AuthorityProblem),
}

/// What is wrong with a URL's `host:port`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AuthorityProblem {
    /// The port is not a number from 1 to 65535.
    #[error("the port is not a number from 1 to 65535")]
    Port,
    /// An IPv6 address without brackets or with non-hex digits.
    #[error("an IPv6 address must be written in brackets with hex digits, e.g. http://[::1]:8000")]
    Ipv6,
    /// The host name holds characters a host cannot have.
    #[error("the host name holds characters a host cannot have")]
    Host,
}

impl AuthorityProblem {
    fn zh(self) -> &'static str {
        match self {
            AuthorityProblem::Port => "端口不是 1 到 65535 之间的数字",
            AuthorityProblem::Ipv6 => "IPv6 地址必须写在方括号里且只含十六进制数字，例如 http://[::1]:8000",
            AuthorityProblem::Host => "主机名中有主机名不可能含有的字符",
        }
    }
}

/// Check `user@host:port` as it appears after the scheme.
fn check_authority(authority: &str) -> Result<(), AuthorityProblem> {
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let (host, port) = if let Some(rest) = host_port.strip_prefix('[') {
        let (inside, after) = rest.split_once(']').ok_or(AuthorityProblem::Ipv6)?;
        let zone_free = inside.split('%').next().unwrap_or("");
        if zone_free.is_empty()
            || !zone_free.contains(':')
            || !zone_free.chars().all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.')
        {
            return Err(AuthorityProblem::Ipv6);
        }
        match after {
            "" => ("", None),
            p => ("", Some(p.strip_prefix(':').ok_or(AuthorityProblem::Port)?)),
        }
    } else {
        match host_port.split_once(':') {
            Some((h, p)) if p.contains(':') => {
                let _ = h;
                return Err(AuthorityProblem::Ipv6);
            }
            Some((h, p)) => (h, Some(p)),
            None => (host_port, None),
        }
    };
    if host.chars().any(|c| c.is_whitespace() || c.is_control() || "<>\\^`{|}\"".contains(c)) {
        return Err(AuthorityProblem::Host);
    }
    match port {
        None | Some("") => Ok(()),
        Some(p) => match p.parse::<u32>() {
            Ok(1..=65_535) if p.bytes().all(|b| b.is_ascii_digit()) => Ok(()),
            _ => Err(AuthorityProblem::Port),
        },
    }
}

impl EndpointError {
    /// The error in `lang` (`to_string()` is the English one).
    pub fn message_in(&self, lang: Lang) -> String {
        match (self, lang) {
            (_, Lang::En) => self.to_string(),
            (EndpointError::Scheme(s), Lang::Zh) => {
                format!("URL 必须以 http:// 或 https:// 开头（收到的是 {s:?}）")
            }
            (EndpointError::NoHost(s), Lang::Zh) => format!("URL 中没有主机名：{s:?}"),
            (EndpointError::Authority(s, p), Lang::Zh) => format!("URL {s:?}：{}", p.zh()),
        }
    }
}

/// The endpoint a probe will call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resolved {
    /// The exact URL requested.
    pub url: String,
    /// Things that look wrong but are not fatal (printed in the report).
    pub warnings: Vec<String>,
}

/// Query parameters that marketing links add and APIs never take (name prefixes).
pub const TRACKING_PARAM_PREFIXES: &[&str] =
    &["utm_", "spm", "gclid", "fbclid", "msclkid", "from", "ref", "share", "source", "_hsenc", "mc_cid"];

/// The tracking parameters in a query string (`a=1&utm_source=x` → `["utm_source"]`).
pub fn tracking_params(query: &str) -> Vec<&str> {
    query
        .trim_start_matches(['?', '#'])
        .split('&')
        .filter_map(|kv| kv.split('=').next())
        .filter(|k| {
            !k.is_empty() && TRACKING_PARAM_PREFIXES.iter().any(|p| k.to_ascii_lowercase().starts_with(p))
        })
        .collect()
}

/// Path segments of web pages, not APIs (`chat` only as the last segment: `/chat/completions` is
/// an endpoint).
pub const WEB_PAGES: &[&str] = &[
    "console",
    "dashboard",
    "playground",
    "login",
    "signin",
    "signup",
    "register",
    "pricing",
    "docs",
    "doc",
    "documentation",
    "api-keys",
    "apikeys",
    "keys",
    "settings",
    "account",
    "billing",
    "coding-plan",
    "home",
];

/// Endpoint paths a client appends itself.
pub const CLIENT_ENDPOINTS: &[&str] =
    &["/chat/completions", "/completions", "/messages", "/responses", "/embeddings"];

/// A URL split into what the base-URL pitfall checks read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UrlParts {
    /// `https://host`, as written.
    pub origin: String,
    /// The host (and port), lowercased.
    pub host: String,
    /// Without query or fragment, no trailing slash (`""` for the root).
    pub path: String,
    /// The query string without its `?` (and without a fragment).
    pub query: Option<String>,
    /// Whether the URL has a `#fragment`.
    pub fragment: bool,
}

/// An `http(s)://` URL split into its parts; `None` for anything else.
pub fn split_url(url: &str) -> Option<UrlParts> {
    let u = url.trim();
    let scheme_len = if u.to_ascii_lowercase().starts_with("https://") {
        8
    } else if u.to_ascii_lowercase().starts_with("http://") {
        7
    } else {
        return None;
    };
    let end = u.find(['?', '#']).unwrap_or(u.len());
    let fragment = u.contains('#');
    let query = u.find('?').map(|i| u[i + 1..u[i..].find('#').map_or(u.len(), |e| i + e)].to_owned());
    let rest = &u[scheme_len..end];
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    Some(UrlParts {
        origin: format!("{}{host}", &u[..scheme_len]),
        host: host.to_ascii_lowercase(),
        path: path.trim_end_matches('/').to_owned(),
        query,
        fragment,
    })
}

/// The path segment that makes a URL a web page rather than an API (`console`, `index.html`,
/// a last segment `chat`), lowercased.
pub fn web_page_segment(path: &str) -> Option<String> {
    let segs: Vec<String> = path.split('/').filter(|s| !s.is_empty()).map(str::to_ascii_lowercase).collect();
    let last = segs.last()?;
    if last == "chat" || [".html", ".htm", ".php", ".aspx"].iter().any(|x| last.ends_with(x)) {
        return Some(last.clone());
    }
    segs.into_iter().find(|s| WEB_PAGES.contains(&s.as_str()))
}

/// Resolve a base URL (`http://host:8000/v1`, `https://api.anthropic.com`) or a full endpoint
/// into the URL to POST to (warnings in English).
pub fn resolve(input: &str, api: Api) -> Result<Resolved, EndpointError> {
    resolve_in(input, api, Lang::En)
}

/// [`resolve`] with the warnings written in `lang` (the URL is the same).
pub fn resolve_in(input: &str, api: Api, lang: Lang) -> Result<Resolved, EndpointError> {
    let input = input.trim();
    let lower = input.to_ascii_lowercase();
    let scheme_len = if lower.starts_with("https://") {
        8
    } else if lower.starts_with("http://") {
        7
    } else {
        return Err(EndpointError::Scheme(input.to_owned()));
    };
    let (before_query, query) = match input.find(['?', '#']) {
        Some(i) => (&input[..i], Some(&input[i..])),
        None => (input, None),
    };
    let after_scheme = &before_query[scheme_len..];
    let (host, path) = match after_scheme.find('/') {
        Some(i) => (&after_scheme[..i], &after_scheme[i..]),
        None => (after_scheme, ""),
    };
    if host.is_empty() {
        return Err(EndpointError::NoHost(input.to_owned()));
    }
    check_authority(host).map_err(|p| EndpointError::Authority(input.to_owned(), p))?;
    let mut warnings = Vec::new();
    let path = path.trim_end_matches('/');
    let lower_path = path.to_ascii_lowercase();
    let full = match api {
        Api::Openai => {
            lower_path.ends_with("/chat/completions")
                || lower_path.ends_with("/completions")
                || lower_path.ends_with("/responses")
        }
        Api::Anthropic => lower_path.ends_with("/messages"),
    };
    let new_path = if full {
        path.to_owned()
    } else {
        match api {
            Api::Openai
                if lower_path.ends_with("/v1")
                    || lower_path.contains("/v1/")
                    || lower_path.ends_with("/v4") =>
            {
                format!("{path}/chat/completions")
            }
            Api::Openai => {
                if !path.is_empty() {
                    warnings.push(lang.pick(
                        format!(
                            "the path {path:?} has no /v1: OpenAI-compatible servers usually serve {path}/v1/chat/completions; \
                             check that the base URL is the API base, not a web page"
                        ),
                        format!(
                            "路径 {path:?} 中没有 /v1：OpenAI 兼容服务通常在 {path}/v1/chat/completions 提供接口；\
                             请确认 base URL 是 API 的基础地址，而不是一个网页"
                        ),
                    ));
                    format!("{path}/chat/completions")
                } else {
                    "/v1/chat/completions".to_owned()
                }
            }
            Api::Anthropic if lower_path.ends_with("/v1") => format!("{path}/messages"),
            Api::Anthropic => format!("{path}/v1/messages"),
        }
    };
    if let Some(q) = query {
        let params: Vec<&str> = q
            .trim_start_matches(['?', '#'])
            .split('&')
            .filter_map(|kv| kv.split('=').next())
            .filter(|k| !k.is_empty())
            .collect();
        let tracking = tracking_params(q);
        if !tracking.is_empty() {
            let list = tracking.join(", ");
            warnings.push(lang.pick(
                format!(
                    "the URL carries tracking parameters ({list}): API gateways often answer 404 to them, which clients \
                     report as \"model unavailable\"; use the bare API base URL"
                ),
                format!(
                    "URL 带有跟踪参数（{list}）：API 网关常对这类请求返回 404，客户端会把它报成\
                     \"model unavailable\"（模型不可用）；请使用不带参数的 API base URL"
                ),
            ));
        } else if !params.is_empty() {
            let list = params.join(", ");
            warnings.push(lang.pick(
                format!("the URL carries query parameters ({list}); API base URLs normally have none"),
                format!("URL 带有查询参数（{list}）；API base URL 通常不带任何参数"),
            ));
        }
    }
    let url = format!("{}{}{}{}", &input[..scheme_len], host, new_path, query.unwrap_or(""));
    Ok(Resolved { url, warnings })
}

/// What to ask the model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProbeRequest<'a> {
    /// The wire API to speak.
    pub api: Api,
    /// The model name sent in the body.
    pub model: &'a str,
    /// The user message.
    pub prompt: &'a str,
    /// The most tokens to generate.
    pub max_tokens: u32,
}

/// The JSON body of a streaming request.
pub fn request_body(req: &ProbeRequest<'_>) -> String {
    let messages = serde_json::json!([{ "role": "user", "content": req.prompt }]);
    let body = match req.api {
        Api::Openai => serde_json::json!({
            "model": req.model,
            "messages": messages,
            "max_tokens": req.max_tokens,
            "stream": true,
            "stream_options": { "include_usage": true },
        }),
        Api::Anthropic => serde_json::json!({
            "model": req.model,
            "messages": messages,
            "max_tokens": req.max_tokens,
            "stream": true,
        }),
    };
    body.to_string()
}

/// Headers every probe request carries (besides the key): content type, accept, API version.
pub fn base_headers(api: Api) -> Vec<(&'static str, &'static str)> {
    let mut h = vec![("content-type", "application/json"), ("accept", "text/event-stream")];
    if api == Api::Anthropic {
        h.push(("anthropic-version", "2023-06-01"));
    }
    h
}

/// The header that carries the key.
pub fn auth_header(api: Api, key: &str) -> (&'static str, String) {
    match api {
        Api::Openai => ("authorization", format!("Bearer {key}")),
        Api::Anthropic => ("x-api-key", key.to_owned()),
    }
}

/// A prompt of about `tokens` tokens: distinct common words, roughly one token each with the
/// usual BPE vocabularies (the count is approximate; the server's usage says the truth).
pub fn synthetic_prompt(tokens: usize) -> String {
    const WORDS: &[&str] = &[
        "time", "year", "people", "way", "day", "man", "thing", "woman", "life", "child", "world", "school",
        "state", "family", "student", "group", "country", "problem", "hand", "part", "place", "case", "week",
        "company", "system", "program", "question", "work", "number", "night", "point", "home",
    ];
    let mut s = String::from("Repeat the following words back:");
    for i in 0..tokens.saturating_sub(6) {
        s.push(' ');
        s.push_str(WORDS[i % WORDS.len()]);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_split_into_parts_and_web_pages_are_named() {
        let u = split_url("HTTPS://TaoToken.net/console/?utm_source=a#top").unwrap();
        assert_eq!(
            u,
            UrlParts {
                origin: "HTTPS://TaoToken.net".to_owned(),
                host: "taotoken.net".to_owned(),
                path: "/console".to_owned(),
                query: Some("utm_source=a".to_owned()),
                fragment: true,
            }
        );
        assert_eq!(split_url("http://h:8000").map(|u| u.path), Some(String::new()));
        assert!(split_url("ftp://h/x").is_none());
        assert_eq!(web_page_segment("/api/Dashboard/x").as_deref(), Some("dashboard"));
        assert_eq!(web_page_segment("/index.html").as_deref(), Some("index.html"));
        assert_eq!(web_page_segment("/v1/chat").as_deref(), Some("chat"));
        assert_eq!(web_page_segment("/v1/chat/completions"), None);
    }

    fn url(input: &str, api: Api) -> String {
        resolve(input, api).unwrap().url
    }

    /// Every URL warning and error has a Chinese form with the same URL bits and numbers.
    #[test]
    fn every_url_warning_has_a_chinese_form() {
        use crate::lang::has_cjk;
        let digits = |s: &str| {
            let mut v: Vec<String> =
                s.split(|c: char| !c.is_ascii_digit()).filter(|t| !t.is_empty()).map(str::to_owned).collect();
            v.sort();
            v
        };
        let mut kinds = 0;
        for (input, api) in [
            ("https://example.com/console2", Api::Openai),
            ("https://api.example.com/v1?utm_source=x&spm=1", Api::Openai),
            ("https://api.example.com/v1?version=2", Api::Anthropic),
        ] {
            let en = resolve(input, api).unwrap();
            assert_eq!(en, resolve_in(input, api, Lang::En).unwrap());
            let zh = resolve_in(input, api, Lang::Zh).unwrap();
            assert_eq!(en.url, zh.url);
            assert_eq!(en.warnings.len(), 1, "{en:?}");
            assert_eq!(zh.warnings.len(), 1);
            let (e, z) = (&en.warnings[0], &zh.warnings[0]);
            assert!(!has_cjk(e) && has_cjk(z) && e != z, "{z}");
            assert_eq!(digits(e), digits(z), "\n{e}\n{z}");
            kinds += 1;
        }
        assert_eq!(kinds, 3);
        for input in ["ftp://x", "https://", "http://h:99999/v1"] {
            let e = resolve(input, Api::Openai).unwrap_err();
            assert_eq!(e.message_in(Lang::En), e.to_string());
            let z = e.message_in(Lang::Zh);
            assert!(has_cjk(&z) && z.contains(input), "{z}");
        }
    }

    #[test]
    fn openai_bases_and_full_endpoints() {
        assert_eq!(url("http://127.0.0.1:8000/v1", Api::Openai), "http://127.0.0.1:8000/v1/chat/completions");
        assert_eq!(
            url("http://127.0.0.1:8000/v1/", Api::Openai),
            "http://127.0.0.1:8000/v1/chat/completions"
        );
        assert_eq!(url("http://127.0.0.1:8000", Api::Openai), "http://127.0.0.1:8000/v1/chat/completions");
        assert_eq!(url("https://x.ai/v1/chat/completions", Api::Openai), "https://x.ai/v1/chat/completions");
        assert_eq!(url("https://x.ai/api/v1/completions", Api::Openai), "https://x.ai/api/v1/completions");
        assert_eq!(
            url("https://open.bigmodel.cn/api/paas/v4", Api::Openai),
            "https://open.bigmodel.cn/api/paas/v4/chat/completions"
        );
    }

    #[test]
    fn anthropic_bases() {
        assert_eq!(url("https://api.anthropic.com", Api::Anthropic), "https://api.anthropic.com/v1/messages");
        assert_eq!(
            url("https://gw.example/anthropic", Api::Anthropic),
            "https://gw.example/anthropic/v1/messages"
        );
        assert_eq!(url("https://gw.example/v1/messages", Api::Anthropic), "https://gw.example/v1/messages");
    }

    #[test]
    fn warns_about_tracking_parameters_and_web_paths() {
        let r = resolve("https://gw.example/v1?utm_source=newsletter&spm=a2c", Api::Openai).unwrap();
        assert_eq!(r.url, "https://gw.example/v1/chat/completions?utm_source=newsletter&spm=a2c");
        assert!(r.warnings[0].contains("utm_source, spm"), "{:?}", r.warnings);
        let r = resolve("https://gw.example/console/models", Api::Openai).unwrap();
        assert!(r.warnings[0].contains("no /v1"), "{:?}", r.warnings);
    }

    #[test]
    fn rejects_non_http() {
        assert_eq!(resolve("gw.example/v1", Api::Openai), Err(EndpointError::Scheme("gw.example/v1".into())));
        assert!(matches!(resolve("http:///v1", Api::Openai), Err(EndpointError::NoHost(_))));
        use AuthorityProblem::*;
        for (url, problem) in [
            ("http://h:99999/v1", Some(Port)),
            ("http://h:0/v1", Some(Port)),
            ("http://h:80a/v1", Some(Port)),
            ("http://h:+80/v1", Some(Port)),
            ("http://::1:8000/v1", Some(Ipv6)),
            ("http://[::1/v1", Some(Ipv6)),
            ("http://[::g]:80/v1", Some(Ipv6)),
            ("http://[::1]x/v1", Some(Port)),
            ("http://a b/v1", Some(Host)),
            ("http://[::1]:8000/v1", None),
            ("http://[fe80::1%25eth0]/v1", None),
            ("http://user:pw@h:8000/v1", None),
            ("http://h:/v1", None),
            ("https://api.example.com/v1", None),
        ] {
            let got = match resolve(url, Api::Openai) {
                Err(EndpointError::Authority(_, p)) => Some(p),
                Err(e) => panic!("{url}: {e}"),
                Ok(_) => None,
            };
            assert_eq!(got, problem, "{url}");
        }
    }

    #[test]
    fn bodies_are_streaming_requests() {
        let body = request_body(&ProbeRequest { api: Api::Openai, model: "m", prompt: "hi", max_tokens: 8 });
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["stream"], true);
        assert_eq!(v["stream_options"]["include_usage"], true);
        assert_eq!(v["messages"][0]["content"], "hi");
        let body =
            request_body(&ProbeRequest { api: Api::Anthropic, model: "m", prompt: "hi", max_tokens: 8 });
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert!(v.get("stream_options").is_none());
        assert_eq!(v["max_tokens"], 8);
    }

    #[test]
    fn synthetic_prompt_has_the_words_asked_for() {
        let p = synthetic_prompt(100);
        assert_eq!(p.split_whitespace().count(), 5 + 94);
    }
}

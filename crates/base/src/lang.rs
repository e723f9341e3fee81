//! The languages the core writes its text in: English (the default, and the JSON contracts'
//! language) and Simplified Chinese.
//!
//! Text is chosen when it is produced — an analyzer built with
//! [`Lang::Zh`] writes its findings, rule docs and figure definitions in Chinese — so a report
//! never needs translating afterwards. Numbers, flags, commands, metric names and quoted input
//! lines are the same in both languages.

use serde::{Deserialize, Serialize};

/// A language of the text the core produces.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    /// English, the default.
    #[default]
    En,
    /// Simplified Chinese.
    Zh,
}

impl Lang {
    /// Both languages, English first.
    pub const ALL: [Lang; 2] = [Lang::En, Lang::Zh];

    /// `en` or `zh`.
    pub fn as_str(self) -> &'static str {
        match self {
            Lang::En => "en",
            Lang::Zh => "zh",
        }
    }

    /// `en`/`zh`, also `zh-CN`, `zh_TW`, `en-US` (case-insensitive); `None` for anything else.
    pub fn parse(s: &str) -> Option<Lang> {
        let s = s.trim().to_ascii_lowercase();
        let primary = s.split(['-', '_']).next().unwrap_or("");
        match primary {
            "en" => Some(Lang::En),
            "zh" => Some(Lang::Zh),
            _ => None,
        }
    }

    /// The one of two values that is in this language.
    pub fn pick<T>(self, en: T, zh: T) -> T {
        match self {
            Lang::En => en,
            Lang::Zh => zh,
        }
    }
}

impl std::fmt::Display for Lang {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Lang {
    type Err = String;

    fn from_str(s: &str) -> Result<Lang, String> {
        Lang::parse(s).ok_or_else(|| format!("unknown language {s:?}: expected en or zh"))
    }
}

/// Whether `s` holds a CJK ideograph (tests use it to tell Chinese text from English).
pub fn has_cjk(s: &str) -> bool {
    s.chars().any(|c| matches!(c, '\u{4e00}'..='\u{9fff}' | '\u{3400}'..='\u{4dbf}'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        for l in Lang::ALL {
            assert_eq!(Lang::parse(l.as_str()), Some(l));
            assert_eq!(l.to_string().parse::<Lang>(), Ok(l));
        }
        assert_eq!(Lang::parse("zh-CN"), Some(Lang::Zh));
        assert_eq!(Lang::parse("EN_us"), Some(Lang::En));
        assert_eq!(Lang::parse("fr"), None);
        assert_eq!(Lang::default(), Lang::En);
        assert_eq!(serde_json::to_string(&Lang::Zh).unwrap(), "\"zh\"");
        assert!(has_cjk("首 token 延迟") && !has_cjk("TTFT p99 3 s"));
    }
}

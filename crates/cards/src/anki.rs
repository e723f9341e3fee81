//! The deck as a file Anki imports as it is: UTF-8, tab-separated, one card per line with the
//! columns front, back and tags, and Anki's header lines (`#separator:tab`, `#html:true`,
//! `#tags column:3`).
//!
//! Fields are HTML (`#html:true`): `&`, `<`, `>` and `"` are written as entities, a newline as
//! `<br>`, a tab as a space — so no field holds a raw tab or newline, and no field starts with a
//! quote that Anki's reader would take for CSV quoting. Tags are the card's topics and its kind,
//! space-separated (a tag never holds a space).

use super::{Card, Lang};

/// Anki's header lines.
pub const HEADER: &str = "#separator:tab\n#html:true\n#tags column:3\n";

/// `s` as one HTML field on one line.
pub fn field(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 8);
    for c in s.trim_end().chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\n' => out.push_str("<br>"),
            '\t' => out.push(' '),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// The tags column: topics, then the kind.
pub fn tags(card: &Card) -> String {
    let mut t: Vec<&str> = card.tags.iter().map(|t| t.as_str()).collect();
    t.push(card.kind.as_str());
    t.join(" ")
}

/// `cards` in `lang` as an Anki import file.
pub fn tsv<'a>(cards: impl IntoIterator<Item = &'a Card>, lang: Lang) -> String {
    let mut out = String::from(HEADER);
    for c in cards {
        let mut front = c.front(lang).to_owned();
        if let Some(t) = c.tolerance {
            front.push_str(&lang.pick(format!("\n(± {t})"), format!("\n（± {t}）")));
        }
        out.push_str(&field(&front));
        out.push('\t');
        out.push_str(&field(c.back(lang)));
        out.push('\t');
        out.push_str(&tags(c));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_escape_tabs_newlines_and_html() {
        assert_eq!(field("a\tb\n<c> & \"d\"\n"), "a b<br>&lt;c&gt; &amp; &quot;d&quot;");
    }
}

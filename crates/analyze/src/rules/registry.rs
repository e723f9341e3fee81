//! The registry: [`RULES`], every rule's entry in the order of the one declaration
//! ([`crate::ids::rule_table!`], which also gives each its [`RuleId`] and the id a report writes).

use super::Rule;
use crate::ids::RuleId;

/// Declares [`RULES`] from the rule table; checks at compile time that each entry's docs name the
/// id it is registered under.
macro_rules! entries {
    (
        rules { $($(#[$m:meta])* $variant:ident = $id:literal => $module:ident :: $entry:ident,)* }
        recorded { $($gvariant:ident = $gid:literal,)* }
        marks { $($pvariant:ident = $pid:literal,)* }
    ) => {
        /// Every rule, in the order of the article's trees.
        pub static RULES: &[Rule] = &[$(super::$module::$entry,)*];

        $(const _: () = assert!(
            matches!(super::$module::$entry.doc.id, RuleId::$variant),
            concat!(stringify!($module::$entry), " is registered as `", $id, "` but its docs say otherwise")
        );)*
    };
}

crate::ids::rule_table!(entries);

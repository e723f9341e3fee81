//! Rows of tables and `key: value` figures no tool-specific reader knows (written by
//! `parsers/table/`, which also holds their queries).

use crate::report::EvidenceLine;

/// One row of a table, or one block of `key: value` lines.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Row {
    /// Rows with the same id come from one table (or one run of blocks) and can be compared.
    pub table: u32,
    /// The row's text cells (model, backend, configuration), joined with ` | `.
    pub label: String,
    /// What the row measured: the text cells but the test's name (llama-bench's rows of one
    /// configuration share it).
    pub subject: String,
    /// Figure name → value, in the order read (the first of a name wins).
    pub values: Vec<(String, f64, u8)>,
    /// The lines the figures were read from (`values`' third field indexes this).
    pub lines: Vec<EvidenceLine>,
    /// Read from `key: value` lines, not from a table with a header.
    pub block: bool,
}

/// Every row read, whatever section it was in.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TableFacts {
    /// Rows in input order (at most [`MAX_ROWS`](crate::parsers::table::MAX_ROWS)).
    pub rows: Vec<Row>,
    /// Rows read beyond the bound.
    pub dropped: usize,
    pub(crate) next_table: u32,
}

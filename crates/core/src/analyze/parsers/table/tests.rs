use super::*;
use crate::analyze::testutil::run;

fn rows(text: &str) -> Vec<Row> {
    run("paste", text).facts.tables.rows
}

#[test]
fn debug_real() {
    let dir = std::env::var("DBG_DIR").unwrap_or("/work/shared/data/real-pastes/cases".into());
    let mut names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    names.sort();
    for p in names {
        let text = std::fs::read_to_string(&p).unwrap();
        let rs = rows(&text);
        if rs.is_empty() { continue; }
        println!("=== {}", p.display());
        for r in rs {
            let v: Vec<String> = r.values.iter().map(|(k, v, i)| format!("{k}={v:.1}@{}", r.lines[*i as usize].line)).collect();
            println!("  t{} [{}] {}", r.table, r.label, v.join(" "));
        }
    }
}


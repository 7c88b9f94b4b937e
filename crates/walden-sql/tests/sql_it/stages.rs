//! The SQL layer's shape (docs/design.md, "SQL layer"): its modules sit in
//! stages along a statement's path, and a module imports only from its own
//! stage and the stages below it. This test reads every `crate::` path in
//! `src/` and fails on one that points up. What the lower stages need from
//! the catalogs (catalog functions, system relations) they reach through
//! `functions::SystemCatalog`, which `compat/` implements and the session
//! hands down.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The stages from the bottom. `error.rs` sits under all of them and `lib.rs`
/// over all of them.
const STAGES: &[&str] = &[
    "types",      // type names, PostgreSQL type OIDs and the OID scheme, quoting
    "front",      // split, recognise, parse: text to statements, no catalog
    "context",    // what a statement runs with: settings, search_path, budgets, locks
    "functions",  // the built-in function library
    "expr",       // bound expressions: compiled against a scope, evaluated per row
    "query",      // SELECT: planned from its sources, executed over a transaction
    "dml",        // INSERT, UPDATE, DELETE, upsert, locking reads
    "catalog",    // CREATE / ALTER / DROP of each object kind, roles, grants
    "compat",     // pg_catalog, information_schema, sys.* views and DMVs
    "admin",      // availability groups, BACKUP, DBCC
    "procedural", // T-SQL batches and procedures: variables, control flow, EXEC
    "session",    // the session: dispatch, transaction blocks, cursors, COPY
];

/// The one cycle the shape allows: an expression may hold a subquery, which
/// the query stage plans.
const ALLOWED_UPWARD: &[(&str, &str)] = &[("expr", "query")];

fn stage_of_file(rel: &str) -> &str {
    let first = rel.split('/').next().unwrap_or(rel);
    first.strip_suffix(".rs").unwrap_or(first)
}

fn rank(stage: &str) -> Option<usize> {
    match stage {
        "error" => Some(0),
        "lib" => Some(usize::MAX),
        s => STAGES.iter().position(|x| *x == s).map(|i| i + 1),
    }
}

/// Code without its comments (doc comments name modules in prose).
fn strip_comments(src: &str) -> String {
    let mut out = String::with_capacity(src.len());
    for line in src.lines() {
        let mut in_str = false;
        let mut cut = line.len();
        let b = line.as_bytes();
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'\\' if in_str => i += 1,
                b'"' => in_str = !in_str,
                b'/' if !in_str && b.get(i + 1) == Some(&b'/') => {
                    cut = i;
                    break;
                }
                _ => {}
            }
            i += 1;
        }
        out.push_str(&line[..cut]);
        out.push('\n');
    }
    out
}

/// The first two segments of every path after `crate::`, group imports
/// (`crate::{a::b, c::{d, e}}`) expanded at their top level.
fn crate_paths(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().last();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut end = 0;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = i;
                            break;
                        }
                    }
                    _ => {}
                }
            }
            let mut depth = 0;
            let mut item = String::new();
            for c in group[..end].chars().chain(std::iter::once(',')) {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        found.push(two_segments(item.trim()));
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                item.push(c);
            }
        } else {
            found.push(two_segments(rest));
        }
    }
    found.retain(|p| !p.is_empty());
    found
}

fn two_segments(path: &str) -> String {
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let first = ident(path);
    let after = &path[first.len()..];
    match after.strip_prefix("::") {
        Some(tail) if !tail.starts_with('{') => format!("{first}::{}", ident(tail)),
        _ => first,
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn imports_point_down_the_stages() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    assert!(
        files.len() > 50,
        "found only {} files under src/",
        files.len()
    );
    let mut upward = BTreeSet::new();
    let mut unstaged = Vec::new();
    for path in &files {
        let rel = path
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let from = stage_of_file(&rel);
        let Some(from_rank) = rank(from) else {
            unstaged.push(rel.clone());
            continue;
        };
        let code = strip_comments(&std::fs::read_to_string(path).unwrap());
        for target in crate_paths(&code) {
            let to = target.split("::").next().unwrap();
            let Some(to_rank) = rank(to) else {
                // An item of lib.rs (Column, QueryOutput, ...): the crate's
                // own vocabulary, usable everywhere.
                continue;
            };
            if to_rank > from_rank && !ALLOWED_UPWARD.contains(&(from, to)) {
                upward.insert((rel.clone(), target));
            }
        }
    }
    assert!(
        unstaged.is_empty(),
        "files outside every stage (add the folder to STAGES or move them): {unstaged:?}"
    );
    assert!(
        upward.is_empty(),
        "imports from a stage above (move the code to the stage it belongs to, \
         or pass what it needs down):\n{}",
        upward
            .iter()
            .map(|(f, m)| format!("    {f} imports crate::{m}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn paths_are_read_from_group_imports() {
    let code = "use crate::{a::{b, c}, d::e, f};\nlet x = crate::g::h::i();\n$crate::z";
    assert_eq!(crate_paths(code), ["a", "d::e", "f", "g::h"]);
    assert_eq!(
        strip_comments("let s = \"//\"; // crate::x\n"),
        "let s = \"//\"; \n"
    );
}

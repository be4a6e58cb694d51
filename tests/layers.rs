//! The layering of `src/`, held by a test: each module may import only the
//! layers below it, so that the crate stays a house of floors rather than
//! one circle of modules that all reach each other (issue 23).
//!
//! The test reads the sources, not the compiled crate: it finds every
//! `crate::…`, `super::…` and `crate::say!` path outside comments, string
//! literals and `#[cfg(test)]` items, resolves it to the module it names,
//! and checks it against [`LAYERS`]. Unit tests may reach anything (they
//! build fixtures from several layers); `lib.rs` re-exports and `main.rs`
//! is the binary, so both are left out.
//!
//! Three rules:
//! 1. a module imports only what its row of [`LAYERS`] names (itself always);
//! 2. no circle between top-level modules, whatever the table says;
//! 3. no workload family imports another family: what two share lives in
//!    the workload layer's kit, contract or registry, never in a sibling.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Who may import whom. A key is a top-level module, or `db::sql`, which
/// is a leaf of its own inside `db`. The most specific key applies.
const LAYERS: &[(&str, &[&str])] = &[
    // Leaves: nothing of the crate above them.
    ("error", &[]),
    ("output", &[]),
    ("db::sql", &["error"]),
    ("stats", &["error", "output"]),
    ("signals", &["error", "output"]),
    // The worker threads' poll loop: tasks, sockets, timers.
    ("rt", &[]),
    // The database layer: connections, drivers, schema, the server's view.
    ("db", &["error", "output", "stats", "signals", "rt"]),
    // Workloads: the contract, the registry, the kit and one folder per family.
    ("workload", &["error", "output", "stats", "db", "rt"]),
    // The one worker loop and the life of an operation.
    (
        "runner",
        &[
            "error", "output", "stats", "db", "workload", "signals", "rt",
        ],
    ),
    // Reports read statistics only: a saved run is the same record.
    ("report", &["error", "output", "stats"]),
    // Live metrics: the run's board (stats) rendered and served.
    ("metrics", &["error", "output", "stats"]),
    // The several-client gate: the runner's barrier, kept in the database.
    ("cluster", &["error", "output", "db", "runner"]),
    // Flags: each layer's flag group, flattened.
    (
        "cli",
        &[
            "error", "output", "stats", "db", "workload", "runner", "report", "cluster",
        ],
    ),
    ("generate", &["error", "output", "cli", "workload"]),
    // The run plan, assembled from the flag groups and each layer's settings.
    (
        "config",
        &[
            "error", "output", "stats", "db", "workload", "runner", "report", "cluster", "cli",
        ],
    ),
    // Orchestration and the saved-report commands: everything.
    (
        "app",
        &[
            "error", "output", "stats", "db", "workload", "runner", "report", "cluster", "cli",
            "config", "generate", "signals", "metrics", "rt",
        ],
    ),
];

/// The workload families: folders of `workload/` that must not import
/// each other.
const FAMILIES: &[&str] = &["basic", "ycsb", "oltp", "booking", "tpcc", "pgbench"];

/// The folders of `workload/` that are not families: what the families
/// share. Every folder there is one or the other, so that a new family
/// cannot be forgotten in [`FAMILIES`].
const SHARED: &[&str] = &["contract", "kit"];

/// One import: the file it is in, the line, the module path it names.
#[derive(Debug)]
struct Import {
    file: PathBuf,
    line: usize,
    from: Vec<String>,
    to: Vec<String>,
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The module path of a source file: `src/workload/tpcc/txn.rs` is
/// `workload::tpcc::txn`, `src/db/mod.rs` is `db`.
fn module_of(path: &Path) -> Vec<String> {
    let rel = path.strip_prefix(src()).expect("under src");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("a file name");
    let stem = last.trim_end_matches(".rs").to_string();
    if stem != "mod" {
        parts.push(stem);
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read src")
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            if p.file_name().is_some_and(|n| n != "bin") {
                rust_files(&p, out);
            }
        } else if p.extension().is_some_and(|e| e == "rs") {
            let name = p.file_name().expect("name").to_string_lossy().into_owned();
            if p.parent() == Some(src().as_path()) && (name == "lib.rs" || name == "main.rs") {
                continue;
            }
            out.push(p);
        }
    }
}

/// The code of a file with comments and the insides of string and char
/// literals blanked (newlines kept, so line numbers stay right).
fn code_only(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && (i == 0 || !(b[i - 1].is_alphanumeric() || b[i - 1] == '_'))
        {
            // A raw string r"…" or r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            for _ in i..=j {
                out.push(' ');
            }
            i = j + 1;
            while i < b.len() {
                if b[i] == '"' && (0..hashes).all(|k| b.get(i + 1 + k) == Some(&'#')) {
                    for _ in 0..=hashes {
                        out.push(' ');
                    }
                    i += 1 + hashes;
                    break;
                }
                out.push(blank(b[i]));
                i += 1;
            }
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < b.len() {
                    out.push(blank(b[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' {
            // A char literal ('x', '\n', '\u{1F}') or a lifetime ('a).
            let close = if next == Some('\\') {
                (i + 2..b.len().min(i + 12)).find(|&k| b[k] == '\'')
            } else if b.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match close {
                Some(k) => {
                    for _ in i..=k {
                        out.push(' ');
                    }
                    i = k + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Blanks every item marked `#[cfg(test)]` (unit tests may reach anything).
fn without_tests(code: &str) -> String {
    let mut out: Vec<char> = code.chars().collect();
    let text: String = out.iter().collect();
    let mut from = 0;
    while let Some(at) = text[from..].find("#[cfg(test)]") {
        let start = from + at;
        // The item ends at the `;` or the `}` that closes its first `{`.
        let chars: Vec<(usize, char)> = text[start..].char_indices().collect();
        let mut depth = 0;
        let mut end = text.len();
        for (k, c) in chars {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = start + k + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = start + k + 1;
                    break;
                }
                _ => {}
            }
        }
        let first = text[..start].chars().count();
        let last = text[..end].chars().count();
        for c in &mut out[first..last] {
            if *c != '\n' {
                *c = ' ';
            }
        }
        from = end;
    }
    out.into_iter().collect()
}

/// The paths a piece of code names: `crate::a::b`, `crate::{a::b, c}`,
/// `super::x`, `crate::say!`. Each as its segments, with the byte offset.
fn paths(code: &str) -> Vec<(usize, Vec<String>)> {
    let b = code.as_bytes();
    let mut found = Vec::new();
    let is_ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < b.len() {
        let rest = &code[i..];
        let starts = (rest.starts_with("crate::") || rest.starts_with("super::"))
            && (i == 0 || !(is_ident(b[i - 1]) || b[i - 1] == b':'));
        if !starts {
            i += 1;
            continue;
        }
        let at = i;
        let mut prefix: Vec<String> = Vec::new();
        // Read `seg::seg::…` and, at a `{`, each branch of the group.
        let mut j = i;
        loop {
            let s = j;
            while j < b.len() && is_ident(b[j]) {
                j += 1;
            }
            if s == j {
                break;
            }
            prefix.push(code[s..j].to_string());
            if code[j..].starts_with("::") {
                j += 2;
                while j < b.len() && b[j].is_ascii_whitespace() {
                    j += 1;
                }
                if j < b.len() && b[j] == b'{' {
                    // A group, nested groups included: every path in it.
                    let k = closing_brace(b, j);
                    let inner = &code[j + 1..k.min(b.len())];
                    for p in group_paths(&prefix, inner) {
                        found.push((at, p));
                    }
                    prefix.clear();
                    j = k;
                    break;
                }
            } else {
                if code[j..].starts_with('!') && prefix == ["crate", "say"] {
                    // The `say!` macro is the output layer's.
                    prefix = vec!["crate".into(), "output".into()];
                }
                break;
            }
        }
        if !prefix.is_empty() {
            found.push((at, prefix));
        }
        i = j.max(i + 1);
    }
    found
}

/// Where the `{` at `open` closes (the end of the code if it never does).
fn closing_brace(b: &[u8], open: usize) -> usize {
    let mut depth = 0;
    for (k, c) in b.iter().enumerate().skip(open) {
        match c {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return k;
                }
            }
            _ => {}
        }
    }
    b.len()
}

/// Every path of the inside of a `use` group (`a::b, c::{d, e::f}, *`),
/// each with `prefix` before it: nested groups are read to their leaves,
/// `self` names the prefix itself, `as` renames are dropped.
fn group_paths(prefix: &[String], inner: &str) -> Vec<Vec<String>> {
    let mut branches = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (k, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                branches.push(&inner[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    branches.push(&inner[start..]);
    let mut out = Vec::new();
    for branch in branches {
        let branch = branch.trim();
        if branch.is_empty() {
            continue;
        }
        if let Some(open) = branch.find('{') {
            let head = branch[..open].trim().trim_end_matches("::");
            let mut p = prefix.to_vec();
            p.extend(
                head.split("::")
                    .map(|s| s.trim().to_string())
                    .filter(|s| !s.is_empty()),
            );
            let close = branch.rfind('}').unwrap_or(branch.len());
            out.extend(group_paths(&p, &branch[open + 1..close]));
            continue;
        }
        let path = branch.split(" as ").next().unwrap_or("").trim();
        let mut p = prefix.to_vec();
        for seg in path.split("::").map(str::trim) {
            if seg == "self" {
                continue;
            }
            p.push(seg.to_string());
        }
        out.push(p);
    }
    out
}

/// Resolves a path written in module `from` to an absolute module path
/// (without the leading `crate`).
fn resolve(from: &[String], path: &[String], is_mod_rs: bool) -> Option<Vec<String>> {
    let mut segs = path.iter().peekable();
    let mut base: Vec<String> = match segs.peek().map(|s| s.as_str()) {
        Some("crate") => {
            segs.next();
            Vec::new()
        }
        Some("super") => {
            // In `a/b.rs` (module a::b), `super` is `a`; in `a/b/mod.rs`
            // (module a::b) it is also `a`.
            let _ = is_mod_rs;
            let mut m = from.to_vec();
            while segs.peek().map(|s| s.as_str()) == Some("super") {
                segs.next();
                m.pop()?;
            }
            m
        }
        _ => return None,
    };
    base.extend(segs.cloned());
    Some(base)
}

fn imports() -> Vec<Import> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut all = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("read source");
        let code = without_tests(&code_only(&text));
        let from = module_of(&file);
        let is_mod_rs = file.file_name().is_some_and(|n| n == "mod.rs");
        for (at, path) in paths(&code) {
            let Some(to) = resolve(&from, &path, is_mod_rs) else {
                continue;
            };
            if to.is_empty() {
                continue;
            }
            let line = code[..at].matches('\n').count() + 1;
            all.push(Import {
                file: file.clone(),
                line,
                from: from.clone(),
                to,
            });
        }
    }
    all
}

/// The layer a module path belongs to: `db::sql` or the top-level module.
fn layer(path: &[String]) -> String {
    if path.len() >= 2 && path[0] == "db" && path[1] == "sql" {
        "db::sql".to_string()
    } else {
        path[0].clone()
    }
}

fn allowed(from: &str) -> Option<&'static [&'static str]> {
    LAYERS.iter().find(|(m, _)| *m == from).map(|(_, a)| *a)
}

fn show(i: &Import) -> String {
    format!(
        "{}:{}: {} imports {}",
        i.file.strip_prefix(src()).unwrap_or(&i.file).display(),
        i.line,
        i.from.join("::"),
        i.to.join("::")
    )
}

#[test]
fn each_module_imports_only_the_layers_below_it() {
    let imports = imports();
    assert!(
        imports.len() > 100,
        "found only {} imports: is the reader broken?",
        imports.len()
    );
    let mut bad = Vec::new();
    let mut unknown = BTreeSet::new();
    for i in &imports {
        let (from, to) = (layer(&i.from), layer(&i.to));
        if from == to || (from == "db" && to == "db::sql") {
            continue;
        }
        match allowed(&from) {
            Some(a) if a.contains(&to.as_str()) => {}
            // db::sql may be named by anyone who may name db.
            Some(a) if to == "db::sql" && (a.contains(&"db") || from == "stats") => {}
            Some(_) => bad.push(show(i)),
            None => {
                unknown.insert(from);
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "modules missing from LAYERS: {unknown:?}"
    );
    assert!(
        bad.is_empty(),
        "{} imports go up a layer:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// Finds a circle in a graph of names, if there is one.
fn circle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for m in edges.get(n).into_iter().flatten() {
            match state.get(m.as_str()).copied().unwrap_or(0) {
                1 => {
                    let from = stack.iter().position(|s| s == m).unwrap_or(0);
                    let mut c = stack[from..].to_vec();
                    c.push(m.clone());
                    return Some(c);
                }
                0 => {
                    if let Some(c) = visit(m, edges, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in edges.keys() {
        if state.get(n.as_str()).copied().unwrap_or(0) == 0 {
            let mut stack = Vec::new();
            if let Some(c) = visit(n, edges, &mut state, &mut stack) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn no_circle_between_top_level_modules() {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for i in imports() {
        if i.from[0] != i.to[0] {
            edges
                .entry(i.from[0].clone())
                .or_default()
                .insert(i.to[0].clone());
        }
    }
    assert!(edges.len() > 5, "too few modules found: {edges:?}");
    assert_eq!(
        circle(&edges),
        None,
        "an import circle between top-level modules"
    );
}

#[test]
fn no_workload_family_imports_another() {
    let family = |p: &[String]| -> Option<String> {
        (p.len() >= 2 && p[0] == "workload" && FAMILIES.contains(&p[1].as_str()))
            .then(|| p[1].clone())
    };
    let mut bad = Vec::new();
    let mut seen = BTreeSet::new();
    for i in imports() {
        if let Some(f) = family(&i.from) {
            seen.insert(f.clone());
            if let Some(t) = family(&i.to)
                && t != f
            {
                bad.push(show(&i));
            }
        }
    }
    assert!(
        seen.len() >= 4,
        "workload families not found as folders: {seen:?}"
    );
    assert!(
        bad.is_empty(),
        "a workload family imports another:\n{}",
        bad.join("\n")
    );
}

#[test]
fn every_workload_folder_is_a_family_or_shared() {
    let dir = src().join("workload");
    let mut unknown = Vec::new();
    for e in std::fs::read_dir(&dir).expect("read src/workload") {
        let p = e.expect("entry").path();
        let name = p.file_name().expect("name").to_string_lossy().into_owned();
        if p.is_dir() && !FAMILIES.contains(&name.as_str()) && !SHARED.contains(&name.as_str()) {
            unknown.push(name);
        }
    }
    assert!(
        unknown.is_empty(),
        "folders of src/workload/ that are neither in FAMILIES nor in SHARED of tests/layers.rs: {unknown:?}"
    );
}

/// A family reaches the others only by naming them: a glob of the
/// workload layer's root (which declares every family) or the root
/// re-exporting a family would hide that from the checks above.
#[test]
fn no_family_is_reached_through_a_glob_or_a_re_export() {
    let mut bad = Vec::new();
    let mut files = Vec::new();
    rust_files(&src().join("workload"), &mut files);
    for file in files {
        let module = module_of(&file);
        let text = std::fs::read_to_string(&file).expect("read source");
        let code = without_tests(&code_only(&text));
        let in_family = module.len() >= 2 && FAMILIES.contains(&module[1].as_str());
        for (n, line) in code.lines().enumerate() {
            let line = line.trim();
            if in_family
                && line.ends_with("::*;")
                && paths(line)
                    .into_iter()
                    .filter_map(|(_, p)| resolve(&module, &p, false))
                    .any(|p| p == ["workload", "*"])
            {
                bad.push(format!("{}:{}: {line}", file.display(), n + 1));
            }
            if module == ["workload"]
                && line.starts_with("pub use")
                && FAMILIES.iter().any(|f| {
                    line.contains(&format!("{f}::"))
                        || line.contains(&format!(" {f},"))
                        || line.contains(&format!("{{{f},"))
                })
            {
                bad.push(format!("{}:{}: {line}", file.display(), n + 1));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "families reached around the checks:\n{}",
        bad.join("\n")
    );
}

/// No circle between the parts of the workload layer (the contract, the
/// kit, the registry, the clean-up list, each family): the kit and the
/// contract are below the families, the registry above them.
#[test]
fn no_circle_inside_the_workload_layer() {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let dir = src().join("workload");
    let parts: BTreeSet<String> = std::fs::read_dir(&dir)
        .expect("read src/workload")
        .map(|e| e.expect("entry").path())
        .filter_map(|p| {
            let name = p.file_name()?.to_string_lossy().into_owned();
            (name != "mod.rs").then(|| name.trim_end_matches(".rs").to_string())
        })
        .collect();
    for i in imports() {
        let inside = |p: &[String]| {
            (p.len() >= 2 && p[0] == "workload" && parts.contains(&p[1])).then(|| p[1].clone())
        };
        if let (Some(a), Some(b)) = (inside(&i.from), inside(&i.to))
            && a != b
        {
            edges.entry(a).or_default().insert(b);
        }
    }
    assert!(
        edges.len() >= 6,
        "too few parts of workload/ found: {edges:?}"
    );
    assert_eq!(
        circle(&edges),
        None,
        "an import circle inside src/workload/"
    );
}

#[test]
fn the_reader_sees_what_it_must() {
    // The reader itself must be able to fail: a group, a super path, a
    // macro, and paths in comments, strings and tests left out.
    let code = without_tests(&code_only(
        "use crate::{db::sql::TableName, stats};\n\
         // crate::app::run\n\
         let s = \"crate::cli::Cli\";\n\
         crate::say!(\"x\");\n\
         use super::super::oltp::X;\n\
         #[cfg(test)]\nmod tests { use crate::config::RunPlan; }\n",
    ));
    let found: Vec<Vec<String>> = paths(&code).into_iter().map(|(_, p)| p).collect();
    let names: Vec<String> = found.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        names,
        [
            "crate::db::sql::TableName",
            "crate::stats",
            "crate::output",
            "super::super::oltp::X"
        ],
    );
    let from = vec![
        "workload".to_string(),
        "ycsb".to_string(),
        "load".to_string(),
    ];
    assert_eq!(
        resolve(&from, &found[3], false),
        Some(vec!["workload".into(), "oltp".into(), "X".into()])
    );
}

/// The folders and files whose functions must stay short: orchestration,
/// the run plan, the runner and the reports, where a long function is a
/// sign of two ideas in one place (issue 23).
const SHORT_FUNCTIONS: &[&str] = &["app", "config", "runner", "report"];

/// The longest function allowed there, in lines from `fn` to its `}`.
const MAX_FUNCTION_LINES: usize = 120;

/// Each function of a piece of code: its name, first line and length.
fn functions(code: &str) -> Vec<(String, usize, usize)> {
    let b = code.as_bytes();
    let is_ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut found = Vec::new();
    let mut i = 0;
    while let Some(at) = code[i..].find("fn ") {
        let start = i + at;
        i = start + 3;
        if start > 0 && is_ident(b[start - 1]) {
            continue;
        }
        let name: String = code[i..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            continue;
        }
        // The body starts at the first `{` before any `;` (a declaration
        // without a body ends at `;`).
        let mut k = i;
        let mut paren = 0i32;
        while k < b.len() {
            match b[k] {
                b'(' | b'[' => paren += 1,
                b')' | b']' => paren -= 1,
                b'{' if paren == 0 => break,
                b';' if paren == 0 => break,
                _ => {}
            }
            k += 1;
        }
        if k >= b.len() || b[k] != b'{' {
            continue;
        }
        let end = closing_brace(b, k);
        let first = code[..start].matches('\n').count() + 1;
        let lines = code[start..end.min(b.len())].matches('\n').count() + 1;
        found.push((name, first, lines));
    }
    found
}

#[test]
fn no_long_functions_in_orchestration_plan_runner_and_reports() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut long = Vec::new();
    let mut seen = 0;
    for file in files {
        let module = module_of(&file);
        if !SHORT_FUNCTIONS.contains(&module[0].as_str()) {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("read source");
        let code = without_tests(&code_only(&text));
        for (name, line, lines) in functions(&code) {
            seen += 1;
            if lines > MAX_FUNCTION_LINES {
                let path = file
                    .strip_prefix(src())
                    .unwrap_or(&file)
                    .display()
                    .to_string();
                long.push(format!("{path}:{line}: fn {name} is {lines} lines"));
            }
        }
    }
    assert!(
        seen > 50,
        "found only {seen} functions: is the reader broken?"
    );
    assert!(
        long.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines (split them by idea):\n{}",
        long.join("\n")
    );
}

#[test]
fn the_function_reader_measures_bodies() {
    let code = "fn a() {\n    x;\n}\ntrait T { fn b(&self); }\nfn c(v: [u8; 2]) -> u8 {\n    if y { z }\n    w\n}\n";
    let found = functions(code);
    assert_eq!(found, [("a".to_string(), 1, 3), ("c".to_string(), 5, 4)]);
}

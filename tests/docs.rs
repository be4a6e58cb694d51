//! The documents hold together: every relative link of README.md,
//! CONTRIBUTING.md, CHANGELOG.md, docs/*.md and bench/RESULTS.md names a file that
//! exists and, with `#anchor`, a heading that exists there (as GitHub makes
//! anchors); the README stays a guide one reads in minutes (under 300
//! lines); every document under docs/ is listed by the README. That their
//! commands run is scripts/docs-commands.sh's part (run by scripts/test.sh).

use std::collections::HashSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn documents() -> Vec<PathBuf> {
    let r = root();
    let mut docs = vec![
        r.join("README.md"),
        r.join("CONTRIBUTING.md"),
        r.join("CHANGELOG.md"),
        r.join("bench/RESULTS.md"),
    ];
    let mut pages: Vec<PathBuf> = std::fs::read_dir(r.join("docs"))
        .expect("docs/ exists")
        .map(|e| e.expect("a readable entry of docs/").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    docs.extend(pages);
    docs
}

/// The lines outside fenced code blocks.
fn prose(text: &str) -> Vec<&str> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push(line);
        }
    }
    out
}

/// GitHub's anchor of a heading: lower case, letters, digits, `-` and `_`
/// kept, spaces made `-`, everything else dropped; a repeated one gets
/// `-1`, `-2`, ...
fn anchors(text: &str) -> HashSet<String> {
    let mut seen = HashSet::new();
    for line in prose(text) {
        let Some(rest) = line.strip_prefix('#') else {
            continue;
        };
        let title = rest.trim_start_matches('#');
        if !title.starts_with(' ') {
            continue;
        }
        let mut slug = String::new();
        for c in title.trim().chars() {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                slug.extend(c.to_lowercase());
            } else if c == ' ' {
                slug.push('-');
            }
        }
        let mut candidate = slug.clone();
        let mut n = 0;
        while seen.contains(&candidate) {
            n += 1;
            candidate = format!("{slug}-{n}");
        }
        seen.insert(candidate);
    }
    seen
}

/// The targets of the Markdown links `[text](target)` in the prose.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose(text) {
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else { break };
            let target = &after[..end];
            if !target.contains(' ') {
                out.push(target.to_string());
            }
            rest = &after[end..];
        }
    }
    out
}

fn check_link(doc: &Path, target: &str) -> Option<String> {
    if target.starts_with("http://")
        || target.starts_with("https://")
        || target.starts_with("mailto:")
    {
        return None;
    }
    let (path, anchor) = match target.split_once('#') {
        Some((p, a)) => (p, Some(a)),
        None => (target, None),
    };
    let file = if path.is_empty() {
        doc.to_path_buf()
    } else {
        doc.parent().expect("a document has a folder").join(path)
    };
    if !file.exists() {
        return Some(format!("{target}: no file {}", file.display()));
    }
    if let Some(anchor) = anchor
        && file.extension().is_some_and(|e| e == "md")
    {
        let text = std::fs::read_to_string(&file).expect("a readable document");
        if !anchors(&text).contains(anchor) {
            return Some(format!(
                "{target}: no heading with anchor #{anchor} in {}",
                file.display()
            ));
        }
    }
    None
}

#[test]
fn every_relative_link_and_anchor_of_the_documents_resolves() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).expect("a readable document");
        for target in links(&text) {
            checked += 1;
            if let Some(why) = check_link(&doc, &target) {
                broken.push(format!("{}: {why}", doc.display()));
            }
        }
    }
    assert!(
        checked > 20,
        "only {checked} links found: is the link parser broken?"
    );
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_readme_is_a_short_guide_that_lists_every_page_of_docs() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let lines = readme.lines().count();
    assert!(
        lines < 300,
        "README.md has {lines} lines; the reference belongs in docs/"
    );
    for doc in documents() {
        let rel = doc.strip_prefix(root()).expect("under the root");
        if rel.starts_with("docs") {
            let name = rel.to_string_lossy().replace('\\', "/");
            assert!(
                readme.contains(&format!("({name})")),
                "README.md does not link {name}"
            );
        }
    }
}

#[test]
fn the_anchor_rules_follow_github() {
    let a = anchors(
        "# JSON report (`--json FILE`)\n## Roles, poolers, several nodes\n## Roles, poolers, several nodes\n```\n# not a heading\n```\n",
    );
    assert!(a.contains("json-report---json-file"), "{a:?}");
    assert!(a.contains("roles-poolers-several-nodes"));
    assert!(a.contains("roles-poolers-several-nodes-1"));
    assert!(!a.contains("not-a-heading"));
    assert_eq!(
        links("see [a](b.md#c) and [d](https://e) `x`"),
        vec!["b.md#c", "https://e"]
    );
}

//! The command line a record keeps, with passwords taken out.
//!
//! A report page shows the command that repeats its run; the surest such
//! command is the one that was given, workload flags included, which no
//! set of recorded settings rebuilds completely. A connection string may
//! carry a password (`password=…` or `postgres://user:secret@…`), which
//! must never reach a report file, so each connection string is rewritten
//! without it before the record sees the command line.

/// `args` (the program's name first) with the password of every
/// connection string taken out.
pub fn without_passwords(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut next_is_url = false;
    for a in args {
        let kept = if next_is_url {
            next_is_url = false;
            conn_without_password(a)
        } else if a == "-u" || a == "--url" {
            next_is_url = true;
            a.clone()
        } else if let Some(v) = a.strip_prefix("--url=") {
            format!("--url={}", conn_without_password(v))
        } else if let Some(v) = a
            .strip_prefix("-u")
            .filter(|v| !v.is_empty() && !a.starts_with("--"))
        {
            format!("-u{}", conn_without_password(v))
        } else if a.contains("://") || a.to_ascii_lowercase().contains("password") {
            conn_without_password(a)
        } else {
            a.clone()
        };
        out.push(kept);
    }
    out
}

/// One connection string without its password: a URI loses the secret of
/// its user part and a `password` parameter; a key=value string loses its
/// `password` pair. What cannot be read as either is withheld whole.
fn conn_without_password(s: &str) -> String {
    let lower = s.to_ascii_lowercase();
    if lower.starts_with("postgres://") || lower.starts_with("postgresql://") {
        return uri_without_password(s);
    }
    if !lower.contains("password") {
        return s.to_string();
    }
    match pairs(s) {
        Some(pairs) => pairs
            .into_iter()
            .filter(|(k, _)| !k.eq_ignore_ascii_case("password"))
            .map(|(_, text)| text)
            .collect::<Vec<_>>()
            .join(" "),
        None => "(a connection string with a password, withheld)".to_string(),
    }
}

fn uri_without_password(s: &str) -> String {
    let Some(scheme_end) = s.find("://") else {
        return s.to_string();
    };
    let (scheme, rest) = s.split_at(scheme_end + 3);
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rfind('@') {
        Some(at) => {
            let (user_info, hosts) = authority.split_at(at);
            let user = user_info.split(':').next().unwrap_or("");
            format!("{user}{hosts}")
        }
        None => authority.to_string(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let kept: Vec<&str> = query
                .split('&')
                .filter(|p| {
                    !p.split('=')
                        .next()
                        .is_some_and(|k| k.eq_ignore_ascii_case("password"))
                })
                .collect();
            if kept.is_empty() {
                path.to_string()
            } else {
                format!("{path}?{}", kept.join("&"))
            }
        }
        None => tail.to_string(),
    };
    format!("{scheme}{authority}{tail}")
}

/// The pairs of a libpq key=value string, each with its text as written
/// (`key=value`, quotes kept), or None when it is not one.
fn pairs(s: &str) -> Option<Vec<(String, String)>> {
    let b: Vec<char> = s.chars().collect();
    let mut i = 0;
    let mut out = Vec::new();
    loop {
        while i < b.len() && b[i].is_whitespace() {
            i += 1;
        }
        if i == b.len() {
            return Some(out);
        }
        let start = i;
        while i < b.len() && b[i] != '=' && !b[i].is_whitespace() {
            i += 1;
        }
        let key: String = b[start..i].iter().collect();
        while i < b.len() && b[i].is_whitespace() {
            i += 1;
        }
        if key.is_empty() || i == b.len() || b[i] != '=' {
            return None;
        }
        i += 1;
        while i < b.len() && b[i].is_whitespace() {
            i += 1;
        }
        let value_start = i;
        if i < b.len() && b[i] == '\'' {
            i += 1;
            loop {
                match b.get(i) {
                    None => return None,
                    Some('\\') => i += 2,
                    Some('\'') => {
                        i += 1;
                        break;
                    }
                    Some(_) => i += 1,
                }
            }
        } else {
            while i < b.len() && !b[i].is_whitespace() {
                if b[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
        }
        let value: String = b[value_start..i.min(b.len())].iter().collect();
        out.push((key.clone(), format!("{key}={value}")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strs(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn passwords_leave_every_form_of_connection_string() {
        let given = strs(&[
            "ysql-bench",
            "-u",
            "host=db1 password='se cret' user=app",
            "--url=postgres://app:s3cret@db2:5433/bench?sslmode=require&password=x",
            "-uhost=db3 password=p",
            "-o",
            "select",
            "--warehouses",
            "4",
        ]);
        let kept = without_passwords(&given);
        let joined = kept.join(" ");
        assert!(
            !joined.contains("secret") && !joined.contains("s3cret"),
            "{joined}"
        );
        assert!(!joined.contains("password"), "{joined}");
        assert_eq!(kept[2], "host=db1 user=app");
        assert_eq!(
            kept[3],
            "--url=postgres://app@db2:5433/bench?sslmode=require"
        );
        assert_eq!(kept[4], "-uhost=db3");
        assert_eq!(&kept[5..], &given[5..]);
    }

    #[test]
    fn a_string_that_cannot_be_read_is_withheld_not_kept() {
        let kept = without_passwords(&strs(&["ysql-bench", "-u", "host=db password='open"]));
        assert!(!kept[2].contains("open"), "{kept:?}");
    }
}

//! The password file: `~/.pgpass`, or the file PGPASSFILE (or `passfile=`
//! in the connection string) names.
//!
//! A password on the command line is seen by every user of the machine
//! (`ps`) and stays in the shell's history; psql users keep theirs in this
//! file, and a Kubernetes Secret can be mounted as one. The rules are
//! libpq's, so that one file serves psql, pgbench and ysql-bench alike:
//! lines `hostname:port:database:username:password`; the first line that
//! matches wins; a field that is `*` matches anything; a backslash takes
//! the next character as it is (`\:`, `\\`); the password ends at the next
//! colon that is not escaped; a line that starts with `#` is a comment. A
//! file that the group or others may access at all, or that is no plain
//! file, is ignored with libpq's warning, so that a password stays its
//! owner's.
//!
//! The file is read once, when the run is planned, and looked up per host
//! of a host list ([`PassFile::lookup`] with [`host_key`]): a password
//! written for one host is never sent to another. libpq reads it again at
//! each connection; a run is short enough for that not to matter.

use std::fmt;
use std::io::ErrorKind;
use std::net::IpAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use tokio_postgres::config::Host;

/// The directory libpq (as Debian builds it) connects to when no host is
/// given, which the password file knows as `localhost`.
pub const DEFAULT_SOCKET_DIR: &str = "/var/run/postgresql";

/// A password file as read when the run was planned.
#[derive(Clone)]
pub struct PassFile {
    path: PathBuf,
    state: State,
}

#[derive(Clone)]
enum State {
    Lines(Vec<Line>),
    /// Not there: libpq says nothing, and neither do we until a server
    /// asks for a password.
    Absent,
    /// Ignored, and why (libpq's warning says it).
    Ignored(String),
    /// There, but it could not be read.
    Unreadable(String),
}

/// One line that can match: four fields (None is `*`) and the password.
#[derive(Clone)]
struct Line {
    fields: [Option<Vec<u8>>; 4],
    password: Vec<u8>,
}

/// Never the passwords: only where the file is and what came of reading it.
impl fmt::Debug for PassFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Lines(l) => format!("{} lines", l.len()),
            State::Absent => "absent".to_string(),
            State::Ignored(why) | State::Unreadable(why) => why.clone(),
        };
        write!(f, "PassFile({}: {state})", self.path.display())
    }
}

impl PassFile {
    /// Reads `path` by libpq's rules: a missing file is no error, an
    /// insecure one is ignored (see [`PassFile::warning`]).
    pub fn read(path: PathBuf) -> PassFile {
        let shown = path.display().to_string();
        let state = match std::fs::metadata(&path) {
            Err(e) if e.kind() == ErrorKind::NotFound => State::Absent,
            Err(e) => State::Unreadable(format!("cannot read password file \"{shown}\": {e}")),
            Ok(m) if !m.is_file() => State::Ignored("is not a plain file".to_string()),
            Ok(m) if m.permissions().mode() & 0o077 != 0 => State::Ignored(format!(
                "has group or world access; permissions should be u=rw (0600) or less (chmod 0600 {shown})"
            )),
            Ok(_) => match std::fs::read(&path) {
                Ok(bytes) => State::Lines(parse(&bytes)),
                Err(e) => State::Unreadable(format!("cannot read password file \"{shown}\": {e}")),
            },
        };
        PassFile { path, state }
    }

    /// A file of `text`, as if read from `path`: for tests.
    pub fn from_text(path: &str, text: &str) -> PassFile {
        PassFile {
            path: PathBuf::from(path),
            state: State::Lines(parse(text.as_bytes())),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What to say before the run: the file is there and ignored.
    pub fn warning(&self) -> Option<String> {
        match &self.state {
            State::Ignored(why) => Some(format!(
                "warning: password file \"{}\" {why}; it is ignored",
                self.path.display()
            )),
            _ => None,
        }
    }

    /// Why the file gave no password, for the error of a server that asks
    /// for one: `key` is the host and port that were looked up.
    pub fn why_none(&self, key: &str) -> String {
        let shown = self.path.display();
        match &self.state {
            State::Lines(_) => format!(
                "no line of password file \"{shown}\" matches {key} with this database and user"
            ),
            State::Absent => format!("password file \"{shown}\" does not exist"),
            State::Ignored(why) => format!("password file \"{shown}\" is ignored: it {why}"),
            State::Unreadable(why) => why.clone(),
        }
    }

    /// The password of the first line that matches, as libpq finds it. A
    /// database or user that is empty never matches (libpq's rule).
    pub fn lookup(&self, host: &str, port: u16, dbname: &str, user: &str) -> Option<&[u8]> {
        let State::Lines(lines) = &self.state else {
            return None;
        };
        if dbname.is_empty() || user.is_empty() {
            return None;
        }
        let port = port.to_string();
        let wanted = [host, port.as_str(), dbname, user];
        lines
            .iter()
            .find(|l| {
                l.fields
                    .iter()
                    .zip(wanted)
                    .all(|(f, w)| f.as_deref().is_none_or(|f| f == w.as_bytes()))
            })
            .map(|l| l.password.as_slice())
    }
}

/// The host name a host of a list is looked up by: the name as written;
/// without one (hostaddr only), the address; the default socket directory
/// and no host at all are `localhost` (libpq's rule).
pub fn host_key(host: Option<&Host>, hostaddr: Option<IpAddr>) -> String {
    match (host, hostaddr) {
        (Some(Host::Tcp(name)), _) if !name.is_empty() => name.clone(),
        (Some(Host::Unix(dir)), _) if dir != Path::new(DEFAULT_SOCKET_DIR) => {
            dir.display().to_string()
        }
        (Some(Host::Unix(_)), _) => "localhost".to_string(),
        (_, Some(addr)) => addr.to_string(),
        _ => "localhost".to_string(),
    }
}

/// The lines of a file that can match, in order.
fn parse(bytes: &[u8]) -> Vec<Line> {
    bytes
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .filter(|l| !l.is_empty() && l[0] != b'#')
        .filter_map(parse_line)
        .collect()
}

/// One line: four fields that each end at a colon that is not escaped,
/// then the password, up to the next such colon. A line of fewer fields
/// matches nothing.
fn parse_line(line: &[u8]) -> Option<Line> {
    let mut fields: [Option<Vec<u8>>; 4] = Default::default();
    let mut i = 0;
    for field in &mut fields {
        if line.get(i..i + 2) == Some(b"*:") {
            i += 2;
            continue;
        }
        let (value, end) = unescape_to_colon(&line[i..]);
        // The field must end at a colon, not at the end of the line.
        if end >= line.len() - i {
            return None;
        }
        *field = Some(value);
        i += end + 1;
    }
    let (password, _) = unescape_to_colon(&line[i..]);
    Some(Line { fields, password })
}

/// The bytes of `s` up to its first colon that is not escaped, with the
/// escapes taken off, and where that colon is (`s.len()` if none).
fn unescape_to_colon(s: &[u8]) -> (Vec<u8>, usize) {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b':' => return (out, i),
            b'\\' if i + 1 < s.len() => {
                out.push(s[i + 1]);
                i += 2;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    (out, s.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pw<'a>(f: &'a PassFile, host: &str, port: u16, db: &str, user: &str) -> Option<&'a str> {
        f.lookup(host, port, db, user)
            .map(|p| std::str::from_utf8(p).unwrap())
    }

    #[test]
    fn the_first_matching_line_wins_and_a_star_matches_anything() {
        let f = PassFile::from_text(
            "/x",
            "# hostname:port:database:username:password\n\
             db1:5433:bench:alice:one\n\
             db1:*:*:alice:two\n\
             *:5433:*:*:three\r\n\
             *:*:*:*:four\n",
        );
        assert_eq!(pw(&f, "db1", 5433, "bench", "alice"), Some("one"));
        assert_eq!(pw(&f, "db1", 5432, "bench", "alice"), Some("two"));
        assert_eq!(pw(&f, "db2", 5433, "bench", "bob"), Some("three"));
        assert_eq!(pw(&f, "db2", 5432, "x", "bob"), Some("four"));
        // libpq never looks up an empty database or user.
        assert_eq!(pw(&f, "db2", 5432, "", "bob"), None);
    }

    #[test]
    fn a_backslash_escapes_colons_and_backslashes_and_the_password_ends_at_a_colon() {
        let f = PassFile::from_text(
            "/x",
            "h\\:1:5432:d:u:p\\:a\\\\ss\n\
             h\\*:5432:d:u:literal-star\n\
             h2:5432:d:u:before:after\n\
             h3:5432:d:u:\n\
             h4:5432:d:u\n\
             h5:5432:d:u:trailing\\\n",
        );
        assert_eq!(pw(&f, "h:1", 5432, "d", "u"), Some("p:a\\ss"));
        // An escaped star is a star, not the wildcard.
        assert_eq!(pw(&f, "h*", 5432, "d", "u"), Some("literal-star"));
        assert_eq!(pw(&f, "hx", 5432, "d", "u"), None);
        assert_eq!(pw(&f, "h2", 5432, "d", "u"), Some("before"));
        assert_eq!(pw(&f, "h3", 5432, "d", "u"), Some(""));
        // Four fields and no password: the line matches nothing.
        assert_eq!(pw(&f, "h4", 5432, "d", "u"), None);
        assert_eq!(pw(&f, "h5", 5432, "d", "u"), Some("trailing\\"));
    }

    #[test]
    fn hosts_are_looked_up_by_name_or_address_and_the_socket_directory_is_localhost() {
        let tcp = Host::Tcp("db1".into());
        assert_eq!(host_key(Some(&tcp), None), "db1");
        let ip: IpAddr = "10.0.0.7".parse().unwrap();
        assert_eq!(host_key(Some(&tcp), Some(ip)), "db1");
        assert_eq!(host_key(None, Some(ip)), "10.0.0.7");
        let default_dir = Host::Unix(PathBuf::from(DEFAULT_SOCKET_DIR));
        assert_eq!(host_key(Some(&default_dir), None), "localhost");
        let other_dir = Host::Unix(PathBuf::from("/tmp/pg"));
        assert_eq!(host_key(Some(&other_dir), None), "/tmp/pg");
        assert_eq!(host_key(None, None), "localhost");
    }

    #[test]
    fn a_file_others_may_read_is_ignored_with_a_warning_and_a_missing_one_is_not_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("pgpass");
        std::fs::write(&p, "*:*:*:*:secret-x\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
        let f = PassFile::read(p.clone());
        assert_eq!(pw(&f, "h", 1, "d", "u"), Some("secret-x"));
        assert!(f.warning().is_none());
        assert!(!format!("{f:?}").contains("secret-x"), "{f:?}");
        for mode in [0o640, 0o604, 0o610] {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
            let f = PassFile::read(p.clone());
            assert_eq!(pw(&f, "h", 1, "d", "u"), None, "{mode:o}");
            let w = f.warning().unwrap();
            assert!(w.contains("group or world access"), "{w}");
            assert!(f.why_none("h:1").contains("ignored"));
        }
        let f = PassFile::read(dir.path().to_path_buf());
        assert!(f.warning().unwrap().contains("not a plain file"));
        let f = PassFile::read(dir.path().join("none"));
        assert!(f.warning().is_none());
        assert!(f.why_none("h:1").contains("does not exist"));
    }
}

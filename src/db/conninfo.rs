//! The connection string, as libpq reads it: the keys taken out before
//! tokio-postgres parses the rest (the TLS keys, `passfile`), and the host
//! list of a parsed configuration (one port or one per host, repeated
//! `-u` joined, a configuration copied without its hosts, ports or
//! password, since tokio-postgres's `Config` cannot unset them).
//!
//! Parsing only: nothing here connects. [`super::connect`] resolves the
//! target with it, [`super::endpoint`] makes one configuration per host.

use std::net::IpAddr;

use tokio_postgres::Config;
use tokio_postgres::config::Host;

use crate::error::{Error, Result};

/// Takes the keys that `take` says out of a libpq key=value string or a
/// postgres:// URI (its query parameters): the rest of the string,
/// unchanged otherwise, and the pairs taken, in order, values unquoted.
pub fn take_params(url: &str, take: &dyn Fn(&str) -> bool) -> Result<(String, Found), String> {
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        take_from_uri(url, take)
    } else {
        take_from_key_values(url, take)
    }
}

/// Key and value pairs of a connection string.
pub type Found = Vec<(String, String)>;

/// libpq's key=value grammar: `key = value` pairs separated by white
/// space; a value is single-quoted (with `\'` and `\\`) or runs to the next
/// white space (backslash escapes there too). Spans of the keys taken are
/// cut.
fn take_from_key_values(s: &str, take: &dyn Fn(&str) -> bool) -> Result<(String, Found), String> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut keep = String::new();
    let mut found = Vec::new();
    let skip_ws = |i: &mut usize| {
        while *i < b.len() && b[*i].is_ascii_whitespace() {
            *i += 1;
        }
    };
    loop {
        skip_ws(&mut i);
        if i >= b.len() {
            break;
        }
        let start = i;
        while i < b.len() && b[i] != b'=' && !b[i].is_ascii_whitespace() {
            i += 1;
        }
        let key = &s[start..i];
        skip_ws(&mut i);
        if i >= b.len() || b[i] != b'=' {
            return Err(format!("'{key}' has no value (write key=value)"));
        }
        i += 1;
        skip_ws(&mut i);
        let mut value = Vec::new();
        if i < b.len() && b[i] == b'\'' {
            i += 1;
            loop {
                match b.get(i) {
                    None => return Err(format!("the quoted value of {key} is not closed")),
                    Some(b'\'') => {
                        i += 1;
                        break;
                    }
                    Some(b'\\') if i + 1 < b.len() => {
                        value.push(b[i + 1]);
                        i += 2;
                    }
                    Some(c) => {
                        value.push(*c);
                        i += 1;
                    }
                }
            }
        } else {
            while i < b.len() && !b[i].is_ascii_whitespace() {
                if b[i] == b'\\' && i + 1 < b.len() {
                    i += 1;
                }
                value.push(b[i]);
                i += 1;
            }
        }
        if take(key) {
            found.push((
                key.to_string(),
                String::from_utf8_lossy(&value).into_owned(),
            ));
        } else {
            if !keep.is_empty() {
                keep.push(' ');
            }
            keep.push_str(&s[start..i]);
        }
    }
    Ok((keep, found))
}

fn take_from_uri(s: &str, take: &dyn Fn(&str) -> bool) -> Result<(String, Found), String> {
    let Some((base, query)) = s.split_once('?') else {
        return Ok((s.to_string(), Vec::new()));
    };
    let mut keep = Vec::new();
    let mut found = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let key = percent_decode(k)?;
        if take(&key) {
            found.push((key, percent_decode(v)?));
        } else {
            keep.push(pair);
        }
    }
    let rest = if keep.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", keep.join("&"))
    };
    Ok((rest, found))
}

fn percent_decode(s: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("'{s}' has a bad %-escape"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("'{s}' is not UTF-8 once decoded"))
}

/// The port of host `i` by libpq's rule: one port for all hosts, or one
/// port per host; 5432 when none is given.
pub(super) fn port_of(config: &Config, i: usize) -> u16 {
    let ports = config.get_ports();
    ports
        .get(i)
        .or_else(|| ports.first())
        .copied()
        .unwrap_or(5432)
}

/// Checks that a host list is well formed: one port, or one per host.
pub fn check_hosts(config: &Config, source: &str) -> Result<()> {
    let hosts = config.get_hosts().len().max(config.get_hostaddrs().len());
    let ports = config.get_ports().len();
    if ports > 1 && ports != hosts {
        return Err(Error::usage(format!(
            "{source} gives {hosts} hosts and {ports} ports: give one port for all hosts, or one port per host (host=a,b port=5433,5434)"
        )));
    }
    if !config.get_hostaddrs().is_empty()
        && !config.get_hosts().is_empty()
        && config.get_hosts().len() != config.get_hostaddrs().len()
    {
        return Err(Error::usage(format!(
            "{source} gives {} hosts and {} hostaddrs: give one hostaddr per host",
            config.get_hosts().len(),
            config.get_hostaddrs().len()
        )));
    }
    Ok(())
}

pub(super) fn add_host(c: &mut Config, host: Option<&Host>, hostaddr: Option<IpAddr>, port: u16) {
    add_host_only(c, host, hostaddr);
    c.port(port);
}

/// [`add_host`] without a port.
fn add_host_only(c: &mut Config, host: Option<&Host>, hostaddr: Option<IpAddr>) {
    match host {
        Some(Host::Tcp(h)) => {
            c.host(h);
        }
        Some(Host::Unix(p)) => {
            c.host_path(p);
        }
        None => {}
    }
    if let Some(a) = hostaddr {
        c.hostaddr(a);
    }
}

/// `c` without its ports (tokio-postgres's Config cannot unset them).
pub fn without_ports(c: &Config) -> Config {
    let mut fresh = settings_of(c);
    let n = c.get_hosts().len().max(c.get_hostaddrs().len());
    for i in 0..n {
        let hostaddr = c.get_hostaddrs().get(i).copied();
        add_host_only(&mut fresh, c.get_hosts().get(i), hostaddr);
    }
    fresh
}

/// `c` without its password (tokio-postgres's Config cannot unset one).
pub fn without_password(c: &Config) -> Config {
    let mut fresh = settings_without_password(c);
    let n = c.get_hosts().len().max(c.get_hostaddrs().len());
    for i in 0..n {
        let hostaddr = c.get_hostaddrs().get(i).copied();
        add_host(&mut fresh, c.get_hosts().get(i), hostaddr, port_of(c, i));
    }
    fresh
}

/// Joins the configurations of repeated `-u` into one host list. They must
/// agree on everything but hosts and ports, so that one run means one
/// user on one database.
pub fn merge(configs: &[Config]) -> Result<Config> {
    let Some(first) = configs.first() else {
        return Err(Error::usage("no connection given"));
    };
    if configs.len() == 1 {
        return Ok(first.clone());
    }
    let same = |c: &Config| {
        c.get_user() == first.get_user()
            && c.get_dbname() == first.get_dbname()
            && c.get_password() == first.get_password()
    };
    if configs
        .iter()
        .any(|c| c.get_hosts().is_empty() && c.get_hostaddrs().is_empty())
    {
        return Err(Error::usage(
            "repeated -u: each one must name its host (host=...), since together they are the host list",
        ));
    }
    if !configs.iter().all(same) {
        return Err(Error::usage(
            "repeated -u must name the same user, password and database; only host and port may differ",
        ));
    }
    let with_addr = configs
        .iter()
        .filter(|c| !c.get_hostaddrs().is_empty())
        .count();
    if with_addr != 0 && with_addr != configs.len() {
        return Err(Error::usage(
            "repeated -u: give hostaddr in all of them or in none",
        ));
    }
    let mut merged = settings_of(first);
    for c in configs {
        let n = c.get_hosts().len().max(c.get_hostaddrs().len());
        for i in 0..n {
            let hostaddr = c.get_hostaddrs().get(i).copied();
            add_host(&mut merged, c.get_hosts().get(i), hostaddr, port_of(c, i));
        }
    }
    Ok(merged)
}

/// A configuration with `c`'s settings and no host or port yet
/// (tokio-postgres's Config cannot clear its host and port lists).
pub(super) fn settings_of(c: &Config) -> Config {
    let mut fresh = settings_without_password(c);
    if let Some(p) = c.get_password() {
        fresh.password(p);
    }
    fresh
}

/// [`settings_of`] but the password.
fn settings_without_password(c: &Config) -> Config {
    let mut fresh = Config::new();
    if let Some(u) = c.get_user() {
        fresh.user(u);
    }
    if let Some(d) = c.get_dbname() {
        fresh.dbname(d);
    }
    if let Some(o) = c.get_options() {
        fresh.options(o);
    }
    if let Some(a) = c.get_application_name() {
        fresh.application_name(a);
    }
    fresh.ssl_mode(c.get_ssl_mode());
    fresh.ssl_negotiation(c.get_ssl_negotiation());
    if let Some(t) = c.get_connect_timeout() {
        fresh.connect_timeout(*t);
    }
    if let Some(t) = c.get_tcp_user_timeout() {
        fresh.tcp_user_timeout(*t);
    }
    fresh.keepalives(c.get_keepalives());
    fresh.keepalives_idle(c.get_keepalives_idle());
    if let Some(i) = c.get_keepalives_interval() {
        fresh.keepalives_interval(i);
    }
    if let Some(r) = c.get_keepalives_retries() {
        fresh.keepalives_retries(r);
    }
    fresh.target_session_attrs(c.get_target_session_attrs());
    fresh.channel_binding(c.get_channel_binding());
    fresh
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::connect::parse_url;

    #[test]
    fn repeated_urls_merge_into_one_host_list() {
        let a = parse_url("host=a port=5433 user=u dbname=d", "--url").unwrap();
        let b = parse_url("host=b,c port=5434 user=u dbname=d", "--url").unwrap();
        let m = merge(&[a.clone(), b]).unwrap();
        assert_eq!(m.get_hosts().len(), 3);
        assert_eq!(m.get_ports(), &[5433, 5434, 5434]);
        assert_eq!(m.get_user(), Some("u"));
        let other_user = parse_url("host=b user=v dbname=d", "--url").unwrap();
        let err = merge(&[a.clone(), other_user]).unwrap_err();
        assert!(err.to_string().contains("only host and port"));
        let no_host = parse_url("user=u dbname=d", "--url").unwrap();
        let err = merge(&[a, no_host]).unwrap_err();
        assert!(err.to_string().contains("name its host"));
    }

    #[test]
    fn ports_must_match_the_hosts() {
        let c = parse_url("host=a,b,c port=1,2", "--url").unwrap();
        assert!(
            check_hosts(&c, "--url")
                .unwrap_err()
                .to_string()
                .contains("3 hosts and 2 ports")
        );
        assert!(check_hosts(&parse_url("host=a,b port=1", "--url").unwrap(), "--url").is_ok());
    }
}

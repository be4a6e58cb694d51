//! Where to connect, and the pool that hands each worker its connection.
//!
//! The target is resolved the way psql users expect: `-u` (a libpq
//! key=value string or a postgres:// URI), else `$YSQLBENCH_URL`, else the
//! PG* environment variables with psql's defaults. `-u` may be given more
//! than once: the hosts join into one list ([`super::nodes`] says how
//! connections are spread over them). The TLS keys (`sslmode`,
//! `sslrootcert`, PGSSLMODE, PGSSLROOTCERT) are read here and handled by
//! [`super::tls`]. The password is kept inside `tokio_postgres::Config`
//! only; [`describe`] is what is shown.

use std::str::FromStr;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio_postgres::config::Host;
use tokio_postgres::{Config, NoTls};

use super::nodes;
use super::tls::{Tls, TlsSettings};
use crate::error::{Error, Result};

/// The environment variable that may hold the connection string.
pub const URL_ENV: &str = "YSQLBENCH_URL";
/// How long to wait for a connection to be established.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the run connects.
#[derive(Clone, Debug)]
pub enum ConnTarget {
    /// A server given by URL or environment.
    Server(Box<Config>),
    /// A throwaway server started for this run; its address is known only
    /// once it runs.
    Sandbox,
}

impl ConnTarget {
    /// Resolves `-u` (each of them), then `$YSQLBENCH_URL`, then the PG*
    /// variables. Returns the TLS settings found along the way.
    pub fn resolve(urls: &[String]) -> Result<(Self, TlsSettings)> {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let (config, mut tls) = if urls.is_empty() {
            match env(URL_ENV) {
                Some(u) => parse_url_tls(&u, URL_ENV)?,
                None => (from_pg_env(env)?, TlsSettings::default()),
            }
        } else {
            let mut configs = Vec::with_capacity(urls.len());
            let mut tls = TlsSettings::default();
            for u in urls {
                let (c, t) = parse_url_tls(u, "--url")?;
                nodes::check_hosts(&c, "--url")?;
                configs.push(c);
                // One run, one TLS setting: a -u may leave it out, but two
                // that say it must agree.
                let clash = |a: bool, b: bool, same: bool| a && b && !same;
                let paths = |a: &Option<std::path::PathBuf>, b: &Option<std::path::PathBuf>| {
                    clash(a.is_some(), b.is_some(), a == b)
                };
                if clash(tls.mode.is_some(), t.mode.is_some(), tls.mode == t.mode)
                    || paths(&tls.root_cert, &t.root_cert)
                    || paths(&tls.client_cert, &t.client_cert)
                    || paths(&tls.client_key, &t.client_key)
                {
                    return Err(Error::usage(
                        "repeated -u give different sslmode, sslrootcert, sslcert or sslkey: give them once, or the same in each",
                    ));
                }
                tls.mode = tls.mode.or(t.mode);
                tls.root_cert = tls.root_cert.or(t.root_cert);
                tls.client_cert = tls.client_cert.or(t.client_cert);
                tls.client_key = tls.client_key.or(t.client_key);
            }
            (nodes::merge(&configs)?, tls)
        };
        nodes::check_hosts(&config, "the connection")?;
        // As libpq: the environment fills what the string did not say.
        if tls.mode.is_none()
            && let Some(m) = env("PGSSLMODE")
        {
            tls.mode = Some(super::tls::SslMode::parse(&m).ok_or_else(|| {
                Error::usage(format!(
                    "PGSSLMODE={m} is not a mode: use disable, prefer, require, verify-ca or verify-full"
                ))
            })?);
        }
        if tls.root_cert.is_none() {
            tls.root_cert = env("PGSSLROOTCERT").map(std::path::PathBuf::from);
        }
        if tls.client_cert.is_none() {
            tls.client_cert = env("PGSSLCERT").map(std::path::PathBuf::from);
        }
        if tls.client_key.is_none() {
            tls.client_key = env("PGSSLKEY").map(std::path::PathBuf::from);
        }
        let config = complete(config, env, os_user_name)?;
        Ok((ConnTarget::Server(Box::new(config)), tls))
    }
}

/// Parses a libpq key=value string or a postgres:// URI.
pub fn parse_url(url: &str, source: &str) -> Result<Config> {
    parse_url_tls(url, source).map(|(c, _)| c)
}

/// Parses a libpq key=value string or a postgres:// URI, and the TLS keys
/// that tokio-postgres does not know.
pub fn parse_url_tls(url: &str, source: &str) -> Result<(Config, TlsSettings)> {
    let (rest, tls) = super::tls::take_tls_params(url)
        .map_err(|why| Error::usage(format!("{source} is not a valid connection string: {why}")))?;
    let config = Config::from_str(&rest).map_err(|e| {
        // tokio-postgres keeps what is wrong ("invalid value for option
        // `port`", "unknown option `bogus`") in the error's source.
        let why = std::error::Error::source(&e).map_or_else(|| e.to_string(), |c| c.to_string());
        Error::usage(format!(
            "{source} is not a valid connection string ({why}): write key=value pairs such as 'host=127.0.0.1 port=5433 user=yugabyte dbname=yugabyte', or a URI such as postgres://yugabyte@127.0.0.1:5433/yugabyte"
        ))
    })?;
    Ok((config, tls))
}

/// Builds a configuration from the PG* variables, as psql does.
fn from_pg_env(env: impl Fn(&str) -> Option<String>) -> Result<Config> {
    let mut c = Config::new();
    if let Some(hosts) = env("PGHOST") {
        for h in hosts.split(',') {
            c.host(h.trim());
        }
    }
    if let Some(ports) = env("PGPORT") {
        for p in ports.split(',') {
            // As libpq: a port that is no number is an error, never
            // silently the default port (which may be another server).
            match p.trim().parse::<u16>() {
                Ok(n) if n > 0 => {
                    c.port(n);
                }
                _ => {
                    return Err(Error::usage(format!(
                        "PGPORT='{ports}' is not a port number (1-65535, or a comma-separated list): fix or unset PGPORT"
                    )));
                }
            }
        }
    }
    if let Some(u) = env("PGUSER") {
        c.user(&u);
    }
    if let Some(p) = env("PGPASSWORD") {
        c.password(p);
    }
    if let Some(d) = env("PGDATABASE") {
        c.dbname(&d);
    }
    Ok(c)
}

/// Fills what libpq would default: host (the local socket directory when it
/// exists, else localhost), port 5432, user from PGUSER or else the OS
/// login name of the effective user (`os_user`; never `$USER`, which libpq
/// does not read either, and never a guess), application name, connect
/// timeout. The database, when not given, is the user's name, as the
/// server itself defaults it.
fn complete(
    mut c: Config,
    env: impl Fn(&str) -> Option<String>,
    os_user: impl Fn() -> Option<String>,
) -> Result<Config> {
    if c.get_hosts().is_empty() {
        let socket_dir = "/var/run/postgresql";
        if std::path::Path::new(socket_dir).is_dir() {
            c.host(socket_dir);
        } else {
            c.host("localhost");
        }
    }
    if c.get_user().is_none() {
        let Some(user) = env("PGUSER").or_else(os_user) else {
            return Err(Error::usage(
                "no user to connect as: the OS has no name for this process's user id; give one with PGUSER=NAME or -u 'user=NAME'",
            ));
        };
        c.user(&user);
    }
    if c.get_dbname().is_none() {
        let db = env("PGDATABASE")
            .or_else(|| c.get_user().map(str::to_string))
            .unwrap_or_default();
        c.dbname(&db);
    }
    if c.get_application_name().is_none() {
        c.application_name("ysql-bench");
    }
    if c.get_connect_timeout().is_none() {
        c.connect_timeout(DEFAULT_CONNECT_TIMEOUT);
    }
    Ok(c)
}

/// The login name of the process's effective user, from the password
/// database, as libpq finds it (`getpwuid(geteuid())`); None when the
/// user id has no entry (a container run with an arbitrary uid).
pub fn os_user_name() -> Option<String> {
    let mut buf = vec![0 as libc::c_char; 4096];
    loop {
        // SAFETY: passwd is plain data; getpwuid_r fills it and points its
        // strings into `buf`, which outlives every use of them below.
        let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: every pointer is valid for the length given.
        let rc = unsafe {
            libc::getpwuid_r(
                libc::geteuid(),
                &mut pwd,
                buf.as_mut_ptr(),
                buf.len(),
                &mut found,
            )
        };
        if rc == libc::ERANGE && buf.len() < (1 << 20) {
            buf.resize(buf.len() * 4, 0);
            continue;
        }
        if rc != 0 || found.is_null() || pwd.pw_name.is_null() {
            return None;
        }
        // SAFETY: pw_name is a NUL-terminated string inside `buf`.
        let name = unsafe { std::ffi::CStr::from_ptr(pwd.pw_name) };
        let name = name.to_string_lossy().into_owned();
        return (!name.is_empty()).then_some(name);
    }
}

/// The target as shown to users: hosts, ports, user and database, never
/// the password.
pub fn describe(c: &Config) -> String {
    let hosts: Vec<String> = c
        .get_hosts()
        .iter()
        .map(|h| match h {
            Host::Tcp(name) => name.clone(),
            Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    let ports: Vec<String> = c.get_ports().iter().map(|p| p.to_string()).collect();
    let ports = if ports.is_empty() {
        "5432".to_string()
    } else {
        ports.join(",")
    };
    format!(
        "host={} port={} user={} dbname={}",
        hosts.join(","),
        ports,
        c.get_user().unwrap_or("?"),
        c.get_dbname().or(c.get_user()).unwrap_or("?")
    )
}

/// How long connecting to `config` may take: `--connect-timeout`, the
/// URL's `connect_timeout`, or the default.
pub fn connect_timeout(config: &Config) -> Duration {
    config
        .get_connect_timeout()
        .copied()
        .unwrap_or(DEFAULT_CONNECT_TIMEOUT)
}

/// A pool of up to `size` connections. Connections are made when first
/// taken, so an oversized pool costs nothing.
pub fn pool(config: &Config, size: usize, tls: &Tls) -> Result<Pool> {
    let mc = ManagerConfig {
        recycling_method: RecyclingMethod::Fast,
    };
    let manager = match tls {
        Tls::Plain => Manager::from_config(config.clone(), NoTls, mc),
        Tls::Rustls(m) => Manager::from_config(config.clone(), m.clone(), mc),
    };
    // The connect timeout covers the TCP connect; the pool's create timeout
    // also bounds the start-up handshake, so that a server that accepts but
    // never answers cannot hold a worker forever.
    let connect = connect_timeout(config);
    Pool::builder(manager)
        .max_size(size.max(1))
        .runtime(Runtime::Tokio1)
        .create_timeout(Some(connect))
        .recycle_timeout(Some(connect))
        .build()
        .map_err(|e| Error::run(format!("cannot build the connection pool: {e}")))
}

/// Takes a connection from the pool, with a message that names the target.
pub async fn get(pool: &Pool, config: &Config) -> Result<deadpool_postgres::Object> {
    pool.get().await.map_err(|e| match e {
        deadpool_postgres::PoolError::Backend(pg) => {
            Error::db(format!("cannot connect to {}", describe(config)), pg)
        }
        deadpool_postgres::PoolError::Timeout(_) => Error::run(format!(
            "cannot connect to {}: no answer within {} s (--connect-timeout)",
            describe(config),
            connect_timeout(config).as_secs_f64()
        )),
        other => Error::run(format!("cannot connect to {}: {other}", describe(config))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_value_and_uri_both_parse() {
        let kv = parse_url("host=h1 port=5433 user=yugabyte dbname=db", "--url").unwrap();
        assert_eq!(kv.get_ports(), &[5433]);
        let uri = parse_url("postgres://yugabyte:secret@h1:5433/db", "--url").unwrap();
        assert_eq!(uri.get_user(), Some("yugabyte"));
        assert_eq!(uri.get_password(), Some(&b"secret"[..]));
        let err = parse_url("host=h1 port=notaport", "--url").unwrap_err();
        assert!(err.to_string().contains("not a valid connection string"));
    }

    #[test]
    fn pg_variables_fill_the_config_and_defaults_complete_it() {
        let vars = [
            ("PGHOST", "db1,db2"),
            ("PGPORT", "5433,5434"),
            ("PGUSER", "alice"),
            ("PGPASSWORD", "pw"),
        ];
        let env = |k: &str| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        };
        let c = complete(from_pg_env(env).unwrap(), env, || Some("os".into())).unwrap();
        assert_eq!(c.get_hosts().len(), 2);
        assert_eq!(c.get_ports(), &[5433, 5434]);
        assert_eq!(c.get_user(), Some("alice"));
        assert_eq!(c.get_dbname(), Some("alice"));
        assert_eq!(c.get_application_name(), Some("ysql-bench"));
        assert_eq!(c.get_connect_timeout(), Some(&DEFAULT_CONNECT_TIMEOUT));
    }

    /// Issue 17: with $USER unset (root in a container) the tool logged in
    /// as `postgres`, a superuser, where psql would have used the OS
    /// login name and failed. libpq reads PGUSER, then the password
    /// database, and never $USER.
    #[test]
    fn without_pguser_the_user_is_the_os_login_name_never_postgres() {
        let no_env = |_: &str| None;
        let c = complete(Config::new(), no_env, || Some("carol".into())).unwrap();
        assert_eq!(c.get_user(), Some("carol"));
        assert_eq!(c.get_dbname(), Some("carol"), "the database is the user's");
        // $USER is not libpq's business.
        let user_set = |k: &str| (k == "USER").then(|| "mallory".to_string());
        let c = complete(Config::new(), user_set, || Some("carol".into())).unwrap();
        assert_eq!(c.get_user(), Some("carol"));
        // No name at all is said, not replaced by a superuser's.
        let e = complete(Config::new(), no_env, || None).unwrap_err();
        assert_eq!(e.exit_code(), crate::error::EXIT_USAGE);
        assert!(e.to_string().contains("PGUSER"), "{e}");
        // A user in the URL wins; PGDATABASE names the database.
        let env = |k: &str| (k == "PGDATABASE").then(|| "bench".to_string());
        let given = parse_url("host=h user=dave", "--url").unwrap();
        let c = complete(given, env, || Some("carol".into())).unwrap();
        assert_eq!(
            (c.get_user(), c.get_dbname()),
            (Some("dave"), Some("bench"))
        );
    }

    #[test]
    fn the_os_user_name_is_the_effective_users_login() {
        let id = std::process::Command::new("id")
            .arg("-un")
            .output()
            .unwrap();
        let expected = String::from_utf8_lossy(&id.stdout).trim().to_string();
        assert_eq!(os_user_name(), Some(expected));
    }

    #[test]
    fn a_bad_connection_string_says_what_is_wrong() {
        let e = parse_url("host=a port=abc", "--url")
            .unwrap_err()
            .to_string();
        assert!(e.contains("port"), "{e}");
        let e = parse_url("host=a bogus=1", "--url")
            .unwrap_err()
            .to_string();
        assert!(e.contains("bogus"), "{e}");
    }

    /// libpq refuses a port that is no number; ignoring it would connect
    /// to the default port, perhaps another server.
    #[test]
    fn a_pgport_that_is_no_port_is_a_usage_error() {
        for bad in ["abc", "0", "70000", "5433,x"] {
            let env = |k: &str| (k == "PGPORT").then(|| bad.to_string());
            let e = from_pg_env(env).unwrap_err();
            assert_eq!(e.exit_code(), crate::error::EXIT_USAGE, "{bad}");
            assert!(e.to_string().contains("PGPORT"), "{e}");
        }
    }

    #[test]
    fn repeated_urls_must_agree_on_tls() {
        let urls = |a: &str, b: &str| vec![a.to_string(), b.to_string()];
        let (_, tls) = ConnTarget::resolve(&urls("host=a sslmode=require", "host=b")).unwrap();
        assert_eq!(tls.mode, Some(super::super::tls::SslMode::Require));
        let e = ConnTarget::resolve(&urls("host=a sslmode=require", "host=b sslmode=disable"))
            .unwrap_err();
        assert!(e.to_string().contains("different sslmode"), "{e}");
    }

    #[test]
    fn the_description_never_shows_the_password() {
        let c = parse_url("postgres://bob:s3cr3t@h1:5433/db", "--url").unwrap();
        let d = describe(&c);
        assert!(!d.contains("s3cr3t"));
        assert_eq!(d, "host=h1 port=5433 user=bob dbname=db");
    }
}

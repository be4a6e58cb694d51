//! Where to connect, and the pool that hands each worker its connection.
//!
//! The target is resolved the way psql users expect, because they bring
//! their psql habits and their environment: `-u` (a libpq key=value
//! string or a postgres:// URI), else `$YSQLBENCH_URL`; whatever the
//! string leaves out comes from the libpq variables ([`LIBPQ_VARS`]:
//! PGHOST, PGPORT, PGPASSWORD, ...), then from libpq's defaults. `-u` may
//! be given more than once: the hosts join into one list ([`super::nodes`]
//! says how connections are spread over them). The TLS keys (`sslmode`,
//! `sslrootcert`, ...) are read here and handled by [`super::tls`].
//!
//! A password given in the string or PGPASSWORD serves every host. When
//! there is none, the password file ([`super::passfile`]: `passfile=`,
//! PGPASSFILE, else `~/.pgpass`) is read once and kept beside the
//! configuration ([`Server`]), because libpq looks a password up per host
//! and port of a host list, and tokio-postgres's `Config` holds one
//! password for all of them. The passwords are kept inside the
//! configurations only; [`describe`] is what is shown.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use deadpool_postgres::{ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio_postgres::Config;
use tokio_postgres::config::{Host, TargetSessionAttrs};

use super::conninfo;
use super::endpoint::{Endpoint, FailoverConnect};
use super::passfile::{DEFAULT_SOCKET_DIR, PassFile};
use super::tls::{Tls, TlsSettings};
use crate::error::{Error, Result};

/// The environment variable that may hold the connection string.
pub const URL_ENV: &str = "YSQLBENCH_URL";
/// How long to wait for a connection to be established.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The libpq variables read, each for what the connection string leaves
/// out (as libpq reads them).
pub const LIBPQ_VARS: [&str; 15] = [
    "PGHOST",
    "PGHOSTADDR",
    "PGPORT",
    "PGUSER",
    "PGPASSWORD",
    "PGPASSFILE",
    "PGDATABASE",
    "PGOPTIONS",
    "PGAPPNAME",
    "PGCONNECT_TIMEOUT",
    "PGTARGETSESSIONATTRS",
    "PGSSLMODE",
    "PGSSLROOTCERT",
    "PGSSLCERT",
    "PGSSLKEY",
];

/// The connection-string key of the password file, which tokio-postgres
/// does not know: taken out with the TLS keys before it parses the rest.
const PASSFILE_KEY: &str = "passfile";

/// A key read here, in libpq's unit (see [`tcp_user_timeout`]).
const TCP_USER_TIMEOUT_KEY: &str = "tcp_user_timeout";

/// Where the run connects.
#[derive(Clone, Debug)]
pub enum ConnTarget {
    /// A server given by URL or environment.
    Server(Box<Server>),
    /// A throwaway server started for this run; its address is known only
    /// once it runs.
    Sandbox,
}

/// A server given by URL or environment, resolved as libpq resolves it.
#[derive(Clone, Debug)]
pub struct Server {
    /// The whole host list and every setting, with the password when one
    /// was given (in the string or PGPASSWORD): it then serves every host.
    pub config: Config,
    /// The password file, when no password was given: each host's
    /// password is looked up in it ([`Endpoint`] does).
    pub passfile: Option<PassFile>,
}

impl Server {
    /// What to say before the run (a password file that is ignored).
    pub fn warnings(&self) -> Vec<String> {
        self.passfile.iter().filter_map(PassFile::warning).collect()
    }
}

/// A connection string taken apart: what tokio-postgres parsed, the keys
/// it does not know, and which keys the string gave (some settings cannot
/// tell "not given" from their default).
struct Parsed {
    config: Config,
    tls: TlsSettings,
    passfile: Option<PathBuf>,
    keys: Vec<String>,
}

impl ConnTarget {
    /// Resolves `-u` (each of them), else `$YSQLBENCH_URL`; then the
    /// libpq variables and defaults for what they leave out. Returns the
    /// TLS settings found along the way.
    pub fn resolve(urls: &[String]) -> Result<(Self, TlsSettings)> {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        resolve_in(urls, &env, os_user_name, os_home_dir)
    }
}

/// [`ConnTarget::resolve`] with the environment, the OS user's name and
/// home directory given (so that tests need not change the process's).
fn resolve_in(
    urls: &[String],
    env: &dyn Fn(&str) -> Option<String>,
    os_user: impl Fn() -> Option<String>,
    home: impl Fn() -> Option<PathBuf>,
) -> Result<(ConnTarget, TlsSettings)> {
    let (config, mut tls, passfile) = if urls.is_empty() {
        let p = match env(URL_ENV) {
            Some(u) => parse_target(&u, URL_ENV)?,
            None => Parsed {
                config: Config::new(),
                tls: TlsSettings::default(),
                passfile: None,
                keys: Vec::new(),
            },
        };
        let mut c = p.config;
        fill_from_env(&mut c, &p.keys, env)?;
        (c, p.tls, p.passfile)
    } else {
        let mut configs = Vec::with_capacity(urls.len());
        let mut tls = TlsSettings::default();
        let mut passfile: Option<PathBuf> = None;
        for u in urls {
            let p = parse_target(u, "--url")?;
            let t = p.tls;
            conninfo::check_hosts(&p.config, "--url")?;
            let mut c = p.config;
            fill_from_env(&mut c, &p.keys, env)?;
            configs.push(c);
            // One run, one TLS setting and one password file: a -u may
            // leave them out, but two that say them must agree.
            let clash = |a: bool, b: bool, same: bool| a && b && !same;
            let paths =
                |a: &Option<PathBuf>, b: &Option<PathBuf>| clash(a.is_some(), b.is_some(), a == b);
            if clash(tls.mode.is_some(), t.mode.is_some(), tls.mode == t.mode)
                || paths(&tls.root_cert, &t.root_cert)
                || paths(&tls.client_cert, &t.client_cert)
                || paths(&tls.client_key, &t.client_key)
            {
                return Err(Error::usage(
                    "repeated -u give different sslmode, sslrootcert, sslcert or sslkey: give them once, or the same in each",
                ));
            }
            if paths(&passfile, &p.passfile) {
                return Err(Error::usage(
                    "repeated -u give different passfile: give it once, or the same in each",
                ));
            }
            tls.mode = tls.mode.or(t.mode);
            tls.root_cert = tls.root_cert.or(t.root_cert);
            tls.client_cert = tls.client_cert.or(t.client_cert);
            tls.client_key = tls.client_key.or(t.client_key);
            passfile = passfile.or(p.passfile);
        }
        (conninfo::merge(&configs)?, tls, passfile)
    };
    conninfo::check_hosts(&config, "the connection")?;
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
        tls.root_cert = env("PGSSLROOTCERT").map(PathBuf::from);
    }
    if tls.client_cert.is_none() {
        tls.client_cert = env("PGSSLCERT").map(PathBuf::from);
    }
    if tls.client_key.is_none() {
        tls.client_key = env("PGSSLKEY").map(PathBuf::from);
    }
    let config = complete(config, env, os_user)?;
    // No password given: libpq looks each host up in the password file
    // (`passfile=`, PGPASSFILE, else ~/.pgpass).
    let passfile = if config.get_password().is_some() {
        None
    } else {
        passfile
            .or_else(|| env("PGPASSFILE").map(PathBuf::from))
            .or_else(|| home().map(|h| h.join(".pgpass")))
            .map(PassFile::read)
    };
    Ok((
        ConnTarget::Server(Box::new(Server { config, passfile })),
        tls,
    ))
}

/// Parses a libpq key=value string or a postgres:// URI.
pub fn parse_url(url: &str, source: &str) -> Result<Config> {
    parse_url_tls(url, source).map(|(c, _)| c)
}

/// Parses a libpq key=value string or a postgres:// URI, and the TLS keys
/// that tokio-postgres does not know.
pub fn parse_url_tls(url: &str, source: &str) -> Result<(Config, TlsSettings)> {
    parse_target(url, source).map(|p| (p.config, p.tls))
}

fn parse_target(url: &str, source: &str) -> Result<Parsed> {
    let bad =
        |why: String| Error::usage(format!("{source} is not a valid connection string: {why}"));
    let own = |k: &str| {
        super::tls::TLS_KEYS.contains(&k) || k == PASSFILE_KEY || k == TCP_USER_TIMEOUT_KEY
    };
    let (rest, found) = conninfo::take_params(url, &own).map_err(bad)?;
    let user_timeout = tcp_user_timeout(&found).map_err(bad)?;
    let passfile = found
        .iter()
        .rev()
        .find(|(k, _)| k == PASSFILE_KEY)
        .map(|(_, v)| PathBuf::from(v))
        .filter(|p| !p.as_os_str().is_empty());
    let tls = super::tls::tls_settings(found).map_err(bad)?;
    let (_, given) = conninfo::take_params(&rest, &|_| true).map_err(bad)?;
    let mut config = Config::from_str(&rest).map_err(|e| {
        // tokio-postgres keeps what is wrong ("invalid value for option
        // `port`", "unknown option `bogus`") in the error's source.
        let why = std::error::Error::source(&e).map_or_else(|| e.to_string(), |c| c.to_string());
        Error::usage(format!(
            "{source} is not a valid connection string ({why}): write key=value pairs such as 'host=127.0.0.1 port=5433 user=yugabyte dbname=yugabyte', or a URI such as postgres://yugabyte@127.0.0.1:5433/yugabyte"
        ))
    })?;
    if let Some(t) = user_timeout {
        config.tcp_user_timeout(t);
    }
    // libpq takes an empty password for none (and looks further).
    let config = match config.get_password() {
        Some([]) => conninfo::without_password(&config),
        _ => config,
    };
    let keys: Vec<String> = given.into_iter().map(|(k, _)| k).collect();
    // tokio-postgres gives a URI's host without a port 5432, where libpq
    // would take PGPORT: a URI that names no port leaves it out.
    let config = if uri_names_no_port(&rest) && !keys.iter().any(|k| k == "port") {
        conninfo::without_ports(&config)
    } else {
        config
    };
    Ok(Parsed {
        config,
        tls,
        passfile,
        keys,
    })
}

/// `tcp_user_timeout` in milliseconds, as libpq reads it (0: the
/// system's default); tokio-postgres would read seconds, so the key is
/// taken out before it parses the rest.
fn tcp_user_timeout(found: &conninfo::Found) -> std::result::Result<Option<Duration>, String> {
    let Some((_, v)) = found.iter().rev().find(|(k, _)| k == TCP_USER_TIMEOUT_KEY) else {
        return Ok(None);
    };
    let ms: u64 = v
        .trim()
        .parse()
        .map_err(|_| format!("tcp_user_timeout={v} is not a number of milliseconds"))?;
    Ok((ms > 0).then(|| Duration::from_millis(ms)))
}

/// Whether `url` is a postgres:// URI whose hosts have no `:port`.
fn uri_names_no_port(url: &str) -> bool {
    let Some(rest) = url
        .strip_prefix("postgres://")
        .or_else(|| url.strip_prefix("postgresql://"))
    else {
        return false;
    };
    let authority = rest.split(['/', '?']).next().unwrap_or_default();
    let hosts = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    !hosts.split(',').any(|h| match h.strip_prefix('[') {
        // [IPv6]:port
        Some(v6) => v6.split_once(']').is_some_and(|(_, p)| p.starts_with(':')),
        None => h.contains(':'),
    })
}

/// Builds a configuration from the PG* variables alone, as psql does.
#[cfg(test)]
fn from_pg_env(env: impl Fn(&str) -> Option<String>) -> Result<Config> {
    let mut c = Config::new();
    fill_from_env(&mut c, &[], &env)?;
    if let Some(u) = env("PGUSER") {
        c.user(&u);
    }
    if let Some(d) = env("PGDATABASE") {
        c.dbname(&d);
    }
    Ok(c)
}

/// Fills what the connection string left out from the libpq variables,
/// as libpq does: each variable only where its setting was not given
/// (`keys`: the keys the string gave). PGUSER and PGDATABASE are applied
/// by [`complete`], once the host lists are merged; the TLS variables
/// and PGPASSFILE by [`resolve_in`].
fn fill_from_env(
    c: &mut Config,
    keys: &[String],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<()> {
    let given = |k: &str| keys.iter().any(|g| g == k);
    if c.get_hosts().is_empty()
        && let Some(hosts) = env("PGHOST")
    {
        for h in hosts.split(',').map(str::trim) {
            // libpq: an empty entry is the default host.
            c.host(if h.is_empty() { default_host() } else { h });
        }
    }
    if c.get_hostaddrs().is_empty()
        && let Some(addrs) = env("PGHOSTADDR")
    {
        for a in addrs.split(',') {
            let addr = a.trim().parse().map_err(|_| {
                Error::usage(format!(
                    "PGHOSTADDR='{addrs}' is not an IP address (or a comma-separated list of them): fix or unset PGHOSTADDR"
                ))
            })?;
            c.hostaddr(addr);
        }
    }
    if c.get_ports().is_empty()
        && let Some(ports) = env("PGPORT")
    {
        for p in ports.split(',').map(str::trim) {
            // As libpq: a port that is no number is an error, never
            // silently the default port (which may be another server); an
            // empty entry is the default port.
            match p.parse::<u16>() {
                Ok(n) if n > 0 => {
                    c.port(n);
                }
                _ if p.is_empty() => {
                    c.port(5432);
                }
                _ => {
                    return Err(Error::usage(format!(
                        "PGPORT='{ports}' is not a port number (1-65535, or a comma-separated list): fix or unset PGPORT"
                    )));
                }
            }
        }
        // A string without a host gets one default host.
        let hosts = c.get_hosts().len().max(c.get_hostaddrs().len()).max(1);
        let n = c.get_ports().len();
        if n > 1 && n != hosts {
            return Err(Error::usage(format!(
                "PGPORT='{ports}' gives {n} ports for {hosts} host(s): give one port for all hosts, or one per host"
            )));
        }
    }
    if c.get_password().is_none()
        && let Some(p) = env("PGPASSWORD")
    {
        c.password(p);
    }
    if c.get_options().is_none()
        && let Some(o) = env("PGOPTIONS")
    {
        c.options(&o);
    }
    if c.get_application_name().is_none()
        && let Some(a) = env("PGAPPNAME")
    {
        c.application_name(&a);
    }
    if !given("connect_timeout")
        && let Some(t) = env("PGCONNECT_TIMEOUT")
    {
        // As the key in the string: whole seconds; 0 or less is the
        // default here (libpq would wait for ever).
        let secs: i64 = t.trim().parse().map_err(|_| {
            Error::usage(format!(
                "PGCONNECT_TIMEOUT='{t}' is not a whole number of seconds: fix or unset PGCONNECT_TIMEOUT"
            ))
        })?;
        if secs > 0 {
            c.connect_timeout(Duration::from_secs(secs.unsigned_abs()));
        }
    }
    if !given("target_session_attrs")
        && let Some(t) = env("PGTARGETSESSIONATTRS")
    {
        c.target_session_attrs(match t.trim() {
            "any" => TargetSessionAttrs::Any,
            "read-write" => TargetSessionAttrs::ReadWrite,
            "read-only" => TargetSessionAttrs::ReadOnly,
            _ => {
                return Err(Error::usage(format!(
                    "PGTARGETSESSIONATTRS={t} is not supported: use any, read-write or read-only, or unset it"
                )));
            }
        });
    }
    Ok(())
}

/// libpq's host when none is given: the socket directory when it exists,
/// else localhost.
fn default_host() -> &'static str {
    if std::path::Path::new(DEFAULT_SOCKET_DIR).is_dir() {
        DEFAULT_SOCKET_DIR
    } else {
        "localhost"
    }
}

/// Fills what libpq would default: host (the local socket directory when it
/// exists, else localhost), port 5432, user from PGUSER or else the OS
/// login name of the effective user (`os_user`; never `$USER`, which libpq
/// does not read either, and never a guess), application name, connect
/// timeout. The database, when not given, is PGDATABASE or else the
/// user's name, as the server itself defaults it.
fn complete(
    mut c: Config,
    env: impl Fn(&str) -> Option<String>,
    os_user: impl Fn() -> Option<String>,
) -> Result<Config> {
    if c.get_hosts().is_empty() && c.get_hostaddrs().is_empty() {
        c.host(default_host());
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
    own_passwd_entry(|pwd| pwd.pw_name)
}

/// The home directory libpq finds `.pgpass` in: `$HOME`, else the
/// effective user's from the password database.
pub fn os_home_dir() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .or_else(|| own_passwd_entry(|pwd| pwd.pw_dir).map(PathBuf::from))
}

/// One string field (`field`) of the effective user's entry in the
/// password database; None when there is no entry or the field is empty.
fn own_passwd_entry(field: impl Fn(&libc::passwd) -> *mut libc::c_char) -> Option<String> {
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
        let ptr = field(&pwd);
        if rc != 0 || found.is_null() || ptr.is_null() {
            return None;
        }
        // SAFETY: the field is a NUL-terminated string inside `buf`.
        let value = unsafe { std::ffi::CStr::from_ptr(ptr) };
        let value = value.to_string_lossy().into_owned();
        return (!value.is_empty()).then_some(value);
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

/// A pool of up to `size` connections to `endpoint` (libpq's failover
/// over its hosts, each with its own password). Connections are made
/// when first taken, so an oversized pool costs nothing.
pub fn pool(endpoint: &Endpoint, size: usize, tls: &Tls) -> Result<Pool> {
    let mc = ManagerConfig {
        recycling_method: RecyclingMethod::Fast,
    };
    let manager = deadpool_postgres::Manager::from_connect(
        endpoint.config.clone(),
        FailoverConnect {
            hosts: endpoint.hosts.clone(),
            tls: tls.clone(),
        },
        mc,
    );
    // The connect timeout covers the TCP connect; the pool's create timeout
    // also bounds the start-up handshake, so that a server that accepts but
    // never answers cannot hold a worker forever.
    let connect = connect_timeout(&endpoint.config);
    Pool::builder(manager)
        .max_size(size.max(1))
        .runtime(Runtime::Tokio1)
        .create_timeout(Some(connect))
        .recycle_timeout(Some(connect))
        .build()
        .map_err(|e| Error::run(format!("cannot build the connection pool: {e}")))
}

/// Takes a connection from the pool of `endpoint`, with a message that
/// names the target (and, when the password is the trouble, where it
/// came from or could have).
pub async fn get(pool: &Pool, endpoint: &Endpoint) -> Result<deadpool_postgres::Object> {
    let target = describe(&endpoint.config);
    pool.get().await.map_err(|e| match e {
        deadpool_postgres::PoolError::Backend(pg) => endpoint.connect_error(&target, pg),
        deadpool_postgres::PoolError::Timeout(_) => Error::run(format!(
            "cannot connect to {target}: no answer within {} s (--connect-timeout)",
            connect_timeout(&endpoint.config).as_secs_f64()
        )),
        other => Error::run(format!("cannot connect to {target}: {other}")),
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

    /// libpq reads tcp_user_timeout in milliseconds, tokio-postgres in
    /// seconds: 9000 is 9 s, as psql would take it, not two and a half
    /// hours.
    #[test]
    fn tcp_user_timeout_is_in_milliseconds_as_libpq_reads_it() {
        let c = parse_url("host=h tcp_user_timeout=9000 keepalives_idle=30", "--url").unwrap();
        assert_eq!(c.get_tcp_user_timeout(), Some(&Duration::from_millis(9000)));
        assert_eq!(c.get_keepalives_idle(), Duration::from_secs(30));
        let c = parse_url("postgres://u@h/db?tcp_user_timeout=250", "--url").unwrap();
        assert_eq!(c.get_tcp_user_timeout(), Some(&Duration::from_millis(250)));
        let c = parse_url("host=h tcp_user_timeout=0", "--url").unwrap();
        assert_eq!(c.get_tcp_user_timeout(), None);
        let e = parse_url("host=h tcp_user_timeout=soon", "--url").unwrap_err();
        assert!(e.to_string().contains("milliseconds"), "{e}");
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

    /// `resolve_in` over `urls` with only `vars` set, the OS user `os`
    /// and the home directory `home`.
    fn resolve_with(
        urls: &[&str],
        vars: &[(&str, &str)],
        home: Option<&std::path::Path>,
    ) -> Result<Server> {
        let urls: Vec<String> = urls.iter().map(|u| u.to_string()).collect();
        let env = |k: &str| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        };
        let home = home.map(std::path::Path::to_path_buf);
        match resolve_in(&urls, &env, || Some("os".into()), || home.clone())?.0 {
            ConnTarget::Server(s) => Ok(*s),
            ConnTarget::Sandbox => unreachable!("resolve never starts a sandbox"),
        }
    }

    /// Issue 22: with -u the libpq variables were ignored (PGPASSWORD,
    /// PGPORT, ...). As in libpq they fill what the string leaves out,
    /// and only that.
    #[test]
    fn with_u_the_libpq_variables_fill_only_what_the_string_leaves_out() {
        let vars = [
            ("PGHOST", "elsewhere"),
            ("PGPORT", "5433"),
            ("PGUSER", "alice"),
            ("PGPASSWORD", "pw-env"),
            ("PGDATABASE", "bench"),
            ("PGAPPNAME", "my-app"),
            ("PGOPTIONS", "-c work_mem=8MB"),
            ("PGCONNECT_TIMEOUT", "7"),
            ("PGTARGETSESSIONATTRS", "read-write"),
        ];
        let s = resolve_with(&["host=h1"], &vars, None).unwrap();
        let c = &s.config;
        assert_eq!(c.get_hosts(), &[Host::Tcp("h1".into())]);
        assert_eq!(c.get_ports(), &[5433]);
        assert_eq!(c.get_user(), Some("alice"));
        assert_eq!(c.get_password(), Some(&b"pw-env"[..]));
        assert_eq!(c.get_dbname(), Some("bench"));
        assert_eq!(c.get_application_name(), Some("my-app"));
        assert_eq!(c.get_options(), Some("-c work_mem=8MB"));
        assert_eq!(c.get_connect_timeout(), Some(&Duration::from_secs(7)));
        assert_eq!(c.get_target_session_attrs(), TargetSessionAttrs::ReadWrite);
        // A password given means no password file.
        assert!(s.passfile.is_none());

        // What the string says wins, also where it says the default
        // (target_session_attrs=any) or what means the default here
        // (connect_timeout=0).
        let s = resolve_with(
            &["host=h1 port=6000 user=bob password=pw-url dbname=db application_name=a options=-cx=1 connect_timeout=0 target_session_attrs=any"],
            &vars,
            None,
        )
        .unwrap();
        let c = &s.config;
        assert_eq!(c.get_ports(), &[6000]);
        assert_eq!(c.get_user(), Some("bob"));
        assert_eq!(c.get_password(), Some(&b"pw-url"[..]));
        assert_eq!(c.get_dbname(), Some("db"));
        assert_eq!(c.get_application_name(), Some("a"));
        assert_eq!(c.get_options(), Some("-cx=1"));
        assert_eq!(c.get_connect_timeout(), Some(&DEFAULT_CONNECT_TIMEOUT));
        assert_eq!(c.get_target_session_attrs(), TargetSessionAttrs::Any);

        // A URI the same; and a string without a host takes PGHOST.
        let s = resolve_with(&["postgres://bob@h2/db"], &vars, None).unwrap();
        assert_eq!(s.config.get_ports(), &[5433]);
        let s = resolve_with(&["user=bob"], &vars, None).unwrap();
        assert_eq!(s.config.get_hosts(), &[Host::Tcp("elsewhere".into())]);

        // Each repeated -u gets PGPORT where it gives no port.
        let s = resolve_with(&["host=a", "host=b port=2"], &vars, None).unwrap();
        assert_eq!(s.config.get_ports(), &[5433, 2]);
    }

    #[test]
    fn bad_libpq_variables_are_usage_errors_that_name_them() {
        for (var, value) in [
            ("PGCONNECT_TIMEOUT", "10s"),
            ("PGTARGETSESSIONATTRS", "primary"),
            ("PGHOSTADDR", "not-an-ip"),
            ("PGPORT", "1,2,3"),
        ] {
            let e = resolve_with(&["host=a,b"], &[(var, value)], None).unwrap_err();
            assert_eq!(e.exit_code(), crate::error::EXIT_USAGE, "{var}");
            assert!(e.to_string().contains(var), "{e}");
        }
    }

    /// Without a password, the password file is `passfile=` in the
    /// string, else PGPASSFILE, else ~/.pgpass; an empty password is none
    /// (libpq's rule).
    #[test]
    fn the_password_file_is_passfile_then_pgpassfile_then_the_home_directorys() {
        let home = std::path::Path::new("/home/carol");
        let file = |urls: &[&str], vars: &[(&str, &str)]| {
            resolve_with(urls, vars, Some(home))
                .unwrap()
                .passfile
                .map(|f| f.path().to_path_buf())
        };
        let env = [("PGPASSFILE", "/etc/env-pgpass")];
        assert_eq!(
            file(&["host=a passfile=/etc/url-pgpass"], &env),
            Some("/etc/url-pgpass".into())
        );
        assert_eq!(
            file(&["postgres://u@a/db?passfile=%2Fetc%2Furi-pgpass"], &env),
            Some("/etc/uri-pgpass".into())
        );
        assert_eq!(file(&["host=a"], &env), Some("/etc/env-pgpass".into()));
        assert_eq!(file(&["host=a"], &[]), Some(home.join(".pgpass")));
        assert_eq!(
            file(&["host=a password=''"], &[]),
            Some(home.join(".pgpass"))
        );
        assert_eq!(file(&["host=a password=x"], &env), None);
        assert_eq!(file(&["host=a"], &[("PGPASSWORD", "x")]), None);
        let s = resolve_with(&["host=a password=''"], &[], Some(home)).unwrap();
        assert_eq!(s.config.get_password(), None, "an empty password is none");
        let e = resolve_with(&["host=a passfile=/x", "host=b passfile=/y"], &[], None).unwrap_err();
        assert!(e.to_string().contains("different passfile"), "{e}");
    }

    /// The -u help names every libpq variable that is read, so that a
    /// user can tell which ones apply.
    #[test]
    fn the_url_help_names_every_libpq_variable_read() {
        use clap::CommandFactory;
        let cmd = crate::cli::Cli::command();
        let url = cmd
            .get_arguments()
            .find(|a| a.get_id() == "url")
            .expect("-u is a flag");
        let help = url.get_long_help().expect("-u has a long help").to_string();
        for v in LIBPQ_VARS {
            assert!(help.contains(v), "{v} missing in: {help}");
        }
    }
}

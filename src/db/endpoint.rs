//! One place to connect to: one host, or a host list that the tool's own
//! failover goes through in order, each host with its own password.
//!
//! libpq looks a password up in the password file per host and port, and
//! tokio-postgres's `Config` has one password for the whole list. So an
//! [`Endpoint`] holds one configuration per host, each with the password
//! for that host, and makes its failover itself ([`connect_hosts`])
//! instead of leaving it to tokio-postgres; the pools connect through it
//! ([`FailoverConnect`]). Unlike libpq, a host that refuses the login is
//! passed over too. Its errors say where a password came from, or where
//! it was looked for.

use std::net::IpAddr;

use tokio_postgres::config::Host;
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, Config, NoTls};

use super::conninfo::{add_host, port_of, settings_of};
use super::passfile::{PassFile, host_key};
use super::tls::Tls;
use super::wire::WireError;
use crate::error::{Error, NO_PASSWORD, is_password_missing};

/// One place to connect to: one host, or a host list that libpq's
/// failover goes through in order.
#[derive(Clone, Debug)]
pub struct Endpoint {
    /// As shown in the summary: `host:port`, or the whole host list for a
    /// failover endpoint.
    pub label: String,
    /// The settings and the whole host list: what is shown, the timeouts.
    /// Connections are made with `hosts`, never with this one: for a host
    /// list it has no password from the password file, only one given
    /// for every host.
    pub config: Config,
    /// One configuration per host, in failover order, each with the
    /// password for that host.
    pub hosts: Vec<Config>,
    notes: PasswordNotes,
}

/// What a connection error adds about the password: where it came from
/// when the server refuses it, where it was looked for when missing.
#[derive(Clone, Debug, Default)]
struct PasswordNotes {
    refused: Option<String>,
    missing: Option<String>,
}

impl Endpoint {
    /// The whole configuration as one endpoint (failover over its hosts),
    /// each host with its password from `passfile` when the configuration
    /// has none.
    pub fn whole(config: &Config, passfile: Option<&PassFile>) -> Endpoint {
        let split = split_hosts(config, passfile);
        let labels: Vec<&str> = split.iter().map(|e| e.label.as_str()).collect();
        let label = if labels.len() > 1 {
            format!("{} (failover)", labels.join(","))
        } else {
            labels.join(",")
        };
        let hosts = split.iter().flat_map(|e| e.hosts.iter().cloned()).collect();
        Endpoint {
            label,
            config: config.clone(),
            hosts,
            notes: PasswordNotes::of(passfile, &split),
        }
    }

    /// The connection error of this endpoint: `target` is how the endpoint
    /// is named. A missing password says how to give one (and which file
    /// had none for which host); a password from the file that the server
    /// refuses says so.
    pub fn connect_error(&self, target: &str, e: tokio_postgres::Error) -> Error {
        if is_password_missing(&e) {
            return self.no_password(target);
        }
        match (&self.notes.refused, e.code()) {
            (Some(note), Some(&SqlState::INVALID_PASSWORD)) => {
                Error::db(format!("cannot connect to {target} ({note})"), e)
            }
            _ => Error::db(format!("cannot connect to {target}"), e),
        }
    }

    /// [`Endpoint::connect_error`] of the lean driver.
    pub fn wire_connect_error(&self, target: &str, e: WireError) -> Error {
        if matches!(e, WireError::NoPassword) {
            return self.no_password(target);
        }
        match (&self.notes.refused, e.code()) {
            (Some(note), Some(code)) if code == SqlState::INVALID_PASSWORD.code() => {
                Error::wire(format!("cannot connect to {target} ({note})"), e)
            }
            _ => Error::wire(format!("cannot connect to {target}"), e),
        }
    }

    fn no_password(&self, target: &str) -> Error {
        let note = self
            .notes
            .missing
            .as_ref()
            .map(|m| format!("; {m}"))
            .unwrap_or_default();
        Error::run(format!("cannot connect to {target}: {NO_PASSWORD}{note}"))
    }
}

impl PasswordNotes {
    /// The notes of endpoints `split` (one per host) made with `passfile`.
    fn of(passfile: Option<&PassFile>, split: &[Endpoint]) -> PasswordNotes {
        let Some(file) = passfile else {
            return PasswordNotes::default();
        };
        let refused = split
            .iter()
            .any(|e| e.notes.refused.is_some())
            .then(|| format!("password from password file \"{}\"", file.path().display()));
        let unmatched: Vec<&str> = split
            .iter()
            .filter(|e| e.notes.missing.is_some())
            .map(|e| e.label.as_str())
            .collect();
        let missing = (!unmatched.is_empty()).then(|| file.why_none(&unmatched.join(", ")));
        PasswordNotes { refused, missing }
    }
}

/// Connects to the first of `hosts` that lets us in, in order; the last
/// failure when none does. Unlike libpq, which goes past a host that
/// answers with an error only when it is starting up (57P03), any failure,
/// a refused login too, moves on to the next host.
pub async fn connect_hosts(
    hosts: &[Config],
    tls: &Tls,
) -> std::result::Result<(Client, ConnTask), tokio_postgres::Error> {
    let mut last = None;
    for config in hosts {
        match connect_one(config, tls).await {
            Ok(made) => return Ok(made),
            Err(e) => last = Some(e),
        }
    }
    match last {
        Some(e) => Err(e),
        // No host at all: tokio-postgres's own error says so.
        None => connect_one(&Config::new(), tls).await,
    }
}

async fn connect_one(
    config: &Config,
    tls: &Tls,
) -> std::result::Result<(Client, ConnTask), tokio_postgres::Error> {
    match tls {
        Tls::Plain => config
            .connect(NoTls)
            .await
            .map(|(c, conn)| (c, Box::pin(conn) as ConnTask)),
        Tls::Rustls { connect, .. } => config
            .connect(connect.clone())
            .await
            .map(|(c, conn)| (c, Box::pin(conn) as ConnTask)),
    }
}

/// The pools' way to connect: an endpoint's hosts in failover order, each
/// with its own password (see [`connect_hosts`]).
pub struct FailoverConnect {
    pub hosts: Vec<Config>,
    pub tls: Tls,
}

impl deadpool_postgres::Connect for FailoverConnect {
    fn connect(
        &self,
        _whole: &Config,
    ) -> std::pin::Pin<
        Box<
            dyn std::future::Future<
                    Output = std::result::Result<
                        (Client, tokio::task::JoinHandle<()>),
                        tokio_postgres::Error,
                    >,
                > + Send
                + '_,
        >,
    > {
        Box::pin(async move {
            let (client, conn) = connect_hosts(&self.hosts, &self.tls).await?;
            // The connection's end shows to its client (is_closed, the
            // next query's error); nothing else waits for it.
            let task = tokio::spawn(async move {
                let _ = conn.await;
            });
            Ok((client, task))
        })
    }
}

/// A copy of `base`'s settings (user, password, database, timeouts, TLS)
/// for one host only; without a password in `base`, the one `passfile`
/// has for this host, port, database and user. Also says whether the
/// password came from the file (`Some(true)`) or none was found there
/// (`Some(false)`).
fn for_one_host(
    base: &Config,
    host: Option<&Host>,
    hostaddr: Option<IpAddr>,
    port: u16,
    passfile: Option<&PassFile>,
) -> (Config, Option<bool>) {
    let mut c = settings_of(base);
    add_host(&mut c, host, hostaddr, port);
    let from_file = match passfile {
        Some(file) if base.get_password().is_none() => {
            let found = file.lookup(
                &host_key(host, hostaddr),
                port,
                base.get_dbname().unwrap_or_default(),
                base.get_user().unwrap_or_default(),
            );
            if let Some(pw) = found.filter(|p| !p.is_empty()) {
                c.password(pw);
                Some(true)
            } else {
                Some(false)
            }
        }
        _ => None,
    };
    (c, from_file)
}

/// The endpoint of one host.
fn one_host_endpoint(
    base: &Config,
    host: Option<&Host>,
    hostaddr: Option<IpAddr>,
    port: u16,
    passfile: Option<&PassFile>,
) -> Endpoint {
    let label = label_of(host, hostaddr, port);
    let (config, from_file) = for_one_host(base, host, hostaddr, port, passfile);
    let notes = match (passfile, from_file) {
        (Some(f), Some(true)) => PasswordNotes {
            refused: Some(format!(
                "password from password file \"{}\"",
                f.path().display()
            )),
            missing: None,
        },
        (Some(f), Some(false)) => PasswordNotes {
            refused: None,
            missing: Some(f.why_none(&label)),
        },
        _ => PasswordNotes::default(),
    };
    Endpoint {
        label,
        config: config.clone(),
        hosts: vec![config],
        notes,
    }
}

fn label_of(host: Option<&Host>, hostaddr: Option<IpAddr>, port: u16) -> String {
    let name = match (host, hostaddr) {
        (Some(Host::Tcp(h)), _) => h.clone(),
        (Some(Host::Unix(p)), _) => p.display().to_string(),
        (None, Some(a)) => a.to_string(),
        (None, None) => "?".to_string(),
    };
    format!("{name}:{port}")
}

/// A node of the cluster that `given` belongs to, at `host:port`, with
/// `given`'s settings. Without a password given, the node's is the
/// password file's line for it, else the one the given hosts got from the
/// file: the nodes of one cluster share their roles.
pub fn cluster_node(
    given: &Endpoint,
    host: String,
    port: u16,
    passfile: Option<&PassFile>,
) -> Endpoint {
    let cluster_password = given.hosts.iter().find_map(|c| c.get_password());
    let host = Host::Tcp(host);
    let mut e = one_host_endpoint(&given.config, Some(&host), None, port, passfile);
    if let (Some(c), Some(pw)) = (e.hosts.first_mut(), cluster_password)
        && c.get_password().is_none()
    {
        c.password(pw);
        e.config.password(pw);
        e.notes = given.notes.clone();
    }
    e
}

/// One endpoint per host of the configuration, each with the others'
/// settings and its own password (see [`Endpoint::whole`]).
pub fn split_hosts(config: &Config, passfile: Option<&PassFile>) -> Vec<Endpoint> {
    let n = config.get_hosts().len().max(config.get_hostaddrs().len());
    (0..n)
        .map(|i| {
            let host = config.get_hosts().get(i);
            let hostaddr = config.get_hostaddrs().get(i).copied();
            one_host_endpoint(config, host, hostaddr, port_of(config, i), passfile)
        })
        .collect()
}

/// A connection's own task (tokio-postgres' `Connection`): it reads and
/// writes the socket for its [`Client`], and must be polled for any query
/// of that client to progress.
pub type ConnTask = std::pin::Pin<
    Box<dyn std::future::Future<Output = std::result::Result<(), tokio_postgres::Error>> + Send>,
>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::connect::parse_url;
    use std::time::Duration;

    #[test]
    fn a_host_list_splits_into_one_endpoint_per_host() {
        let c = parse_url(
            "host=a,b,c port=5433,5434,5435 user=yugabyte password=pw dbname=db connect_timeout=3",
            "--url",
        )
        .unwrap();
        let e = split_hosts(&c, None);
        let labels: Vec<&str> = e.iter().map(|e| e.label.as_str()).collect();
        assert_eq!(labels, ["a:5433", "b:5434", "c:5435"]);
        assert_eq!(e[1].config.get_hosts(), &[Host::Tcp("b".into())]);
        assert_eq!(e[1].config.get_ports(), &[5434]);
        assert_eq!(e[1].config.get_user(), Some("yugabyte"));
        assert_eq!(e[1].config.get_password(), Some(&b"pw"[..]));
        assert_eq!(e[1].config.get_dbname(), Some("db"));
        assert_eq!(
            e[1].config.get_connect_timeout(),
            Some(&Duration::from_secs(3))
        );
        let one_port = parse_url("host=a,b port=5433", "--url").unwrap();
        let ports: Vec<u16> = split_hosts(&one_port, None)
            .iter()
            .map(|e| e.config.get_ports()[0])
            .collect();
        assert_eq!(ports, [5433, 5433]);
    }

    /// libpq looks each host of a list up in the password file: each gets
    /// its own line's password, and none the others'.
    #[test]
    fn each_host_gets_its_own_password_from_the_file() {
        let file = PassFile::from_text("/home/u/.pgpass", "a:5433:*:u:pw-a\nb:5434:*:u:pw-b\n");
        let c = parse_url("host=a,b,c port=5433,5434,5435 user=u dbname=d", "--url").unwrap();
        let pw = |e: &Config| {
            e.get_password()
                .map(|p| String::from_utf8_lossy(p).into_owned())
        };
        let split = split_hosts(&c, Some(&file));
        let got: Vec<Option<String>> = split.iter().map(|e| pw(&e.hosts[0])).collect();
        assert_eq!(got, [Some("pw-a".into()), Some("pw-b".into()), None]);
        let whole = Endpoint::whole(&c, Some(&file));
        assert_eq!(whole.label, "a:5433,b:5434,c:5435 (failover)");
        let got: Vec<Option<String>> = whole.hosts.iter().map(pw).collect();
        assert_eq!(got, [Some("pw-a".into()), Some("pw-b".into()), None]);
        assert_eq!(whole.hosts[2].get_ports(), &[5435]);
        assert!(
            whole.notes.missing.as_deref().unwrap().contains("c:5435"),
            "{:?}",
            whole.notes
        );
        // A password given serves every host; the file is not read.
        let given = parse_url(
            "host=a,b port=5433,5434 user=u password=pw dbname=d",
            "--url",
        )
        .unwrap();
        let whole = Endpoint::whole(&given, Some(&file));
        let got: Vec<Option<String>> = whole.hosts.iter().map(pw).collect();
        assert_eq!(got, [Some("pw".into()), Some("pw".into())]);
        assert!(whole.notes.refused.is_none() && whole.notes.missing.is_none());
    }
}

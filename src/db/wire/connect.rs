//! Making a lean connection: the socket (TCP or Unix-domain) with what the
//! connection string asks of it, TLS, the start-up message,
//! authentication, `target_session_attrs`, and the cancel request.
//!
//! Everything tokio-postgres does with a connection string is done here
//! too, so that the lean driver can carry every connection of a run's
//! data plane ([`supports`] refuses only what tokio-postgres refuses):
//!
//! - TLS on rustls, negotiated as libpq does: an SSLRequest, then the
//!   handshake if the server answers `S`; plain text if it answers `N`
//!   and the sslmode is prefer, an error if the mode requires TLS. With
//!   `sslnegotiation=direct` the handshake starts at once (PostgreSQL
//!   17). The rustls configuration is the one [`crate::db::tls`] builds
//!   for tokio-postgres, so both drivers check the server's certificate
//!   by the same rules; the server name verified is the connection's
//!   host name (its address when only `hostaddr` is given). As libpq,
//!   a Unix-domain socket is never encrypted, whatever the sslmode.
//! - SCRAM-SHA-256-PLUS with `tls-server-end-point` channel binding over
//!   TLS when the server offers it (`channel_binding=prefer`, the
//!   default), required by `channel_binding=require`, which fails without
//!   TLS before a password is sent.
//! - TCP keepalives (`keepalives`, `keepalives_idle`, `_interval`,
//!   `_retries`) and `tcp_user_timeout`, set with socket2 as
//!   tokio-postgres sets them; `connect_timeout` bounds each TCP connect.
//! - `target_session_attrs=read-write` (or `read-only`): after logging in,
//!   `SHOW transaction_read_only` decides whether the server will do, as
//!   tokio-postgres decides; one that will not is closed and the next
//!   host tried.
//!
//! The cost per query stays one write and one read: tokio-rustls encrypts
//! the Bind/Execute/Sync into one TLS record written at once, and a read
//! takes the answer's record in one `recvfrom`; the socket (`crate::rt::net`)
//! then knows it is drained and asks no more of it.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use crate::rt::net::{TcpStream, UnixStream};
use bytes::BytesMut;
use postgres_protocol::authentication::md5_hash;
use postgres_protocol::authentication::sasl::{
    ChannelBinding, SCRAM_SHA_256, SCRAM_SHA_256_PLUS, ScramSha256,
};
use postgres_protocol::message::frontend;
use rustls::ClientConfig;
use rustls_pki_types::ServerName;
use socket2::{SockRef, TcpKeepalive};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio_postgres::Config;
use tokio_postgres::config::{
    ChannelBinding as ChannelBindingSetting, Host, LoadBalanceHosts, SslMode, SslNegotiation,
    TargetSessionAttrs,
};
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use super::decode::{Body, ReadBuf, out_of_place, parse_error};
use super::{FIRST_WRITE, WireConn, WireError, encode_err};
use crate::db::tls::{ALPN_POSTGRESQL, Tls};

/// Whether the lean driver can connect as `config` says; the reason when
/// not. It refuses what tokio-postgres refuses before connecting (no
/// host, host and hostaddr lists or a port list of other lengths), and
/// nothing else.
pub fn supports(config: &Config) -> Result<(), &'static str> {
    let hosts = config.get_hosts().len();
    let addrs = config.get_hostaddrs().len();
    if hosts == 0 && addrs == 0 {
        return Err("no host is given");
    }
    if hosts > 0 && addrs > 0 && hosts != addrs {
        return Err("host and hostaddr list different numbers of servers");
    }
    let ports = config.get_ports().len();
    if ports > 1 && ports != hosts.max(addrs) {
        return Err("the port list is neither one port nor one per host");
    }
    Ok(())
}

/// Where the connection went, for a cancel request to the same server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Peer {
    Tcp(SocketAddr),
    Unix(PathBuf),
}

/// What it takes to cancel what a lean connection is running: where it
/// is, the backend key the server gave it, and the TLS it went over (the
/// key is a secret: it goes encrypted when the connection did).
#[derive(Clone, Debug)]
pub struct CancelKey {
    pub peer: Peer,
    pub process_id: i32,
    pub secret_key: i32,
    tls: Option<Secure>,
}

/// How a connection was encrypted: again for its cancel request.
#[derive(Clone, Debug)]
struct Secure {
    config: Arc<ClientConfig>,
    name: ServerName<'static>,
    direct: bool,
}

impl CancelKey {
    /// Whether the cancel request goes over TLS (as the connection did).
    pub fn encrypted(&self) -> bool {
        self.tls.is_some()
    }

    /// Sends the cancel request on a new connection and waits until the
    /// server closes it (as libpq does; see [`crate::db::cancel`] for why).
    pub async fn cancel(&self) -> io::Result<()> {
        let mut buf = BytesMut::with_capacity(16);
        frontend::cancel_request(self.process_id, self.secret_key, &mut buf);
        match &self.peer {
            Peer::Tcp(addr) => {
                let s = TcpStream::connect(*addr).await?;
                match &self.tls {
                    None => send_and_wait(s, &buf).await,
                    Some(tls) => match tls.handshake(s).await.map_err(io::Error::other)? {
                        Stream::Tls(s) => send_and_wait(s, &buf).await,
                        Stream::Tcp(s) => send_and_wait(s, &buf).await,
                        Stream::Unix(s) => send_and_wait(s, &buf).await,
                    },
                }
            }
            Peer::Unix(path) => send_and_wait(UnixStream::connect(path).await?, &buf).await,
        }
    }
}

/// Writes `buf` and reads until the peer closes.
async fn send_and_wait<S: AsyncRead + AsyncWrite + Unpin>(mut s: S, buf: &[u8]) -> io::Result<()> {
    s.write_all(buf).await?;
    s.flush().await?;
    let mut scratch = [0u8; 64];
    loop {
        match s.read(&mut scratch).await {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            // A TLS peer that closes without a close_notify: closed too.
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e),
        }
    }
}

pub(super) enum Stream {
    Tcp(TcpStream),
    /// Boxed: rustls's connection state is a few hundred bytes and the
    /// plain variants are small.
    Tls(Box<TlsStream<TcpStream>>),
    Unix(UnixStream),
}

impl Stream {
    /// Writes what is left of `buf` after its first `*done` bytes, counting
    /// them in `*done`; Ready once all went out (a TLS stream's records
    /// flushed too), Pending with the waker kept while the socket is full.
    /// A poll for the reason `poll_read` is one.
    pub(super) fn poll_write_all(
        &mut self,
        cx: &mut Context<'_>,
        buf: &[u8],
        done: &mut usize,
    ) -> Poll<io::Result<()>> {
        while let Some(rest) = buf.get(*done..).filter(|r| !r.is_empty()) {
            let polled = match self {
                Stream::Tcp(s) => Pin::new(s).poll_write(cx, rest),
                Stream::Tls(s) => Pin::new(&mut **s).poll_write(cx, rest),
                Stream::Unix(s) => Pin::new(s).poll_write(cx, rest),
            };
            match polled {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => *done += n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
            }
        }
        match self {
            // tokio-rustls takes the plaintext and writes what it can; what
            // a full socket did not take stays in rustls until a flush,
            // which costs nothing when all went out.
            Stream::Tls(s) => Pin::new(&mut **s).poll_flush(cx),
            Stream::Tcp(_) | Stream::Unix(_) => Poll::Ready(Ok(())),
        }
    }

    pub(super) async fn shutdown(&mut self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.shutdown().await,
            Stream::Tls(s) => s.shutdown().await,
            Stream::Unix(s) => s.shutdown().await,
        }
    }

    pub(super) async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        std::future::poll_fn(|cx| self.poll_read(cx, buf)).await
    }

    /// What has come, read into `buf` (0: the peer closed), or Pending
    /// with the waker kept. A poll rather than a future, so that the
    /// driver's read of the next message (`WireConn::next_message`) is one
    /// state machine and not three nested ones, each of whose states
    /// every unit reads on a cache line of its own.
    pub(super) fn poll_read(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        let mut b = tokio::io::ReadBuf::new(buf);
        let polled = match self {
            Stream::Tcp(s) => Pin::new(s).poll_read(cx, &mut b),
            Stream::Tls(s) => Pin::new(&mut **s).poll_read(cx, &mut b),
            Stream::Unix(s) => Pin::new(s).poll_read(cx, &mut b),
        };
        polled.map_ok(|()| b.filled().len())
    }
}

/// What the connection's encryption gives SCRAM.
enum Binding {
    /// Plain text: no channel binding possible.
    None,
    /// TLS, and the `tls-server-end-point` data: the hash of the server's
    /// certificate (None when its signature algorithm names no hash).
    Tls(Option<Vec<u8>>),
}

/// Writes the start-up message for `config`.
fn startup(config: &Config, buf: &mut BytesMut) -> io::Result<()> {
    let mut params = vec![("client_encoding", "UTF8")];
    if let Some(u) = config.get_user() {
        params.push(("user", u));
    }
    if let Some(d) = config.get_dbname() {
        params.push(("database", d));
    }
    if let Some(o) = config.get_options() {
        params.push(("options", o));
    }
    if let Some(a) = config.get_application_name() {
        params.push(("application_name", a));
    }
    frontend::startup_message(params, buf)
}

impl WireConn {
    /// Connects to the first host of `config` that answers and will do
    /// (libpq's failover; in random order with `load_balance_hosts=random`),
    /// over TLS as `config`'s sslmode and `tls` say, authenticates and
    /// waits for the server to be ready. The caller bounds the whole of it
    /// with the connect timeout.
    pub async fn connect(config: &Config, tls: &Tls) -> Result<WireConn, WireError> {
        supports(config)
            .map_err(|why| WireError::Connect(io::Error::new(io::ErrorKind::InvalidInput, why)))?;
        let hosts = config.get_hosts();
        let addrs = config.get_hostaddrs();
        let mut order: Vec<usize> = (0..hosts.len().max(addrs.len())).collect();
        if config.get_load_balance_hosts() == LoadBalanceHosts::Random {
            rand::seq::SliceRandom::shuffle(order.as_mut_slice(), &mut rand::rng());
        }
        let ports = config.get_ports();
        let mut last = WireError::Connect(io::Error::new(
            io::ErrorKind::InvalidInput,
            "no host to connect to",
        ));
        for i in order {
            let port = ports
                .get(i)
                .or_else(|| ports.first())
                .copied()
                .unwrap_or(5432);
            match Self::connect_one(config, tls, hosts.get(i), addrs.get(i).copied(), port).await {
                Ok(c) => return Ok(c),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    async fn connect_one(
        config: &Config,
        tls: &Tls,
        host: Option<&Host>,
        addr: Option<IpAddr>,
        port: u16,
    ) -> Result<WireConn, WireError> {
        let (tcp, peer) = match (host, addr) {
            (_, Some(ip)) => {
                let a = SocketAddr::new(ip, port);
                (tcp(a, config).await?, Peer::Tcp(a))
            }
            (Some(Host::Unix(dir)), None) => {
                let path = dir.join(format!(".s.PGSQL.{port}"));
                let connect = UnixStream::connect(&path);
                let s = within(config, connect).await?;
                let conn = WireConn::new(Stream::Unix(s), Peer::Unix(path), None);
                return conn.start(config, Binding::None).await;
            }
            (Some(Host::Tcp(name)), None) => tcp_by_name(name, port, config).await?,
            (None, None) => {
                return Err(WireError::Connect(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "no host to connect to",
                )));
            }
        };
        let (stream, binding, secure) = encrypt(tcp, config, tls, host, addr).await?;
        WireConn::new(stream, peer, secure)
            .start(config, binding)
            .await
    }

    fn new(stream: Stream, peer: Peer, tls: Option<Secure>) -> WireConn {
        WireConn {
            stream,
            wbuf: BytesMut::with_capacity(FIRST_WRITE),
            rbuf: ReadBuf::new(),
            key: CancelKey {
                peer,
                process_id: 0,
                secret_key: 0,
                tls,
            },
            statements: Vec::new(),
            broken: false,
            status: b'I',
            part: Default::default(),
        }
    }

    /// Logs in, then checks the session is of the kind
    /// `target_session_attrs` asks for; a connection that is not is
    /// closed.
    async fn start(mut self, config: &Config, binding: Binding) -> Result<WireConn, WireError> {
        if config.get_channel_binding() == ChannelBindingSetting::Require
            && matches!(binding, Binding::None)
        {
            return Err(WireError::Auth(
                "channel_binding=require needs an encrypted connection, and this one is not (sslmode=disable, a Unix-domain socket, or sslmode=prefer with a server without TLS)".into(),
            ));
        }
        self.start_up(config, &binding).await?;
        if let Err(e) = self.check_session(config.get_target_session_attrs()).await {
            self.close().await;
            return Err(e);
        }
        Ok(self)
    }

    /// Start-up and authentication, until the first ReadyForQuery.
    async fn start_up(&mut self, config: &Config, binding: &Binding) -> Result<(), WireError> {
        startup(config, &mut self.wbuf).map_err(encode_err)?;
        self.flush().await?;
        let user = config.get_user().unwrap_or_default().as_bytes();
        let password = || {
            config
                .get_password()
                .filter(|p| !p.is_empty())
                .ok_or(WireError::NoPassword)
        };
        let setting = config.get_channel_binding();
        let require = setting == ChannelBindingSetting::Require;
        let no_password_in_clear = |method: &str| {
            if require {
                Err(WireError::Auth(format!(
                    "channel_binding=require, and the server asks for a {method} password, which has no channel binding (the server must use scram-sha-256 in pg_hba.conf)"
                )))
            } else {
                Ok(())
            }
        };
        let mut scram: Option<(ScramSha256, bool)> = None;
        // Whether SCRAM-SHA-256-PLUS went to its end: the server proved
        // it knows the password over this very TLS connection.
        let mut bound = false;
        loop {
            let (tag, b0, b1) = self.next_message().await?;
            let body = &self.rbuf.buf[b0..b1];
            match tag {
                b'R' => {
                    let mut b = Body(body);
                    match b.i32()? {
                        0 => {
                            if require && !bound {
                                return Err(WireError::Auth(
                                    "channel_binding=require, and the server let the client in without channel binding".into(),
                                ));
                            }
                        }
                        3 => {
                            no_password_in_clear("cleartext")?;
                            let pw = password()?;
                            frontend::password_message(pw, &mut self.wbuf).map_err(encode_err)?;
                            self.flush().await?;
                        }
                        5 => {
                            no_password_in_clear("MD5")?;
                            let salt: [u8; 4] = b
                                .0
                                .get(..4)
                                .and_then(|s| s.try_into().ok())
                                .ok_or_else(|| WireError::Protocol("MD5 without salt".into()))?;
                            let hash = md5_hash(user, password()?, salt);
                            frontend::password_message(hash.as_bytes(), &mut self.wbuf)
                                .map_err(encode_err)?;
                            self.flush().await?;
                        }
                        10 => {
                            let (mut plain, mut plus) = (false, false);
                            while let Ok(m) = b.cstr() {
                                if m.is_empty() {
                                    break;
                                }
                                plain |= m == SCRAM_SHA_256;
                                plus |= m == SCRAM_SHA_256_PLUS;
                            }
                            let (mechanism, cb) = sasl_choice(plain, plus, setting, binding)?;
                            let s = ScramSha256::new(password()?, cb);
                            frontend::sasl_initial_response(mechanism, s.message(), &mut self.wbuf)
                                .map_err(encode_err)?;
                            scram = Some((s, mechanism == SCRAM_SHA_256_PLUS));
                            self.flush().await?;
                        }
                        11 => {
                            let (s, _) = scram.as_mut().ok_or_else(|| {
                                WireError::Protocol("SASL continue without a start".into())
                            })?;
                            s.update(b.0).map_err(|e| WireError::Auth(e.to_string()))?;
                            frontend::sasl_response(s.message(), &mut self.wbuf)
                                .map_err(encode_err)?;
                            self.flush().await?;
                        }
                        12 => {
                            let (s, plus) = scram.as_mut().ok_or_else(|| {
                                WireError::Protocol("SASL final without a start".into())
                            })?;
                            s.finish(b.0).map_err(|e| WireError::Auth(e.to_string()))?;
                            bound = *plus;
                        }
                        other => {
                            return Err(WireError::Auth(format!(
                                "the server asks for authentication method {other}, which the lean driver does not speak"
                            )));
                        }
                    }
                }
                b'K' => {
                    let mut b = Body(body);
                    self.key.process_id = b.i32()?;
                    self.key.secret_key = b.i32()?;
                }
                b'E' => {
                    let e = parse_error(body)?;
                    self.broken = true;
                    return Err(WireError::Db(Box::new(e)));
                }
                b'Z' => return Ok(()),
                // ParameterStatus, NoticeResponse, NegotiateProtocolVersion.
                b'S' | b'N' | b'v' => {}
                other => return Err(out_of_place(other, "while logging in")),
            }
        }
    }

    /// `target_session_attrs`: asks the server whether it takes writes,
    /// as tokio-postgres asks (`SHOW transaction_read_only`: on for a hot
    /// standby and under `default_transaction_read_only = on`), and
    /// refuses a server of the other kind.
    async fn check_session(&mut self, want: TargetSessionAttrs) -> Result<(), WireError> {
        if want == TargetSessionAttrs::Any {
            return Ok(());
        }
        let read_only = self.show("transaction_read_only").await?;
        let refused = match (want, read_only.as_deref()) {
            (TargetSessionAttrs::ReadWrite, Some("on")) => {
                "the server is read-only (transaction_read_only is on) and target_session_attrs=read-write asks for one that takes writes"
            }
            (TargetSessionAttrs::ReadOnly, Some("off")) => {
                "the server takes writes (transaction_read_only is off) and target_session_attrs=read-only asks for a read-only one"
            }
            (_, Some(_)) => return Ok(()),
            (_, None) => {
                return Err(WireError::Protocol(
                    "SHOW transaction_read_only returned no value".into(),
                ));
            }
        };
        Err(WireError::Connect(io::Error::new(
            io::ErrorKind::PermissionDenied,
            refused,
        )))
    }

    /// The value of a setting, by the simple query protocol (the first
    /// column of the first row of `SHOW`).
    async fn show(&mut self, setting: &str) -> Result<Option<String>, WireError> {
        frontend::query(&format!("SHOW {setting}"), &mut self.wbuf).map_err(encode_err)?;
        self.flush().await?;
        let mut value = None;
        let mut failed = None;
        loop {
            let (tag, b0, b1) = self.next_message().await?;
            let body = &self.rbuf.buf[b0..b1];
            match tag {
                b'D' if value.is_none() => {
                    let mut b = Body(body);
                    if b.i16()? > 0 {
                        let len = b.i32()?;
                        value = usize::try_from(len)
                            .ok()
                            .and_then(|n| b.0.get(..n))
                            .map(|v| String::from_utf8_lossy(v).into_owned());
                    }
                }
                b'E' => failed = Some(parse_error(body)?),
                b'Z' => {
                    return match failed {
                        Some(e) => Err(WireError::Db(Box::new(e))),
                        None => Ok(value),
                    };
                }
                b'T' | b'D' | b'C' | b'N' | b'S' | b'A' => {}
                other => return Err(out_of_place(other, "while asking the server its settings")),
            }
        }
    }
}

/// TLS on `tcp` as the sslmode and `tls` say (libpq's rules): none with
/// disable; with prefer, plain text when the server has no TLS; else TLS
/// or an error. Also what SCRAM can bind to, and how a cancel request
/// must go.
async fn encrypt(
    tcp: TcpStream,
    config: &Config,
    tls: &Tls,
    host: Option<&Host>,
    addr: Option<IpAddr>,
) -> Result<(Stream, Binding, Option<Secure>), WireError> {
    let secure = match (tls.rustls(), config.get_ssl_mode()) {
        (_, SslMode::Disable) | (None, SslMode::Prefer) => None,
        (Some(rustls), _) => Some(Secure {
            config: rustls.clone(),
            name: server_name(host, addr)?,
            direct: config.get_ssl_negotiation() == SslNegotiation::Direct,
        }),
        (None, _) => {
            return Err(WireError::Tls(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the sslmode requires TLS and no TLS configuration was given",
            )));
        }
    };
    Ok(match secure {
        None => (Stream::Tcp(tcp), Binding::None, None),
        Some(s) => {
            if s.direct && config.get_ssl_mode() == SslMode::Prefer {
                return Err(WireError::Tls(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "sslnegotiation=direct needs sslmode=require or stronger, not prefer",
                )));
            }
            match s.handshake(tcp).await? {
                Stream::Tls(t) => {
                    let hash = end_point_hash(&t);
                    (Stream::Tls(t), Binding::Tls(hash), Some(s))
                }
                plain if config.get_ssl_mode() == SslMode::Prefer => (plain, Binding::None, None),
                _ => {
                    return Err(WireError::Tls(io::Error::new(
                        io::ErrorKind::ConnectionRefused,
                        "the server does not accept TLS connections, and the sslmode requires TLS",
                    )));
                }
            }
        }
    })
}

/// The SASL mechanism and channel binding to use, as libpq and
/// tokio-postgres choose them: SCRAM-SHA-256-PLUS when the server offers
/// it and the connection has binding data; else SCRAM-SHA-256, telling
/// the server whether this client could have bound (`y`, so that a
/// server that does offer PLUS behind an attacker who removed it notices)
/// or not (`n`). `channel_binding=require` accepts PLUS only.
fn sasl_choice(
    plain: bool,
    plus: bool,
    setting: ChannelBindingSetting,
    binding: &Binding,
) -> Result<(&'static str, ChannelBinding), WireError> {
    let data = match binding {
        Binding::Tls(Some(hash)) if setting != ChannelBindingSetting::Disable => Some(hash),
        _ => None,
    };
    if let (true, Some(hash)) = (plus, data) {
        return Ok((
            SCRAM_SHA_256_PLUS,
            ChannelBinding::tls_server_end_point(hash.clone()),
        ));
    }
    if setting == ChannelBindingSetting::Require {
        let why = match binding {
            _ if !plus => {
                "the server does not offer SCRAM-SHA-256-PLUS (is the password stored as SCRAM?)"
            }
            Binding::Tls(None) => {
                "the server's certificate is signed with an algorithm that names no hash for tls-server-end-point"
            }
            _ => "this connection cannot bind",
        };
        return Err(WireError::Auth(format!(
            "channel_binding=require, and {why}"
        )));
    }
    if !plain {
        return Err(WireError::Auth(
            "the server offers no SASL mechanism this client can use".into(),
        ));
    }
    let cb = match data {
        Some(_) => ChannelBinding::unrequested(),
        None => ChannelBinding::unsupported(),
    };
    Ok((SCRAM_SHA_256, cb))
}

/// The `tls-server-end-point` data of a TLS connection (RFC 5929): the
/// hash of the server's certificate, by the hash its signature uses, MD5
/// and SHA-1 taken as SHA-256. None for a signature that names no hash
/// (Ed25519, RSASSA-PSS, whose hash is in its parameters).
fn end_point_hash(tls: &TlsStream<TcpStream>) -> Option<Vec<u8>> {
    use sha2::Digest;
    use x509_cert::der::Decode;
    use x509_cert::der::oid::ObjectIdentifier;
    use x509_cert::der::oid::db::rfc5912 as oid;
    const ECDSA_WITH_SHA_1: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.10045.4.1");
    let (_, session) = tls.get_ref();
    let der = session.peer_certificates()?.first()?;
    let cert = x509_cert::Certificate::from_der(der.as_ref()).ok()?;
    let alg = cert.signature_algorithm.oid;
    let bytes = der.as_ref();
    if [
        oid::MD_5_WITH_RSA_ENCRYPTION,
        oid::SHA_1_WITH_RSA_ENCRYPTION,
        ECDSA_WITH_SHA_1,
        oid::DSA_WITH_SHA_1,
        oid::SHA_256_WITH_RSA_ENCRYPTION,
        oid::ECDSA_WITH_SHA_256,
        oid::DSA_WITH_SHA_256,
    ]
    .contains(&alg)
    {
        Some(sha2::Sha256::digest(bytes).to_vec())
    } else if [
        oid::SHA_224_WITH_RSA_ENCRYPTION,
        oid::ECDSA_WITH_SHA_224,
        oid::DSA_WITH_SHA_224,
    ]
    .contains(&alg)
    {
        Some(sha2::Sha224::digest(bytes).to_vec())
    } else if [oid::SHA_384_WITH_RSA_ENCRYPTION, oid::ECDSA_WITH_SHA_384].contains(&alg) {
        Some(sha2::Sha384::digest(bytes).to_vec())
    } else if [oid::SHA_512_WITH_RSA_ENCRYPTION, oid::ECDSA_WITH_SHA_512].contains(&alg) {
        Some(sha2::Sha512::digest(bytes).to_vec())
    } else {
        None
    }
}

/// The name TLS sends (SNI) and verifies: the host name, or the address
/// when only `hostaddr` is given (rustls checks it against the
/// certificate's IP addresses).
fn server_name(
    host: Option<&Host>,
    addr: Option<IpAddr>,
) -> Result<ServerName<'static>, WireError> {
    match (host, addr) {
        (Some(Host::Tcp(name)), _) => ServerName::try_from(name.clone()).map_err(|e| {
            WireError::Tls(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{name} cannot be a TLS server name: {e}"),
            ))
        }),
        (_, Some(ip)) => Ok(ServerName::IpAddress(ip.into())),
        _ => Err(WireError::Tls(io::Error::new(
            io::ErrorKind::InvalidInput,
            "no host name to verify the server's certificate against",
        ))),
    }
}

impl Secure {
    /// Encrypts `tcp`: an SSLRequest first (unless direct) and the
    /// handshake if the server says yes. The plain stream back when the
    /// server says no; the caller decides whether that will do.
    async fn handshake(&self, mut tcp: TcpStream) -> Result<Stream, WireError> {
        if !self.direct {
            let mut buf = BytesMut::with_capacity(8);
            frontend::ssl_request(&mut buf);
            tcp.write_all(&buf).await.map_err(WireError::Connect)?;
            // One byte, no more: what a server (or someone in between)
            // sends after it must go through the handshake, never be
            // read as the server's plain-text answers.
            let mut answer = [0u8; 1];
            match tcp.read_exact(&mut answer).await {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                    return Err(WireError::Closed(None));
                }
                Err(e) => return Err(WireError::Connect(e)),
            }
            match answer[0] {
                b'S' => {}
                b'N' => return Ok(Stream::Tcp(tcp)),
                other => {
                    return Err(WireError::Protocol(format!(
                        "the server answered the TLS request with {:?}, neither S nor N",
                        char::from(other)
                    )));
                }
            }
        }
        let tls = TlsConnector::from(self.config.clone())
            .connect(self.name.clone(), tcp)
            .await
            .map_err(WireError::Tls)?;
        // PostgreSQL 17 insists on ALPN on a direct connection: a server
        // that chose none is not one, or not one that speaks it.
        if self.direct && tls.get_ref().1.alpn_protocol() != Some(ALPN_POSTGRESQL) {
            return Err(WireError::Tls(io::Error::new(
                io::ErrorKind::InvalidData,
                "the server did not choose the postgresql protocol (ALPN) on a direct TLS connection",
            )));
        }
        Ok(Stream::Tls(Box::new(tls)))
    }
}

/// `connect` bounded by connect_timeout, as tokio-postgres bounds each
/// socket's connect.
async fn within<T>(
    config: &Config,
    connect: impl Future<Output = io::Result<T>>,
) -> Result<T, WireError> {
    match config.get_connect_timeout() {
        None => connect.await.map_err(WireError::Connect),
        Some(limit) => match crate::rt::time::timeout(*limit, connect).await {
            Ok(r) => r.map_err(WireError::Connect),
            Err(_) => Err(WireError::Connect(io::Error::new(
                io::ErrorKind::TimedOut,
                "connection timed out",
            ))),
        },
    }
}

/// The first address of `name` that takes the connection.
async fn tcp_by_name(
    name: &str,
    port: u16,
    config: &Config,
) -> Result<(TcpStream, Peer), WireError> {
    let mut found: Vec<SocketAddr> = tokio::net::lookup_host((name, port))
        .await
        .map_err(WireError::Connect)?
        .collect();
    if config.get_load_balance_hosts() == LoadBalanceHosts::Random {
        rand::seq::SliceRandom::shuffle(found.as_mut_slice(), &mut rand::rng());
    }
    let mut last = None;
    for a in found {
        match tcp(a, config).await {
            Ok(s) => return Ok((s, Peer::Tcp(a))),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        WireError::Connect(io::Error::new(
            io::ErrorKind::NotFound,
            format!("{name} has no address"),
        ))
    }))
}

/// A TCP connection with what tokio-postgres sets: no Nagle delay, and
/// what the connection string asks: TCP keepalive (on unless
/// `keepalives=0`, after `keepalives_idle`, 2 hours by default, every
/// `keepalives_interval`, `keepalives_retries` times) and
/// `tcp_user_timeout`.
async fn tcp(addr: SocketAddr, config: &Config) -> Result<TcpStream, WireError> {
    let s = within(config, TcpStream::connect(addr)).await?;
    socket_options(&s, config).map_err(WireError::Connect)?;
    Ok(s)
}

fn socket_options(s: &TcpStream, config: &Config) -> io::Result<()> {
    s.set_nodelay(true)?;
    let sock = SockRef::from(s);
    #[cfg(target_os = "linux")]
    if let Some(t) = config.get_tcp_user_timeout() {
        sock.set_tcp_user_timeout(Some(*t))?;
    }
    if config.get_keepalives() {
        sock.set_tcp_keepalive(&keepalive(config))?;
    }
    Ok(())
}

fn keepalive(config: &Config) -> TcpKeepalive {
    let mut k = TcpKeepalive::new().with_time(config.get_keepalives_idle());
    if let Some(i) = config.get_keepalives_interval() {
        k = k.with_interval(i);
    }
    if let Some(r) = config.get_keepalives_retries() {
        k = k.with_retries(r);
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn parsed(s: &str) -> Config {
        s.parse().unwrap()
    }

    #[test]
    fn only_what_tokio_postgres_refuses_is_refused() {
        for ok in [
            "host=a sslmode=require channel_binding=require",
            "host=a target_session_attrs=read-write tcp_user_timeout=5",
            "host=a,b port=1,2 load_balance_hosts=random keepalives=0",
            "hostaddr=127.0.0.1",
            "host=/tmp",
        ] {
            assert_eq!(supports(&parsed(ok)), Ok(()), "{ok}");
        }
        assert!(supports(&parsed("user=x")).is_err());
        assert!(supports(&parsed("host=a,b hostaddr=127.0.0.1")).is_err());
        assert!(supports(&parsed("host=a,b,c port=1,2")).is_err());
    }

    #[tokio::test]
    async fn the_socket_gets_the_keepalive_and_user_timeout_asked_for() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut c = parsed("host=h keepalives_idle=37 keepalives_interval=5 keepalives_retries=4");
        c.tcp_user_timeout(Duration::from_millis(9000));
        let s = tcp(addr, &c).await.unwrap();
        let sock = SockRef::from(&s);
        assert!(sock.keepalive().unwrap());
        assert_eq!(sock.tcp_keepalive_time().unwrap(), Duration::from_secs(37));
        assert_eq!(
            sock.tcp_keepalive_interval().unwrap(),
            Duration::from_secs(5)
        );
        assert_eq!(sock.tcp_keepalive_retries().unwrap(), 4);
        #[cfg(target_os = "linux")]
        assert_eq!(
            sock.tcp_user_timeout().unwrap(),
            Some(Duration::from_millis(9000))
        );
        assert!(sock.tcp_nodelay().unwrap());
        let off = tcp(addr, &parsed("host=h keepalives=0")).await.unwrap();
        assert!(!SockRef::from(&off).keepalive().unwrap());
    }

    #[test]
    fn scram_binds_when_it_can_and_require_accepts_nothing_less() {
        use ChannelBindingSetting::{Disable, Prefer, Require};
        let hash = || Binding::Tls(Some(vec![1; 32]));
        let mech = |plain, plus, s, b: &Binding| sasl_choice(plain, plus, s, b).map(|c| c.0);
        assert_eq!(
            mech(true, true, Prefer, &hash()).unwrap(),
            SCRAM_SHA_256_PLUS
        );
        assert_eq!(
            mech(true, true, Require, &hash()).unwrap(),
            SCRAM_SHA_256_PLUS
        );
        assert_eq!(mech(true, true, Disable, &hash()).unwrap(), SCRAM_SHA_256);
        assert_eq!(
            mech(true, true, Prefer, &Binding::None).unwrap(),
            SCRAM_SHA_256
        );
        assert_eq!(mech(true, false, Prefer, &hash()).unwrap(), SCRAM_SHA_256);
        let e = mech(true, false, Require, &hash()).unwrap_err().to_string();
        assert!(e.contains("SCRAM-SHA-256-PLUS"), "{e}");
        let e = mech(true, true, Require, &Binding::Tls(None))
            .unwrap_err()
            .to_string();
        assert!(e.contains("names no hash"), "{e}");
        assert!(mech(false, true, Prefer, &Binding::None).is_err());
    }
}

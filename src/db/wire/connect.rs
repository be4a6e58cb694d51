//! Making a lean connection: the socket (TCP or Unix-domain), the
//! start-up message, authentication, and the cancel request.

use std::io;
use std::net::SocketAddr;
use std::path::PathBuf;

use bytes::BytesMut;
use postgres_protocol::authentication::md5_hash;
use postgres_protocol::authentication::sasl::{ChannelBinding, SCRAM_SHA_256, ScramSha256};
use postgres_protocol::message::frontend;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream, UnixStream};
use tokio_postgres::Config;
use tokio_postgres::config::{ChannelBinding as ChannelBindingSetting, Host, TargetSessionAttrs};

use super::decode::{Body, ReadBuf, parse_error, unexpected};
use super::{FIRST_WRITE, WireConn, WireError, encode_err};

/// Whether the lean driver can connect as `config` says; the reason when
/// not (the connection then stays on tokio-postgres). TLS is decided by
/// the caller: this driver speaks plain text only.
pub fn supports(config: &Config) -> Result<(), &'static str> {
    if config.get_target_session_attrs() != TargetSessionAttrs::Any {
        return Err("target_session_attrs is set");
    }
    if config.get_channel_binding() == ChannelBindingSetting::Require {
        return Err("channel_binding=require needs TLS");
    }
    if config.get_tcp_user_timeout().is_some() {
        return Err("tcp_user_timeout is set");
    }
    if config.get_hosts().is_empty() && config.get_hostaddrs().is_empty() {
        return Err("no host is given");
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
/// is, and the backend key the server gave it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CancelKey {
    pub peer: Peer,
    pub process_id: i32,
    pub secret_key: i32,
}

impl CancelKey {
    /// Sends the cancel request on a new connection and waits until the
    /// server closes it (as libpq does; see [`super::cancel`] for why).
    pub async fn cancel(&self) -> io::Result<()> {
        let mut buf = BytesMut::with_capacity(16);
        frontend::cancel_request(self.process_id, self.secret_key, &mut buf);
        let mut scratch = [0u8; 64];
        match &self.peer {
            Peer::Tcp(addr) => {
                let mut s = TcpStream::connect(addr).await?;
                s.write_all(&buf).await?;
                while s.read(&mut scratch).await? > 0 {}
            }
            Peer::Unix(path) => {
                let mut s = UnixStream::connect(path).await?;
                s.write_all(&buf).await?;
                while s.read(&mut scratch).await? > 0 {}
            }
        }
        Ok(())
    }
}

pub(super) enum Stream {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Stream {
    pub(super) async fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.write_all(buf).await,
            Stream::Unix(s) => s.write_all(buf).await,
        }
    }

    pub(super) async fn shutdown(&mut self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.shutdown().await,
            Stream::Unix(s) => s.shutdown().await,
        }
    }

    pub(super) async fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf).await,
            Stream::Unix(s) => s.read(buf).await,
        }
    }
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
    /// Connects to the first host of `config` that answers (libpq's
    /// failover), authenticates and waits for the server to be ready.
    /// The caller bounds the whole of it with the connect timeout.
    pub async fn connect(config: &Config) -> Result<WireConn, WireError> {
        let hosts = config.get_hosts();
        let addrs = config.get_hostaddrs();
        let n = hosts.len().max(addrs.len());
        let ports = config.get_ports();
        let mut last = WireError::Connect(io::Error::new(
            io::ErrorKind::InvalidInput,
            "no host to connect to",
        ));
        for i in 0..n {
            let port = ports
                .get(i)
                .or_else(|| ports.first())
                .copied()
                .unwrap_or(5432);
            match Self::connect_one(config, hosts.get(i), addrs.get(i).copied(), port).await {
                Ok(c) => return Ok(c),
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    async fn connect_one(
        config: &Config,
        host: Option<&Host>,
        addr: Option<std::net::IpAddr>,
        port: u16,
    ) -> Result<WireConn, WireError> {
        let (stream, peer) = match (host, addr) {
            (_, Some(ip)) => {
                let a = SocketAddr::new(ip, port);
                (Stream::Tcp(tcp(a).await?), Peer::Tcp(a))
            }
            (Some(Host::Unix(dir)), None) => {
                let path = dir.join(format!(".s.PGSQL.{port}"));
                let s = UnixStream::connect(&path)
                    .await
                    .map_err(WireError::Connect)?;
                (Stream::Unix(s), Peer::Unix(path))
            }
            (Some(Host::Tcp(name)), None) => {
                let mut last = None;
                let mut made = None;
                let found = tokio::net::lookup_host((name.as_str(), port))
                    .await
                    .map_err(WireError::Connect)?;
                for a in found {
                    match tcp(a).await {
                        Ok(s) => {
                            made = Some((Stream::Tcp(s), Peer::Tcp(a)));
                            break;
                        }
                        Err(e) => last = Some(e),
                    }
                }
                match made {
                    Some(m) => m,
                    None => {
                        return Err(last.unwrap_or_else(|| {
                            WireError::Connect(io::Error::new(
                                io::ErrorKind::NotFound,
                                format!("{name} has no address"),
                            ))
                        }));
                    }
                }
            }
            (None, None) => {
                return Err(WireError::Connect(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "no host to connect to",
                )));
            }
        };
        let mut conn = WireConn {
            stream,
            wbuf: BytesMut::with_capacity(FIRST_WRITE),
            rbuf: ReadBuf::new(),
            key: CancelKey {
                peer,
                process_id: 0,
                secret_key: 0,
            },
            statements: Vec::new(),
            broken: false,
            unanswered: false,
        };
        conn.start_up(config).await?;
        Ok(conn)
    }

    /// Start-up and authentication, until the first ReadyForQuery.
    async fn start_up(&mut self, config: &Config) -> Result<(), WireError> {
        startup(config, &mut self.wbuf).map_err(encode_err)?;
        self.flush().await?;
        let user = config.get_user().unwrap_or_default().as_bytes();
        let password = || {
            config
                .get_password()
                .filter(|p| !p.is_empty())
                .ok_or(WireError::NoPassword)
        };
        let mut scram: Option<ScramSha256> = None;
        loop {
            let (tag, b0, b1) = self.next_message().await?;
            let body = &self.rbuf.buf[b0..b1];
            match tag {
                b'R' => {
                    let mut b = Body(body);
                    match b.i32()? {
                        0 => {}
                        3 => {
                            let pw = password()?;
                            frontend::password_message(pw, &mut self.wbuf).map_err(encode_err)?;
                            self.flush().await?;
                        }
                        5 => {
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
                            let mut offered = false;
                            while let Ok(m) = b.cstr() {
                                if m.is_empty() {
                                    break;
                                }
                                offered |= m == SCRAM_SHA_256;
                            }
                            if !offered {
                                return Err(WireError::Auth(
                                    "the server offers no SASL mechanism this client knows".into(),
                                ));
                            }
                            let s = ScramSha256::new(password()?, ChannelBinding::unsupported());
                            frontend::sasl_initial_response(
                                SCRAM_SHA_256,
                                s.message(),
                                &mut self.wbuf,
                            )
                            .map_err(encode_err)?;
                            scram = Some(s);
                            self.flush().await?;
                        }
                        11 => {
                            let s = scram.as_mut().ok_or_else(|| {
                                WireError::Protocol("SASL continue without a start".into())
                            })?;
                            s.update(b.0).map_err(|e| WireError::Auth(e.to_string()))?;
                            frontend::sasl_response(s.message(), &mut self.wbuf)
                                .map_err(encode_err)?;
                            self.flush().await?;
                        }
                        12 => {
                            let s = scram.as_mut().ok_or_else(|| {
                                WireError::Protocol("SASL final without a start".into())
                            })?;
                            s.finish(b.0).map_err(|e| WireError::Auth(e.to_string()))?;
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
                other => return Err(unexpected(other, "during start-up")),
            }
        }
    }
}

/// A TCP connection with what tokio-postgres sets: no Nagle delay, TCP
/// keepalive on.
async fn tcp(addr: SocketAddr) -> Result<TcpStream, WireError> {
    let socket = if addr.is_ipv4() {
        TcpSocket::new_v4()
    } else {
        TcpSocket::new_v6()
    }
    .map_err(WireError::Connect)?;
    socket.set_keepalive(true).map_err(WireError::Connect)?;
    socket.set_nodelay(true).map_err(WireError::Connect)?;
    socket.connect(addr).await.map_err(WireError::Connect)
}

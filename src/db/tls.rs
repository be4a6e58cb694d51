//! TLS: libpq's five `sslmode`s, `sslrootcert`, and a client certificate
//! (`sslcert`, `sslkey`), on rustls.
//!
//! tokio-postgres knows only `disable`, `prefer` and `require`, and no
//! `sslrootcert`; psql users write all five modes and a CA file in their
//! connection strings. So the TLS keys are taken out of the connection
//! string here ([`take_tls_params`]) before tokio-postgres parses the rest,
//! and each mode becomes a rustls client configuration:
//!
//! | sslmode | encrypted | certificate chain checked | host name checked |
//! |---|---|---|---|
//! | disable | never | – | – |
//! | prefer (default, as libpq) | if the server offers it | no | no |
//! | require | always | only if a CA file is given (libpq's rule) | no |
//! | verify-ca | always | yes | no |
//! | verify-full | always | yes | yes |
//!
//! rustls with the `ring` provider means no system OpenSSL is needed. The
//! CA file and the client certificate and key are read while the plan is
//! validated, so a missing or unreadable file is a usage error before
//! anything connects.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::conninfo::{Found, take_params};
use crate::error::{Error, Result};

/// libpq's `sslmode`s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    #[default]
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    pub fn parse(s: &str) -> Option<SslMode> {
        Some(match s.trim() {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    /// What tokio-postgres must be told: whether plaintext is acceptable.
    pub fn tokio_mode(self) -> tokio_postgres::config::SslMode {
        use tokio_postgres::config::SslMode as T;
        match self {
            SslMode::Disable => T::Disable,
            SslMode::Prefer => T::Prefer,
            _ => T::Require,
        }
    }
}

/// The TLS part of the connection, as the user asked for it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsSettings {
    /// None: not said anywhere (libpq's default, prefer, unless a CA file
    /// was given with `--cacert`).
    pub mode: Option<SslMode>,
    pub root_cert: Option<PathBuf>,
    /// `sslcert`: the client's certificate (chain), PEM.
    pub client_cert: Option<PathBuf>,
    /// `sslkey`: the client certificate's private key, PEM.
    pub client_key: Option<PathBuf>,
}

impl TlsSettings {
    /// The mode in force: as given; else verify-full when a CA was given
    /// with `--cacert` (giving a CA means wanting it checked); else prefer.
    pub fn effective_mode(&self, cacert_flag: bool) -> SslMode {
        match self.mode {
            Some(m) => m,
            None if cacert_flag => SslMode::VerifyFull,
            None => SslMode::Prefer,
        }
    }
}

/// The TLS of a run, validated: the mode in force and the CA file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsPlan {
    pub mode: SslMode,
    pub root_cert: Option<PathBuf>,
    /// The client certificate and its key, for servers that ask for one
    /// (pg_hba.conf `cert`, or `clientcert=verify-ca|verify-full`).
    pub client: Option<ClientCert>,
}

/// A client certificate (chain) and its private key, both PEM files.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientCert {
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl TlsPlan {
    /// The plan for `settings`: the mode in force (see
    /// [`TlsSettings::effective_mode`]) and the certificate files, which
    /// must come as a pair.
    pub fn new(settings: TlsSettings, cacert_flag: bool) -> Result<TlsPlan> {
        let mode = settings.effective_mode(cacert_flag);
        let client = match (settings.client_cert, settings.client_key) {
            (Some(cert), Some(key)) => Some(ClientCert { cert, key }),
            (None, None) => None,
            (Some(_), None) => {
                return Err(Error::usage(
                    "sslcert is given without sslkey: give the client certificate's key too (sslkey=FILE or PGSSLKEY)",
                ));
            }
            (None, Some(_)) => {
                return Err(Error::usage(
                    "sslkey is given without sslcert: give the client certificate too (sslcert=FILE or PGSSLCERT)",
                ));
            }
        };
        Ok(TlsPlan {
            mode,
            root_cert: settings.root_cert,
            client,
        })
    }

    /// `channel_binding=require` binds the login to the TLS connection:
    /// with sslmode=disable no connection could ever be made.
    pub fn check_channel_binding(&self, config: &tokio_postgres::Config) -> Result<()> {
        use tokio_postgres::config::ChannelBinding;
        if self.mode == SslMode::Disable && config.get_channel_binding() == ChannelBinding::Require
        {
            return Err(Error::usage(
                "channel_binding=require binds the login to TLS, and sslmode=disable turns TLS off: use sslmode=require (or stronger), or leave channel_binding out",
            ));
        }
        Ok(())
    }

    pub fn connector(&self) -> Result<Tls> {
        connector(self.mode, self.root_cert.as_deref(), self.client.as_ref())
    }
}

/// How connections are made: in plain text only, or with rustls.
#[derive(Clone)]
pub enum Tls {
    Plain,
    /// One rustls configuration for both drivers: tokio-postgres's
    /// connector is made of it, and the lean driver ([`super::wire`])
    /// takes the configuration itself.
    Rustls {
        connect: MakeRustlsConnect,
        config: Arc<ClientConfig>,
    },
}

impl Tls {
    /// The rustls configuration, unless connections are plain text only.
    pub fn rustls(&self) -> Option<&Arc<ClientConfig>> {
        match self {
            Tls::Plain => None,
            Tls::Rustls { config, .. } => Some(config),
        }
    }
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Tls::Plain => "Tls::Plain",
            Tls::Rustls { .. } => "Tls::Rustls",
        })
    }
}

/// The ALPN protocol name of PostgreSQL (IANA-registered); PostgreSQL 17
/// and later require it on a direct TLS connection (`sslnegotiation=direct`)
/// and accept it after an SSLRequest; older servers ignore it.
pub const ALPN_POSTGRESQL: &[u8] = b"postgresql";

/// The connector for `mode`, verifying against the certificates in
/// `root_cert` where the mode asks for it, and showing `client` to a
/// server that asks for a client certificate.
pub fn connector(
    mode: SslMode,
    root_cert: Option<&Path>,
    client: Option<&ClientCert>,
) -> Result<Tls> {
    if mode == SslMode::Disable {
        return Ok(Tls::Plain);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let roots = match root_cert {
        Some(path) => Some(load_roots(path)?),
        None => None,
    };
    let verifier: Arc<dyn ServerCertVerifier> = match (mode, roots) {
        (SslMode::VerifyCa | SslMode::VerifyFull, None) => {
            return Err(Error::usage(format!(
                "sslmode={} checks the server's certificate and needs the CA that signed it: give --cacert FILE or sslrootcert=FILE in the URL",
                mode.name()
            )));
        }
        (SslMode::Disable | SslMode::Prefer, _) | (SslMode::Require, None) => {
            Arc::new(NoVerification(provider.clone()))
        }
        (_, Some(roots)) => {
            let webpki =
                WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                    .build()
                    .map_err(|e| Error::usage(format!("cannot use the CA certificate: {e}")))?;
            if mode == SslMode::VerifyFull {
                webpki
            } else {
                Arc::new(ChainOnly(webpki))
            }
        }
    };
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::run(format!("cannot set up TLS: {e}")))?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let mut config = match client {
        None => builder.with_no_client_auth(),
        Some(c) => {
            let (chain, key) = load_client_cert(c)?;
            builder.with_client_auth_cert(chain, key).map_err(|e| {
                Error::usage(format!(
                    "cannot use {} with {} as the client certificate: {e}",
                    c.cert.display(),
                    c.key.display()
                ))
            })?
        }
    };
    config.alpn_protocols = vec![ALPN_POSTGRESQL.to_vec()];
    let config = Arc::new(config);
    Ok(Tls::Rustls {
        connect: MakeRustlsConnect::new(config.as_ref().clone()),
        config,
    })
}

/// Reads a client certificate chain and its key (PEM), as usage errors
/// that name the file.
fn load_client_cert(
    c: &ClientCert,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)> {
    let bad = |path: &Path, what: &str, why: String| {
        Error::usage(format!(
            "cannot use {} as the {what}: {why}",
            path.display()
        ))
    };
    let cert_bytes = std::fs::read(&c.cert)
        .map_err(|e| bad(&c.cert, "client certificate (sslcert)", e.to_string()))?;
    let chain = CertificateDer::pem_slice_iter(&cert_bytes)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| {
            bad(
                &c.cert,
                "client certificate (sslcert)",
                format!("not a PEM certificate ({e})"),
            )
        })?;
    if chain.is_empty() {
        return Err(bad(
            &c.cert,
            "client certificate (sslcert)",
            "it holds no PEM certificate".to_string(),
        ));
    }
    let key_bytes =
        std::fs::read(&c.key).map_err(|e| bad(&c.key, "client key (sslkey)", e.to_string()))?;
    let key = PrivateKeyDer::from_pem_slice(&key_bytes).map_err(|e| {
        bad(
            &c.key,
            "client key (sslkey)",
            format!("not a PEM private key ({e})"),
        )
    })?;
    Ok((chain, key))
}

fn load_roots(path: &Path) -> Result<RootCertStore> {
    let bad = |why: String| {
        Error::usage(format!(
            "cannot use {} as the CA certificate: {why}",
            path.display()
        ))
    };
    let bytes = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&bytes) {
        let cert = cert.map_err(|e| bad(format!("not a PEM certificate ({e})")))?;
        roots
            .add(cert)
            .map_err(|e| bad(format!("not a usable certificate ({e})")))?;
    }
    if roots.is_empty() {
        return Err(bad("it holds no PEM certificate".to_string()));
    }
    Ok(roots)
}

/// prefer and require without a CA: encrypted, and the handshake's
/// signatures are checked, but anyone's certificate is accepted (as libpq).
#[derive(Debug)]
struct NoVerification(Arc<CryptoProvider>);

impl ServerCertVerifier for NoVerification {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// verify-ca: the chain must lead to the CA; the host name is not checked.
/// The webpki verifier checks the chain before the name, so a name error
/// means the chain was good.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// The connection-string keys handled here rather than by tokio-postgres.
pub const TLS_KEYS: [&str; 4] = ["sslmode", "sslrootcert", "sslcert", "sslkey"];

/// Takes the TLS keys (`sslmode`, `sslrootcert`, `sslcert`, `sslkey`) out
/// of a libpq key=value string or a postgres:// URI. Returns the rest of
/// the string, unchanged otherwise, and the settings found (the last of a
/// repeated key wins, as in libpq).
pub fn take_tls_params(url: &str) -> Result<(String, TlsSettings), String> {
    let (rest, found) = take_params(url, &|k| TLS_KEYS.contains(&k))?;
    Ok((rest, tls_settings(found)?))
}

/// The TLS settings of the TLS keys in `found`; other keys are passed by.
pub fn tls_settings(found: Found) -> Result<TlsSettings, String> {
    let mut settings = TlsSettings::default();
    for (k, v) in found {
        match k.as_str() {
            "sslmode" => {
                settings.mode = Some(SslMode::parse(&v).ok_or_else(|| {
                    format!(
                        "sslmode={v} is not a mode: use disable, prefer, require, verify-ca or verify-full"
                    )
                })?)
            }
            "sslcert" => settings.client_cert = Some(PathBuf::from(v)),
            "sslkey" => settings.client_key = Some(PathBuf::from(v)),
            "sslrootcert" => settings.root_cert = Some(PathBuf::from(v)),
            _ => {}
        }
    }
    Ok(settings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_keys_leave_a_key_value_string_and_the_rest_stays() {
        let (rest, s) = take_tls_params(
            "host=db1 sslmode=verify-full  sslrootcert = '/etc/my ca.pem' user=bob password='a b'",
        )
        .unwrap();
        assert_eq!(rest, "host=db1 user=bob password='a b'");
        assert_eq!(s.mode, Some(SslMode::VerifyFull));
        assert_eq!(s.root_cert, Some(PathBuf::from("/etc/my ca.pem")));
    }

    #[test]
    fn tls_keys_leave_a_uri_and_the_rest_stays() {
        let (rest, s) = take_tls_params(
            "postgres://u:p@h:5433/db?sslmode=verify-ca&application_name=x&sslrootcert=%2Ftmp%2Fca.pem",
        )
        .unwrap();
        assert_eq!(rest, "postgres://u:p@h:5433/db?application_name=x");
        assert_eq!(s.mode, Some(SslMode::VerifyCa));
        assert_eq!(s.root_cert, Some(PathBuf::from("/tmp/ca.pem")));
        let (rest, s) = take_tls_params("postgres://h/db?sslmode=require").unwrap();
        assert_eq!(rest, "postgres://h/db");
        assert_eq!(s.mode, Some(SslMode::Require));
    }

    #[test]
    fn bad_tls_values_are_refused() {
        assert!(
            take_tls_params("host=h sslmode=always")
                .unwrap_err()
                .contains("verify-full")
        );
        assert!(take_tls_params("host=h sslrootcert='/x").is_err());
    }

    #[test]
    fn a_ca_alone_means_verify_full_and_nothing_means_prefer() {
        let none = TlsSettings::default();
        assert_eq!(none.effective_mode(false), SslMode::Prefer);
        assert_eq!(none.effective_mode(true), SslMode::VerifyFull);
        let req = TlsSettings {
            mode: Some(SslMode::Require),
            ..TlsSettings::default()
        };
        assert_eq!(req.effective_mode(true), SslMode::Require);
    }

    #[test]
    fn client_certificate_keys_are_taken_and_must_come_in_pairs() {
        let (rest, t) =
            take_tls_params("host=a sslcert=/c/client.crt sslkey='/c/client.key' user=u").unwrap();
        assert_eq!(rest, "host=a user=u");
        assert_eq!(t.client_cert, Some(PathBuf::from("/c/client.crt")));
        assert_eq!(t.client_key, Some(PathBuf::from("/c/client.key")));
        let (_, t) = take_tls_params("postgres://u@a/db?sslcert=%2Fc%2Fx.crt").unwrap();
        let e = TlsPlan::new(t, false).unwrap_err();
        assert!(e.to_string().contains("without sslkey"), "{e}");
        let e = connector(
            SslMode::Require,
            None,
            Some(&ClientCert {
                cert: PathBuf::from("/nonexistent/client.crt"),
                key: PathBuf::from("/nonexistent/client.key"),
            }),
        )
        .unwrap_err();
        assert!(e.to_string().contains("/nonexistent/client.crt"), "{e}");
    }

    #[test]
    fn verifying_modes_need_a_ca() {
        let e = connector(SslMode::VerifyFull, None, None).unwrap_err();
        assert!(e.to_string().contains("--cacert"), "{e}");
        assert!(connector(SslMode::Require, None, None).is_ok());
        let e = connector(
            SslMode::VerifyCa,
            Some(Path::new("/nonexistent/ca.pem")),
            None,
        )
        .unwrap_err();
        assert!(e.to_string().contains("/nonexistent/ca.pem"), "{e}");
    }
}

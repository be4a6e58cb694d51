//! TLS against a real server: a sandbox with ssl=on, a certificate for
//! `localhost` signed by a CA made in the test, and a pg_hba.conf that
//! accepts TCP connections only over TLS (so a run that succeeds proves
//! it was encrypted, and `sslmode=disable` must be turned away). Both
//! drivers: tokio-postgres (the tool's own connections, loads) and the
//! lean driver (select's workers), which must agree on every sslmode,
//! certificate check and channel binding.

mod common;
use common::*;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use ysql_bench::db::connect::parse_url_tls;
use ysql_bench::db::sandbox::{Sandbox, SandboxOptions};
use ysql_bench::db::tls::TlsPlan;
use ysql_bench::db::wire::{WireConn, WireError};

struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }
}

fn ca(name: &str) -> CertifiedIssuer<'static, KeyPair> {
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.distinguished_name.push(DnType::CommonName, name);
    CertifiedIssuer::self_signed(p, KeyPair::generate().unwrap()).unwrap()
}

fn write(path: &Path, text: &str, mode: u32) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    if let Some((uid, gid)) = service_user() {
        std::os::unix::fs::chown(path, Some(uid), Some(gid)).unwrap();
    }
}

/// The CA, a wrong CA, the server's certificate (for `localhost` only) and
/// key, and an hba file that wants TLS on TCP.
fn make_pki() -> Pki {
    let dir = shared_dir();
    let right = ca("ysql-bench test CA");
    let wrong = ca("some other CA");
    let key = KeyPair::generate().unwrap();
    let mut params = CertificateParams::new(vec!["localhost".to_string()]).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, "localhost");
    let cert = params.signed_by(&key, &right).unwrap();
    let d = dir.path();
    write(&d.join("ca.pem"), &right.pem(), 0o644);
    write(&d.join("wrong-ca.pem"), &wrong.pem(), 0o644);
    write(&d.join("server.crt"), &cert.pem(), 0o644);
    // PostgreSQL refuses a key that others can read.
    write(&d.join("server.key"), &key.serialize_pem(), 0o600);
    // A client certificate for the user postgres, for `cert` authentication.
    let client_key = KeyPair::generate().unwrap();
    let mut client = CertificateParams::new(Vec::<String>::new()).unwrap();
    client
        .distinguished_name
        .push(DnType::CommonName, "postgres");
    let client_cert = client.signed_by(&client_key, &right).unwrap();
    write(&d.join("client.crt"), &client_cert.pem(), 0o644);
    write(&d.join("client.key"), &client_key.serialize_pem(), 0o600);
    write(
        &d.join("pg_hba_cert.conf"),
        "local all all trust\nhostssl all all 127.0.0.1/32 cert\n",
        0o644,
    );
    // Password logins over TLS: SCRAM (channel binding possible), and a
    // trusted and an MD5 user, with which it is not; plain-text SCRAM for
    // the test's own client.
    write(
        &d.join("pg_hba_scram.conf"),
        "local all all trust\n\
         hostssl all trusted 127.0.0.1/32 trust\n\
         hostssl all md5user 127.0.0.1/32 md5\n\
         hostssl all all 127.0.0.1/32 scram-sha-256\n\
         hostnossl all postgres 127.0.0.1/32 scram-sha-256\n",
        0o644,
    );
    write(
        &d.join("pg_hba.conf"),
        "local all all trust\nhostssl all all 127.0.0.1/32 trust\nhostssl all all ::1/128 trust\n",
        0o644,
    );
    Pki { dir }
}

fn tls_sandbox(pki: &Pki) -> Sandbox {
    sandbox_with(vec![
        ("ssl".into(), "on".into()),
        ("ssl_cert_file".into(), pki.path("server.crt")),
        ("ssl_key_file".into(), pki.path("server.key")),
        ("hba_file".into(), pki.path("pg_hba.conf")),
    ])
}

async fn try_run(args: &[&str]) -> Result<ysql_bench::RunReport, ysql_bench::Error> {
    let mut out = Vec::new();
    ysql_bench::run(plan_of(args), &mut out).await
}

fn url(host: &str, sb: &Sandbox, extra: &str) -> String {
    format!(
        "host={host} port={} user=postgres dbname=postgres password=Sekr1tPw {extra}",
        sb.port()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_sslmode_does_what_libpq_says() {
    let pki = make_pki();
    let sb = tls_sandbox(&pki);
    let ca = pki.path("ca.pem");
    let wrong = pki.path("wrong-ca.pem");
    let load = ["-o", "insert", "-r", "500", "-t", "2"];

    // Encryption without checks: prefer and require.
    for mode in ["prefer", "require"] {
        let u = url("127.0.0.1", &sb, &format!("sslmode={mode}"));
        let mut args = vec!["-u", u.as_str()];
        args.extend_from_slice(&load);
        let r = try_run(&args)
            .await
            .unwrap_or_else(|e| panic!("{mode}: {e}"));
        assert!(r.succeeded(), "{mode}");
        assert!(
            r.server.encryption.starts_with("TLSv1."),
            "{mode}: {}",
            r.server.encryption
        );
    }

    // The server accepts only TLS on TCP, so plaintext is turned away.
    let u = url("127.0.0.1", &sb, "sslmode=disable");
    let e = try_run(&["-u", &u, "-o", "select", "-r", "500", "--time", "1"])
        .await
        .unwrap_err()
        .to_string();
    eprintln!("disable: {e}");
    assert!(e.contains("no encryption"), "{e}");

    // verify-full with the right CA and the certificate's name.
    let u = url(
        "localhost",
        &sb,
        &format!("sslmode=verify-full sslrootcert={ca}"),
    );
    let r = try_run(&["-u", &u, "-o", "select", "-r", "500", "--time", "1"])
        .await
        .unwrap_or_else(|e| panic!("verify-full: {e}"));
    assert!(r.succeeded());

    // --cacert alone means verify-full: fine for localhost ...
    let u = url("localhost", &sb, "");
    let r = try_run(&[
        "-u", &u, "--cacert", &ca, "-o", "select", "-r", "500", "--time", "1",
    ])
    .await
    .unwrap_or_else(|e| panic!("--cacert: {e}"));
    assert!(r.succeeded());
    // ... and refused for a name the certificate does not carry.
    let u = url("127.0.0.1", &sb, "");
    let e = try_run(&[
        "-u", &u, "--cacert", &ca, "-o", "select", "-r", "500", "--time", "1",
    ])
    .await
    .unwrap_err()
    .to_string();
    eprintln!("verify-full, wrong name: {e}");
    assert!(e.contains("certificate") && e.contains("127.0.0.1"), "{e}");
    assert!(!e.contains("Sekr1tPw"), "the password leaked: {e}");

    // verify-ca checks the chain only: the address is fine.
    let u = url(
        "127.0.0.1",
        &sb,
        &format!("sslmode=verify-ca sslrootcert={ca}"),
    );
    let r = try_run(&["-u", &u, "-o", "select", "-r", "500", "--time", "1"])
        .await
        .unwrap_or_else(|e| panic!("verify-ca: {e}"));
    assert!(r.succeeded());

    // The wrong CA fails both verifying modes.
    for (host, mode) in [("localhost", "verify-full"), ("127.0.0.1", "verify-ca")] {
        let u = url(host, &sb, &format!("sslmode={mode} sslrootcert={wrong}"));
        let e = try_run(&["-u", &u, "-o", "select", "-r", "500", "--time", "1"])
            .await
            .unwrap_err()
            .to_string();
        eprintln!("{mode}, wrong CA: {e}");
        assert!(e.contains("certificate"), "{mode}: {e}");
    }
}

#[test]
fn verify_modes_without_a_ca_and_unreadable_cas_are_usage_errors() {
    let out = bin(
        "ysql-bench",
        &["-u", "host=localhost sslmode=verify-full", "-o", "select"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--cacert"),
        "{}",
        text(&out.stderr)
    );
    let out = bin(
        "ysql-bench",
        &[
            "-u",
            "host=localhost",
            "--cacert",
            "/nonexistent/ca.pem",
            "-o",
            "select",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("/nonexistent/ca.pem"));
    let out = bin(
        "ysql-bench",
        &["-u", "host=localhost sslmode=sometimes", "-o", "select"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("verify-full"));
}

/// A server that authenticates by client certificate (pg_hba.conf `cert`):
/// turned away without one, served with sslcert and sslkey.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_certificate_authenticates_the_user() {
    let pki = make_pki();
    let sb = sandbox_with(vec![
        ("ssl".into(), "on".into()),
        ("ssl_cert_file".into(), pki.path("server.crt")),
        ("ssl_key_file".into(), pki.path("server.key")),
        ("ssl_ca_file".into(), pki.path("ca.pem")),
        ("hba_file".into(), pki.path("pg_hba_cert.conf")),
    ]);
    let plain = format!(
        "host=127.0.0.1 port={} user=postgres dbname=postgres sslmode=require",
        sb.port()
    );
    let e = try_run(&["-u", &plain, "-o", "insert", "-r", "100"])
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("certificate"), "{e}");
    let with_cert = format!(
        "{plain} sslcert={} sslkey={}",
        pki.path("client.crt"),
        pki.path("client.key")
    );
    let r = try_run(&["-u", &with_cert, "-o", "insert", "-r", "100", "-t", "2"])
        .await
        .unwrap_or_else(|e| panic!("with a client certificate: {e}"));
    assert!(r.succeeded());
    assert_eq!(r.operations[0].total.rows, 100);
}

/// A lean connection made as a run makes it: the URL's TLS keys become
/// the run's rustls configuration, its sslmode tokio-postgres's.
async fn lean(url: &str) -> Result<WireConn, WireError> {
    let (mut config, settings) = parse_url_tls(url, "-u").expect("the URL parses");
    let plan = TlsPlan::new(settings, false).expect("the TLS settings are whole");
    config.ssl_mode(plan.mode.tokio_mode());
    let tls = plan.connector().expect("the TLS files are readable");
    WireConn::connect(&config, &tls).await
}

/// Whether the server sees this lean connection as encrypted.
async fn encrypted(w: &mut WireConn) -> bool {
    let a = w
        .simple_query("select 1 from pg_stat_ssl where pid = pg_backend_pid() and ssl")
        .await
        .expect("pg_stat_ssl");
    a.rows == 1
}

/// The lean driver in each sslmode against a server that takes TCP over
/// TLS only: encrypted where the mode allows it, turned away where the
/// certificate does not pass, as tokio-postgres is (see above).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_lean_driver_speaks_every_sslmode() {
    let pki = make_pki();
    let sb = tls_sandbox(&pki);
    let ca = pki.path("ca.pem");
    let wrong = pki.path("wrong-ca.pem");
    for (host, extra) in [
        ("127.0.0.1", "sslmode=prefer".to_string()),
        ("127.0.0.1", "sslmode=require".to_string()),
        ("127.0.0.1", format!("sslmode=verify-ca sslrootcert={ca}")),
        ("localhost", format!("sslmode=verify-full sslrootcert={ca}")),
    ] {
        let mut w = lean(&url(host, &sb, &extra))
            .await
            .unwrap_or_else(|e| panic!("{extra}: {e}"));
        assert!(encrypted(&mut w).await, "{extra}");
        w.close().await;
    }

    // Plain text is turned away by the server itself.
    let e = lean(&url("127.0.0.1", &sb, "sslmode=disable"))
        .await
        .err()
        .expect("no plain text");
    assert_eq!(e.code(), Some("28000"), "{e}");
    assert!(e.to_string().contains("no encryption"), "{e}");

    // verify-full: the name must be the certificate's.
    let e = lean(&url(
        "127.0.0.1",
        &sb,
        &format!("sslmode=verify-full sslrootcert={ca}"),
    ))
    .await
    .err()
    .expect("a name the certificate does not carry");
    let shown = e.to_string();
    eprintln!("lean, verify-full, wrong name: {shown}");
    assert!(
        shown.starts_with("error performing TLS handshake: ")
            && shown.contains("certificate not valid for name \"127.0.0.1\""),
        "{shown}"
    );

    // Another CA fails both checking modes; require does not look.
    for (host, mode) in [("localhost", "verify-full"), ("127.0.0.1", "verify-ca")] {
        let e = lean(&url(
            host,
            &sb,
            &format!("sslmode={mode} sslrootcert={wrong}"),
        ))
        .await
        .err()
        .expect("the wrong CA");
        let shown = e.to_string();
        eprintln!("lean, {mode}, wrong CA: {shown}");
        assert!(
            shown.starts_with("error performing TLS handshake: ")
                && shown.contains("certificate")
                && shown.contains("UnknownIssuer"),
            "{mode}: {shown}"
        );
    }

    // sslnegotiation=direct (PostgreSQL 17) starts with the handshake: a
    // server before 17 takes it for a bad start-up packet and hangs up,
    // and nothing goes in plain text. prefer cannot be direct.
    let e = lean(&url(
        "127.0.0.1",
        &sb,
        "sslmode=require sslnegotiation=direct",
    ))
    .await
    .err()
    .expect("PostgreSQL 15 has no direct TLS");
    eprintln!("lean, direct: {e}");
    assert!(
        e.to_string()
            .starts_with("error performing TLS handshake: "),
        "{e}"
    );
    let e = lean(&url(
        "127.0.0.1",
        &sb,
        "sslmode=prefer sslnegotiation=direct",
    ))
    .await
    .err()
    .expect("prefer is never direct");
    assert!(
        e.to_string()
            .contains("sslnegotiation=direct needs sslmode=require"),
        "{e}"
    );

    // The cancel request of a TLS connection goes over TLS too, and
    // stops the statement.
    let mut w = lean(&url(
        "localhost",
        &sb,
        &format!("sslmode=verify-full sslrootcert={ca}"),
    ))
    .await
    .unwrap();
    let key = w.cancel_key();
    assert!(key.encrypted());
    let sleeper = tokio::spawn(async move { w.simple_query("select pg_sleep(30)").await });
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    key.cancel().await.expect("the cancel request is delivered");
    let r = tokio::time::timeout(std::time::Duration::from_secs(10), sleeper)
        .await
        .expect("the sleep is cancelled")
        .unwrap();
    assert_eq!(
        r.err().and_then(|e| e.code().map(String::from)).as_deref(),
        Some("57014")
    );
}

/// sslmode=prefer against a server without TLS: the lean driver goes on
/// in plain text, as libpq; require is turned away with a clear error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lean_prefer_falls_back_to_plain_text_where_the_server_has_no_tls() {
    let sb = sandbox();
    let mut w = lean(&url("127.0.0.1", &sb, "sslmode=prefer"))
        .await
        .expect("prefer connects");
    assert!(!encrypted(&mut w).await);
    assert!(!w.cancel_key().encrypted());
    w.close().await;
    let e = lean(&url("127.0.0.1", &sb, "sslmode=require"))
        .await
        .err()
        .expect("require needs TLS");
    let shown = e.to_string();
    assert!(
        shown.contains("does not accept TLS") && shown.contains("requires TLS"),
        "{shown}"
    );
    // channel_binding=require cannot be met without TLS: said before any
    // password is sent.
    let e = lean(&url(
        "127.0.0.1",
        &sb,
        "sslmode=prefer channel_binding=require",
    ))
    .await
    .err()
    .expect("no binding in plain text");
    let shown = e.to_string();
    assert!(
        shown.contains("channel_binding=require needs an encrypted connection"),
        "{shown}"
    );
    // With sslmode=disable a run refuses it at once (exit 2).
    let u = url("127.0.0.1", &sb, "sslmode=disable channel_binding=require");
    let out = bin("ysql-bench", &["-u", &u, "-o", "select"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("channel_binding=require"),
        "{}",
        text(&out.stderr)
    );
}

/// SCRAM over TLS binds the login to the connection (SCRAM-SHA-256-PLUS,
/// tls-server-end-point): channel_binding=require succeeds only when the
/// server checked the hash of its own certificate against the client's.
/// Logins that cannot bind (trust, MD5) are refused under require.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scram_over_tls_binds_the_channel() {
    let pki = make_pki();
    let sb = Sandbox::start(SandboxOptions {
        settings: vec![
            ("ssl".into(), "on".into()),
            ("ssl_cert_file".into(), pki.path("server.crt")),
            ("ssl_key_file".into(), pki.path("server.key")),
            ("hba_file".into(), pki.path("pg_hba_scram.conf")),
        ],
        fast: true,
        password: Some("Sekr1tPw".into()),
    })
    .unwrap();
    let c = client(&sb).await;
    c.batch_execute(
        "create role trusted login; \
         set password_encryption = 'md5'; create role md5user login password 'pw-Md5'; \
         set password_encryption = 'scram-sha-256'; create role scramuser login password 'pw-Scram'; \
         grant create on schema public to scramuser;",
    )
    .await
    .unwrap();
    let ca = pki.path("ca.pem");
    let at = |user: &str, password: &str, extra: &str| {
        format!(
            "host=localhost port={} user={user} password={password} dbname=postgres sslmode=verify-full sslrootcert={ca} {extra}",
            sb.port()
        )
    };
    for cb in ["prefer", "require", "disable"] {
        let mut w = lean(&at(
            "scramuser",
            "pw-Scram",
            &format!("channel_binding={cb}"),
        ))
        .await
        .unwrap_or_else(|e| panic!("channel_binding={cb}: {e}"));
        assert!(encrypted(&mut w).await);
        w.close().await;
    }
    // A wrong password is the server's refusal, as without TLS.
    let e = lean(&at("scramuser", "not-it", "channel_binding=require"))
        .await
        .err()
        .expect("a wrong password");
    assert_eq!(e.code(), Some("28P01"), "{e}");
    // Let in without a password, or by MD5: no binding, so refused.
    let e = lean(&at("trusted", "x", "channel_binding=require"))
        .await
        .err()
        .expect("trust cannot bind");
    assert!(e.to_string().contains("without channel binding"), "{e}");
    let mut w = lean(&at("trusted", "x", "")).await.expect("trust");
    assert!(encrypted(&mut w).await);
    w.close().await;
    let e = lean(&at("md5user", "pw-Md5", "channel_binding=require"))
        .await
        .err()
        .expect("MD5 cannot bind");
    assert!(e.to_string().contains("MD5"), "{e}");
    lean(&at("md5user", "pw-Md5", ""))
        .await
        .expect("MD5 over TLS")
        .close()
        .await;
    // A whole run with channel_binding=require: both drivers bind.
    let u = at("scramuser", "pw-Scram", "channel_binding=require");
    let r = try_run(&[
        "-u",
        &u,
        "-o",
        "copy-mem,select",
        "-r",
        "200",
        "--time",
        "1s",
    ])
    .await
    .unwrap_or_else(|e| panic!("a run with channel binding: {e}"));
    assert!(r.succeeded());
    assert_eq!(r.operations[1].driver, "lean");
}

/// A client certificate (pg_hba.conf `cert`) logs the lean driver in; no
/// certificate, no login.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_certificate_logs_the_lean_driver_in() {
    let pki = make_pki();
    let sb = sandbox_with(vec![
        ("ssl".into(), "on".into()),
        ("ssl_cert_file".into(), pki.path("server.crt")),
        ("ssl_key_file".into(), pki.path("server.key")),
        ("ssl_ca_file".into(), pki.path("ca.pem")),
        ("hba_file".into(), pki.path("pg_hba_cert.conf")),
    ]);
    let plain = format!(
        "host=127.0.0.1 port={} user=postgres dbname=postgres sslmode=require",
        sb.port()
    );
    let e = lean(&plain).await.err().expect("no certificate, no login");
    assert_eq!(e.code(), Some("28000"), "{e}");
    assert!(e.to_string().contains("certificate"), "{e}");
    let with_cert = format!(
        "{plain} sslcert={} sslkey={}",
        pki.path("client.crt"),
        pki.path("client.key")
    );
    let mut w = lean(&with_cert).await.expect("the certificate logs in");
    assert!(encrypted(&mut w).await);
    w.close().await;
}

/// A whole run over verify-full: select's workers are on the lean driver
/// (the server takes nothing but TLS, so they were encrypted), and the
/// summary says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_select_run_over_verify_full_is_on_the_lean_driver() {
    let pki = make_pki();
    let sb = tls_sandbox(&pki);
    let u = url(
        "localhost",
        &sb,
        &format!("sslmode=verify-full sslrootcert={}", pki.path("ca.pem")),
    );
    let mut out = Vec::new();
    let r = ysql_bench::run(
        plan_of(&[
            "-u",
            &u,
            "-o",
            "copy-mem,select",
            "-r",
            "500",
            "-t",
            "2",
            "--time",
            "1s",
        ]),
        &mut out,
    )
    .await
    .unwrap_or_else(|e| panic!("verify-full: {e}"));
    let shown = text(&out);
    assert!(r.succeeded(), "{shown}");
    let select = &r.operations[1];
    assert_eq!(select.driver, "lean", "{shown}");
    assert!(select.total.ops > 50, "{shown}");
    assert_eq!(select.total.missing, 0, "{shown}");
    assert!(shown.contains("driver                : lean"), "{shown}");
    assert!(
        r.server.encryption.starts_with("TLSv1."),
        "{}",
        r.server.encryption
    );
}

//! TLS against a real server: a sandbox with ssl=on, a certificate for
//! `localhost` signed by a CA made in the test, and a pg_hba.conf that
//! accepts TCP connections only over TLS (so a run that succeeds proves
//! it was encrypted, and `sslmode=disable` must be turned away).

mod common;
use common::*;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, DnType, IsCa, KeyPair};
use ysql_bench::db::sandbox::Sandbox;

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

//! A throwaway PostgreSQL server: `--sandbox`, and the test harness.
//!
//! `initdb` in a temporary directory with the installed server binaries, a
//! free port on 127.0.0.1, trust authentication, and everything removed when
//! the [`Sandbox`] is dropped (after an error and after Ctrl-C too, since the
//! drop runs when the run's future is dropped). The server runs in its own
//! process group so that a Ctrl-C meant for ysql-bench does not also shut
//! the server down under the queries still in flight; on Linux it is asked
//! to quit if ysql-bench itself dies.
//!
//! PostgreSQL refuses to run as root. When ysql-bench runs as root (as in
//! CI containers), the server runs as the `postgres` system user that the
//! Debian packages create.

use std::fs::{self, File};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tokio_postgres::Config;

use crate::error::{Error, Result};

/// Overrides where the server binaries are looked for.
pub const BINDIR_ENV: &str = "YSQLBENCH_PG_BINDIR";
const READY_TIMEOUT: Duration = Duration::from_secs(60);
const STOP_TIMEOUT: Duration = Duration::from_secs(20);
const SUPERUSER: &str = "postgres";

/// Servers (and initdb runs) going on now, for [`stop_all_now`]: pid and
/// sandbox directory.
static LIVE: std::sync::Mutex<Vec<(u32, PathBuf)>> = std::sync::Mutex::new(Vec::new());

/// Stops every sandbox server at once and removes its directory: for an
/// exit that cannot wait for destructors (a second Ctrl-C).
pub fn stop_all_now() {
    let live = match LIVE.lock() {
        Ok(mut l) => std::mem::take(&mut *l),
        Err(_) => return,
    };
    for (pid, dir) in live {
        let pid = pid as libc::pid_t;
        // SAFETY: signalling and reaping our own child process by its pid.
        unsafe {
            libc::kill(pid, libc::SIGQUIT);
        }
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            // SAFETY: as above; WNOHANG never blocks.
            let r = unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
            if r != 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = fs::remove_dir_all(dir);
    }
}

fn register(pid: u32, dir: &Path) {
    if let Ok(mut l) = LIVE.lock() {
        l.push((pid, dir.to_path_buf()));
    }
}

fn unregister(pid: u32) {
    if let Ok(mut l) = LIVE.lock() {
        l.retain(|(p, _)| *p != pid);
    }
}

/// How the sandbox server is set up.
#[derive(Clone, Debug, Default)]
pub struct SandboxOptions {
    /// Extra `name=value` server settings (`-c`).
    pub settings: Vec<(String, String)>,
    /// Trade durability for speed (fsync off): right for tests, wrong for
    /// measurements meant to resemble a real server.
    pub fast: bool,
    /// Require this password (scram-sha-256) instead of trusting everyone.
    pub password: Option<String>,
}

/// A running throwaway server. Dropping it stops the server and removes
/// its directory.
pub struct Sandbox {
    dir: Option<tempfile::TempDir>,
    bindir: PathBuf,
    port: u16,
    options: SandboxOptions,
    child: Option<Child>,
    run_as: Option<(u32, u32)>,
}

impl Sandbox {
    /// Creates and starts a new server.
    pub fn start(options: SandboxOptions) -> Result<Sandbox> {
        let bindir = find_bindir()?;
        let run_as = server_user()?;
        let dir = tempfile::Builder::new()
            .prefix("ysql-bench-sandbox-")
            .tempdir()
            .map_err(|e| Error::io("cannot create the sandbox directory", e))?;
        if let Some((uid, gid)) = run_as {
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid))
                .map_err(|e| Error::io("cannot give the sandbox directory to postgres", e))?;
        }
        let mut sandbox = Sandbox {
            dir: Some(dir),
            bindir,
            port: 0,
            options,
            child: None,
            run_as,
        };
        sandbox.initdb()?;
        sandbox.start_server()?;
        Ok(sandbox)
    }

    fn root(&self) -> &Path {
        match &self.dir {
            Some(d) => d.path(),
            None => Path::new("/nonexistent"),
        }
    }

    /// The data directory.
    pub fn data_dir(&self) -> PathBuf {
        self.root().join("data")
    }

    /// The server log, for diagnostics.
    pub fn log_path(&self) -> PathBuf {
        self.root().join("postgres.log")
    }

    /// The TCP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A connection configuration for the superuser on the `postgres` database.
    pub fn config(&self) -> Config {
        let mut c = Config::new();
        if let Some(p) = &self.options.password {
            c.password(p.as_str());
        }
        c.host("127.0.0.1")
            .port(self.port)
            .user(SUPERUSER)
            .dbname("postgres")
            .application_name("ysql-bench")
            .connect_timeout(Duration::from_secs(10));
        c
    }

    /// The connection as a libpq key=value string.
    pub fn url(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user={SUPERUSER} dbname=postgres",
            self.port
        )
    }

    fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(self.bindir.join(program));
        if let Some((uid, gid)) = self.run_as {
            use std::os::unix::process::CommandExt;
            cmd.uid(uid).gid(gid);
            // The server's own user may not be able to stat root's cwd.
            cmd.current_dir(self.root());
        }
        cmd
    }

    fn initdb(&self) -> Result<()> {
        let mut cmd = self.command("initdb");
        match &self.options.password {
            Some(p) => {
                let pwfile = self.root().join("pwfile");
                fs::write(&pwfile, p)
                    .map_err(|e| Error::io("cannot write the password file", e))?;
                if let Some((uid, gid)) = self.run_as {
                    std::os::unix::fs::chown(&pwfile, Some(uid), Some(gid))
                        .map_err(|e| Error::io("cannot give the password file to postgres", e))?;
                }
                cmd.args(["-A", "scram-sha-256"])
                    .arg("--pwfile")
                    .arg(pwfile);
            }
            None => {
                cmd.args(["-A", "trust"]);
            }
        }
        let child = cmd
            .arg("-D")
            .arg(self.data_dir())
            .args(["-U", SUPERUSER, "-E", "UTF8", "--locale=C"])
            .arg("--no-sync")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Error::io("cannot run initdb", e))?;
        // Known to stop_all_now while it runs: a second Ctrl-C during the
        // start must not leave initdb running and its directory behind.
        let pid = child.id();
        register(pid, self.root());
        let out = child.wait_with_output();
        unregister(pid);
        let out = out.map_err(|e| Error::io("cannot run initdb", e))?;
        if !out.status.success() {
            return Err(Error::run(format!(
                "initdb failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(())
    }

    /// Starts the server (again) on its data directory. The first start
    /// picks a free port; a restart keeps it, so that clients can reconnect.
    pub fn start_server(&mut self) -> Result<()> {
        if self.child.is_some() {
            return Ok(());
        }
        let keep_port = self.port != 0;
        let mut last_error = String::new();
        for _attempt in 0..5 {
            if !keep_port {
                self.port = free_port()?;
            }
            match self.spawn_and_wait() {
                Ok(()) => return Ok(()),
                Err(e) => {
                    last_error = e.to_string();
                    // Another process may have taken the port between our
                    // probe and the server's bind: try another one.
                    if keep_port || !log_says_port_taken(&self.log_path()) {
                        break;
                    }
                }
            }
        }
        Err(Error::run(format!(
            "the sandbox server did not start: {last_error}"
        )))
    }

    fn spawn_and_wait(&mut self) -> Result<()> {
        let log = File::create(self.log_path())
            .map_err(|e| Error::io("cannot create the sandbox server log", e))?;
        let log2 = log
            .try_clone()
            .map_err(|e| Error::io("cannot create the sandbox server log", e))?;
        let mut cmd = self.command("postgres");
        cmd.arg("-D")
            .arg(self.data_dir())
            .arg("-p")
            .arg(self.port.to_string())
            .arg("-k")
            .arg(self.root())
            .args(["-c", "listen_addresses=127.0.0.1"])
            .args(["-c", "max_connections=300"]);
        if self.options.fast {
            cmd.args(["-c", "fsync=off", "-c", "full_page_writes=off"]);
        }
        for (k, v) in &self.options.settings {
            cmd.arg("-c").arg(format!("{k}={v}"));
        }
        cmd.stdin(Stdio::null()).stdout(log).stderr(log2);
        {
            use std::os::unix::process::CommandExt;
            cmd.process_group(0);
            #[cfg(target_os = "linux")]
            // SAFETY: prctl and getppid are async-signal-safe and touch no
            // memory of the parent; this runs in the child before exec.
            unsafe {
                cmd.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGQUIT);
                    Ok(())
                });
            }
        }
        let child = cmd
            .spawn()
            .map_err(|e| Error::io("cannot start the sandbox server", e))?;
        register(child.id(), self.root());
        self.child = Some(child);
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                unregister(child.id());
                self.child = None;
                return Err(Error::run(format!(
                    "postgres exited with {status}: {}",
                    log_tail(&self.log_path())
                )));
            }
            if postmaster_ready(&self.data_dir()) {
                return Ok(());
            }
            if Instant::now() > deadline {
                self.stop_server();
                return Err(Error::run(format!(
                    "postgres was not ready after {}s: {}",
                    READY_TIMEOUT.as_secs(),
                    log_tail(&self.log_path())
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the server with a fast shutdown (open sessions are ended),
    /// keeping its data: [`Sandbox::start_server`] starts it again.
    pub fn stop_server(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        unregister(child.id());
        let pid = child.id() as libc::pid_t;
        // SAFETY: signalling our own child process by its pid.
        unsafe {
            libc::kill(pid, libc::SIGINT);
        }
        let deadline = Instant::now() + STOP_TIMEOUT;
        loop {
            match child.try_wait() {
                Ok(Some(_)) => return,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                _ => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return;
                }
            }
        }
    }

    /// Whether the server process is running.
    pub fn is_running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => matches!(c.try_wait(), Ok(None)),
            None => false,
        }
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        self.stop_server();
        if let Some(dir) = self.dir.take() {
            let _ = dir.close();
        }
    }
}

/// Where `initdb` and `postgres` are: `$YSQLBENCH_PG_BINDIR`, then
/// `pg_config --bindir`, then PATH, then the newest /usr/lib/postgresql/*/bin.
pub fn find_bindir() -> Result<PathBuf> {
    let has_server = |d: &Path| d.join("initdb").is_file() && d.join("postgres").is_file();
    if let Ok(d) = std::env::var(BINDIR_ENV)
        && !d.is_empty()
    {
        let d = PathBuf::from(d);
        if has_server(&d) {
            return Ok(d);
        }
        return Err(Error::usage(format!(
            "{BINDIR_ENV}={} has no initdb and postgres: point it at PostgreSQL's bin directory",
            d.display()
        )));
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        let d = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if out.status.success() && has_server(&d) {
            return Ok(d);
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        for d in std::env::split_paths(&path) {
            if has_server(&d) {
                return Ok(d);
            }
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            Some((v, e.path().join("bin")))
        })
        .filter(|(_, d)| has_server(d))
        .collect();
    versions.sort();
    versions.pop().map(|(_, d)| d).ok_or_else(|| {
        Error::usage(
            "--sandbox needs PostgreSQL's server binaries (initdb, postgres), which were not found: install them (Debian/Ubuntu: apt-get install postgresql) or set YSQLBENCH_PG_BINDIR",
        )
    })
}

/// The uid and gid to run the server as: none when we are not root, the
/// `postgres` user when we are. The tests run PgBouncer, which refuses
/// root too, the same way.
pub fn service_user() -> Result<Option<(u32, u32)>> {
    server_user()
}

fn server_user() -> Result<Option<(u32, u32)>> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Ok(None);
    }
    let passwd = fs::read_to_string("/etc/passwd").unwrap_or_default();
    parse_passwd_user(&passwd, SUPERUSER).map(Some).ok_or_else(|| {
        Error::usage(
            "--sandbox runs PostgreSQL, which refuses to run as root, and there is no 'postgres' user to run it as: run ysql-bench as another user, or create one (useradd -r postgres)",
        )
    })
}

fn parse_passwd_user(passwd: &str, name: &str) -> Option<(u32, u32)> {
    passwd.lines().find_map(|line| {
        let f: Vec<&str> = line.split(':').collect();
        if f.len() >= 4 && f[0] == name {
            Some((f[2].parse().ok()?, f[3].parse().ok()?))
        } else {
            None
        }
    })
}

/// A port on 127.0.0.1 that nothing listens on now, for a server (or a test's
/// listener) about to start.
///
/// The port comes from below the kernel's ephemeral range
/// (`ip_local_port_range`), not from binding port 0: a port the kernel hands
/// out there is one it also hands to outgoing connections, and with many
/// clients connecting at once (a test suite, a benchmark) one of them took it
/// between the probe and the server's bind. Below that range only another
/// program picking a port on purpose can collide, and the random pick makes
/// that unlikely; the caller still retries when its bind fails.
pub fn free_port() -> Result<u16> {
    use rand::RngExt;
    let ephemeral_low = ephemeral_low();
    if ephemeral_low > LOWEST_PORT + 1000 {
        let mut rng = rand::rng();
        for _ in 0..200 {
            let port = rng.random_range(LOWEST_PORT..ephemeral_low);
            if TcpListener::bind(("127.0.0.1", port)).is_ok() {
                return Ok(port);
            }
        }
    }
    // A machine whose ephemeral range starts low (or a crowded one): the
    // kernel's pick, with the race above.
    let l = TcpListener::bind("127.0.0.1:0")
        .map_err(|e| Error::io("cannot find a free port on 127.0.0.1", e))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| Error::io("cannot find a free port on 127.0.0.1", e))
}

/// The lowest port [`free_port`] picks: above the ports of well-known
/// services.
const LOWEST_PORT: u16 = 10000;

/// The first port the kernel hands to outgoing connections (Linux's default
/// where it cannot be read).
fn ephemeral_low() -> u16 {
    fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(32768)
}

/// postmaster.pid's 8th line says `ready` once the server accepts
/// connections (PostgreSQL 10 and later).
fn postmaster_ready(data_dir: &Path) -> bool {
    fs::read_to_string(data_dir.join("postmaster.pid"))
        .map(|s| {
            s.lines()
                .nth(7)
                .map(|l| l.trim() == "ready")
                .unwrap_or(false)
        })
        .unwrap_or(false)
}

fn log_says_port_taken(log: &Path) -> bool {
    fs::read_to_string(log)
        .map(|s| s.contains("could not bind") || s.contains("Address already in use"))
        .unwrap_or(false)
}

fn log_tail(log: &Path) -> String {
    let text = fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().rev().take(5).collect();
    lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_free_port_is_below_the_ephemeral_range_and_bindable() {
        let low = ephemeral_low();
        for _ in 0..20 {
            let port = free_port().unwrap();
            if low > LOWEST_PORT + 1000 {
                assert!(
                    (LOWEST_PORT..low).contains(&port),
                    "{port} (range from {low})"
                );
            }
            TcpListener::bind(("127.0.0.1", port)).unwrap();
        }
    }

    #[test]
    fn the_postgres_user_is_found_in_passwd() {
        let passwd = "root:x:0:0:root:/root:/bin/bash\npostgres:x:101:104:PostgreSQL administrator:/var/lib/postgresql:/bin/bash\n";
        assert_eq!(parse_passwd_user(passwd, "postgres"), Some((101, 104)));
        assert_eq!(parse_passwd_user(passwd, "nobody"), None);
    }
}

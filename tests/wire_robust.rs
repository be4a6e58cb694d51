//! The lean driver (`src/db/wire/`) against a server that does not keep
//! to the protocol: a listener on 127.0.0.1 that reads the client's
//! start-up message and then answers, at each stage (start-up and
//! authentication, a simple query, a Parse, an Execute), with arbitrary
//! bytes or with well-framed messages of the wrong type or length. The
//! connection must fail with a named error (`WireError::Protocol` saying
//! what was wrong, or `Closed` when the server hung up in the middle),
//! never panic, never hang (every exchange is bounded by a timeout, and
//! the fake server keeps the socket open so that only the bytes can end
//! it), and never go on out of step with the stream. Last, a run through
//! a proxy that garbles one answer goes on as after a lost connection.
//!
//! No database is mocked here: these are servers that misbehave on
//! purpose, which a real PostgreSQL cannot be made to do; the run at the
//! end goes to a real throwaway server.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use proptest::prelude::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use ysql_bench::db::tls::Tls;
use ysql_bench::db::wire::{Rows, WireConn, WireError};

use common::{plan_of, run_args, sandbox, spawn_run};

/// Longer than any exchange here takes; a driver that waits past it hangs.
const PATIENCE: Duration = Duration::from_secs(5);

/// One message as a server frames it.
fn msg(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![tag];
    m.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
    m.extend_from_slice(body);
    m
}

/// A header alone: a tag and a length word that says what it likes.
fn header(tag: u8, len: u32) -> Vec<u8> {
    let mut m = vec![tag];
    m.extend_from_slice(&len.to_be_bytes());
    m
}

fn error_body(fields: &[(u8, &str)]) -> Vec<u8> {
    let mut b = Vec::new();
    for (k, v) in fields {
        b.push(*k);
        b.extend_from_slice(v.as_bytes());
        b.push(0);
    }
    b.push(0);
    b
}

fn ready() -> Vec<u8> {
    msg(b'Z', b"I")
}

/// A trust login: AuthenticationOk, a key, ReadyForQuery.
fn logged_in() -> Vec<u8> {
    [
        msg(b'R', &[0, 0, 0, 0]),
        msg(b'K', &[0, 0, 0, 7, 0, 0, 0, 9]),
        ready(),
    ]
    .concat()
}

/// The answer to a Parse+Describe of a statement without parameters.
fn parsed() -> Vec<u8> {
    [msg(b'1', b""), msg(b't', &[0, 0]), msg(b'n', b""), ready()].concat()
}

/// Where the fake server puts its bad answer.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Stage {
    /// Instead of the start-up's answer.
    StartUp,
    /// As the answer to `simple_query`.
    Query,
    /// As the answer to `prepare`.
    Prepare,
    /// As the answer to `execute` of a statement prepared as it should be.
    Execute,
    /// As the answer to a pipelined unit (`queue`, `send`, `answer`) of a
    /// statement prepared as it should be.
    Pipelined,
}

/// What the fake server does once it has sent its bad answer.
#[derive(Clone, Debug)]
enum After {
    /// Keeps the socket open until the client closes it, so that the
    /// driver must tell from the bytes alone.
    Hold,
    /// Closes the connection.
    HangUp,
    /// Answers the client's next request with these bytes, then holds.
    Answer(Vec<u8>),
}

impl After {
    fn hang_up(yes: bool) -> After {
        if yes { After::HangUp } else { After::Hold }
    }
}

/// The fake server: accepts one connection, reads the start-up message,
/// plays its part up to `stage`, sends `bad`, then does as `after` says.
/// Returns the port, and the requests it read after the start-up (raw
/// bytes, one per request).
async fn fake_server(
    stage: Stage,
    bad: Vec<u8>,
    after: After,
) -> (u16, tokio::task::JoinHandle<Vec<Vec<u8>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("address").port();
    let task = tokio::spawn(async move {
        let mut seen = Vec::new();
        let Ok((mut s, _)) = listener.accept().await else {
            return seen;
        };
        if read_start_up(&mut s).await.is_none() {
            return seen;
        }
        let script: &[Vec<u8>] = match stage {
            Stage::StartUp => &[],
            Stage::Query | Stage::Prepare => &[logged_in()],
            Stage::Execute | Stage::Pipelined => &[logged_in(), parsed()],
        };
        for (i, answer) in script.iter().enumerate() {
            if i > 0 {
                match read_request(&mut s).await {
                    Some(r) => seen.push(r),
                    None => return seen,
                }
            }
            if s.write_all(answer).await.is_err() {
                return seen;
            }
        }
        if stage != Stage::StartUp {
            match read_request(&mut s).await {
                Some(r) => seen.push(r),
                None => return seen,
            }
        }
        let _ = s.write_all(&bad).await;
        match after {
            After::HangUp => return seen,
            After::Hold => {}
            After::Answer(answer) => {
                match read_request(&mut s).await {
                    Some(r) => seen.push(r),
                    None => return seen,
                }
                let _ = s.write_all(&answer).await;
            }
        }
        // Whatever else the client sends, until it closes: kept apart
        // as further requests.
        while let Some(r) = read_request(&mut s).await {
            seen.push(r);
        }
        seen
    });
    (port, task)
}

/// Reads the untagged start-up message.
async fn read_start_up(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).await.ok()?;
    let mut body = vec![0; (u32::from_be_bytes(len) as usize).checked_sub(4)?];
    s.read_exact(&mut body).await.ok()?;
    Some(body)
}

/// Reads client messages up to one that asks for an answer (Query, Sync,
/// a password, the end of a COPY) or ends the session: one request.
async fn read_request(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut all = Vec::new();
    loop {
        let mut head = [0u8; 5];
        s.read_exact(&mut head).await.ok()?;
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        let mut body = vec![0; len.checked_sub(4)?];
        s.read_exact(&mut body).await.ok()?;
        all.extend_from_slice(&head);
        all.extend_from_slice(&body);
        if matches!(head[0], b'Q' | b'S' | b'p' | b'X' | b'f' | b'c') {
            return Some(all);
        }
    }
}

/// One unit as `--pipeline` sends it: queued with its Sync, written, and
/// its answer read (cancel-safe, from what the connection kept).
async fn pipelined(c: &mut WireConn, st: ysql_bench::db::wire::Stmt) -> Result<(), WireError> {
    c.queue(st, &[])?;
    c.queue_sync();
    c.send().await?;
    c.answer(true).await.map(drop)
}

fn config(port: u16) -> tokio_postgres::Config {
    let mut c = tokio_postgres::Config::new();
    c.host("127.0.0.1")
        .port(port)
        .user("u")
        .password("pw")
        .dbname("d");
    c
}

/// What the driver made of a bad answer at `stage`: the error of the
/// call that met it, and whether the connection then counts as closed.
struct Met {
    error: WireError,
    closed: bool,
    /// Requests the client sent after the bad answer.
    after: usize,
}

/// Runs the calls up to `stage` on a fresh fake server that answers
/// `bad` there. Ok(None) when every call succeeded (the bad answer was
/// taken); a call that takes longer than [`PATIENCE`] fails the test.
async fn meet(stage: Stage, bad: Vec<u8>, hang_up: bool) -> Option<Met> {
    let (port, server) = fake_server(stage, bad, After::hang_up(hang_up)).await;
    let calls = async {
        let mut c = match WireConn::connect(&config(port), &Tls::Plain).await {
            Ok(c) => c,
            Err(error) => return Some((error, true)),
        };
        let r = match stage {
            Stage::StartUp => Ok(()),
            Stage::Query => c.simple_query("select 1").await.map(drop),
            Stage::Prepare => c.prepare("select 1").await.map(drop),
            Stage::Execute => match c.prepare("select 1").await {
                Ok(st) => c.execute(st, &[]).await.map(drop),
                Err(e) => panic!("the good prepare failed: {e}"),
            },
            Stage::Pipelined => match c.prepare("select 1").await {
                Ok(st) => pipelined(&mut c, st).await,
                Err(e) => panic!("the good prepare failed: {e}"),
            },
        };
        let closed = c.is_closed();
        drop(c);
        r.err().map(|error| (error, closed))
    };
    let met = tokio::time::timeout(PATIENCE, calls)
        .await
        .unwrap_or_else(|_| panic!("the driver hangs at {stage:?}"));
    let seen = tokio::time::timeout(PATIENCE, server)
        .await
        .expect("the fake server ends once the client is gone")
        .expect("the fake server does not panic");
    let before = match stage {
        Stage::StartUp => 0,
        Stage::Query | Stage::Prepare => 1,
        Stage::Execute | Stage::Pipelined => 2,
    };
    met.map(|(error, closed)| Met {
        error,
        closed,
        after: seen.len().saturating_sub(before),
    })
}

/// Asserts a protocol error whose words contain `words`, and a
/// connection that counts as closed after it.
#[track_caller]
fn protocol(met: Option<Met>, words: &str) {
    let met = met.expect("the bad answer is refused, not taken");
    match &met.error {
        WireError::Protocol(why) => assert!(why.contains(words), "{why:?} lacks {words:?}"),
        other => panic!("not a protocol error: {other:?}"),
    }
    assert!(met.closed, "the connection goes on after: {}", met.error);
    assert_eq!(met.after, 0, "requests sent after: {}", met.error);
    assert!(
        met.error
            .to_string()
            .starts_with("unexpected message from server: "),
        "{}",
        met.error
    );
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

/// Well-framed messages that do not belong at each stage, lengths that
/// no message of their type has, bodies that are not what their type
/// says: each a protocol error that names what came.
#[tokio::test]
async fn messages_out_of_place_are_named_protocol_errors_at_every_stage() {
    use Stage::*;
    let no_sqlstate = msg(b'E', &error_body(&[(b'S', "ERROR"), (b'M', "boom")]));
    #[rustfmt::skip]
    let cases: Vec<(Stage, Vec<u8>, &str)> = vec![
        // Start-up and authentication.
        (StartUp, msg(b'D', &[0, 0]), "the server sent a DataRow ('D') while logging in"),
        (StartUp, msg(b'C', b"SELECT 1\0"), "CommandComplete ('C') while logging in"),
        (StartUp, msg(b'x', b""), "unknown type 'x'"),
        (StartUp, header(b'R', 3), "Authentication ('R') of length 3"),
        (StartUp, header(b'R', 0), "of length 0"),
        (StartUp, msg(b'R', &[0, 0, 0]), "Authentication ('R') of length 7"),
        (StartUp, msg(b'R', &[0, 0, 0, 5]), "MD5 without salt"),
        (StartUp, msg(b'R', &[0, 0, 0, 11, b'x']), "SASL continue without a start"),
        (StartUp, msg(b'R', &[0, 0, 0, 12, b'x']), "SASL final without a start"),
        (StartUp, msg(b'K', &[0, 0, 0, 1]), "BackendKeyData ('K') of length 8"),
        (StartUp, no_sqlstate.clone(), "an error without a SQLSTATE"),
        (StartUp, msg(b'Z', b"X"), "transaction status"),
        (StartUp, msg(b'Z', b""), "ReadyForQuery ('Z') of length 4"),
        (StartUp, header(b'D', 1 << 31), "DataRow ('D') of length 2147483648"),
        // The answer to a simple query.
        (Query, msg(b'C', b"SELECT 1"), "CommandComplete ('C') whose tag"),
        (Query, header(b'Z', 0), "ReadyForQuery ('Z') of length 0"),
        (Query, header(b'Z', 3), "of length 3"),
        (Query, header(b'D', 1 << 31), "of length 2147483648"),
        (Query, header(b'C', 1 << 31), "CommandComplete ('C') of length"),
        (Query, no_sqlstate.clone(), "an error without a SQLSTATE"),
        (Query, msg(b'E', b"CXX000\0"), "without its terminator"),
        (Query, msg(b'E', b"CXX000\0\0junk"), "bytes after its end"),
        (Query, msg(b'E', b"C\xff\0\0"), "not UTF-8"),
        (Query, msg(b'T', &[0, 1, b'a', 0]), "RowDescription ('T') ends early"),
        (Query, msg(b'\x07', b""), "unknown type 0x07"),
        (Query, msg(b'R', &[0, 0, 0, 0]), "Authentication ('R') while waiting"),
        (Query, msg(b'K', &[0; 8]), "BackendKeyData ('K') while waiting"),
        (Query, msg(b'v', &[0; 8]), "NegotiateProtocolVersion ('v') while"),
        // The answer to a Parse.
        (Prepare, msg(b't', &[0, 2, 0, 0, 0, 23]), "ParameterDescription ('t') of 6 bytes"),
        (Prepare, msg(b'D', &[0, 0]), "a DataRow ('D') while preparing"),
        (Prepare, msg(b'C', b"SELECT 1\0"), "CommandComplete ('C') while preparing"),
        (Prepare, no_sqlstate.clone(), "an error without a SQLSTATE"),
        (Prepare, header(b'1', 5), "ParseComplete ('1') of length 5"),
        // The answer to an Execute.
        (Execute, header(b'2', 8), "BindComplete ('2') of length 8"),
        (Execute, no_sqlstate.clone(), "an error without a SQLSTATE"),
        (Execute, msg(b'Q', b"x\0"), "unknown type 'Q'"),
        (Execute, msg(b'K', &[0; 8]), "BackendKeyData ('K') while"),
        // The answer to a pipelined unit.
        (Pipelined, header(b'2', 8), "BindComplete ('2') of length 8"),
        (Pipelined, no_sqlstate, "an error without a SQLSTATE"),
        (Pipelined, msg(b'K', &[0; 8]), "BackendKeyData ('K') while waiting for a pipelined unit's answer"),
        (Pipelined, msg(b'G', &[0, 0, 0]), "CopyInResponse ('G') while waiting for a pipelined unit's answer"),
    ];
    for (stage, bad, words) in cases {
        let met = meet(stage, bad.clone(), false).await;
        let Some(m) = &met else {
            panic!("{stage:?}: {bad:?} is taken");
        };
        if stage == StartUp {
            // A connection not made: nothing to be closed.
            assert!(
                matches!(&m.error, WireError::Protocol(w) if w.contains(words)),
                "{stage:?} {bad:?}: {:?}",
                m.error
            );
        } else {
            protocol(met, words);
        }
    }
}

/// A message cut short, then the server hangs up: the connection is
/// lost (as when a server dies mid-answer), at every stage.
#[tokio::test]
async fn a_message_cut_short_then_the_end_of_the_connection_is_a_lost_connection() {
    for stage in [
        Stage::StartUp,
        Stage::Query,
        Stage::Prepare,
        Stage::Execute,
        Stage::Pipelined,
    ] {
        let cut = msg(b'D', &[0, 1, 0, 0, 0, 5, b'h', b'e', b'l', b'l', b'o'])[..9].to_vec();
        let met = meet(stage, cut, true).await.expect("an error");
        assert!(met.error.is_closed(), "{stage:?}: {:?}", met.error);
        assert!(met.closed, "{stage:?}");
    }
}

/// A CopyInResponse to a statement run as a query (a COPY FROM STDIN
/// where none was meant): the driver answers it with a CopyFail and
/// reads the server's error, instead of waiting for a ReadyForQuery that
/// a server in COPY never sends.
#[tokio::test]
async fn a_copy_in_response_to_a_query_is_failed_not_waited_on() {
    let copy_in = msg(b'G', &[0, 0, 1, 0, 0]);
    let after = [
        msg(
            b'E',
            &error_body(&[
                (b'S', "ERROR"),
                (b'C', "57014"),
                (b'M', "COPY from stdin failed"),
            ]),
        ),
        ready(),
    ]
    .concat();
    for stage in [Stage::Query, Stage::Execute] {
        let (port, server) =
            fake_server(stage, copy_in.clone(), After::Answer(after.clone())).await;
        let steps = async {
            let mut c = WireConn::connect(&config(port), &Tls::Plain)
                .await
                .expect("logged in");
            let e = match stage {
                Stage::Query => c.simple_query("copy t from stdin").await,
                _ => {
                    let st = c.prepare("copy t from stdin").await.expect("prepared");
                    c.execute(st, &[]).await
                }
            }
            .expect_err("the COPY fails");
            assert_eq!(e.code(), Some("57014"), "{e:?}");
            assert!(!c.is_closed());
        };
        tokio::time::timeout(PATIENCE, steps)
            .await
            .unwrap_or_else(|_| panic!("the driver waits on the COPY at {stage:?}"));
        let seen = tokio::time::timeout(PATIENCE, server)
            .await
            .expect("the server ends")
            .expect("no panic");
        assert_eq!(
            seen.last().map(|r| r[0]),
            Some(b'f'),
            "a CopyFail: {seen:?}"
        );
    }
}

/// Bug: a length below 4 was read as 4, so that a ReadyForQuery of
/// length 0 ended the answer, and the query succeeded on garbage.
#[tokio::test]
async fn a_ready_for_query_of_length_zero_is_not_taken_for_the_end_of_an_answer() {
    let bad = [msg(b'C', b"SELECT 1\0"), header(b'Z', 0)].concat();
    protocol(meet(Stage::Query, bad, false).await, "of length 0");
}

/// Bug: the read buffer grew at once to the next power of two of the
/// length a header claimed: 2^31 made it allocate 4 GiB (and abort where
/// that fails); 2^31 - 1, 2 GiB, before a byte of the body came.
#[tokio::test]
async fn a_length_of_two_gigabytes_is_refused_or_waited_for_not_allocated() {
    protocol(
        meet(Stage::Execute, header(b'D', 1 << 31), false).await,
        "DataRow ('D') of length 2147483648",
    );
    // A DataRow may be that long: it is waited for, until the server
    // hangs up, without allocating it (the decoder's own tests measure
    // the buffer).
    let met = meet(Stage::Execute, header(b'D', (1 << 31) - 1), true)
        .await
        .expect("an error");
    assert!(met.error.is_closed(), "{:?}", met.error);
}

/// Bug: an ErrorResponse without a SQLSTATE failed the call, but the
/// connection went on with the rest of that answer unread: the next call
/// read it as its own (here: the next query "succeeded" on the last
/// one's ReadyForQuery without its own answer being read).
#[tokio::test]
async fn after_a_protocol_error_the_connection_is_closed_not_out_of_step() {
    let bad = [
        msg(b'E', &error_body(&[(b'S', "ERROR"), (b'M', "boom")])),
        ready(),
    ]
    .concat();
    let (port, server) = fake_server(Stage::Query, bad, After::Hold).await;
    let steps = async {
        let mut c = WireConn::connect(&config(port), &Tls::Plain)
            .await
            .expect("logged in");
        let first = c.simple_query("select 1").await;
        assert!(matches!(first, Err(WireError::Protocol(_))), "{first:?}");
        assert!(c.is_closed());
        let second = c.simple_query("select 2").await;
        assert!(matches!(second, Err(WireError::Closed(None))), "{second:?}");
    };
    tokio::time::timeout(PATIENCE, steps)
        .await
        .expect("no hang");
    let seen = tokio::time::timeout(PATIENCE, server)
        .await
        .expect("the server ends")
        .expect("no panic");
    assert_eq!(seen.len(), 1, "only the first query was sent: {seen:?}");
}

/// Bug: a statement the client could not encode (a NUL inside) left
/// half its message in the write buffer, sent ahead of the next request:
/// a Query of length 0 that the server takes for a protocol violation.
#[tokio::test]
async fn a_statement_with_a_nul_does_not_leave_half_a_message_for_the_next() {
    let answer = [msg(b'C', b"SELECT 1\0"), ready()].concat();
    let (port, server) = fake_server(Stage::Query, answer, After::Hold).await;
    let steps = async {
        let mut c = WireConn::connect(&config(port), &Tls::Plain)
            .await
            .expect("logged in");
        let e = c.simple_query("select '\0'").await.unwrap_err();
        assert!(matches!(e, WireError::Unsupported(_)), "{e:?}");
        let e = c.prepare("select '\0'").await.unwrap_err();
        assert!(matches!(e, WireError::Unsupported(_)), "{e:?}");
        assert!(!c.is_closed());
        let a = c.simple_query("select 1").await.expect("a clean query");
        assert_eq!(a.affected, 1);
    };
    tokio::time::timeout(PATIENCE, steps)
        .await
        .expect("no hang");
    let seen = tokio::time::timeout(PATIENCE, server)
        .await
        .expect("the server ends")
        .expect("no panic");
    assert_eq!(seen.first(), Some(&msg(b'Q', b"select 1\0")), "{seen:?}");
}

/// A row of another width than the rows before it, or whose value runs
/// past its message, fails the call half-way through the answer: the
/// connection ends with it (the rest of the answer is unread).
#[tokio::test]
async fn a_row_out_of_shape_ends_the_connection() {
    let two = msg(b'D', &[0, 2, 0, 0, 0, 1, b'1', 0, 0, 0, 1, b'2']);
    let one = msg(b'D', &[0, 1, 0, 0, 0, 1, b'1']);
    let long = msg(b'D', &[0, 1, 0, 0, 0, 9, b'1']);
    for bad in [[two, one.clone()].concat(), long] {
        let (port, _server) = fake_server(Stage::Query, bad, After::Hold).await;
        let steps = async {
            let mut c = WireConn::connect(&config(port), &Tls::Plain)
                .await
                .expect("logged in");
            let mut rows = Rows::new();
            let e = c.simple_rows("select", &mut rows).await.unwrap_err();
            assert!(matches!(e, WireError::Protocol(_)), "{e:?}");
            assert!(c.is_closed(), "{e}");
        };
        tokio::time::timeout(PATIENCE, steps)
            .await
            .expect("no hang");
    }
}

/// In the extended protocol a DataRow comes without a RowDescription
/// when the portal was not described (the driver's Execute does not ask
/// for one): counted, not refused.
#[tokio::test]
async fn a_data_row_without_a_description_is_counted_on_execute() {
    let answer = [
        msg(b'2', b""),
        msg(b'D', &[0, 1, 0, 0, 0, 1, b'7']),
        msg(b'C', b"SELECT 1\0"),
        ready(),
    ]
    .concat();
    let (port, _server) = fake_server(Stage::Execute, answer, After::Hold).await;
    let steps = async {
        let mut c = WireConn::connect(&config(port), &Tls::Plain)
            .await
            .expect("logged in");
        let st = c.prepare("select 1").await.expect("prepared");
        c.execute(st, &[]).await
    };
    let a = tokio::time::timeout(PATIENCE, steps)
        .await
        .expect("no hang")
        .expect("the answer is taken");
    assert_eq!((a.rows, a.affected), (1, 1));
}

/// What a server that is not PostgreSQL says first is refused at once,
/// not waited on: an HTTP server's "HTTP/1.1 400" reads as a
/// CopyOutResponse of 1.4 GB.
#[tokio::test]
async fn a_server_that_speaks_http_is_refused_at_once() {
    let http = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n".to_vec();
    let met = meet(Stage::StartUp, http, false).await.expect("an error");
    let WireError::Protocol(why) = &met.error else {
        panic!("{:?}", met.error);
    };
    assert!(why.contains("CopyOutResponse ('H') of length"), "{why}");
}

fn arbitrary_stage() -> impl Strategy<Value = Stage> {
    prop::sample::select(vec![
        Stage::StartUp,
        Stage::Query,
        Stage::Prepare,
        Stage::Execute,
        Stage::Pipelined,
    ])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Arbitrary bytes at any stage, the server then hanging up or not:
    /// an error (or, by chance, an answer the protocol allows), within
    /// the time, without a panic; and a protocol error at once when the
    /// first byte is no message type at all.
    #[test]
    fn arbitrary_bytes_at_any_stage_fail_cleanly(
        stage in arbitrary_stage(),
        bytes in prop::collection::vec(any::<u8>(), 1..300),
        hang_up in any::<bool>(),
    ) {
        // Kept open, a stream that ends inside a message would be waited
        // on as a slow server is: only the bytes that cannot be a message
        // are cases here.
        let known = b"RKSZTDCENAI123nstGHWdcVv".contains(&bytes[0]);
        if !hang_up && known {
            return Ok(());
        }
        let met = rt().block_on(meet(stage, bytes.clone(), hang_up));
        if !known {
            let met = met.expect("refused");
            prop_assert!(matches!(met.error, WireError::Protocol(_)), "{:?}", met.error);
            prop_assert!(met.closed);
        } else if let Some(met) = met {
            prop_assert!(met.closed || stage == Stage::StartUp, "{:?}", met.error);
        }
    }
}

/// A run whose lean connection gets one garbled answer (an ErrorResponse
/// without a SQLSTATE, through a proxy in front of a real server) goes
/// on as after a lost connection: the unit fails, the worker makes a new
/// connection, and the run ends without a failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_goes_on_after_a_garbled_answer_as_after_a_lost_connection() {
    let sb = sandbox();
    run_args(&sb, &["-o", "copy-mem", "-r", "1000"]).await;
    let garble = Arc::new(AtomicBool::new(true));
    let proxy = proxy(sb.port(), garble.clone()).await;
    let url = format!("host=127.0.0.1 port={proxy} user=postgres dbname=postgres");
    let p = plan_of(&[
        "-u",
        &url,
        "-o",
        "select",
        "-r",
        "1000",
        "-t",
        "1",
        "--time",
        "3s",
        "--no-server-stats",
    ]);
    let (report, text) = spawn_run(p).await.expect("the run task");
    let report = report.expect("the run completes");
    let op = &report.operations[0];
    assert!(!garble.load(Ordering::SeqCst), "one answer was garbled");
    assert!(op.failure.is_none(), "{text}");
    assert_eq!(op.driver, "lean", "{text}");
    assert_eq!(op.total.failed(), 1, "{text}");
    assert!(op.total.reconnects >= 1, "{text}");
    let last = op.intervals.last().expect("intervals");
    assert!(last.ops > 0, "{:?}", op.intervals);
}

/// Which Bind of a connection gets the garbled answer: late enough that
/// only a worker's connection has that many.
const GARBLED_BIND: usize = 50;

/// A TCP proxy on 127.0.0.1 to the server on `port`: passes the bytes
/// both ways, and while `garble` is set, puts an ErrorResponse without a
/// SQLSTATE ahead of the answer to a connection's [`GARBLED_BIND`]th Bind
/// (once: it clears `garble`). Returns its port.
async fn proxy(port: u16, garble: Arc<AtomicBool>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let own = listener.local_addr().expect("address").port();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let Ok(server) = TcpStream::connect(("127.0.0.1", port)).await else {
                continue;
            };
            let _ = client.set_nodelay(true);
            let _ = server.set_nodelay(true);
            let (mut cr, mut cw) = client.into_split();
            let (mut sr, mut sw) = server.into_split();
            let due = Arc::new(AtomicBool::new(false));
            let binds = Arc::new(AtomicUsize::new(0));
            let (due_up, garble_up) = (due.clone(), garble.clone());
            // Client to server: frames the client's messages to count
            // its Binds (the first messages have no tag: SSLRequest,
            // start-up).
            tokio::spawn(async move {
                let mut pending: Vec<u8> = Vec::new();
                let mut tagged = false;
                let mut chunk = vec![0u8; 16 * 1024];
                loop {
                    let n = match cr.read(&mut chunk).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    pending.extend_from_slice(&chunk[..n]);
                    loop {
                        let skip = usize::from(tagged);
                        let Some(len) = pending
                            .get(skip..skip + 4)
                            .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as usize)
                        else {
                            break;
                        };
                        if pending.len() < skip + len {
                            break;
                        }
                        if tagged && pending[0] == b'B' {
                            let nth = binds.fetch_add(1, Ordering::SeqCst) + 1;
                            if nth == GARBLED_BIND && garble_up.swap(false, Ordering::SeqCst) {
                                due_up.store(true, Ordering::SeqCst);
                            }
                        }
                        if !tagged {
                            // SSLRequest and GSSENCRequest are followed by
                            // another untagged message.
                            let code = pending.get(4..8).map(|b| [b[0], b[1], b[2], b[3]]);
                            tagged = !matches!(
                                code.map(u32::from_be_bytes),
                                Some(80_877_103 | 80_877_104)
                            );
                        }
                        pending.drain(..skip + len);
                    }
                    if sw.write_all(&chunk[..n]).await.is_err() {
                        break;
                    }
                }
            });
            // Server to client: the garbled message goes first when due.
            tokio::spawn(async move {
                let mut chunk = vec![0u8; 16 * 1024];
                let bad = msg(b'E', &error_body(&[(b'S', "ERROR"), (b'M', "garbled")]));
                loop {
                    let n = match sr.read(&mut chunk).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => n,
                    };
                    if due.swap(false, Ordering::SeqCst) && cw.write_all(&bad).await.is_err() {
                        break;
                    }
                    if cw.write_all(&chunk[..n]).await.is_err() {
                        break;
                    }
                }
            });
        }
    });
    own
}

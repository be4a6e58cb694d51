use std::io::{Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;

fn on_a_loop<T>(f: impl std::future::Future<Output = T>) -> T {
    let mut l = LocalLoop::new().unwrap();
    l.block_on(async {
        assert!(on_loop());
        f.await
    })
}

#[test]
fn tasks_run_concurrently_and_hand_back_their_output() {
    let out = on_a_loop(async {
        let (tx, rx) = tokio::sync::oneshot::channel::<u32>();
        // The second waits for the first, spawned after it.
        let waiter = spawn(async move { rx.await.unwrap() + 1 });
        let sender = spawn(async move {
            tx.send(41).unwrap();
            7
        });
        (waiter.await.unwrap(), sender.await.unwrap())
    });
    assert_eq!(out, (42, 7));
    assert!(!on_loop());
}

#[test]
fn a_panic_is_the_task_result_and_an_abort_is_a_cancel() {
    on_a_loop(async {
        let bad = spawn(async {
            if Instant::now().elapsed() < Duration::from_secs(3600) {
                panic!("worker fails");
            }
        });
        let e = bad.await.unwrap_err();
        assert!(!e.is_cancelled());
        assert!(e.to_string().contains("worker fails"), "{e}");
        let stuck = spawn(std::future::pending::<()>());
        stuck.abort_handle().abort();
        assert!(stuck.await.unwrap_err().is_cancelled());
    });
}

#[test]
fn a_sleep_ends_at_its_time_not_before_and_a_timeout_cuts_a_wait() {
    on_a_loop(async {
        let t0 = Instant::now();
        time::sleep(Duration::from_millis(30)).await;
        let slept = t0.elapsed();
        assert!(slept >= Duration::from_millis(30), "{slept:?}");
        assert!(slept < Duration::from_millis(1000), "{slept:?}");
        let t0 = Instant::now();
        let cut = time::timeout(Duration::from_millis(20), std::future::pending::<()>()).await;
        assert_eq!(cut, Err(time::Elapsed));
        assert!(t0.elapsed() >= Duration::from_millis(20));
        // A dropped sleep leaves no timer behind to wake anyone.
        drop(time::sleep(Duration::from_millis(5)));
        assert_eq!(
            time::timeout(Duration::from_secs(5), async { 3 }).await,
            Ok(3)
        );
    });
}

#[test]
fn a_wake_from_another_thread_reaches_a_parked_loop() {
    let got = on_a_loop(async {
        let (tx, rx) = tokio::sync::oneshot::channel::<u64>();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            tx.send(9).unwrap();
        });
        let v = rx.await.unwrap();
        t.join().unwrap();
        v
    });
    assert_eq!(got, 9);
}

#[test]
fn tcp_and_unix_streams_carry_bytes_both_ways_and_see_the_peer_close() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("echo.sock");
    let unix = std::os::unix::net::UnixListener::bind(&path).unwrap();
    let tcp_peer = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = vec![0u8; 100_000];
        s.read_exact(&mut buf).unwrap();
        s.write_all(&buf).unwrap();
    });
    let unix_peer = std::thread::spawn(move || {
        let (mut s, _) = unix.accept().unwrap();
        let mut buf = [0u8; 5];
        s.read_exact(&mut buf).unwrap();
        s.write_all(&buf).unwrap();
    });
    on_a_loop(async move {
        // More than a socket buffer: the writes wait for the peer's reads.
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let s = net::TcpStream::connect(addr).await.unwrap();
        s.set_nodelay(true).unwrap();
        let (mut r, mut w) = tokio::io::split(s);
        let sent = data.clone();
        let writer = async move { w.write_all(&sent).await.unwrap() };
        let mut back = vec![0u8; data.len()];
        let reader = async { r.read_exact(&mut back).await.unwrap() };
        tokio::join!(writer, reader);
        assert_eq!(back, data);
        let mut more = [0u8; 8];
        assert_eq!(r.read(&mut more).await.unwrap(), 0, "the peer closed");
        let mut u = net::UnixStream::connect(&path).await.unwrap();
        u.write_all(b"hello").await.unwrap();
        let mut five = [0u8; 5];
        u.read_exact(&mut five).await.unwrap();
        assert_eq!(&five, b"hello");
    });
    tcp_peer.join().unwrap();
    unix_peer.join().unwrap();
}

#[test]
fn a_refused_connect_is_an_error_not_a_hang() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let r = on_a_loop(async move {
        time::timeout(
            Duration::from_secs(10),
            net::TcpStream::connect(([127, 0, 0, 1], port).into()),
        )
        .await
    });
    let e = r.expect("not timed out").err().expect("refused");
    assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused);
}

#[test]
fn a_reader_that_keeps_finding_data_lets_the_other_tasks_run() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flood = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let chunk = [7u8; 4096];
            while !stop.load(Ordering::Relaxed) {
                if s.write_all(&chunk).is_err() {
                    break;
                }
            }
        })
    };
    let ticks = Arc::new(AtomicUsize::new(0));
    on_a_loop({
        let ticks = ticks.clone();
        async move {
            let mut s = net::TcpStream::connect(addr).await.unwrap();
            // Reads with a small buffer: most find data at once.
            let reader = spawn(async move {
                let mut buf = [0u8; 64];
                loop {
                    if s.read(&mut buf).await.unwrap() == 0 {
                        return;
                    }
                }
            });
            let ticker = spawn(async move {
                for _ in 0..20 {
                    tokio::task::yield_now().await;
                    ticks.fetch_add(1, Ordering::Relaxed);
                }
            });
            time::timeout(Duration::from_secs(20), ticker)
                .await
                .expect("the other task ran")
                .unwrap();
            reader.abort();
        }
    });
    stop.store(true, Ordering::Relaxed);
    flood.join().unwrap();
    assert_eq!(ticks.load(Ordering::Relaxed), 20);
}

#[tokio::test]
async fn off_a_loop_everything_goes_to_tokio() {
    assert!(!on_loop());
    let t0 = Instant::now();
    time::sleep(Duration::from_millis(10)).await;
    assert!(t0.elapsed() >= Duration::from_millis(10));
    assert_eq!(spawn(async { 5 }).await.unwrap(), 5);
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap();
    let accept = tokio::spawn(async move { l.accept().await.map(|_| ()) });
    net::TcpStream::connect(addr).await.unwrap();
    accept.await.unwrap().unwrap();
}

#[test]
fn a_close_that_comes_with_the_last_data_is_seen_after_it() {
    // The peer's last bytes and its close arrive together, in one
    // edge-triggered event: the read after the data must see the end, not
    // wait for an event that will not come (a server's FATAL before it
    // closes, as at a restart).
    for _ in 0..20 {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let peer = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            std::thread::sleep(Duration::from_millis(20));
            s.write_all(b"FATAL").unwrap();
        });
        let got = on_a_loop(async move {
            let mut s = net::TcpStream::connect(addr).await.unwrap();
            let mut buf = [0u8; 64];
            let first = s.read(&mut buf).await.unwrap();
            let second = time::timeout(Duration::from_secs(5), s.read(&mut buf)).await;
            (first, second.map(|r| r.unwrap()))
        });
        peer.join().unwrap();
        assert_eq!(got, (5, Ok(0)));
    }
}

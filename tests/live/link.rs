//! The live link (`lockstep live` and `lockstep serve` serve their masters through it) in this
//! process: real loopback TCP through the link's fault layer into the one server loop — blocking
//! pops and pub/sub as the simulation serves them.

use lockstep::live::buffers::{Limits, RunBuffers};
use lockstep::live::link;
use lockstep::live::recorder::LiveRecorder;
use lockstep::live::server::Server;
use lockstep::sim::MasterSetup;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

async fn send(stream: &mut TcpStream, args: &[&str]) {
    let mut out = format!("*{}\r\n", args.len());
    for a in args {
        out.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    stream.write_all(out.as_bytes()).await.expect("writes");
}

/// What arrives next (waiting up to 10 s for it), until 50 ms of silence.
async fn reply(stream: &mut TcpStream) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf))
        .await
        .expect("a reply within 10 s")
        .expect("reads");
    got.extend_from_slice(&buf[..n]);
    while let Ok(Ok(n)) = tokio::time::timeout(Duration::from_millis(50), stream.read(&mut buf)).await {
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&got).into_owned()
}

async fn call(stream: &mut TcpStream, args: &[&str]) -> String {
    send(stream, args).await;
    reply(stream).await
}

#[test]
fn the_live_link_serves_blocking_pops_and_pubsub_through_its_faults() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    tokio::task::LocalSet::new().block_on(&rt, async {
        let rec = LiveRecorder::new();
        rec.start();
        let server = Server::master("redis-1", MasterSetup::default(), &rec);
        let buffers = RunBuffers::new(Limits::default());
        let listener = link::bind(0).await.expect("binds");
        let link = link::serve(listener, "app", server, 1, buffers).expect("serves");
        let addr = link.addr;
        let connect = || async move {
            let s = TcpStream::connect(addr).await.expect("connects");
            s.set_nodelay(true).expect("nodelay");
            s
        };

        // Pub/sub: RESP2, RESP3 and a pattern, one PUBLISH.
        let mut resp2 = connect().await;
        assert_eq!(
            call(&mut resp2, &["SUBSCRIBE", "unlock"]).await,
            "*3\r\n$9\r\nsubscribe\r\n$6\r\nunlock\r\n:1\r\n"
        );
        let mut resp3 = connect().await;
        assert!(call(&mut resp3, &["HELLO", "3"]).await.starts_with("%7\r\n"));
        assert_eq!(
            call(&mut resp3, &["SUBSCRIBE", "unlock"]).await,
            ">3\r\n$9\r\nsubscribe\r\n$6\r\nunlock\r\n:1\r\n"
        );
        let mut pattern = connect().await;
        assert_eq!(
            call(&mut pattern, &["PSUBSCRIBE", "un*"]).await,
            "*3\r\n$10\r\npsubscribe\r\n$3\r\nun*\r\n:1\r\n"
        );
        let mut other = connect().await;
        // The pushes cross the link's server→client direction, with its latency.
        link.down.latency_ms.set(150);
        let published = Instant::now();
        assert_eq!(call(&mut other, &["PUBLISH", "unlock", "go"]).await, ":3\r\n");
        assert_eq!(
            reply(&mut resp2).await,
            "*3\r\n$7\r\nmessage\r\n$6\r\nunlock\r\n$2\r\ngo\r\n"
        );
        assert!(published.elapsed() >= Duration::from_millis(150), "{:?}", published.elapsed());
        assert_eq!(
            reply(&mut resp3).await,
            ">3\r\n$7\r\nmessage\r\n$6\r\nunlock\r\n$2\r\ngo\r\n"
        );
        assert_eq!(
            reply(&mut pattern).await,
            "*4\r\n$8\r\npmessage\r\n$3\r\nun*\r\n$6\r\nunlock\r\n$2\r\ngo\r\n"
        );
        link.down.latency_ms.set(0);

        // BLPOP blocks for its timeout, and a push from another connection wakes it.
        let started = Instant::now();
        assert_eq!(call(&mut other, &["BLPOP", "k", "1"]).await, "*-1\r\n");
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(990) && waited < Duration::from_millis(3000),
            "{waited:?}"
        );
        let mut pusher = connect().await;
        send(&mut other, &["BRPOP", "k", "10"]).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        let started = Instant::now();
        assert_eq!(call(&mut pusher, &["RPUSH", "k", "a", "b"]).await, ":2\r\n");
        assert_eq!(reply(&mut other).await, "*2\r\n$1\r\nk\r\n$1\r\nb\r\n");
        assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());

        // A client that disconnects while blocked is forgotten: the next push is not lost to it.
        let mut gone = connect().await;
        send(&mut gone, &["BLPOP", "q", "10"]).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        drop(gone);
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(call(&mut pusher, &["RPUSH", "q", "kept"]).await, ":1\r\n");
        assert_eq!(call(&mut pusher, &["LPOP", "q"]).await, "$4\r\nkept\r\n");
    });
}

//! `lockstep serve --control`'s HTTP endpoint on 127.0.0.1: faults and test labels for tests in
//! any language, out of band (a crashed master cannot carry the command that restarts it).
//!
//! - `POST /fault` with one JSON object, `{"kind": "crash", "node": "redis-1"}` (a fault as a
//!   scenario file's `[[fault]]` writes it, without `at_ms`; a stop may add `"restart_after_ms": N`
//!   or `"restart": "no"`), or the same as a query string (`/fault?kind=crash&node=redis-1`):
//!   applied at once, recorded as a fault. `200` with `{"applied": "..."}`, `400` with
//!   `{"error": "..."}` when refused.
//! - `POST /label` with `{"test": "NAME"}` or `?test=NAME`: the test NAME starts now.
//! - `GET /`: the servers' addresses, as JSON.
//!
//! One request per connection (`Connection: close`), at most [`REQUEST_MAX_BYTES`], read within
//! [`READ_TIMEOUT_MS`]. Left out: keep-alive, chunked bodies, TLS — a test's HTTP client sends
//! none of them to a plain `http://127.0.0.1` URL.

use super::control::{parse_injection, Controller};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The largest request read, headers and body.
pub const REQUEST_MAX_BYTES: usize = 64 * 1024;

/// How long a request may take to arrive, ms.
pub const READ_TIMEOUT_MS: u64 = 5_000;

/// Binds the endpoint on 127.0.0.1:`port` (0: a free port); returns the listener and its URL.
pub async fn bind(port: u16) -> std::io::Result<(TcpListener, String)> {
    let listener = TcpListener::bind(("127.0.0.1", port)).await?;
    let url = format!("http://{}", listener.local_addr()?);
    Ok((listener, url))
}

/// Serves requests on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, controller: Rc<Controller>, addresses: BTreeMap<String, String>) {
    let addresses = Rc::new(addresses);
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let (controller, addresses) = (controller.clone(), addresses.clone());
        tokio::task::spawn_local(async move {
            let _ = handle(stream, &controller, &addresses).await;
        });
    }
}

/// A request: method, path, query and body.
struct Request {
    method: String,
    path: String,
    query: Vec<(String, String)>,
    body: String,
}

async fn handle(
    mut stream: TcpStream,
    controller: &Controller,
    addresses: &BTreeMap<String, String>,
) -> std::io::Result<()> {
    let read = tokio::time::timeout(Duration::from_millis(READ_TIMEOUT_MS), read_request(&mut stream)).await;
    let (status, body) = match read {
        Err(_) => (408, error_json("the request did not arrive in time")),
        Ok(Err(why)) => (400, error_json(&why)),
        Ok(Ok(request)) => respond(&request, controller, addresses),
    };
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        _ => "Error",
    };
    let head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await
}

fn error_json(why: &str) -> String {
    serde_json::json!({ "error": why }).to_string()
}

/// Reads one request: the head up to the blank line, then `Content-Length` bytes of body.
async fn read_request(stream: &mut TcpStream) -> Result<Request, String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        if buf.len() > REQUEST_MAX_BYTES {
            return Err(format!("the request is larger than {REQUEST_MAX_BYTES} bytes"));
        }
        let n = stream.read(&mut chunk).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("the connection closed before the request's end".to_string());
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let first = lines.next().unwrap_or_default();
    let mut parts = first.split(' ');
    let (method, target) = match (parts.next(), parts.next()) {
        (Some(m), Some(t)) => (m.to_string(), t.to_string()),
        _ => return Err(format!("not an HTTP request line: {first:?}")),
    };
    let mut length = 0usize;
    for line in lines {
        if let Some((name, value)) = line.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                length = value
                    .trim()
                    .parse()
                    .map_err(|_| format!("Content-Length is not a number: {:?}", value.trim()))?;
            }
            if name.trim().eq_ignore_ascii_case("transfer-encoding") {
                return Err("chunked bodies are not read: send Content-Length".to_string());
            }
        }
    }
    if head_end.saturating_add(length) > REQUEST_MAX_BYTES {
        return Err(format!("the request is larger than {REQUEST_MAX_BYTES} bytes"));
    }
    while buf.len() < head_end + length {
        let n = stream.read(&mut chunk).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("the connection closed before the body's end".to_string());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8(buf[head_end..head_end + length].to_vec())
        .map_err(|_| "the body is not UTF-8".to_string())?;
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p.to_string(), parse_query(q)),
        None => (target, Vec::new()),
    };
    Ok(Request {
        method,
        path,
        query,
        body,
    })
}

/// `a=1&b=x%20y` as pairs, percent-decoded (`+` is a space).
fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = |c: u8| (c as char).to_digit(16);
                match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                    (Some(hi), Some(lo)) => {
                        out.push((hi * 16 + lo) as u8);
                        i += 2;
                    }
                    _ => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn respond(request: &Request, controller: &Controller, addresses: &BTreeMap<String, String>) -> (u16, String) {
    match (request.method.as_str(), request.path.as_str()) {
        ("GET", "/") => (
            200,
            serde_json::json!({
                "servers": addresses,
                "restart_after_ms": controller.settings().restart_after_ms,
            })
            .to_string(),
        ),
        ("POST", "/fault") => {
            let words = if request.body.trim().is_empty() {
                // The query as `kind field=value ...`.
                let mut kind = None;
                let mut fields = Vec::new();
                for (k, v) in &request.query {
                    if k == "kind" {
                        kind = Some(v.clone());
                    } else {
                        fields.push(format!("{k}={v}"));
                    }
                }
                match kind {
                    Some(kind) => std::iter::once(kind).chain(fields).collect(),
                    None => return (400, error_json("no fault: send a JSON object or ?kind=...")),
                }
            } else {
                vec![request.body.trim().to_string()]
            };
            match parse_injection(&words, None).and_then(|i| controller.inject(&i)) {
                Ok(applied) => (200, serde_json::json!({ "applied": applied }).to_string()),
                Err(why) => (400, error_json(&why)),
            }
        }
        ("POST", "/label") => {
            let from_body = serde_json::from_str::<serde_json::Value>(&request.body)
                .ok()
                .and_then(|v| v.get("test").and_then(|t| t.as_str()).map(str::to_string));
            let name = from_body.or_else(|| request.query.iter().find(|(k, _)| k == "test").map(|(_, v)| v.clone()));
            match name.filter(|n| !n.trim().is_empty()) {
                Some(name) => {
                    controller.label(&name);
                    (200, serde_json::json!({ "test": name }).to_string())
                }
                None => (400, error_json("no test name: send {\"test\": \"NAME\"} or ?test=NAME")),
            }
        }
        (_, "/" | "/fault" | "/label") => (405, error_json("use GET / or POST /fault or POST /label")),
        _ => (404, error_json("no such path: GET /, POST /fault, POST /label")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_string_is_decoded() {
        assert_eq!(
            parse_query("kind=crash&node=redis%2D1&x=a+b&&bad=%zz"),
            vec![
                ("kind".to_string(), "crash".to_string()),
                ("node".to_string(), "redis-1".to_string()),
                ("x".to_string(), "a b".to_string()),
                ("bad".to_string(), "%zz".to_string()),
            ]
        );
        assert_eq!(decode("%4"), "%4");
        assert_eq!(decode("100%"), "100%");
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_content_length_past_any_size_is_refused_not_a_panic() {
        use tokio::io::AsyncWriteExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("binds");
        let addr = listener.local_addr().expect("an address");
        for length in ["18446744073709551615", "65537", "18446744073709551616"] {
            let client = tokio::spawn(async move {
                let mut s = TcpStream::connect(addr).await.expect("connects");
                let head = format!("POST /fault HTTP/1.1\r\nContent-Length: {length}\r\n\r\n{{}}");
                s.write_all(head.as_bytes()).await.expect("writes");
                s
            });
            let (mut server, _) = listener.accept().await.expect("accepts");
            let refused = read_request(&mut server).await.err().expect("refused");
            assert!(
                refused.contains("larger than") || refused.contains("not a number"),
                "{length}: {refused}"
            );
            drop(client.await);
        }
    }
}

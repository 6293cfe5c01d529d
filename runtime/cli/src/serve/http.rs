//! HTTP/1.1 of `netc serve` (std only): one request per connection, auth
//! and limits before the body, JSON answers.
//!
//! Map: [`read_request`] reads and checks one request; [`write_answer`]
//! sends one JSON answer; [`refuse`] answers a refused request and closes;
//! [`handle`] routes an accepted request to the endpoints (`api.rs`).
//! `server.rs` decides which thread does which.
//!
//! Guarantees, for every connection:
//! - the request line and headers (at most [`MAX_HEAD`] bytes) are read
//!   first; the bearer token (compared without stopping at the first
//!   differing byte), the client's netc version (`Netc-Version`,
//!   `Netc-Api`, as `netc apply --server` sends) and a `Content-Length`
//!   over [`MAX_BODY`] are judged from them — 401, 409 `version_mismatch`,
//!   413 — before one byte of the body is read, and a refused request's
//!   connection is closed without reading its body;
//! - head and body must arrive before the read deadline (`--read-timeout`,
//!   counted from the accept): a client that trickles is answered 408 and
//!   dropped, so it holds a connection thread for that long at most;
//! - every request is logged (`log.rs`) with its status;
//! - every answer is JSON (`Content-Type: application/json`) and closes
//!   the connection; a panic in a handler (a bug) becomes a 500 JSON error.

use super::api::{self, ApiError, Shared};
use serde_json::Value as Json;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

/// Largest request body accepted (intent texts of an L scenario fit).
pub const MAX_BODY: usize = 64 << 20;
/// Largest request line plus headers.
pub const MAX_HEAD: usize = 64 << 10;
/// How long writing one answer may stall: a client that does not read its
/// answer does not keep a thread.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// One request, read whole.
pub struct Request {
    pub method: String,
    /// The request target: path and query.
    pub target: String,
    headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// When the connection was accepted (the `millis` of the log).
    pub started: Instant,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    pub fn path(&self) -> &str {
        self.target.split_once('?').map_or(&self.target, |(p, _)| p)
    }
    pub fn query(&self) -> &str {
        self.target.split_once('?').map_or("", |(_, q)| q)
    }
}

/// Why a request was not read whole.
pub enum Unread {
    /// Answer this (the request line may be unknown: `method`, `path`).
    Refused {
        method: String,
        path: String,
        error: Box<ApiError>,
    },
    /// The client went away (or sent nothing): nobody to answer.
    Gone,
}

fn refused(method: &str, path: &str, error: ApiError) -> Unread {
    Unread::Refused {
        method: method.to_string(),
        path: path.to_string(),
        error: Box::new(error),
    }
}

fn timed_out(read_timeout: Duration) -> ApiError {
    ApiError::new(
        408,
        "timeout",
        format!(
            "the request did not arrive within {} s",
            read_timeout.as_secs_f64()
        ),
    )
    .hint(
        "send the whole request at once; the daemon's --read-timeout SECS bounds how long it waits",
    )
}

/// Reads until `buf` holds `want` bytes or the deadline passes.
fn fill(
    stream: &mut TcpStream,
    buf: &mut Vec<u8>,
    want: impl Fn(&[u8]) -> bool,
    cap: usize,
    deadline: Instant,
) -> Result<(), FillError> {
    let mut chunk = [0u8; 16 << 10];
    while !want(buf) {
        if buf.len() >= cap {
            return Err(FillError::Cap);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(FillError::Timeout);
        }
        stream
            .set_read_timeout(Some(left))
            .map_err(|_| FillError::Gone)?;
        let room = chunk.len().min(cap - buf.len());
        match stream.read(&mut chunk[..room]) {
            Ok(0) => return Err(FillError::Gone),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return Err(FillError::Timeout)
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return Err(FillError::Gone),
        }
    }
    Ok(())
}

enum FillError {
    Cap,
    Timeout,
    Gone,
}

fn head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n")
}

/// Reads one request: the head, the checks that need only the head, then
/// the body. `started` is the accept; the whole request must arrive within
/// `read_timeout` of it.
pub fn read_request(
    shared: &Shared,
    stream: &mut TcpStream,
    started: Instant,
    read_timeout: Duration,
) -> Result<Request, Unread> {
    let deadline = started + read_timeout;
    let mut buf = Vec::with_capacity(2048);
    match fill(
        stream,
        &mut buf,
        |b| head_end(b).is_some(),
        MAX_HEAD,
        deadline,
    ) {
        Ok(()) => {}
        Err(FillError::Gone) => return Err(Unread::Gone),
        Err(FillError::Timeout) => return Err(refused("?", "?", timed_out(read_timeout))),
        Err(FillError::Cap) => {
            return Err(refused(
                "?",
                "?",
                ApiError::new(
                    431,
                    "too_large",
                    format!("the request line and headers exceed {} KiB", MAX_HEAD >> 10),
                ),
            ))
        }
    }
    let end = head_end(&buf).unwrap_or(buf.len());
    let (method, target, headers) = parse_head(&buf[..end]).map_err(|e| refused("?", "?", e))?;
    let mut req = Request {
        method,
        target,
        headers,
        body: Vec::new(),
        started,
    };
    let path = req.path().to_string();
    let no = |e: ApiError| refused(&req.method, &path, e);
    authorize(shared, &req).map_err(no)?;
    same_netc(&req).map_err(no)?;
    if req.header("Transfer-Encoding").is_some() {
        return Err(no(ApiError::new(
            411,
            "length_required",
            "a body must be sent with Content-Length (chunked bodies are not read)",
        )
        .hint("send Content-Length: N with the JSON body")));
    }
    let len = match req.header("Content-Length") {
        None => 0,
        Some(v) => v.trim().parse::<u64>().map_err(|_| {
            no(ApiError::new(
                400,
                "bad_request",
                format!("Content-Length `{v}` is not a number"),
            ))
        })?,
    };
    if len > MAX_BODY as u64 {
        return Err(no(too_large()));
    }
    let len = len as usize;
    let mut body = buf.split_off(end + 4);
    if len > body.len()
        && req
            .header("Expect")
            .is_some_and(|e| e.eq_ignore_ascii_case("100-continue"))
    {
        let _ = stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n");
    }
    match fill(stream, &mut body, |b| b.len() >= len, len, deadline) {
        Ok(()) => {}
        Err(FillError::Gone) => return Err(Unread::Gone),
        Err(FillError::Timeout | FillError::Cap) => return Err(no(timed_out(read_timeout))),
    }
    // bytes after the body (a pipelined request) are not read: one request per connection
    body.truncate(len);
    req.body = body;
    Ok(req)
}

type Head = (String, String, Vec<(String, String)>);

fn parse_head(head: &[u8]) -> Result<Head, ApiError> {
    let bad = |m: &str| {
        ApiError::new(400, "bad_request", format!("not an HTTP/1.1 request: {m}"))
            .hint("send `METHOD /v1/... HTTP/1.1`, headers, an empty line, then the body")
    };
    let text = std::str::from_utf8(head).map_err(|_| bad("the head is not UTF-8"))?;
    let mut lines = text.split("\r\n");
    let line = lines.next().unwrap_or("");
    let mut parts = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad("the request line is not `METHOD TARGET VERSION`"));
    };
    if !version.starts_with("HTTP/1.") || method.is_empty() || !target.starts_with('/') {
        return Err(bad("the request line is not `METHOD /PATH HTTP/1.x`"));
    }
    let mut headers = Vec::new();
    for l in lines {
        let (k, v) = l
            .split_once(':')
            .ok_or_else(|| bad("a header without `:`"))?;
        headers.push((k.trim().to_string(), v.trim().to_string()));
    }
    Ok((method.to_string(), target.to_string(), headers))
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        413 => "Payload Too Large",
        422 => "Unprocessable Entity",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        507 => "Insufficient Storage",
        _ => "Status",
    }
}

/// Sends one JSON answer and ends the connection's writing side.
pub fn write_answer(stream: &mut TcpStream, status: u16, body: &Json) {
    let bytes = serde_json::to_vec_pretty(body).unwrap_or_else(|_| b"{}".to_vec());
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        reason(status),
        bytes.len()
    );
    if status == 401 {
        head.push_str("WWW-Authenticate: Bearer realm=\"netc\"\r\n");
    }
    if status == 503 {
        head.push_str("Retry-After: 1\r\n");
    }
    head.push_str("\r\n");
    // one write: a small answer leaves in one segment, as clients that read once expect
    let mut all = head.into_bytes();
    all.extend_from_slice(&bytes);
    let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
    // The client may have gone away; nothing to do about it here.
    let _ = stream.write_all(&all).and_then(|()| stream.flush());
    let _ = stream.shutdown(Shutdown::Write);
}

/// Logs one answered request.
pub fn log(shared: &Shared, method: &str, path: &str, status: u16, body: &Json, started: Instant) {
    shared.log.event(
        "request",
        serde_json::json!({
            "method": method,
            "path": path,
            "status": status,
            "code": body.get("error").and_then(|e| e.get("code")),
            "millis": started.elapsed().as_millis() as u64,
        }),
    );
}

/// Answers a request refused before its body was read, then closes. The
/// unread body is not drained: only what already arrived (at most a few
/// KiB, for a short moment) is read, so the kernel ends the connection
/// with the answer delivered rather than resetting it under the client.
pub fn refuse(
    shared: &Shared,
    stream: &mut TcpStream,
    method: &str,
    path: &str,
    e: &ApiError,
    started: Instant,
) {
    let body = e.json();
    log(shared, method, path, e.status, &body, started);
    write_answer(stream, e.status, &body);
    let until = Instant::now() + Duration::from_millis(200);
    let mut buf = [0u8; 8 << 10];
    for _ in 0..8 {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            break;
        }
        match stream.read(&mut buf) {
            Ok(n) if n > 0 => {}
            _ => break,
        }
    }
}

/// Answers an accepted request (auth and limits passed) from the endpoints.
pub fn handle(shared: &Shared, stream: &mut TcpStream, req: &Request) {
    let (status, body) = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        api::route(shared, &req.method, req.path(), req.query(), &req.body)
    }))
    .unwrap_or_else(|_| Err(panicked()))
    {
        Ok(j) => (200, j),
        Err(e) => (e.status, e.json()),
    };
    log(shared, &req.method, req.path(), status, &body, req.started);
    write_answer(stream, status, &body);
}

pub fn panicked() -> ApiError {
    ApiError::new(
        500,
        "internal",
        "internal error: a handler panicked (a bug in netc; the daemon log has the details)",
    )
}

fn too_large() -> ApiError {
    ApiError::new(
        413,
        "too_large",
        format!("the body is larger than {} MiB", MAX_BODY >> 20),
    )
    .hint("name files under the daemon's --intent-dir in `paths` instead of sending the texts")
}

fn authorize(shared: &Shared, req: &Request) -> Result<(), ApiError> {
    let hint = "send `Authorization: Bearer <token>`; the token is in STATE/serve.token (or the --token-file)";
    let Some(given) = req.header("Authorization") else {
        return Err(ApiError::new(401, "unauthorized", "missing bearer token").hint(hint));
    };
    let token = given.strip_prefix("Bearer ").unwrap_or("").trim();
    if !same(token.as_bytes(), shared.token.as_bytes()) {
        return Err(ApiError::new(401, "unauthorized", "wrong bearer token").hint(hint));
    }
    Ok(())
}

/// A `netc` client must be this netc: the daemon compiles the client's
/// intent with its own rules, and the client prints what the local command
/// would; another version could differ in both.
fn same_netc(req: &Request) -> Result<(), ApiError> {
    use super::client::{API_VERSION, VERSION};
    let api = req.header("Netc-Api");
    let version = req.header("Netc-Version");
    let api_ok = api.is_none_or(|a| a.trim() == API_VERSION.to_string());
    let version_ok = version.is_none_or(|v| v.trim() == VERSION);
    if api_ok && version_ok {
        return Ok(());
    }
    Err(ApiError::new(
        409,
        "version_mismatch",
        format!(
            "this daemon is netc {VERSION} (API {API_VERSION}); the client is netc {} (API {})",
            version.unwrap_or("?"),
            api.unwrap_or("?")
        ),
    )
    .hint("use the same netc binary for `netc serve` and `--server`, or restart the daemon with this one")
    .detail(serde_json::json!({"daemon": {"version": VERSION, "api": API_VERSION}})))
}

/// Equality that looks at every byte (no early exit on the first difference).
fn same(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for i in 0..a.len().max(b.len()) {
        diff |= (a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0)) as usize;
    }
    diff == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_parses_into_method_target_and_headers() {
        let (m, t, h) =
            parse_head(b"GET /v1/deltas?since=3 HTTP/1.1\r\nAuthorization: Bearer x\r\nHost: a")
                .unwrap_or_else(|e| panic!("{}", e.message));
        assert_eq!((m.as_str(), t.as_str()), ("GET", "/v1/deltas?since=3"));
        assert_eq!(h[0], ("Authorization".into(), "Bearer x".into()));
        assert!(parse_head(b"GET\r\n").is_err());
        assert!(parse_head(b"GET /x SMTP\r\n").is_err());
        assert!(parse_head(b"GET /x HTTP/1.1\r\nno colon").is_err());
    }
}

//! The client side of `netc serve`: what `netc plan/apply --server URL` speak.
//!
//! Map: [`Server::parse`] reads `http://HOST:PORT[/PREFIX]`; [`token`] finds
//! the bearer token (`--token-file`, `$NETC_TOKEN`, `STATE/serve.token`);
//! [`Server::call`] sends one request over a fresh TCP connection
//! (HTTP/1.1, `Connection: close`) and reads one JSON answer.
//!
//! Expects: a daemon that answers JSON (specs/serve.md). Guarantees: every
//! failure is a [`ClientError`] saying which URL and why (refused, timed
//! out, not HTTP, not JSON); an HTTP error status is NOT a failure here —
//! the caller reads the daemon's `{"error": ...}` body. Every wait is
//! bounded: connecting by [`CONNECT_TIMEOUT`], each read by [`READ_TIMEOUT`].

use serde_json::Value as Json;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The protocol generation `--server` speaks (sent as `Netc-Api`).
pub const API_VERSION: u32 = 1;
/// This binary's version (sent as `Netc-Version`; the daemon must match).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// How long to wait for the daemon to accept the connection.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one read may wait: an apply verifies and pushes before it
/// answers, so this is generous (a lab start, a large verification).
pub const READ_TIMEOUT: Duration = Duration::from_secs(1800);
/// Largest answer read (the daemon's replies are far smaller).
const MAX_REPLY: u64 = 1 << 30;

/// Why the daemon could not be asked.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("`{url}` is not a daemon URL: {why}")]
    BadUrl { url: String, why: String },
    #[error("cannot reach the daemon at {url}: {source}")]
    Connect { url: String, source: std::io::Error },
    #[error("the daemon at {url} did not answer: {source}")]
    Io { url: String, source: std::io::Error },
    #[error("the daemon at {url} sent an answer that is not netc's: {why}")]
    NotNetc { url: String, why: String },
    #[error("no token for the daemon: {why}")]
    NoToken { why: String },
}

impl ClientError {
    /// What to do about it.
    pub fn hint(&self) -> Option<String> {
        match self {
            ClientError::BadUrl { .. } => {
                Some("--server http://HOST:PORT, e.g. http://127.0.0.1:7878".into())
            }
            ClientError::Connect { source, .. }
                if source.kind() == std::io::ErrorKind::ConnectionRefused =>
            {
                Some("is `netc serve` running there? (it prints `listening on http://ADDR`)".into())
            }
            ClientError::Connect { .. } | ClientError::Io { .. } => {
                Some("check the URL and that `netc serve` is running and reachable".into())
            }
            ClientError::NotNetc { .. } => Some("--server must point at `netc serve`".into()),
            ClientError::NoToken { .. } => Some(
                "pass --token-file FILE, set $NETC_TOKEN, or use --state DIR of the daemon (its serve.token)"
                    .into(),
            ),
        }
    }
}

/// A daemon's answer: the HTTP status and the JSON body.
#[derive(Debug)]
pub struct Answer {
    pub status: u16,
    pub body: Json,
}

impl Answer {
    /// The daemon's `error.code`, when it refused.
    pub fn code(&self) -> Option<&str> {
        self.body
            .get("error")
            .and_then(|e| e.get("code"))
            .and_then(Json::as_str)
    }
    pub fn error_field(&self, key: &str) -> Option<&Json> {
        self.body.get("error").and_then(|e| e.get(key))
    }
}

/// Where the daemon listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Server {
    /// As given, for messages.
    pub url: String,
    host: String,
    port: u16,
    /// Path prefix before `/v1/...` (a reverse proxy's), without a trailing `/`.
    prefix: String,
    token: String,
}

impl Server {
    /// Reads `http://HOST[:PORT][/PREFIX]` (port 80 by default).
    pub fn parse(url: &str, token: String) -> Result<Server, ClientError> {
        let bad = |why: &str| ClientError::BadUrl {
            url: url.to_string(),
            why: why.to_string(),
        };
        let rest = match url.split_once("://") {
            Some(("http", rest)) => rest,
            Some(("https", _)) => {
                return Err(bad(
                    "https is not supported; netc serve speaks plain HTTP on loopback (tunnel it, e.g. ssh -L)",
                ))
            }
            Some((scheme, _)) => return Err(bad(&format!("unknown scheme `{scheme}`"))),
            None => return Err(bad("it must start with http://")),
        };
        let (authority, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if authority.is_empty() {
            return Err(bad("no host"));
        }
        let bracketed = authority.starts_with('[');
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !bracketed || h.ends_with(']') => (
                h.to_string(),
                p.parse::<u16>()
                    .map_err(|_| bad(&format!("`{p}` is not a port number")))?,
            ),
            _ => (authority.to_string(), 80),
        };
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        if host.is_empty() {
            return Err(bad("no host"));
        }
        Ok(Server {
            url: url.trim_end_matches('/').to_string(),
            host,
            port,
            prefix: prefix
                .split('/')
                .filter(|s| !s.is_empty())
                .map(|s| format!("/{s}"))
                .collect(),
            token,
        })
    }

    /// Sends `method path` (with a JSON body for POST) and reads the answer.
    pub fn call(
        &self,
        method: &str,
        path: &str,
        body: Option<&Json>,
    ) -> Result<Answer, ClientError> {
        let io = |source| ClientError::Io {
            url: self.url.clone(),
            source,
        };
        let addrs: Vec<_> = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|source| ClientError::Connect {
                url: self.url.clone(),
                source,
            })?
            .collect();
        let mut last = None;
        let mut stream = None;
        for a in &addrs {
            match TcpStream::connect_timeout(a, CONNECT_TIMEOUT) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let mut stream = stream.ok_or_else(|| ClientError::Connect {
            url: self.url.clone(),
            source: last.unwrap_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::NotFound, "the host has no address")
            }),
        })?;
        stream.set_read_timeout(Some(READ_TIMEOUT)).map_err(io)?;
        stream.set_write_timeout(Some(READ_TIMEOUT)).map_err(io)?;
        let payload = body.map(|b| b.to_string()).unwrap_or_default();
        let head = format!(
            "{method} {}{path} HTTP/1.1\r\nHost: {}:{}\r\nAuthorization: Bearer {}\r\nNetc-Version: {VERSION}\r\nNetc-Api: {API_VERSION}\r\nAccept: application/json\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            self.prefix,
            self.host,
            self.port,
            self.token,
            payload.len()
        );
        stream.write_all(head.as_bytes()).map_err(io)?;
        stream.write_all(payload.as_bytes()).map_err(io)?;
        stream.flush().map_err(io)?;
        let (status, bytes) =
            read_answer(BufReader::new(stream.take(MAX_REPLY))).map_err(|e| match e {
                ReadError::Io(source) => io(source),
                ReadError::Http(why) => self.not_netc(why),
            })?;
        let body = serde_json::from_slice(&bytes).map_err(|e| {
            self.not_netc(format!(
                "HTTP {status} with a body that is not JSON ({e}): {}",
                String::from_utf8_lossy(&bytes[..bytes.len().min(120)])
            ))
        })?;
        Ok(Answer { status, body })
    }

    fn not_netc(&self, why: String) -> ClientError {
        ClientError::NotNetc {
            url: self.url.clone(),
            why,
        }
    }
}

#[derive(Debug)]
enum ReadError {
    Io(std::io::Error),
    Http(String),
}

/// Status and body of one HTTP/1.1 answer (Content-Length, chunked, or to EOF).
fn read_answer(mut r: impl BufRead) -> Result<(u16, Vec<u8>), ReadError> {
    let mut line = String::new();
    r.read_line(&mut line).map_err(ReadError::Io)?;
    let mut parts = line.split_whitespace();
    let status = match (parts.next(), parts.next()) {
        (Some(v), Some(code)) if v.starts_with("HTTP/1.") => code
            .parse::<u16>()
            .map_err(|_| ReadError::Http(format!("a bad status line `{}`", line.trim())))?,
        _ if line.is_empty() => {
            return Err(ReadError::Http(
                "it closed the connection without an answer".into(),
            ))
        }
        _ => return Err(ReadError::Http(format!("not HTTP: `{}`", line.trim()))),
    };
    let (mut length, mut chunked) = (None, false);
    // Bounded: a netc answer has a handful of headers.
    for _ in 0..200 {
        line.clear();
        r.read_line(&mut line).map_err(ReadError::Io)?;
        let h = line.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
            if k == "content-length" {
                length = Some(
                    v.parse::<usize>()
                        .map_err(|_| ReadError::Http(format!("a bad Content-Length `{v}`")))?,
                );
            } else if k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked") {
                chunked = true;
            }
        }
    }
    let mut body = Vec::new();
    if chunked {
        loop {
            line.clear();
            r.read_line(&mut line).map_err(ReadError::Io)?;
            let size = line.trim().split(';').next().unwrap_or("");
            let n = usize::from_str_radix(size, 16)
                .map_err(|_| ReadError::Http(format!("a bad chunk size `{size}`")))?;
            if n == 0 {
                break;
            }
            let start = body.len();
            body.resize(start + n, 0);
            r.read_exact(&mut body[start..]).map_err(ReadError::Io)?;
            line.clear();
            r.read_line(&mut line).map_err(ReadError::Io)?;
        }
    } else if let Some(n) = length {
        body.resize(n, 0);
        r.read_exact(&mut body).map_err(ReadError::Io)?;
    } else {
        r.read_to_end(&mut body).map_err(ReadError::Io)?;
    }
    Ok((status, body))
}

/// The bearer token: `--token-file`, else `$NETC_TOKEN`, else `STATE/serve.token`.
pub fn token(file: Option<&Path>, state: &Path) -> Result<String, ClientError> {
    let from_file = |p: PathBuf, how: &str| -> Result<String, ClientError> {
        let t = std::fs::read_to_string(&p).map_err(|e| ClientError::NoToken {
            why: format!("cannot read {how} `{}`: {e}", p.display()),
        })?;
        let t = t.trim().to_string();
        if t.is_empty() {
            return Err(ClientError::NoToken {
                why: format!("{how} `{}` is empty", p.display()),
            });
        }
        Ok(t)
    };
    if let Some(f) = file {
        return from_file(f.to_path_buf(), "the token file");
    }
    if let Ok(t) = std::env::var("NETC_TOKEN") {
        if !t.trim().is_empty() {
            return Ok(t.trim().to_string());
        }
    }
    from_file(state.join("serve.token"), "the daemon's token file")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_read_or_refused_with_the_reason() {
        let s = Server::parse("http://127.0.0.1:7878", String::new()).unwrap();
        assert_eq!(
            (s.host.as_str(), s.port, s.prefix.as_str()),
            ("127.0.0.1", 7878, "")
        );
        let s = Server::parse("http://[::1]:9/netc/", String::new()).unwrap();
        assert_eq!(
            (s.host.as_str(), s.port, s.prefix.as_str()),
            ("::1", 9, "/netc")
        );
        let s = Server::parse("http://localhost", String::new()).unwrap();
        assert_eq!(s.port, 80);
        for bad in [
            "127.0.0.1:7878",
            "https://x:1",
            "ftp://x",
            "http://x:port",
            "http://",
            "http://:80",
        ] {
            assert!(Server::parse(bad, String::new()).is_err(), "{bad}");
        }
    }

    #[test]
    fn answers_are_read_by_length_chunks_or_eof() {
        let a = b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 2\r\n\r\n{}trailing";
        assert_eq!(read_answer(&a[..]).unwrap(), (401, b"{}".to_vec()));
        let c = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n4\r\n\":1}\r\n0\r\n\r\n";
        assert_eq!(read_answer(&c[..]).unwrap(), (200, b"{\"a\":1}".to_vec()));
        let e = b"HTTP/1.0 200 OK\r\n\r\n[1]";
        assert_eq!(read_answer(&e[..]).unwrap(), (200, b"[1]".to_vec()));
        assert!(read_answer(&b"SSH-2.0-OpenSSH\r\n"[..]).is_err());
        assert!(read_answer(&b""[..]).is_err());
    }
}

//! HTTP/1.1 plumbing of `netc serve`: auth, body limits, JSON replies.
//!
//! Expects: requests from `tiny_http`. Guarantees, for every request:
//! - no endpoint runs without `Authorization: Bearer <token>` equal to the
//!   daemon's token (401 with a JSON error otherwise; the comparison does
//!   not stop at the first differing byte);
//! - a body over [`MAX_BODY`] is refused with 413 before it is read;
//! - a client that says which netc it is (`Netc-Version`, `Netc-Api`, as
//!   `netc apply --server` does) and is not this one is refused with 409
//!   `version_mismatch` before anything runs;
//! - every request is logged (`log.rs`) with its status;
//! - the answer is JSON (`Content-Type: application/json`); a panic in a
//!   handler (a bug) becomes a 500 JSON error, never a dropped connection.

use super::api::{self, ApiError, Shared};
use std::io::Read;

/// Largest request body accepted (intent texts of an L scenario fit).
pub const MAX_BODY: usize = 64 << 20;

/// Answers one request.
pub fn handle(shared: &Shared, mut req: tiny_http::Request) {
    let t0 = std::time::Instant::now();
    let (status, body) = match answer(shared, &mut req) {
        Ok(j) => (200, j),
        Err(e) => (e.status, e.json()),
    };
    let url = req.url().to_string();
    shared.log.event(
        "request",
        serde_json::json!({
            "method": req.method().as_str(),
            "path": url.split_once('?').map_or(url.as_str(), |(p, _)| p),
            "status": status,
            "code": body.get("error").and_then(|e| e.get("code")),
            "millis": t0.elapsed().as_millis() as u64,
        }),
    );
    let bytes = serde_json::to_vec_pretty(&body).unwrap_or_else(|_| b"{}".to_vec());
    let mut resp = tiny_http::Response::from_data(bytes).with_status_code(status);
    if let Ok(h) = tiny_http::Header::from_bytes(&b"Content-Type"[..], &b"application/json"[..]) {
        resp.add_header(h);
    }
    if status == 401 {
        if let Ok(h) =
            tiny_http::Header::from_bytes(&b"WWW-Authenticate"[..], &b"Bearer realm=\"netc\""[..])
        {
            resp.add_header(h);
        }
    }
    // The client may have gone away; nothing to do about it here.
    let _ = req.respond(resp);
}

fn answer(shared: &Shared, req: &mut tiny_http::Request) -> Result<serde_json::Value, ApiError> {
    authorize(shared, req)?;
    same_netc(req)?;
    if req.body_length().is_some_and(|n| n > MAX_BODY) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    req.as_reader()
        .take(MAX_BODY as u64 + 1)
        .read_to_end(&mut body)
        .map_err(|e| ApiError::new(400, "bad_request", format!("cannot read the body: {e}")))?;
    if body.len() > MAX_BODY {
        return Err(too_large());
    }
    let method = req.method().as_str().to_string();
    let url = req.url().to_string();
    let (path, query) = url.split_once('?').unwrap_or((&url, ""));
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        api::route(shared, &method, path, query, &body)
    }))
    .unwrap_or_else(|_| {
        Err(ApiError::new(
            500,
            "internal",
            "internal error: a handler panicked (a bug in netc; the daemon log has the details)",
        ))
    })
}

fn too_large() -> ApiError {
    ApiError::new(
        413,
        "too_large",
        format!("the body is larger than {} MiB", MAX_BODY >> 20),
    )
    .hint("name files under the daemon's --intent-dir in `paths` instead of sending the texts")
}

fn authorize(shared: &Shared, req: &tiny_http::Request) -> Result<(), ApiError> {
    let given = req
        .headers()
        .iter()
        .find(|h| h.field.equiv("Authorization"))
        .map(|h| h.value.as_str().to_string());
    let hint = "send `Authorization: Bearer <token>`; the token is in STATE/serve.token (or the --token-file)";
    let Some(given) = given else {
        return Err(ApiError::new(401, "unauthorized", "missing bearer token").hint(hint));
    };
    let token = given.strip_prefix("Bearer ").unwrap_or("").trim();
    if !same(token.as_bytes(), shared.token.as_bytes()) {
        return Err(ApiError::new(401, "unauthorized", "wrong bearer token").hint(hint));
    }
    Ok(())
}

fn header<'a>(req: &'a tiny_http::Request, name: &'static str) -> Option<&'a str> {
    req.headers()
        .iter()
        .find(|h| h.field.equiv(name))
        .map(|h| h.value.as_str())
}

/// A `netc` client must be this netc: the daemon compiles the client's
/// intent with its own rules, and the client prints what the local command
/// would; another version could differ in both.
fn same_netc(req: &tiny_http::Request) -> Result<(), ApiError> {
    use super::client::{API_VERSION, VERSION};
    let api = header(req, "Netc-Api");
    let version = header(req, "Netc-Version");
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

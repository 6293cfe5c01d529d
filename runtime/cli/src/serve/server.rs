//! The daemon's threads: who reads a request, who answers it, who waits.
//!
//! - The accepting thread hands each connection to a *reader* thread of its
//!   own (at most [`MAX_READERS`] at once; beyond, `503` with
//!   `Retry-After`). A reader reads and checks the request within the read
//!   deadline (`http.rs`) and answers a refusal itself, so a slow or
//!   unauthenticated client never reaches the request workers.
//! - [`WORKERS`] request workers run the endpoints, one request each at a
//!   time; changes are serialised by the daemon's lock (`api.rs`).
//! - A long-poll on the delta stream that has nothing to answer yet is
//!   *parked*: its connection goes to the one waiter thread, which sleeps
//!   until an entry is appended, a poll is parked, or the earliest wait
//!   ends, and hands the polls that can be answered back to the workers.
//!   A waiting poll holds no worker; at most [`MAX_PARKED`] wait at once
//!   (beyond: `503` with `Retry-After`).

use super::api::{self, ApiError, Shared};
use super::http::{self, Request, Unread};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Request workers.
pub const WORKERS: usize = 8;
/// Connections being read at once.
pub const MAX_READERS: usize = 128;
/// Long-polls waiting at once.
pub const MAX_PARKED: usize = 64;

/// A long-poll waiting for the delta stream.
struct Parked {
    stream: TcpStream,
    req: Request,
    since: u64,
    until: Instant,
}

enum Job {
    Request(TcpStream, Request),
    /// A parked poll that has entries, or whose wait ended.
    Resume(Parked),
}

/// Polls handed to the waiter, and how many wait (parked or being answered).
#[derive(Default)]
struct Waiting {
    inbox: Mutex<Vec<Parked>>,
    count: AtomicUsize,
}

/// Counts a reader thread for as long as it lives.
struct Reading(Arc<AtomicUsize>);

impl Drop for Reading {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Serves until the listener fails; `read_timeout` bounds the reading of
/// each request (head and body) from its accept.
pub fn serve(listener: TcpListener, shared: Arc<Shared>, read_timeout: Duration) {
    let (jobs, queue) = mpsc::channel::<Job>();
    let queue = Arc::new(Mutex::new(queue));
    let waiting = Arc::new(Waiting::default());
    for _ in 0..WORKERS {
        let (queue, shared, waiting) = (queue.clone(), shared.clone(), waiting.clone());
        std::thread::spawn(move || work(&queue, &shared, &waiting));
    }
    {
        let (shared, waiting, jobs) = (shared.clone(), waiting.clone(), jobs.clone());
        std::thread::spawn(move || wait(&shared, &waiting, &jobs));
    }
    let readers = Arc::new(AtomicUsize::new(0));
    for conn in listener.incoming() {
        let mut stream = match conn {
            Ok(s) => s,
            Err(_) => {
                // out of descriptors, say: let connections finish before accepting more
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
        };
        let started = Instant::now();
        if readers.fetch_add(1, Ordering::SeqCst) >= MAX_READERS {
            readers.fetch_sub(1, Ordering::SeqCst);
            http::refuse(
                &shared,
                &mut stream,
                "?",
                "?",
                &busy("connections"),
                started,
            );
            continue;
        }
        let guard = Reading(readers.clone());
        let (shared, jobs) = (shared.clone(), jobs.clone());
        let spawned = std::thread::Builder::new().spawn(move || {
            let _guard = guard;
            match http::read_request(&shared, &mut stream, started, read_timeout) {
                Ok(req) => {
                    let _ = jobs.send(Job::Request(stream, req));
                }
                Err(Unread::Refused {
                    method,
                    path,
                    error,
                }) => http::refuse(&shared, &mut stream, &method, &path, &error, started),
                Err(Unread::Gone) => {}
            }
        });
        // a thread that could not start dropped its connection (and guard)
        drop(spawned);
    }
}

fn busy(what: &str) -> ApiError {
    ApiError::new(
        503,
        "busy",
        format!("the daemon has too many {what} open; try again"),
    )
    .hint("retry after the Retry-After seconds")
}

fn work(queue: &Mutex<Receiver<Job>>, shared: &Shared, waiting: &Waiting) {
    loop {
        let job = match queue.lock().unwrap_or_else(|p| p.into_inner()).recv() {
            Ok(j) => j,
            Err(_) => return,
        };
        match job {
            Job::Request(mut stream, req) => {
                if req.method == "GET" && req.path() == "/v1/deltas" {
                    poll(shared, waiting, stream, req);
                } else {
                    http::handle(shared, &mut stream, &req);
                }
            }
            Job::Resume(p) => {
                let reply = api::deltas_after(shared, p.since)
                    .map(|r| r.unwrap_or_else(|| api::deltas_json(shared, Vec::new(), p.since)));
                let mut stream = p.stream;
                answer(shared, &mut stream, &p.req, reply);
                waiting.count.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }
}

fn answer(shared: &Shared, stream: &mut TcpStream, req: &Request, reply: api::Reply) {
    let (status, body) = match reply {
        Ok(j) => (200, j),
        Err(e) => (e.status, e.json()),
    };
    http::log(shared, &req.method, req.path(), status, &body, req.started);
    http::write_answer(stream, status, &body);
}

/// `GET /v1/deltas`: answered now when there is something to say, else parked.
fn poll(shared: &Shared, waiting: &Waiting, mut stream: TcpStream, req: Request) {
    let (since, wait) = match api::deltas_query(req.query()) {
        Ok(q) => q,
        Err(e) => return answer(shared, &mut stream, &req, Err(e)),
    };
    match api::deltas_after(shared, since) {
        Ok(None) if wait > 0 => {}
        Ok(None) => {
            let empty = api::deltas_json(shared, Vec::new(), since);
            return answer(shared, &mut stream, &req, Ok(empty));
        }
        other => {
            return answer(
                shared,
                &mut stream,
                &req,
                other.map(Option::unwrap_or_default),
            )
        }
    }
    if waiting.count.fetch_add(1, Ordering::SeqCst) >= MAX_PARKED {
        waiting.count.fetch_sub(1, Ordering::SeqCst);
        return answer(shared, &mut stream, &req, Err(busy("long-polls")));
    }
    let until = Instant::now() + Duration::from_secs(wait);
    waiting
        .inbox
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(Parked {
            stream,
            req,
            since,
            until,
        });
    shared.deltas.nudge();
}

/// The waiter: holds parked polls until they can be answered.
fn wait(shared: &Shared, waiting: &Waiting, jobs: &Sender<Job>) {
    let mut parked: Vec<Parked> = Vec::new();
    loop {
        // noted before the inbox is read: a park or an append after it wakes the wait below
        let mark = shared.deltas.mark();
        parked.append(&mut waiting.inbox.lock().unwrap_or_else(|p| p.into_inner()));
        let now = Instant::now();
        let last = shared.deltas.last();
        let (ready, still): (Vec<_>, Vec<_>) = parked
            .into_iter()
            .partition(|p| p.since < last || p.until <= now);
        parked = still;
        for p in ready {
            if jobs.send(Job::Resume(p)).is_err() {
                return;
            }
        }
        let next = parked
            .iter()
            .map(|p| p.until)
            .min()
            .map_or(Duration::from_secs(60), |u| {
                u.saturating_duration_since(Instant::now())
            });
        shared.deltas.wait_change(mark, next);
    }
}

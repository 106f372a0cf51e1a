//! The server's own accept loop and request budgets: what keeps one local process from starving
//! the approval server (issue 29: 1,100 idle connections did).
//!
//! - A connection cap: past `max_connections` open connections a new one is closed at once,
//!   before it costs a task or a buffer.
//! - A header-read timeout that is also the idle timeout: hyper starts it whenever it waits for a
//!   request head, on a fresh connection and between kept-alive requests alike, so a connection
//!   that sends nothing, or trickles a header, is closed. A request in progress (a held
//!   `POST /api/requests`, the event stream) is not idle and is not cut.
//! - A rate per token ([`RateLimits`]): requests that carry the token share one bucket, requests
//!   with a wrong or no token another, smaller one (the token cannot be guessed, but trying costs
//!   the server a response each).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// The accept loop's limits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnLimits {
    pub max_connections: usize,
    pub header_timeout: Duration,
}

/// Serves `app` on `listener` under `limits` until the future `stop` ends.
pub(crate) async fn serve(
    listener: TcpListener,
    app: axum::Router,
    limits: ConnLimits,
    stop: impl std::future::Future<Output = ()>,
) {
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    tokio::pin!(stop);
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            () = &mut stop => return,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            // Out of descriptors (or an aborted handshake): wait a little rather than spin.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        let Ok(permit) = Arc::clone(&permits).try_acquire_owned() else {
            // Over the cap: closed before it costs anything more than the accept.
            drop(stream);
            continue;
        };
        let conn =
            http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app.clone()));
        tokio::spawn(async move {
            let _ = conn.await;
            drop(permit);
        });
    }
}

/// A token bucket: `burst` requests at once, refilled at `per_sec`.
#[derive(Debug)]
struct Bucket {
    per_sec: f64,
    burst: f64,
    state: Mutex<(f64, Instant)>,
}

impl Bucket {
    fn new(per_sec: u32, burst: u32) -> Bucket {
        Bucket {
            per_sec: f64::from(per_sec),
            burst: f64::from(burst),
            state: Mutex::new((f64::from(burst), Instant::now())),
        }
    }

    fn take(&self, now: Instant) -> bool {
        let Ok(mut s) = self.state.lock() else {
            return false;
        };
        let (tokens, last) = *s;
        let refilled = (tokens + now.saturating_duration_since(last).as_secs_f64() * self.per_sec)
            .min(self.burst);
        if refilled >= 1.0 {
            *s = (refilled - 1.0, now);
            true
        } else {
            *s = (refilled, now);
            false
        }
    }
}

/// The request budgets of the API, per token presented.
#[derive(Debug)]
pub(crate) struct RateLimits {
    token: Bucket,
    wrong: Bucket,
    /// `GET /challenge` (no token): its own budget, so wrong tokens cannot starve the
    /// challenges real clients make before every ask.
    challenge: Bucket,
}

impl RateLimits {
    /// `per_sec` requests a second with the token (bursts of ten seconds' worth, so a page
    /// reload or a burst of parallel asks passes), a tenth of that without it.
    pub(crate) fn new(per_sec: u32) -> RateLimits {
        let per_sec = per_sec.max(1);
        RateLimits {
            token: Bucket::new(per_sec, per_sec.saturating_mul(10)),
            wrong: Bucket::new((per_sec / 10).max(1), per_sec.max(10)),
            challenge: Bucket::new(per_sec, per_sec.saturating_mul(10)),
        }
    }

    /// May a `GET /challenge` go on now?
    pub(crate) fn allow_challenge(&self) -> bool {
        self.challenge.take(Instant::now())
    }

    /// May a request with the right token (`true`) or without it go on now?
    pub(crate) fn allow(&self, has_token: bool) -> bool {
        let bucket = if has_token { &self.token } else { &self.wrong };
        bucket.take(Instant::now())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_gives_its_burst_then_refills_with_time() {
        let b = Bucket::new(10, 3);
        let t0 = Instant::now();
        assert!(b.take(t0) && b.take(t0) && b.take(t0));
        assert!(!b.take(t0));
        // A tenth of a second later: one more.
        let t1 = t0 + Duration::from_millis(100);
        assert!(b.take(t1));
        assert!(!b.take(t1));
        // Never more than the burst, however long it rested.
        let t2 = t1 + Duration::from_secs(60);
        assert_eq!((0..10).filter(|_| b.take(t2)).count(), 3);
    }

    #[test]
    fn wrong_tokens_have_their_own_smaller_budget() {
        let r = RateLimits::new(20);
        let wrong = (0..1000).filter(|_| r.allow(false)).count();
        assert!((20..30).contains(&wrong), "{wrong}");
        // Spending the wrong-token budget leaves the token's whole.
        let right = (0..1000).filter(|_| r.allow(true)).count();
        assert!((200..210).contains(&right), "{right}");
        // Neither touches the challenges' budget.
        let challenges = (0..1000).filter(|_| r.allow_challenge()).count();
        assert!((200..210).contains(&challenges), "{challenges}");
    }
}

//! A hook answers before its client's deadline, whatever the judgement is waiting for.
//!
//! Claude Code, Codex and Gemini CLI run the call when a hook outlives its timeout, so a hook
//! stuck on a slow mount, a locked database, an approval server that never answers or a stdin
//! that never closes is a hook that allows. The judging thread's answer is awaited until the
//! deadline; at the deadline the answer is the client's refusal, with the reason, and the
//! process exits without waiting for the stuck thread.
//!
//! The deadline is the timeout `init` writes for the event ([`init::CLIENTS`]), less a margin
//! for the answer to reach the client; before the event's name is known, the client's shortest
//! timeout. `AGENT_GUARD_HOOK_DEADLINE_MS` can only shorten it (tests, and installations whose
//! hook timeout was lowered by hand).

use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use agent_core::clients::Client;

use super::init::{self, ClientName, TimeoutUnit};

/// The variable that shortens the deadline, in milliseconds.
pub(crate) const DEADLINE_VAR: &str = "AGENT_GUARD_HOOK_DEADLINE_MS";

/// How often the wait looks again at which event is being judged (its timeout may differ).
const SLICE: Duration = Duration::from_millis(100);

/// The answer the judging thread sends, or at the deadline `refuse(reason)`'s.
pub(crate) fn await_answer<A>(
    client: Client,
    started: Instant,
    event: impl Fn() -> Option<String>,
    answers: &Receiver<A>,
    refuse: impl Fn(&str) -> A,
) -> A {
    loop {
        let budget = deadline(client, event().as_deref());
        let left = budget.saturating_sub(started.elapsed());
        if left.is_zero() {
            return refuse(&format!(
                "the guard did not finish judging this call within {} ms (the hook must answer \
                 before the client's timeout); the call is blocked. A slow filesystem, a locked \
                 audit database or an unanswered approval can cause this: retry, or run \
                 `agent-guard explain` on the call to see where it waits",
                budget.as_millis()
            ));
        }
        match answers.recv_timeout(left.min(SLICE)) {
            Ok(answer) => return answer,
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                return refuse("the guard stopped before answering; the call is blocked");
            }
        }
    }
}

/// How long a hook of `client` may take for `event` (`None`: not known yet).
pub(crate) fn deadline(client: Client, event: Option<&str>) -> Duration {
    let timeout = client_timeout(client, event);
    // A tenth of the timeout, at least 500 ms, is left for the answer to reach the client.
    let margin = (timeout / 10).max(Duration::from_millis(500));
    let own = timeout
        .saturating_sub(margin)
        .max(Duration::from_millis(100));
    match std::env::var(DEADLINE_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
    {
        Some(ms) => own.min(Duration::from_millis(ms)),
        None => own,
    }
}

/// The timeout `init` writes for `event` of `client`; the shortest of the client's events when
/// the event is unknown.
fn client_timeout(client: Client, event: Option<&str>) -> Duration {
    let name = match client {
        Client::ClaudeCode => ClientName::Claude,
        Client::Codex => ClientName::Codex,
        Client::Gemini => ClientName::Gemini,
    };
    let Some(spec) = init::CLIENTS.iter().find(|spec| spec.name == name) else {
        return FALLBACK;
    };
    let in_unit = |value: u64| match spec.unit {
        TimeoutUnit::Seconds => Duration::from_secs(value),
        TimeoutUnit::Millis => Duration::from_millis(value),
    };
    let known = event.and_then(|e| spec.events.iter().find(|spec| spec.name == e));
    match known {
        Some(spec) => in_unit(spec.timeout),
        None => spec
            .events
            .iter()
            .map(|e| in_unit(e.timeout))
            .min()
            .unwrap_or(FALLBACK),
    }
}

/// The shortest timeout any client documents for a command hook it was not told about.
const FALLBACK: Duration = Duration::from_secs(10);

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic, clippy::indexing_slicing)]

    use super::*;

    #[test]
    fn every_written_timeout_leaves_a_margin() {
        for spec in init::CLIENTS {
            for event in spec.events {
                let client = match spec.name {
                    ClientName::Claude => Client::ClaudeCode,
                    ClientName::Codex => Client::Codex,
                    ClientName::Gemini => Client::Gemini,
                };
                let timeout = client_timeout(client, Some(event.name));
                let own = deadline(client, Some(event.name));
                assert!(own < timeout, "{} {}", spec.subcommand, event.name);
                assert!(
                    own >= timeout * 8 / 10,
                    "{} {}",
                    spec.subcommand,
                    event.name
                );
                // Unknown yet: no longer than any of the client's events allows.
                assert!(deadline(client, None) <= own);
            }
        }
    }

    #[test]
    fn a_silent_judgement_is_refused_at_the_deadline() {
        let (_tx, rx) = std::sync::mpsc::channel::<String>();
        let started = Instant::now() - Duration::from_secs(3600);
        let answer = await_answer(Client::Codex, started, || None, &rx, |why| why.to_owned());
        assert!(answer.contains("did not finish judging"), "{answer}");
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        tx.send("judged".to_owned()).unwrap();
        let answer = await_answer(Client::Codex, Instant::now(), || None, &rx, |w| w.into());
        assert_eq!(answer, "judged");
        drop(tx);
        let answer = await_answer(Client::Codex, Instant::now(), || None, &rx, |w| w.into());
        assert!(answer.contains("stopped before answering"), "{answer}");
    }
}

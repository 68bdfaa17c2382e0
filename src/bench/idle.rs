//! `sluice bench idle`: the hold mode for memory measurement. Opens N handshake-era sessions
//! over M keep-alive connections, optionally one GET stream per session (each on its own TCP
//! connection, drained while held), prints `ready sessions=N streams=S` on stdout once all are
//! open, holds them until the hold time passes or the caller's stop future resolves, then
//! `DELETE`s the sessions (best effort).
//!
//! Owns only opening, holding and closing; must not measure the server (scripts read its RSS
//! once the `ready` line is out).

use std::future::Future;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::BodyExt;
use tokio::sync::{mpsc, Semaphore};
use tokio::task::{JoinHandle, JoinSet};

use super::conn::{self, Slot};
use super::settings::{Accept, Era, IdleSettings, Method, Protocol, Settings, Stop};
use super::wire::{AnswerReader, ErrorKind, Session};
use super::BenchError;

/// Streams being opened at once (each is a new TCP connection; more would overflow the
/// server's accept backlog for no gain).
const STREAM_OPENING_CONCURRENCY: usize = 256;

/// What a hold run opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    pub sessions: usize,
    pub streams: usize,
}

/// The request settings the sessions and streams are opened with.
fn request_settings(idle: &IdleSettings) -> Settings {
    Settings {
        target: idle.target.clone(),
        era: Era::Handshake,
        method: Method::Ping,
        tool: None,
        args: "{}".to_owned(),
        meta: None,
        clients: idle.sessions,
        connections: idle.connections,
        protocol: Protocol::Http1,
        stop: Stop::Requests(1),
        warmup: Duration::ZERO,
        accept: Accept::Both,
        headers: idle.headers.clone(),
        json: None,
        quiet: true,
        timeout: idle.timeout,
    }
}

/// Raises the soft limit of open files to the hard limit (10,000 streams need 10,000 sockets);
/// returns the limit now in force.
pub(crate) fn raise_open_files_limit() -> Option<u64> {
    rlimit::increase_nofile_limit(u64::MAX).ok()
}

/// Runs the hold: opens everything, prints the `ready` line, holds until `settings.hold` passes
/// or `stop` resolves, closes the sessions.
pub async fn idle(idle: IdleSettings, stop: impl Future<Output = ()>) -> Result<Held, BenchError> {
    if let Some(limit) = raise_open_files_limit() {
        let needed = idle.sessions * usize::from(idle.streams) + idle.connections + 64;
        if (limit as usize) < needed {
            eprintln!("warning: open files limit {limit} is below the {needed} sockets needed");
        }
    }
    let settings = Arc::new(request_settings(&idle));

    // Sessions: connection j opens sessions j, j + M, j + 2M, ... one after another.
    let slots: Vec<Arc<Slot>> = (0..idle.connections)
        .map(|_| Arc::new(Slot::default()))
        .collect();
    let mut opening = JoinSet::new();
    for (slot_idx, slot) in slots.iter().enumerate() {
        let count = (idle.sessions - slot_idx).div_ceil(idle.connections);
        let slot = Arc::clone(slot);
        let settings = Arc::clone(&settings);
        opening.spawn(async move {
            let mut reader = AnswerReader::default();
            let mut opened = Vec::with_capacity(count);
            for _ in 0..count {
                match slot.open_session(&settings, &mut reader).await {
                    Ok(session) => opened.push(session),
                    Err(kind) => return (slot_idx, opened, Some(kind)),
                }
            }
            (slot_idx, opened, None)
        });
    }
    let mut sessions: Vec<(usize, Session)> = Vec::with_capacity(idle.sessions);
    let mut first_error = None;
    while let Some(joined) = opening.join_next().await {
        match joined {
            Ok((slot_idx, opened, error)) => {
                sessions.extend(opened.into_iter().map(|s| (slot_idx, s)));
                first_error = first_error.or(error.map(|k| k.to_string()));
            }
            Err(join) => first_error = first_error.or(Some(join.to_string())),
        }
    }
    if let Some(why) = first_error {
        let opened = sessions.len();
        close_all(&settings, &slots, &sessions).await;
        return Err(BenchError::Idle(format!(
            "opened {opened} of {} sessions; first failure: {why}",
            idle.sessions
        )));
    }

    // Streams: one GET per session, each on its own connection, drained while held.
    let mut drains: Vec<JoinHandle<()>> = Vec::new();
    let mut streams = 0;
    if idle.streams {
        let permits = Arc::new(Semaphore::new(STREAM_OPENING_CONCURRENCY));
        let (opened_tx, mut opened_rx) = mpsc::channel::<Result<(), ErrorKind>>(1024);
        for (_, session) in &sessions {
            let settings = Arc::clone(&settings);
            let session = session.clone();
            let permits = Arc::clone(&permits);
            let opened_tx = opened_tx.clone();
            drains.push(tokio::spawn(async move {
                let permit = permits.acquire_owned().await;
                let opening = conn::open_stream(&settings, &session);
                let outcome = tokio::time::timeout(settings.timeout, opening)
                    .await
                    .unwrap_or(Err(ErrorKind::Timeout));
                drop(permit);
                match outcome {
                    Ok((sender, mut body)) => {
                        // Reported, then dropped: the opener counts until every sender is gone.
                        let _ = opened_tx.send(Ok(())).await;
                        drop(opened_tx);
                        while let Some(Ok(_)) = body.frame().await {}
                        drop(sender);
                    }
                    Err(kind) => {
                        let _ = opened_tx.send(Err(kind)).await;
                    }
                }
            }));
        }
        drop(opened_tx);
        let mut first_error = None;
        while let Some(outcome) = opened_rx.recv().await {
            match outcome {
                Ok(()) => streams += 1,
                Err(kind) => first_error = first_error.or(Some(kind)),
            }
        }
        if let Some(kind) = first_error {
            drains.iter().for_each(JoinHandle::abort);
            close_all(&settings, &slots, &sessions).await;
            return Err(BenchError::Idle(format!(
                "opened {} sessions but {streams} of {} streams; first failure: {kind}",
                sessions.len(),
                sessions.len()
            )));
        }
    }

    let held = Held {
        sessions: sessions.len(),
        streams,
    };
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            "ready sessions={} streams={}",
            held.sessions, held.streams
        );
        let _ = out.flush();
    }
    tokio::select! {
        () = tokio::time::sleep(idle.hold) => {}
        () = stop => {}
    }
    let ended = drains.iter().filter(|d| d.is_finished()).count();
    if ended > 0 {
        eprintln!("note: {ended} streams ended while held");
    }
    drains.iter().for_each(JoinHandle::abort);
    close_all(&settings, &slots, &sessions).await;
    Ok(held)
}

/// `DELETE`s every session over its connection (best effort); reports failures on stderr.
async fn close_all(settings: &Arc<Settings>, slots: &[Arc<Slot>], sessions: &[(usize, Session)]) {
    let mut closing = JoinSet::new();
    for (slot_idx, slot) in slots.iter().enumerate() {
        let mine: Vec<Session> = sessions
            .iter()
            .filter(|(idx, _)| *idx == slot_idx)
            .map(|(_, s)| s.clone())
            .collect();
        let slot = Arc::clone(slot);
        let settings = Arc::clone(settings);
        closing.spawn(async move {
            let mut failed = 0usize;
            for session in &mine {
                if slot.close_session(&settings, session).await.is_err() {
                    failed += 1;
                }
            }
            failed
        });
    }
    let mut failed = 0;
    while let Some(joined) = closing.join_next().await {
        failed += joined.unwrap_or(0);
    }
    if failed > 0 {
        eprintln!("note: {failed} sessions could not be deleted");
    }
}

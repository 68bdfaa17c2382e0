//! The load loop: N virtual clients over M shared connections (client `i` uses connection
//! `i % M`), each opening its session (handshake era), then issuing requests back to back until
//! the window ends or the request budget is spent; the warm-up runs the same loop uncounted.
//!
//! Owns what is counted and when a run stops. Must not build request bytes or judge answers
//! (that is `wire`), nor format results (that is `report`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use parking_lot::Mutex;
use tokio::sync::{watch, Barrier};

use super::conn::{self, Slot};
use super::report::{self, Live, Progress, Recorder, Report, SharedHistogram, Totals};
use super::settings::{Era, Settings, Stop};
use super::wire::{AnswerReader, ErrorKind, RequestTemplate, Session};
use super::BenchError;

/// How long a client waits after a failed connect before trying again, so a server that is down
/// is not hammered in a tight loop.
const RECONNECT_PAUSE: Duration = Duration::from_millis(10);
/// How often the progress line is written.
const PROGRESS_INTERVAL: Duration = Duration::from_secs(1);

/// The run's timeline, published once every client is set up.
#[derive(Debug, Clone, Copy)]
struct Window {
    /// Counting starts (the warm-up ends).
    measure: Instant,
    /// No request starts after this (timed runs).
    end: Option<Instant>,
}

/// What every client shares.
struct Shared {
    settings: Settings,
    histogram: SharedHistogram,
    live: Arc<Live>,
    /// Counted requests started (the `--requests` budget).
    started: AtomicU64,
    /// Set when the caller's stop future resolves (Ctrl-C): no new request starts.
    stopping: AtomicBool,
    ready: Barrier,
    window: watch::Receiver<Option<Window>>,
}

/// Runs the load described by `settings` and returns what it measured.
pub async fn run(settings: Settings) -> Result<Report, BenchError> {
    run_until(settings, std::future::pending()).await
}

/// [`run`], ending early (with the report of what was counted so far) when `stop` resolves.
pub async fn run_until(
    settings: Settings,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<Report, BenchError> {
    // Fail clearly when nothing listens, rather than reporting a run of connect errors.
    tokio::time::timeout(
        settings.timeout,
        tokio::net::TcpStream::connect(&settings.target.connect),
    )
    .await
    .map_err(|_| BenchError::Unreachable(settings.target.connect.clone(), "timed out".into()))?
    .map_err(|e| BenchError::Unreachable(settings.target.connect.clone(), e.to_string()))?;

    let (window_tx, window_rx) = watch::channel(None);
    let shared = Arc::new(Shared {
        histogram: Arc::new(Mutex::new(report::histogram(settings.timeout))),
        live: Arc::new(Live::default()),
        started: AtomicU64::new(0),
        stopping: AtomicBool::new(false),
        ready: Barrier::new(settings.clients + 1),
        window: window_rx,
        settings,
    });
    let slots: Vec<Arc<Slot>> = (0..shared.settings.connections)
        .map(|_| Arc::new(Slot::default()))
        .collect();
    let tasks: Vec<_> = (0..shared.settings.clients)
        .map(|client_idx| {
            let slot = Arc::clone(&slots[client_idx % slots.len()]);
            tokio::spawn(client(Arc::clone(&shared), slot))
        })
        .collect();

    let stopper = {
        let shared = Arc::clone(&shared);
        tokio::spawn(async move {
            stop.await;
            shared.stopping.store(true, Ordering::Relaxed);
        })
    };
    shared.ready.wait().await;
    let start = Instant::now();
    let measure = start + shared.settings.warmup;
    let window = Window {
        measure,
        end: match shared.settings.stop {
            Stop::After(duration) => Some(measure + duration),
            Stop::Requests(_) => None,
        },
    };
    window_tx.send_replace(Some(window));

    let progress = (!shared.settings.quiet).then(|| {
        let live = Arc::clone(&shared.live);
        tokio::spawn(async move {
            let mut progress = Progress::default();
            let mut ticks = tokio::time::interval_at(
                tokio::time::Instant::now() + PROGRESS_INTERVAL,
                PROGRESS_INTERVAL,
            );
            loop {
                ticks.tick().await;
                let now = Instant::now();
                progress.tick(&live, now - start, now < measure, PROGRESS_INTERVAL);
            }
        })
    });

    let mut recorders = Vec::with_capacity(tasks.len());
    let mut finished = measure;
    let mut failure = None;
    for task in tasks {
        match task.await {
            Ok((recorder, at)) => {
                recorders.push(recorder);
                finished = finished.max(at);
            }
            Err(join) => failure = Some(join.to_string()),
        }
    }
    stopper.abort();
    if let Some(task) = progress {
        task.abort();
        Progress::default().finish();
    }
    if let Some(why) = failure {
        return Err(BenchError::Client(why));
    }
    let totals = Totals::merge(recorders);
    let histogram = shared.histogram.lock().clone();
    Ok(Report::new(
        &shared.settings,
        &totals,
        &histogram,
        finished.saturating_duration_since(measure),
    ))
}

/// One virtual client; returns its counts and when it issued its last request.
async fn client(shared: Arc<Shared>, slot: Arc<Slot>) -> (Recorder, Instant) {
    let settings = &shared.settings;
    let mut reader = AnswerReader::default();
    let tool_call = settings.method == super::settings::Method::ToolsCall;
    let mut recorder = Recorder::new(Arc::clone(&shared.histogram), Arc::clone(&shared.live));
    // Set-up is not counted; a client whose session fails here retries in the loop, counted.
    let mut session: Option<Session> = match settings.era {
        Era::Handshake => slot.open_session(settings, &mut reader).await.ok(),
        Era::Stateless => None,
    };
    let mut template = RequestTemplate::new(settings, session.as_ref());
    shared.ready.wait().await;
    let mut window_rx = shared.window.clone();
    let window = match window_rx.wait_for(Option::is_some).await {
        Ok(window) => *window,
        Err(_) => None,
    };
    let Some(window) = window else {
        return (recorder, Instant::now());
    };

    let mut body = BytesMut::with_capacity(512);
    let mut id: u64 = 1;
    loop {
        let now = Instant::now();
        if window.end.is_some_and(|end| now >= end) || shared.stopping.load(Ordering::Relaxed) {
            break;
        }
        let counted = now >= window.measure;
        if let (true, Stop::Requests(budget)) = (counted, settings.stop) {
            if shared.started.fetch_add(1, Ordering::Relaxed) >= budget {
                break;
            }
        }
        if settings.era == Era::Handshake && session.is_none() {
            match slot.open_session(settings, &mut reader).await {
                Ok(opened) => {
                    template = RequestTemplate::new(settings, Some(&opened));
                    session = Some(opened);
                }
                Err(kind) => {
                    if counted {
                        recorder.record(Err(kind), Duration::ZERO, reader.bytes, 0, None);
                    }
                    if kind == ErrorKind::Connect {
                        tokio::time::sleep(RECONNECT_PAUSE).await;
                    }
                    continue;
                }
            }
        }
        let request = template.build(id, &mut body);
        reader.set_mode(tool_call, false);
        let (outcome, latency) = slot.exchange(settings, request, &mut reader, id).await;
        let (result, framing) = match outcome {
            // Framing counts only for answers that are 200s.
            Ok(answer) => (
                conn::verdict(&answer, &mut reader),
                answer
                    .framing
                    .filter(|_| answer.status == http::StatusCode::OK),
            ),
            Err(kind) => (Err(kind), None),
        };
        // A session the server no longer knows is opened again on the next request.
        if result == Err(ErrorKind::Http(404)) && session.as_ref().is_some_and(|s| s.id.is_some()) {
            session = None;
        }
        if counted {
            recorder.record(result, latency, reader.bytes, reader.events, framing);
        }
        if result == Err(ErrorKind::Connect) {
            tokio::time::sleep(RECONNECT_PAUSE).await;
        }
        id = id.checked_add(1).unwrap_or(1);
    }
    let finished = Instant::now();
    recorder.flush();
    if let Some(session) = session {
        let _ = slot.close_session(settings, &session).await;
    }
    (recorder, finished)
}

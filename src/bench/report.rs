//! What a run measured: per-client [`Recorder`]s (counts, errors by kind, latencies into a
//! shared HDR histogram in batches), their merge into a [`Report`], the human summary, the JSON
//! results, and the once-a-second progress line.
//!
//! Must not send requests or decide what is counted (that is `run`).

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hdrhistogram::Histogram;
use parking_lot::Mutex;
use serde::Serialize;

use super::settings::{Settings, Stop};
use super::wire::{ErrorKind, Framing};

/// Latencies a client keeps before adding them to the shared histogram (one lock per batch).
const LATENCY_BATCH: usize = 512;
/// Significant figures of the latency histogram.
const SIGNIFICANT_FIGURES: u8 = 3;

/// The shared latency histogram (nanoseconds).
pub(crate) type SharedHistogram = Arc<Mutex<Histogram<u64>>>;

/// A histogram (ns) able to hold latencies up to `timeout` (larger ones are clamped).
pub(crate) fn histogram(timeout: Duration) -> Histogram<u64> {
    let high = u64::try_from(timeout.as_nanos())
        .unwrap_or(u64::MAX / 2)
        .max(1_000_000);
    Histogram::new_with_bounds(1, high, SIGNIFICANT_FIGURES)
        .or_else(|_| Histogram::new(SIGNIFICANT_FIGURES))
        .expect("an auto-resizing histogram with 3 significant figures is valid")
}

/// Counters the progress line reads while the run goes (all clients add to them).
#[derive(Debug, Default)]
pub(crate) struct Live {
    /// Counted requests finished.
    pub requests: AtomicU64,
    /// Counted requests that failed.
    pub errors: AtomicU64,
}

/// One client's counts.
#[derive(Debug)]
pub(crate) struct Recorder {
    pub requests: u64,
    pub ok: u64,
    pub errors: BTreeMap<ErrorKind, u64>,
    pub events: u64,
    pub bytes: u64,
    pub sse_answers: u64,
    pub json_answers: u64,
    latencies: Vec<u64>,
    histogram: SharedHistogram,
    live: Arc<Live>,
}

impl Recorder {
    pub(crate) fn new(histogram: SharedHistogram, live: Arc<Live>) -> Self {
        Self {
            requests: 0,
            ok: 0,
            errors: BTreeMap::new(),
            events: 0,
            bytes: 0,
            sse_answers: 0,
            json_answers: 0,
            latencies: Vec::with_capacity(LATENCY_BATCH),
            histogram,
            live,
        }
    }

    /// Counts one request: its outcome, latency (recorded for OK answers only), body bytes,
    /// SSE events and framing.
    pub(crate) fn record(
        &mut self,
        outcome: Result<(), ErrorKind>,
        latency: Duration,
        bytes: u64,
        events: u64,
        framing: Option<Framing>,
    ) {
        self.requests += 1;
        self.bytes += bytes;
        self.events += events;
        match framing {
            Some(Framing::Sse) => self.sse_answers += 1,
            Some(Framing::Json) => self.json_answers += 1,
            None => {}
        }
        self.live.requests.fetch_add(1, Ordering::Relaxed);
        match outcome {
            Ok(()) => {
                self.ok += 1;
                self.latencies
                    .push(u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX));
                if self.latencies.len() >= LATENCY_BATCH {
                    self.flush();
                }
            }
            Err(kind) => {
                *self.errors.entry(kind).or_default() += 1;
                self.live.errors.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Adds the kept latencies to the shared histogram.
    pub(crate) fn flush(&mut self) {
        if self.latencies.is_empty() {
            return;
        }
        let mut histogram = self.histogram.lock();
        for &ns in &self.latencies {
            histogram.saturating_record(ns.max(1));
        }
        drop(histogram);
        self.latencies.clear();
    }
}

/// Totals over all clients.
#[derive(Debug, Clone)]
pub struct Totals {
    pub requests: u64,
    pub ok: u64,
    pub errors: BTreeMap<ErrorKind, u64>,
    pub events: u64,
    pub bytes: u64,
    pub sse_answers: u64,
    pub json_answers: u64,
}

impl Totals {
    /// Merges the clients' recorders.
    pub(crate) fn merge(recorders: impl IntoIterator<Item = Recorder>) -> Self {
        let mut totals = Totals {
            requests: 0,
            ok: 0,
            errors: BTreeMap::new(),
            events: 0,
            bytes: 0,
            sse_answers: 0,
            json_answers: 0,
        };
        for mut recorder in recorders {
            recorder.flush();
            totals.requests += recorder.requests;
            totals.ok += recorder.ok;
            totals.events += recorder.events;
            totals.bytes += recorder.bytes;
            totals.sse_answers += recorder.sse_answers;
            totals.json_answers += recorder.json_answers;
            for (kind, n) in recorder.errors {
                *totals.errors.entry(kind).or_default() += n;
            }
        }
        totals
    }
}

/// Latency percentiles in microseconds.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Latency {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
    pub mean: f64,
}

impl Latency {
    /// From a histogram of nanoseconds; all zero when it is empty.
    pub(crate) fn from_histogram(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Latency {
                p50: 0.0,
                p90: 0.0,
                p99: 0.0,
                p999: 0.0,
                max: 0.0,
                mean: 0.0,
            };
        }
        let us = |ns: u64| ns as f64 / 1e3;
        Latency {
            p50: us(h.value_at_quantile(0.50)),
            p90: us(h.value_at_quantile(0.90)),
            p99: us(h.value_at_quantile(0.99)),
            p999: us(h.value_at_quantile(0.999)),
            max: us(h.max()),
            mean: h.mean() / 1e3,
        }
    }
}

/// The results of one run (the JSON written by `--json`).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub url: String,
    pub era: &'static str,
    pub method: &'static str,
    pub tool: Option<String>,
    pub clients: usize,
    pub connections: usize,
    pub protocol: &'static str,
    pub accept: &'static str,
    pub duration_s: f64,
    pub requests: u64,
    pub ok: u64,
    pub errors: BTreeMap<String, u64>,
    pub requests_per_s: f64,
    pub events: u64,
    pub events_per_s: f64,
    pub bytes: u64,
    pub bytes_per_s: f64,
    pub latency_us: Latency,
    /// Answers by framing (`json`, `sse`).
    pub answers: BTreeMap<&'static str, u64>,
    /// The warm-up (not counted), seconds.
    pub warmup_s: f64,
}

impl Report {
    /// The report of a run of `settings` that counted `totals` over `elapsed`.
    pub fn new(
        settings: &Settings,
        totals: &Totals,
        histogram: &Histogram<u64>,
        elapsed: Duration,
    ) -> Self {
        let secs = elapsed.as_secs_f64();
        let per_s = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
        Report {
            url: settings.target.url.clone(),
            era: settings.era.name(),
            method: settings.method.name(),
            tool: settings.tool.clone(),
            clients: settings.clients,
            connections: settings.connections,
            protocol: settings.protocol.name(),
            accept: settings.accept.name(),
            duration_s: secs,
            requests: totals.requests,
            ok: totals.ok,
            errors: totals
                .errors
                .iter()
                .map(|(kind, n)| (kind.to_string(), *n))
                .collect(),
            requests_per_s: per_s(totals.requests),
            events: totals.events,
            events_per_s: per_s(totals.events),
            bytes: totals.bytes,
            bytes_per_s: per_s(totals.bytes),
            latency_us: Latency::from_histogram(histogram),
            answers: BTreeMap::from([("json", totals.json_answers), ("sse", totals.sse_answers)]),
            warmup_s: settings.warmup.as_secs_f64(),
        }
    }

    /// The JSON results.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// The human summary table.
    pub fn summary(&self, stop: Stop) -> String {
        let mut out = String::new();
        let tool = self
            .tool
            .as_deref()
            .map_or(String::new(), |t| format!(" {t}"));
        let window = match stop {
            Stop::After(_) => format!("{:.2}s", self.duration_s),
            Stop::Requests(n) => format!("{n} requests in {:.2}s", self.duration_s),
        };
        out.push_str(&format!(
            "sluice bench  {}\n  {} era, {}{tool}, {} clients over {} {} connections, accept {}, {window} after {:.2}s warm-up\n\n",
            self.url,
            self.era,
            self.method,
            self.clients,
            self.connections,
            self.protocol,
            self.accept,
            self.warmup_s,
        ));
        out.push_str(&format!(
            "  {:<12} {:>14} {:>14}\n",
            "", "total", "per second"
        ));
        out.push_str(&format!(
            "  {:<12} {:>14} {:>14.1}\n",
            "requests", self.requests, self.requests_per_s
        ));
        out.push_str(&format!(
            "  {:<12} {:>14} {:>14.1}\n",
            "ok",
            self.ok,
            if self.duration_s > 0.0 {
                self.ok as f64 / self.duration_s
            } else {
                0.0
            }
        ));
        out.push_str(&format!(
            "  {:<12} {:>14} {:>14.1}\n",
            "events", self.events, self.events_per_s
        ));
        out.push_str(&format!(
            "  {:<12} {:>14} {:>14.1}\n\n",
            "bytes", self.bytes, self.bytes_per_s
        ));
        let l = &self.latency_us;
        out.push_str("  latency µs      p50       p90       p99     p99.9       max      mean\n");
        out.push_str(&format!(
            "             {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1}\n",
            l.p50, l.p90, l.p99, l.p999, l.max, l.mean
        ));
        out.push_str(&format!(
            "\n  answers: {} sse, {} json\n",
            self.answers.get("sse").copied().unwrap_or(0),
            self.answers.get("json").copied().unwrap_or(0)
        ));
        if self.errors.is_empty() {
            out.push_str("  errors: none\n");
        } else {
            out.push_str("  errors:\n");
            for (kind, n) in &self.errors {
                out.push_str(&format!("    {kind:<16} {n}\n"));
            }
        }
        out
    }
}

/// Writes one progress line per second to stderr: `\r`-rewritten on a terminal, plain lines
/// otherwise.
#[derive(Debug)]
pub(crate) struct Progress {
    tty: bool,
    last_requests: u64,
}

impl Default for Progress {
    fn default() -> Self {
        Self {
            tty: std::io::stderr().is_terminal(),
            last_requests: 0,
        }
    }
}

impl Progress {
    /// One tick: `elapsed` since the run started, whether still warming up.
    pub(crate) fn tick(
        &mut self,
        live: &Live,
        elapsed: Duration,
        warming_up: bool,
        interval: Duration,
    ) {
        let requests = live.requests.load(Ordering::Relaxed);
        let errors = live.errors.load(Ordering::Relaxed);
        let rate =
            (requests - self.last_requests.min(requests)) as f64 / interval.as_secs_f64().max(1e-3);
        self.last_requests = requests;
        let line = if warming_up {
            format!("{:>6.1}s  warm-up", elapsed.as_secs_f64())
        } else {
            format!(
                "{:>6.1}s  {:>10.0} req/s  {:>10} requests  {:>6} errors",
                elapsed.as_secs_f64(),
                rate,
                requests,
                errors
            )
        };
        let mut err = std::io::stderr().lock();
        let _ = if self.tty {
            write!(err, "\r{line}\x1b[K")
        } else {
            writeln!(err, "{line}")
        };
        let _ = err.flush();
    }

    /// Ends a `\r`-rewritten line.
    pub(crate) fn finish(&self) {
        if self.tty {
            let _ = writeln!(std::io::stderr());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_rates_and_errors_add_up() {
        let shared: SharedHistogram = Arc::new(Mutex::new(histogram(Duration::from_secs(10))));
        let live = Arc::new(Live::default());
        let mut a = Recorder::new(Arc::clone(&shared), Arc::clone(&live));
        let mut b = Recorder::new(Arc::clone(&shared), Arc::clone(&live));
        // 1000 answers at 1..=1000 µs split over two clients, plus errors.
        for us in 1..=1000u64 {
            let r = if us % 2 == 0 { &mut a } else { &mut b };
            r.record(Ok(()), Duration::from_micros(us), 10, 2, Some(Framing::Sse));
        }
        a.record(
            Err(ErrorKind::Http(404)),
            Duration::ZERO,
            5,
            0,
            Some(Framing::Json),
        );
        b.record(Err(ErrorKind::Http(404)), Duration::ZERO, 5, 0, None);
        b.record(Err(ErrorKind::Timeout), Duration::from_secs(10), 0, 0, None);
        assert_eq!(live.requests.load(Ordering::Relaxed), 1003);
        assert_eq!(live.errors.load(Ordering::Relaxed), 3);
        let totals = Totals::merge([a, b]);
        assert_eq!(totals.requests, 1003);
        assert_eq!(totals.ok, 1000);
        assert_eq!(totals.events, 2000);
        assert_eq!(totals.bytes, 10_010);
        assert_eq!(totals.sse_answers, 1000);
        assert_eq!(totals.json_answers, 1);

        let flags = super::super::settings::Flags {
            url: "http://127.0.0.1:1/mcp".into(),
            requests: Some(1003),
            ..Default::default()
        };
        let settings = Settings::from_flags(flags).unwrap();
        let histogram = shared.lock().clone();
        let report = Report::new(&settings, &totals, &histogram, Duration::from_secs(2));
        assert_eq!(report.requests_per_s, 501.5);
        assert_eq!(report.events_per_s, 1000.0);
        assert_eq!(report.bytes_per_s, 5005.0);
        assert_eq!(report.errors["http:404"], 2);
        assert_eq!(report.errors["timeout"], 1);
        let l = report.latency_us;
        // Three significant figures: within 0.1% of the exact nearest-rank values.
        let near = |got: f64, want: f64| (got - want).abs() <= want * 0.001 + 0.001;
        assert!(near(l.p50, 500.0), "{l:?}");
        assert!(near(l.p90, 900.0), "{l:?}");
        assert!(near(l.p99, 990.0), "{l:?}");
        assert!(near(l.p999, 999.0), "{l:?}");
        assert!(near(l.max, 1000.0), "{l:?}");
        assert!(near(l.mean, 500.5), "{l:?}");

        let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        for key in [
            "url",
            "era",
            "method",
            "tool",
            "clients",
            "connections",
            "protocol",
            "accept",
            "duration_s",
            "requests",
            "ok",
            "errors",
            "requests_per_s",
            "events",
            "events_per_s",
            "bytes",
            "bytes_per_s",
            "latency_us",
        ] {
            assert!(json.get(key).is_some(), "missing {key}");
        }
        assert_eq!(json["latency_us"]["p999"], l.p999);
        assert!(report.summary(settings.stop).contains("http:404"));
    }

    #[test]
    fn an_empty_histogram_reports_zeros() {
        let h = histogram(Duration::from_secs(1));
        assert_eq!(Latency::from_histogram(&h).p99, 0.0);
    }
}

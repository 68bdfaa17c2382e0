//! Validated settings of `sluice bench` and `sluice bench idle`: flags as the user typed them
//! ([`Flags`], [`IdleFlags`]) turned into [`Settings`] / [`IdleSettings`] or a clear
//! [`SettingsError`].
//!
//! Owns parsing of durations (`10s`, `500ms`, `2m`), header lines (`Name: value`), the target
//! URL and the cross-flag rules (a tool for `tools/call`, arguments that are a JSON object,
//! connections no more than clients). Must not do IO: the binary parses flags with clap and
//! hands the strings here, tests call it directly.

use std::path::PathBuf;
use std::time::Duration;

use http::{HeaderName, HeaderValue, Uri};

/// Default virtual clients.
pub(crate) const DEFAULT_CLIENTS: usize = 16;
/// Default keep-alive connections of `bench idle` for opening sessions.
pub(crate) const DEFAULT_IDLE_CONNECTIONS: usize = 64;
/// Default warm-up of a timed run (a run with `--requests` has none unless asked).
pub(crate) const DEFAULT_WARMUP: Duration = Duration::from_secs(1);
/// Default window of a timed run when neither `--duration` nor `--requests` is given.
pub(crate) const DEFAULT_DURATION: Duration = Duration::from_secs(10);
/// Default per-request timeout: a request still unanswered after it counts as `timeout`.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default hold of `bench idle`.
pub(crate) const DEFAULT_HOLD: Duration = Duration::from_secs(60);

/// Why the flags do not make a run.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SettingsError {
    #[error("--url {0:?}: {1}")]
    Url(String, &'static str),
    #[error("--era {0:?}: expected handshake or stateless")]
    Era(String),
    #[error("--method {0:?}: expected ping, tools/list or tools/call")]
    Method(String),
    #[error("--accept {0:?}: expected sse, json, both, sse-only or json-only")]
    Accept(String),
    #[error("--method tools/call needs --tool NAME")]
    MissingTool,
    #[error("--tool and --args only apply to --method tools/call")]
    ToolWithoutCall,
    #[error("--args: not a JSON object: {0}")]
    Args(String),
    #[error("--meta: not a JSON object: {0}")]
    Meta(String),
    #[error("{flag} {value:?}: expected a duration like 10s, 500ms or 2m")]
    Duration { flag: &'static str, value: String },
    #[error("{0} must be at least 1")]
    Zero(&'static str),
    #[error(
        "--connections {connections} is more than --clients {clients}: connections would stay idle"
    )]
    MoreConnectionsThanClients { connections: usize, clients: usize },
    #[error("--duration and --requests exclude each other")]
    DurationAndRequests,
    #[error("--header {0:?}: expected 'Name: value'")]
    Header(String),
}

/// The JSON-RPC method every request of a run calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Ping,
    ToolsList,
    ToolsCall,
}

impl Method {
    /// The JSON-RPC method name.
    pub fn name(self) -> &'static str {
        match self {
            Method::Ping => "ping",
            Method::ToolsList => "tools/list",
            Method::ToolsCall => "tools/call",
        }
    }
}

/// Which MCP protocol era the requests speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// 2025-11-25: `initialize` + `notifications/initialized` once per virtual client, then the
    /// session id and protocol version headers on every request.
    Handshake,
    /// 2026-07-28: no session; every request carries the `_meta` envelope and the
    /// `MCP-Protocol-Version`, `Mcp-Method` (and `Mcp-Name`) headers.
    Stateless,
}

impl Era {
    pub fn name(self) -> &'static str {
        match self {
            Era::Handshake => "handshake",
            Era::Stateless => "stateless",
        }
    }
}

/// HTTP version of the connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// HTTP/1.1 keep-alive: one request at a time per connection.
    Http1,
    /// Prior-knowledge h2c: clients sharing a connection multiplex streams on it.
    H2,
}

impl Protocol {
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Http1 => "http1",
            Protocol::H2 => "h2",
        }
    }
}

/// What the `Accept` header offers. The MCP transport requires POSTs to list both media types
/// (servers answer 406 otherwise), so `sse` and `json` list both and state a preference with a
/// q-value; `sse-only` and `json-only` list one, for servers that allow it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accept {
    /// SSE preferred: `application/json;q=0.5, text/event-stream`.
    Sse,
    /// JSON preferred: `application/json, text/event-stream;q=0.5`.
    Json,
    /// Both, equal: the server chooses.
    Both,
    /// `text/event-stream` only.
    SseOnly,
    /// `application/json` only.
    JsonOnly,
}

impl Accept {
    pub fn name(self) -> &'static str {
        match self {
            Accept::Sse => "sse",
            Accept::Json => "json",
            Accept::Both => "both",
            Accept::SseOnly => "sse-only",
            Accept::JsonOnly => "json-only",
        }
    }

    /// The header value.
    pub fn header(self) -> &'static str {
        match self {
            Accept::Sse => "application/json;q=0.5, text/event-stream",
            Accept::Json => "application/json, text/event-stream;q=0.5",
            Accept::Both => "application/json, text/event-stream",
            Accept::SseOnly => "text/event-stream",
            Accept::JsonOnly => "application/json",
        }
    }
}

/// When a run stops counting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// After this long (past the warm-up).
    After(Duration),
    /// After exactly this many requests across all clients (past the warm-up).
    Requests(u64),
}

/// Where the requests go: an `http://` URL split for both HTTP versions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The URL as given.
    pub url: String,
    /// `host:port` to connect to.
    pub connect: String,
    /// The `Host` header / `:authority`.
    pub authority: String,
    /// Origin-form request target (path and query), for HTTP/1.1.
    pub path: Uri,
    /// Absolute-form URI, for h2 (`:scheme`, `:authority`, `:path`).
    pub absolute: Uri,
}

impl Target {
    /// Parses an `http://host[:port]/path` URL (no TLS: the bench measures the server, not a
    /// TLS stack).
    pub fn parse(url: &str) -> Result<Self, SettingsError> {
        let err = |why| SettingsError::Url(url.to_owned(), why);
        let uri: Uri = url.parse().map_err(|_| err("not a URL"))?;
        match uri.scheme_str() {
            Some("http") => {}
            Some("https") => return Err(err("https is not supported; use http://")),
            _ => return Err(err("expected http://host:port/path")),
        }
        let authority = uri.authority().ok_or_else(|| err("no host"))?;
        let host = authority.host();
        if host.is_empty() {
            return Err(err("no host"));
        }
        let port = authority.port_u16().unwrap_or(80);
        let connect = if host.starts_with('[') {
            format!("{host}:{port}")
        } else if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        let path_and_query = uri.path_and_query().map_or("/", |p| p.as_str());
        let path: Uri = path_and_query.parse().map_err(|_| err("bad path"))?;
        Ok(Self {
            url: url.to_owned(),
            connect,
            authority: authority.as_str().to_owned(),
            path,
            absolute: uri,
        })
    }
}

/// The load run's flags, as strings, before validation.
#[derive(Debug, Clone, Default)]
pub struct Flags {
    pub url: String,
    pub era: Option<String>,
    pub method: Option<String>,
    pub tool: Option<String>,
    pub args: Option<String>,
    pub meta: Option<String>,
    pub clients: Option<usize>,
    pub connections: Option<usize>,
    pub h2: bool,
    pub duration: Option<String>,
    pub requests: Option<u64>,
    pub warmup: Option<String>,
    pub accept: Option<String>,
    pub headers: Vec<String>,
    pub json: Option<PathBuf>,
    pub quiet: bool,
    pub timeout: Option<String>,
}

/// A validated load run.
#[derive(Debug, Clone)]
pub struct Settings {
    pub target: Target,
    pub era: Era,
    pub method: Method,
    /// The tool of `tools/call`.
    pub tool: Option<String>,
    /// The arguments of `tools/call`: a JSON object, compact.
    pub args: String,
    /// Members added to every request's `params._meta` (in the stateless era, over the
    /// envelope's), e.g. client capabilities that opt into an extension.
    pub meta: Option<serde_json::Map<String, serde_json::Value>>,
    pub clients: usize,
    pub connections: usize,
    pub protocol: Protocol,
    pub stop: Stop,
    pub warmup: Duration,
    pub accept: Accept,
    /// Extra headers on every request (e.g. `Authorization`).
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// Where to write the JSON results (`-` = stdout).
    pub json: Option<PathBuf>,
    pub quiet: bool,
    pub timeout: Duration,
}

impl Settings {
    /// Validates `flags`.
    pub fn from_flags(flags: Flags) -> Result<Self, SettingsError> {
        let target = Target::parse(&flags.url)?;
        let era = match flags.era.as_deref() {
            None | Some("handshake") => Era::Handshake,
            Some("stateless") => Era::Stateless,
            Some(other) => return Err(SettingsError::Era(other.to_owned())),
        };
        let method = match flags.method.as_deref() {
            None | Some("ping") => Method::Ping,
            Some("tools/list") => Method::ToolsList,
            Some("tools/call") => Method::ToolsCall,
            Some(other) => return Err(SettingsError::Method(other.to_owned())),
        };
        let (tool, args) = match method {
            Method::ToolsCall => {
                let tool = flags.tool.ok_or(SettingsError::MissingTool)?;
                let args = parse_args(flags.args.as_deref().unwrap_or("{}"))?;
                (Some(tool), args)
            }
            _ if flags.tool.is_some() || flags.args.is_some() => {
                return Err(SettingsError::ToolWithoutCall)
            }
            _ => (None, "{}".to_owned()),
        };
        let meta = match flags.meta.as_deref() {
            None => None,
            Some(text) => match serde_json::from_str::<serde_json::Value>(text) {
                Ok(serde_json::Value::Object(map)) => Some(map),
                Ok(_) => return Err(SettingsError::Meta(text.to_owned())),
                Err(e) => return Err(SettingsError::Meta(e.to_string())),
            },
        };
        let clients = flags.clients.unwrap_or(DEFAULT_CLIENTS);
        if clients == 0 {
            return Err(SettingsError::Zero("--clients"));
        }
        let connections = flags.connections.unwrap_or(clients);
        if connections == 0 {
            return Err(SettingsError::Zero("--connections"));
        }
        if connections > clients {
            return Err(SettingsError::MoreConnectionsThanClients {
                connections,
                clients,
            });
        }
        let stop = match (flags.duration.as_deref(), flags.requests) {
            (Some(_), Some(_)) => return Err(SettingsError::DurationAndRequests),
            (_, Some(0)) => return Err(SettingsError::Zero("--requests")),
            (_, Some(n)) => Stop::Requests(n),
            (Some(text), None) => {
                Stop::After(nonzero(parse_duration("--duration", text)?, "--duration")?)
            }
            (None, None) => Stop::After(DEFAULT_DURATION),
        };
        let warmup = match (flags.warmup.as_deref(), stop) {
            (Some(text), _) => parse_duration("--warmup", text)?,
            (None, Stop::After(_)) => DEFAULT_WARMUP,
            (None, Stop::Requests(_)) => Duration::ZERO,
        };
        let accept = match flags.accept.as_deref() {
            None | Some("both") => Accept::Both,
            Some("sse") => Accept::Sse,
            Some("json") => Accept::Json,
            Some("sse-only") => Accept::SseOnly,
            Some("json-only") => Accept::JsonOnly,
            Some(other) => return Err(SettingsError::Accept(other.to_owned())),
        };
        let headers = parse_headers(&flags.headers)?;
        let timeout = match flags.timeout.as_deref() {
            Some(text) => nonzero(parse_duration("--timeout", text)?, "--timeout")?,
            None => DEFAULT_TIMEOUT,
        };
        Ok(Self {
            target,
            era,
            method,
            tool,
            args,
            meta,
            clients,
            connections,
            protocol: if flags.h2 {
                Protocol::H2
            } else {
                Protocol::Http1
            },
            stop,
            warmup,
            accept,
            headers,
            json: flags.json,
            quiet: flags.quiet,
            timeout,
        })
    }
}

/// `bench idle` flags, as strings, before validation.
#[derive(Debug, Clone, Default)]
pub struct IdleFlags {
    pub url: String,
    pub sessions: usize,
    pub streams: bool,
    pub connections: Option<usize>,
    pub hold: Option<String>,
    pub headers: Vec<String>,
    pub timeout: Option<String>,
}

/// A validated hold run.
#[derive(Debug, Clone)]
pub struct IdleSettings {
    pub target: Target,
    pub sessions: usize,
    /// Open one GET stream per session too.
    pub streams: bool,
    /// Keep-alive connections the sessions are opened over.
    pub connections: usize,
    pub hold: Duration,
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// Per-request timeout while opening.
    pub timeout: Duration,
}

impl IdleSettings {
    pub fn from_flags(flags: IdleFlags) -> Result<Self, SettingsError> {
        let target = Target::parse(&flags.url)?;
        if flags.sessions == 0 {
            return Err(SettingsError::Zero("--sessions"));
        }
        let connections = flags
            .connections
            .unwrap_or(DEFAULT_IDLE_CONNECTIONS)
            .min(flags.sessions);
        if connections == 0 {
            return Err(SettingsError::Zero("--connections"));
        }
        let hold = match flags.hold.as_deref() {
            Some(text) => parse_duration("--hold", text)?,
            None => DEFAULT_HOLD,
        };
        let timeout = match flags.timeout.as_deref() {
            Some(text) => nonzero(parse_duration("--timeout", text)?, "--timeout")?,
            None => DEFAULT_TIMEOUT,
        };
        Ok(Self {
            target,
            sessions: flags.sessions,
            streams: flags.streams,
            connections,
            hold,
            headers: parse_headers(&flags.headers)?,
            timeout,
        })
    }
}

fn nonzero(duration: Duration, flag: &'static str) -> Result<Duration, SettingsError> {
    if duration.is_zero() {
        return Err(SettingsError::Zero(flag));
    }
    Ok(duration)
}

/// Parses `10s`, `1.5s`, `500ms`, `2m`, `1h`, `250us`; a bare number is seconds.
pub(crate) fn parse_duration(flag: &'static str, text: &str) -> Result<Duration, SettingsError> {
    let err = || SettingsError::Duration {
        flag,
        value: text.to_owned(),
    };
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number.parse().map_err(|_| err())?;
    let scale = match unit.trim() {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(err()),
    };
    Duration::try_from_secs_f64(value * scale).map_err(|_| err())
}

/// Parses `Name: value` lines into header pairs.
pub(crate) fn parse_headers(
    lines: &[String],
) -> Result<Vec<(HeaderName, HeaderValue)>, SettingsError> {
    lines
        .iter()
        .map(|line| {
            let err = || SettingsError::Header(line.clone());
            let (name, value) = line.split_once(':').ok_or_else(err)?;
            let name = HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| err())?;
            let value = HeaderValue::from_str(value.trim()).map_err(|_| err())?;
            Ok((name, value))
        })
        .collect()
}

/// Checks that `text` is a JSON object and returns it compact.
fn parse_args(text: &str) -> Result<String, SettingsError> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| SettingsError::Args(e.to_string()))?;
    if !value.is_object() {
        return Err(SettingsError::Args(text.to_owned()));
    }
    serde_json::to_string(&value).map_err(|e| SettingsError::Args(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(url: &str) -> Flags {
        Flags {
            url: url.to_owned(),
            ..Flags::default()
        }
    }

    #[test]
    fn defaults_follow_the_documented_flags() {
        let s =
            Settings::from_flags(flags("http://127.0.0.1:8080/runtime/demo/agent/mcp")).unwrap();
        assert_eq!(s.era, Era::Handshake);
        assert_eq!(s.method, Method::Ping);
        assert_eq!(s.clients, 16);
        assert_eq!(s.connections, 16);
        assert_eq!(s.protocol, Protocol::Http1);
        assert_eq!(s.stop, Stop::After(Duration::from_secs(10)));
        assert_eq!(s.warmup, Duration::from_secs(1));
        assert_eq!(s.accept.header(), "application/json, text/event-stream");
        assert_eq!(s.timeout, Duration::from_secs(10));
        assert_eq!(s.target.connect, "127.0.0.1:8080");
        assert_eq!(s.target.authority, "127.0.0.1:8080");
        assert_eq!(s.target.path, "/runtime/demo/agent/mcp");
        assert_eq!(s.tool, None);
    }

    #[test]
    fn a_request_count_has_no_default_warmup() {
        let mut f = flags("http://localhost/mcp");
        f.requests = Some(100);
        let s = Settings::from_flags(f.clone()).unwrap();
        assert_eq!(s.stop, Stop::Requests(100));
        assert_eq!(s.warmup, Duration::ZERO);
        assert_eq!(s.target.connect, "localhost:80");
        f.warmup = Some("250ms".into());
        assert_eq!(
            Settings::from_flags(f).unwrap().warmup,
            Duration::from_millis(250)
        );
    }

    #[test]
    fn tools_call_needs_a_tool_and_object_arguments() {
        let mut f = flags("http://h:1/mcp");
        f.method = Some("tools/call".into());
        assert_eq!(
            Settings::from_flags(f.clone()).unwrap_err(),
            SettingsError::MissingTool
        );
        f.tool = Some("get_customer".into());
        let s = Settings::from_flags(f.clone()).unwrap();
        assert_eq!(s.args, "{}");
        f.args = Some(r#"{ "id" : "c-100" }"#.into());
        assert_eq!(
            Settings::from_flags(f.clone()).unwrap().args,
            r#"{"id":"c-100"}"#
        );
        f.args = Some("[1]".into());
        assert!(matches!(
            Settings::from_flags(f.clone()),
            Err(SettingsError::Args(_))
        ));
        f.args = Some("{".into());
        assert!(matches!(
            Settings::from_flags(f),
            Err(SettingsError::Args(_))
        ));
        let mut f = flags("http://h:1/mcp");
        f.tool = Some("x".into());
        assert_eq!(
            Settings::from_flags(f).unwrap_err(),
            SettingsError::ToolWithoutCall
        );
    }

    #[test]
    fn bad_values_are_refused_with_the_flag_named() {
        let check = |edit: fn(&mut Flags), want: &str| {
            let mut f = flags("http://127.0.0.1:1/mcp");
            edit(&mut f);
            let err = Settings::from_flags(f).unwrap_err().to_string();
            assert!(err.contains(want), "{err} does not contain {want}");
        };
        check(|f| f.url = "https://x/mcp".into(), "https is not supported");
        check(|f| f.url = "127.0.0.1:1/mcp".into(), "--url");
        check(|f| f.era = Some("2025".into()), "--era");
        check(|f| f.method = Some("resources/list".into()), "--method");
        check(|f| f.accept = Some("xml".into()), "--accept");
        check(|f| f.clients = Some(0), "--clients");
        check(|f| f.connections = Some(0), "--connections");
        check(|f| f.connections = Some(17), "more than --clients 16");
        check(|f| f.requests = Some(0), "--requests");
        check(|f| f.duration = Some("ten".into()), "--duration");
        check(|f| f.duration = Some("0s".into()), "--duration");
        check(
            |f| {
                f.duration = Some("1s".into());
                f.requests = Some(1);
            },
            "exclude",
        );
        check(|f| f.timeout = Some("1x".into()), "--timeout");
        check(|f| f.headers = vec!["NoColon".into()], "--header");
        check(|f| f.meta = Some("[]".into()), "--meta");
        check(|f| f.headers = vec!["Bad Name: v".into()], "--header");
    }

    #[test]
    fn durations_and_headers_parse() {
        let d = |t| parse_duration("--x", t).unwrap();
        assert_eq!(d("10s"), Duration::from_secs(10));
        assert_eq!(d("10"), Duration::from_secs(10));
        assert_eq!(d("500ms"), Duration::from_millis(500));
        assert_eq!(d("1.5s"), Duration::from_millis(1500));
        assert_eq!(d("2m"), Duration::from_secs(120));
        assert_eq!(d("250us"), Duration::from_micros(250));
        assert!(parse_duration("--x", "-1s").is_err());
        assert!(parse_duration("--x", "").is_err());
        let h = parse_headers(&["Authorization: Bearer a:b".into()]).unwrap();
        assert_eq!(h[0].0, "authorization");
        assert_eq!(h[0].1, "Bearer a:b");
    }

    #[test]
    fn idle_settings_validate() {
        let mut f = IdleFlags {
            url: "http://127.0.0.1:9/mcp".into(),
            sessions: 10,
            ..IdleFlags::default()
        };
        let s = IdleSettings::from_flags(f.clone()).unwrap();
        assert_eq!(s.connections, 10, "never more connections than sessions");
        assert_eq!(s.hold, Duration::from_secs(60));
        f.sessions = 0;
        assert!(IdleSettings::from_flags(f).is_err());
    }
}

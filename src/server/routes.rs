//! Routes: one request from the route table to the surface that answers it.
//!
//! Owns [`handle`] (test routes, route table, contract page, CORS decoration, the
//! `X-External-Correlation-Id` echo, request metrics), the dispatch of each [`Route`] to its
//! surface behind the gate ([`admit`]), `/readyz`, `/metrics` (refreshing the gauges counted
//! elsewhere) and the test-only routes. Must not implement a surface: each arm calls into
//! `transport`, `rest`, `access` or `admin`.

use std::time::Instant;

use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode};
use hyper::body::Incoming;
use tokio::sync::mpsc;

use super::{State, TestHooks};
use crate::access::{Admitted, Endpoint};
use crate::admin;
use crate::http::body;
use crate::http::cors::{self, Policy};
use crate::http::response::{self, Body};
use crate::http::router::{self, Route};
use crate::http::server::Peer;
use crate::http::Error;
use crate::invoke::correlation::{external_from_headers, ExternalCorrelationId};
use crate::invoke::EXTERNAL_CORRELATION_ID_HEADER;
use crate::log_limit::{warn_limited, Kind};
use crate::metrics::{MethodLabel, RouteLabel};
use crate::transport::{legacy_sse, streamable};

/// Answers one request: the test routes, the route table, the gate and the surface, then the
/// CORS headers, the external correlation id echo and the request metrics.
pub(super) async fn handle(state: &State, peer: &Peer, req: Request<Incoming>) -> Response<Body> {
    let started = Instant::now();
    let (parts, body) = req.into_parts();
    if let Some(hooks) = &state.test_hooks {
        if let Some(response) = test_route(hooks, state, parts.uri.path()).await {
            return response;
        }
    }
    let route = match router::route(&parts.method, parts.uri.path()) {
        Ok(route) => route,
        Err(_)
            if parts.method == http::Method::GET
                && state.contract_path.as_deref() == Some(parts.uri.path()) =>
        {
            let mut response = response::json(
                StatusCode::OK,
                Bytes::from_static(crate::federation::CONTRACT_PAGE.as_bytes()),
            );
            response.headers_mut().insert(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static("text/markdown; charset=utf-8"),
            );
            observe(state, RouteLabel::Other, &parts, &response, started);
            return response;
        }
        Err(err) => {
            let response = Error::from(err).into_response();
            observe(state, RouteLabel::NotFound, &parts, &response, started);
            return response;
        }
    };
    let (label, cors_policy) = describe(&route);
    // The `Origin` verdict of a protected route, reached once: the gate refuses on it and the
    // CORS decoration echoes only an accepted origin.
    let origin_verdict = matches!(cors_policy, Some(Policy::Protected))
        .then(|| state.access.guard().check_origin(&parts.headers));
    let cors_origin = cors_policy.and_then(|policy| {
        accepted_origin(
            &parts,
            policy,
            origin_verdict.as_ref().is_some_and(Result::is_ok),
        )
    });
    // Read once: the MCP transports' call context gets it, and the answer echoes it.
    let external = matches!(
        route,
        Route::Mcp(_)
            | Route::LegacyMessages(_)
            | Route::BosPlatform
            | Route::A2a(_)
            | Route::A2aRemote(..)
    )
    .then(|| external_from_headers(&parts.headers))
    .flatten();
    let echo = matches!(
        label,
        RouteLabel::Mcp | RouteLabel::LegacyMessages | RouteLabel::A2a | RouteLabel::A2aRemote
    )
    .then(|| external.as_ref().map(|id| id.header_value().clone()))
    .flatten();
    let mut response = answer(state, peer, &parts, body, route, external, origin_verdict)
        .await
        .unwrap_or_else(Error::into_response);
    // "Echoes the accepted value back on X-External-Correlation-Id" (the REST surface does the
    // same in `rest`); a value that fails the acceptance rules is not echoed.
    if let Some(echo) = echo {
        response
            .headers_mut()
            .insert(EXTERNAL_CORRELATION_ID_HEADER, echo);
    }
    if let Some(policy) = cors_policy {
        cors::decorate(&mut response, cors_origin, policy);
    }
    observe(state, label, &parts, &response, started);
    response
}

/// The surface's answer to a routed request. Tenant-scoped routes pass the gate first
/// ([`admit`]); an error is answered by [`Error::into_response`] in [`handle`].
async fn answer(
    state: &State,
    peer: &Peer,
    parts: &http::request::Parts,
    body: Incoming,
    route: Route<'_>,
    external: Option<ExternalCorrelationId>,
    origin: Option<Result<(), Error>>,
) -> Result<Response<Body>, Error> {
    // Reached by the router for every protected route; checked here for any other.
    let origin = || origin.unwrap_or_else(|| state.access.guard().check_origin(&parts.headers));
    match route {
        Route::Mcp(target) => {
            let mut admitted =
                match admit(state, peer, parts, &target, Endpoint::Mcp, origin()).await {
                    Ok(admitted) => admitted,
                    Err(refused) => {
                        // Read the small body first, so the connection survives the refusal.
                        body::drain_refused(body, body::content_length(&parts.headers)).await;
                        return Err(refused);
                    }
                };
            admitted.external = external;
            streamable::handle(&state.mcp, parts, body, &target, admitted).await
        }
        Route::LegacySse(target) => {
            let admitted =
                admit(state, peer, parts, &target, Endpoint::LegacySse, origin()).await?;
            legacy_sse::open(&state.mcp, parts, &target, &admitted.caller).await
        }
        Route::LegacyMessages(target) => {
            let mut admitted =
                match admit(state, peer, parts, &target, Endpoint::LegacySse, origin()).await {
                    Ok(admitted) => admitted,
                    Err(refused) => {
                        body::drain_refused(body, body::content_length(&parts.headers)).await;
                        return Err(refused);
                    }
                };
            admitted.external = external;
            legacy_sse::post(&state.mcp, parts, body, &target, admitted).await
        }
        Route::RestTools(target) => {
            let admitted = admit(state, peer, parts, &target, Endpoint::Rest, origin()).await?;
            state.rest.list_tools(parts, &target, &admitted).await
        }
        Route::RestCall(target, name) => {
            let admitted = admit(state, peer, parts, &target, Endpoint::Rest, origin()).await?;
            state
                .rest
                .call_tool(parts, body, &target, &name, admitted)
                .await
        }
        Route::A2a(target) => {
            let (admitted, body) =
                admit_a2a(state, peer, parts, &target, body, external, origin()).await?;
            // Boxed, like the concentrator's below: the A2A futures are the largest, and
            // inline they would set the size of every request's future (MCP's included),
            // which `server.rs` boxes per request.
            Box::pin(state.a2a.rpc(parts, body, admitted)).await
        }
        Route::A2aCard(target) => state.a2a.card(parts, &target),
        Route::A2aRemoteCard(target, id) => {
            crate::a2a::remote::surface::card(&state.a2a, parts, &target, &id)
        }
        Route::A2aAgents(target) => {
            if !state.a2a.enabled() {
                return Err(Error::NotFound);
            }
            let admitted = admit(state, peer, parts, &target, Endpoint::A2a, origin()).await?;
            Ok(crate::a2a::remote::surface::list(&state.a2a, &admitted))
        }
        Route::A2aRemote(target, id) => {
            let (admitted, body) =
                admit_a2a(state, peer, parts, &target, body, external, origin()).await?;
            Box::pin(crate::a2a::remote::Concentrator::rpc(
                &state.a2a, &id, parts, body, admitted,
            ))
            .await
        }
        Route::A2aPushRelay(relay) => {
            crate::a2a::remote::push::relay_post(&state.a2a, relay, parts, body).await
        }
        Route::Healthz => Ok(response::text(StatusCode::OK, "ok")),
        Route::Readyz => readyz(state).await,
        Route::BosPlatform => {
            let (mut admitted, owner) = state
                .access
                .admit_platform(peer, parts, state.catalog.current(), origin())
                .await?;
            admitted.external = external;
            let target = crate::http::Target {
                tenant: std::borrow::Cow::Owned(owner.tenant.to_string()),
                client: std::borrow::Cow::Owned(owner.client.to_string()),
            };
            streamable::handle(&state.mcp, parts, body, &target, admitted).await
        }
        Route::ProtectedResource(path) => state
            .access
            .protected_resource(&state.catalog.current(), path)
            .map(|document| {
                let mut answer = response::json(StatusCode::OK, document);
                answer.headers_mut().insert(
                    http::header::CACHE_CONTROL,
                    HeaderValue::from_static("public, max-age=300"),
                );
                answer
            }),
        Route::Metrics => {
            refresh_gauges(state).await;
            let mut answer = response::json(StatusCode::OK, Bytes::from(state.metrics.render()));
            answer.headers_mut().insert(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static(crate::metrics::CONTENT_TYPE),
            );
            Ok(answer)
        }
        Route::AdminReload => {
            admin::reload(&state.rest.catalog, state.admin_token.as_deref(), parts).await
        }
        Route::Preflight { allow, public } => {
            let policy = if public {
                Policy::Public
            } else {
                Policy::Protected
            };
            let guard = state.access.guard();
            let host = match policy {
                Policy::Protected => guard.check_host(&parts.headers, &parts.uri, parts.version),
                Policy::Public => Ok(()),
            };
            host.and_then(|()| cors::preflight(&parts.headers, guard, policy, allow))
        }
    }
}

/// `/readyz`: unready while draining, and when a shared session store or backplane does not
/// answer (nothing to check for the process-local ones).
async fn readyz(state: &State) -> Result<Response<Body>, Error> {
    if state.drain.is_draining() {
        return Err(Error::Unavailable("draining".into()));
    }
    match state.mcp.sessions.ping().await {
        // The backplane has connections of its own: its commands must work too.
        Ok(()) if state.mcp.bus.ping().await.is_err() => {
            warn_limited!("", Kind::NotReady, "not ready: backplane unreachable");
            Err(Error::Unavailable("backplane unreachable".into()))
        }
        // Commands work again after a Redis restart before the subscriptions are renewed;
        // until they are, messages routed to this instance would be lost.
        Ok(()) if !state.mcp.bus.is_ready() => {
            warn_limited!(
                "",
                Kind::NotSubscribed,
                "not ready: backplane subscriptions not established"
            );
            Err(Error::Unavailable(
                "backplane subscriptions not established".into(),
            ))
        }
        Ok(()) => Ok(ready_with_detail(state)),
        Err(err) => {
            // Probes come every few seconds from every balancer: one line per interval.
            warn_limited!("", Kind::NotReady, %err, "not ready: session store unreachable");
            Err(Error::Unavailable("session store unreachable".into()))
        }
    }
}

/// `ready`, then one line per registered remote agent whose card could not be fetched: the
/// instance serves, the agent keeps its last good card (or answers `UPSTREAM_UNAVAILABLE`).
fn ready_with_detail(state: &State) -> Response<Body> {
    let mut text = String::from("ready");
    for agent in state.a2a.remote.remotes.all() {
        let health = agent.health();
        if let Some(error) = health.error {
            let held = if agent.card().is_some() {
                "last good card kept"
            } else {
                "no card yet"
            };
            text.push_str(&format!(
                "\ndegraded: a2a agent {}/{}: {error} ({held}, {} failed fetches)",
                agent.tenant, agent.id, health.failures
            ));
        }
    }
    response::text_owned(StatusCode::OK, text)
}

/// Reads the values counted elsewhere into the registry before a scrape: live sessions per tenant
/// (the session store's counts), live streams per tenant (the stream registry), and the SSE
/// totals of finished bodies.
async fn refresh_gauges(state: &State) {
    use std::sync::atomic::Ordering::Relaxed;
    if let Ok(counts) = state.mcp.sessions.counts().await {
        state.metrics.set_sessions(&counts);
    }
    state
        .metrics
        .set_streams(&state.mcp.streams.live_by_tenant());
    state.metrics.set_a2a_tasks(&state.a2a.store.counts());
    state.metrics.set_a2a_remote_up(
        state
            .a2a
            .remote
            .remotes
            .all()
            .iter()
            .map(|a| {
                let up = a.card().is_some() && a.health().error.is_none();
                (
                    (
                        std::sync::Arc::clone(&a.tenant),
                        std::sync::Arc::clone(&a.id),
                    ),
                    up,
                )
            })
            .collect(),
    );
    let frames = response::SSE_FRAMES.load(Relaxed);
    let bytes = response::SSE_BYTES.load(Relaxed);
    let (seen_frames, seen_bytes) = {
        let mut seen = state.sse_seen.lock();
        std::mem::replace(&mut *seen, (frames, bytes))
    };
    state.metrics.add_sse(
        frames.saturating_sub(seen_frames),
        bytes.saturating_sub(seen_bytes),
    );
}

/// Runs the gate ([`Access::admit`]) on the current snapshot.
async fn admit(
    state: &State,
    peer: &Peer,
    parts: &http::request::Parts,
    target: &crate::http::Target<'_>,
    endpoint: Endpoint,
    origin: Result<(), Error>,
) -> Result<Admitted, Error> {
    state
        .access
        .admit(
            peer,
            parts,
            target,
            endpoint,
            state.catalog.current(),
            origin,
        )
        .await
}

/// The gate of an A2A JSON-RPC route (the own agent's or a registered remote agent's): 404
/// while A2A is off; a refused request's body is drained (so the connection can carry the
/// answer and the next request); the accepted external correlation id joins the admission.
async fn admit_a2a(
    state: &State,
    peer: &Peer,
    parts: &http::request::Parts,
    target: &crate::http::Target<'_>,
    body: Incoming,
    external: Option<ExternalCorrelationId>,
    origin: Result<(), Error>,
) -> Result<(Admitted, Incoming), Error> {
    let admitted = if state.a2a.enabled() {
        admit(state, peer, parts, target, Endpoint::A2a, origin).await
    } else {
        Err(Error::NotFound)
    };
    match admitted {
        Ok(mut admitted) => {
            admitted.external = external;
            Ok((admitted, body))
        }
        Err(refused) => {
            body::drain_refused(body, body::content_length(&parts.headers)).await;
            Err(refused)
        }
    }
}

/// The metrics label and CORS policy of a route.
fn describe(route: &Route<'_>) -> (RouteLabel, Option<Policy>) {
    match route {
        Route::Mcp(_) => (RouteLabel::Mcp, Some(Policy::Protected)),
        Route::LegacySse(_) => (RouteLabel::LegacySse, Some(Policy::Protected)),
        Route::LegacyMessages(_) => (RouteLabel::LegacyMessages, Some(Policy::Protected)),
        Route::RestTools(_) => (RouteLabel::RestTools, Some(Policy::Protected)),
        Route::RestCall(..) => (RouteLabel::RestCall, Some(Policy::Protected)),
        Route::BosPlatform => (RouteLabel::BosPlatform, Some(Policy::Protected)),
        Route::A2a(_) => (RouteLabel::A2a, Some(Policy::Protected)),
        Route::A2aCard(_) => (RouteLabel::A2aCard, Some(Policy::Public)),
        Route::A2aRemoteCard(..) => (RouteLabel::A2aRemoteCard, Some(Policy::Public)),
        Route::A2aAgents(_) => (RouteLabel::A2aRemoteCard, Some(Policy::Protected)),
        Route::A2aRemote(..) => (RouteLabel::A2aRemote, Some(Policy::Protected)),
        // Called by upstream agents, never by browsers: no CORS headers.
        Route::A2aPushRelay(_) => (RouteLabel::A2aPushRelay, None),
        Route::ProtectedResource(_) => (RouteLabel::ProtectedResource, Some(Policy::Public)),
        Route::Healthz => (RouteLabel::Healthz, None),
        Route::Readyz => (RouteLabel::Readyz, None),
        Route::Metrics => (RouteLabel::Metrics, None),
        Route::AdminReload => (RouteLabel::AdminReload, None),
        // The preflight answer sets its own CORS headers.
        Route::Preflight { .. } => (RouteLabel::Other, None),
    }
}

/// The request's `Origin` when CORS headers may echo it: any origin on public routes, an origin
/// the guard accepted (`accepted`) on protected ones.
fn accepted_origin(
    parts: &http::request::Parts,
    policy: Policy,
    accepted: bool,
) -> Option<HeaderValue> {
    let origin = parts.headers.get(http::header::ORIGIN)?;
    match policy {
        Policy::Public => Some(origin.clone()),
        Policy::Protected => accepted.then(|| origin.clone()),
    }
}

fn observe(
    state: &State,
    label: RouteLabel,
    parts: &http::request::Parts,
    response: &Response<Body>,
    started: Instant,
) {
    state.metrics.observe_request(
        label,
        MethodLabel::from(&parts.method),
        response.status().as_u16(),
        started.elapsed(),
    );
}

async fn test_route(hooks: &TestHooks, state: &State, path: &str) -> Option<Response<Body>> {
    match path {
        "/__test/hold" => {
            hooks.entered.notify_one();
            hooks.release.notified().await;
            Some(response::text(StatusCode::OK, "released"))
        }
        "/__test/stream" => {
            let (tx, rx) = mpsc::channel(1);
            let first = Bytes::from_static(b"event: message\ndata: first\n\n");
            if tx.try_send(first).is_err() {
                return Some(Error::Internal.into_response());
            }
            // The producer stays alive until the body closes the channel (on drain).
            tokio::spawn(async move { tx.closed().await });
            Some(response::event_stream(Body::stream(rx, &state.drain)))
        }
        _ => None,
    }
}

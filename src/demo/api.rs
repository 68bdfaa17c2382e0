//! A small in-memory CRM API (customers and orders) served with hyper on a loopback listener.
//!
//! It speaks its own field vocabulary (`customer_id`, `full_name`, `town`, …) so the demo shows the
//! runtime translating it to the exposed vocabulary of the tools.

use std::convert::Infallible;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{json, Value};
use tokio::net::TcpListener;

/// The demo customers: (id, name, email, town, street).
const CUSTOMERS: &[(&str, &str, &str, &str, &str)] = &[
    (
        "c-100",
        "Ada Lovelace",
        "ada@example.com",
        "London",
        "12 St James's Square",
    ),
    (
        "c-101",
        "Grace Hopper",
        "grace@example.com",
        "Arlington",
        "1 Navy Yard",
    ),
    (
        "c-102",
        "Alan Turing",
        "alan@example.com",
        "London",
        "78 High Street",
    ),
    (
        "c-103",
        "Edsger Dijkstra",
        "edsger@example.com",
        "Austin",
        "2 Loop Road",
    ),
];

/// Largest request body the demo API reads.
const MAX_BODY: usize = 64 * 1024;

struct State {
    next_order: AtomicU64,
}

/// Serves the demo API on `listener` until `shutdown` resolves.
pub async fn serve_api(listener: TcpListener, shutdown: impl Future<Output = ()>) {
    let state = Arc::new(State {
        next_order: AtomicU64::new(5000),
    });
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            _ = &mut shutdown => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _)) = accepted else { continue };
        let state = state.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| handle(state.clone(), req));
            let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn handle(
    state: Arc<State>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let query = req.uri().query().unwrap_or("").to_owned();
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let reply = match (&method, segments.as_slice()) {
        (&Method::GET, ["crm", "customers", id]) => match CUSTOMERS.iter().find(|c| c.0 == *id) {
            Some(c) => (StatusCode::OK, customer_json(c)),
            None => (StatusCode::NOT_FOUND, json!({"fault": "no such customer"})),
        },
        (&Method::GET, ["crm", "customers"]) => {
            let town = query_param(&query, "town");
            let items: Vec<Value> = CUSTOMERS
                .iter()
                .filter(|c| town.as_deref().is_none_or(|t| c.3.eq_ignore_ascii_case(t)))
                .map(customer_json)
                .collect();
            (
                StatusCode::OK,
                json!({ "count": items.len(), "items": items }),
            )
        }
        (&Method::POST, ["crm", "orders"]) => {
            let body = match req.into_body().collect().await {
                Ok(collected) => collected.to_bytes(),
                Err(_) => Bytes::new(),
            };
            if body.len() > MAX_BODY {
                (StatusCode::PAYLOAD_TOO_LARGE, json!({"fault": "too large"}))
            } else {
                match serde_json::from_slice::<Value>(&body) {
                    Ok(order) => {
                        let lines = order
                            .get("lines")
                            .and_then(Value::as_array)
                            .map_or(0, Vec::len);
                        let number = state.next_order.fetch_add(1, Ordering::Relaxed);
                        (
                            StatusCode::CREATED,
                            json!({
                                "order_no": format!("ORD-{number}"),
                                "customer_ref": order.get("customer_ref").cloned().unwrap_or(Value::Null),
                                "state": "ACCEPTED",
                                "line_count": lines,
                            }),
                        )
                    }
                    Err(_) => (StatusCode::BAD_REQUEST, json!({"fault": "invalid JSON"})),
                }
            }
        }
        (&Method::GET, ["people", source]) => {
            let limit = query_param(&query, "limit")
                .and_then(|l| l.parse().ok())
                .unwrap_or(100);
            let page = super::providers::page(
                source,
                query_param(&query, "q").as_deref(),
                query_param(&query, "cursor").as_deref(),
                limit,
            )
            .await;
            match page {
                Some(page) => (StatusCode::OK, page),
                None => (StatusCode::NOT_FOUND, json!({"fault": "no such source"})),
            }
        }
        _ => (StatusCode::NOT_FOUND, json!({"fault": "no such endpoint"})),
    };
    let body = serde_json::to_vec(&reply.1).unwrap_or_default();
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = reply.0;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    Ok(response)
}

fn customer_json(c: &(&str, &str, &str, &str, &str)) -> Value {
    json!({
        "customer_id": c.0,
        "full_name": c.1,
        "contact": { "email_address": c.2 },
        "addresses": [ { "street_line": c.4, "town": c.3 } ],
        "internal_score": 42,
    })
}

fn query_param(query: &str, name: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=')?;
        (key == name).then(|| {
            percent_encoding::percent_decode_str(value)
                .decode_utf8_lossy()
                .replace('+', " ")
        })
    })
}

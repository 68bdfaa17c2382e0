//! The registered remote agents of every tenant, as the runtime holds them: each agent's
//! configuration (from the current catalog snapshot), its upstream client and the last good
//! card fetched from it.
//!
//! Owns [`Remotes`] (agents by tenant and id, kept in step with the snapshot by
//! [`Remotes::sync`]; an agent whose configuration did not change keeps its client, its
//! cached token and its card across a reload) and [`RemoteAgent`] (one agent: the card state,
//! its health for `/readyz` and `/metrics`, the upstream request ids). Cards are fetched at
//! start and on reload, then every `card_refresh_secs` with `If-None-Match`
//! ([`Remotes::spawn_refresher`]); a failed fetch keeps the last good card and is reported, it
//! never fails a start.
//!
//! Must not proxy calls (that is `proxy.rs`) nor know callers.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwapOption;
use bytes::Bytes;
use parking_lot::{Mutex, RwLock};
use tokio::time::Instant;

use super::card::{self, RemoteCard};
use super::upstream::{CardFetch, Upstream};
use crate::a2a::error::UPSTREAM_UNAVAILABLE;
use crate::a2a::A2aError;
use crate::catalog::{Catalog, Snapshot};
use crate::config::RemoteAgentConfig;
use crate::shard::FastMap;

/// How often the refresher looks for cards that are due (and for a new snapshot).
const TICK: Duration = Duration::from_secs(1);

/// The wait before a failed card fetch is tried again (doubled up to the refresh interval).
const RETRY_MIN: Duration = Duration::from_secs(2);

/// A card as last fetched.
pub(crate) struct Fetched {
    pub card: RemoteCard,
    pub etag: Option<String>,
    /// Bumped on every change, so synthesized cards are rebuilt.
    pub version: u64,
}

/// Whether the agent's card could be fetched, for `/readyz` and `/metrics`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Health {
    /// The last fetch's failure (`None` after a success).
    pub error: Option<String>,
    /// Consecutive failed fetches.
    pub failures: u32,
}

/// One registered remote agent.
pub(crate) struct RemoteAgent {
    pub tenant: Arc<str>,
    pub id: Arc<str>,
    pub config: RemoteAgentConfig,
    /// The upstream client, or why it could not be made (an unresolvable secret).
    pub upstream: Result<Upstream, String>,
    card: ArcSwapOption<Fetched>,
    health: Mutex<Health>,
    /// When the next card fetch is due.
    due: Mutex<Instant>,
    /// The upstream JSON-RPC ids (`sl-{n}`), fresh per call.
    next_id: AtomicU64,
    card_versions: AtomicU64,
    /// Synthesized card bytes by (card version, 1.0-only), built on first use.
    pub(crate) synthesized: Mutex<FastMap<bool, (u64, Bytes, http::HeaderValue)>>,
}

impl std::fmt::Debug for RemoteAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteAgent")
            .field("tenant", &self.tenant)
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl RemoteAgent {
    fn new(tenant: &str, config: &RemoteAgentConfig) -> RemoteAgent {
        let upstream = Upstream::new(config).map_err(|err| err.to_string());
        RemoteAgent {
            tenant: tenant.into(),
            id: config.id.as_str().into(),
            config: config.clone(),
            upstream,
            card: ArcSwapOption::empty(),
            health: Mutex::new(Health::default()),
            due: Mutex::new(Instant::now()),
            next_id: AtomicU64::new(1),
            card_versions: AtomicU64::new(0),
            synthesized: Mutex::new(FastMap::default()),
        }
    }

    /// The last good card, if one was ever fetched.
    pub(crate) fn card(&self) -> Option<Arc<Fetched>> {
        self.card.load_full()
    }

    /// The upstream client and last good card a call needs; `UPSTREAM_UNAVAILABLE` when no card
    /// was ever fetched or the credential could not be built (nothing to talk to yet).
    pub(crate) fn ready(&self) -> Result<(&Upstream, Arc<Fetched>), A2aError> {
        match (&self.upstream, self.card()) {
            (Ok(upstream), Some(fetched)) => Ok((upstream, fetched)),
            _ => Err(A2aError::Upstream(UPSTREAM_UNAVAILABLE)),
        }
    }

    /// The card's health.
    pub(crate) fn health(&self) -> Health {
        self.health.lock().clone()
    }

    /// Whether client application `client` may reach this agent.
    pub(crate) fn serves(&self, client: &str) -> bool {
        self.config.enabled && self.config.clients.iter().any(|c| c == client)
    }

    /// A fresh upstream JSON-RPC id, as JSON text.
    pub(crate) fn upstream_id(&self) -> String {
        format!("\"sl-{}\"", self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Fetches the card (conditionally when one is held) and records the outcome.
    pub(crate) async fn refresh(&self) {
        let refresh = Duration::from_secs(self.config.card_refresh_secs.max(1));
        let outcome = match &self.upstream {
            Err(why) => Err(why.clone()),
            Ok(upstream) => {
                let held = self.card();
                let etag = held.as_ref().and_then(|f| f.etag.clone());
                match upstream.fetch_card(etag.as_deref()).await {
                    Ok(CardFetch::NotModified) if held.is_some() => Ok(()),
                    Ok(CardFetch::NotModified) => Err("304 without a card held".to_owned()),
                    Ok(CardFetch::Fetched { body, etag }) => match card::parse(&body) {
                        Ok(card) => {
                            let version = self.card_versions.fetch_add(1, Ordering::Relaxed) + 1;
                            self.card.store(Some(Arc::new(Fetched {
                                card,
                                etag,
                                version,
                            })));
                            Ok(())
                        }
                        Err(err) => Err(format!("invalid card: {err}")),
                    },
                    Err(err) => Err(err.to_string()),
                }
            }
        };
        let mut health = self.health.lock();
        let wait = match outcome {
            Ok(()) => {
                *health = Health::default();
                refresh
            }
            Err(error) => {
                tracing::warn!(
                    tenant = %self.tenant,
                    agent = %self.id,
                    %error,
                    "remote agent card not fetched (the last good card is kept)"
                );
                health.failures = health.failures.saturating_add(1);
                health.error = Some(error);
                let backoff = RETRY_MIN.saturating_mul(1 << health.failures.min(8));
                backoff.min(refresh)
            }
        };
        *self.due.lock() = Instant::now() + wait;
    }

    fn is_due(&self, now: Instant) -> bool {
        *self.due.lock() <= now
    }
}

/// The agents by (tenant, agent id).
type AgentMap = FastMap<(Arc<str>, Arc<str>), Arc<RemoteAgent>>;

/// Every tenant's registered agents.
pub(crate) struct Remotes {
    /// (snapshot version synced, agents by (tenant, id)).
    agents: RwLock<(u64, AgentMap)>,
}

impl std::fmt::Debug for Remotes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remotes")
            .field("agents", &self.agents.read().1.len())
            .finish_non_exhaustive()
    }
}

impl Remotes {
    /// No agents yet; [`Remotes::sync`] adds the snapshot's.
    pub(crate) fn new() -> Remotes {
        Remotes {
            agents: RwLock::new((0, FastMap::default())),
        }
    }

    /// Brings the agents in line with `snapshot`: new or changed configurations get a new
    /// agent (returned, to fetch its card), removed ones go, unchanged ones stay as they are.
    pub(crate) fn sync(&self, snapshot: &Snapshot) -> Vec<Arc<RemoteAgent>> {
        if self.agents.read().0 == snapshot.version() {
            return Vec::new();
        }
        let mut agents = self.agents.write();
        if agents.0 == snapshot.version() {
            return Vec::new();
        }
        let mut next = FastMap::default();
        let mut fresh = Vec::new();
        for (tenant, config) in snapshot.remote_agents() {
            let key = (Arc::clone(tenant), Arc::<str>::from(config.id.as_str()));
            let agent = match agents.1.get(&key) {
                Some(agent) if agent.config == **config => Arc::clone(agent),
                _ => {
                    let agent = Arc::new(RemoteAgent::new(tenant, config));
                    fresh.push(Arc::clone(&agent));
                    agent
                }
            };
            next.insert(key, agent);
        }
        *agents = (snapshot.version(), next);
        fresh
    }

    /// Agent `id` of `tenant` when client application `client` may reach it.
    pub(crate) fn get(&self, tenant: &str, client: &str, id: &str) -> Option<Arc<RemoteAgent>> {
        let agents = self.agents.read();
        let key: (Arc<str>, Arc<str>) = (tenant.into(), id.into());
        agents
            .1
            .get(&key)
            .filter(|agent| agent.serves(client))
            .cloned()
    }

    /// The agents client application `client` of `tenant` may reach, by id.
    pub(crate) fn assigned(&self, tenant: &str, client: &str) -> Vec<Arc<RemoteAgent>> {
        let agents = self.agents.read();
        let mut list: Vec<Arc<RemoteAgent>> = agents
            .1
            .iter()
            .filter(|((t, _), agent)| &**t == tenant && agent.serves(client))
            .map(|(_, agent)| Arc::clone(agent))
            .collect();
        list.sort_by(|a, b| a.id.cmp(&b.id));
        list
    }

    /// Every agent (for `/readyz` and `/metrics`).
    pub(crate) fn all(&self) -> Vec<Arc<RemoteAgent>> {
        let mut list: Vec<Arc<RemoteAgent>> = self.agents.read().1.values().cloned().collect();
        list.sort_by(|a, b| (&a.tenant, &a.id).cmp(&(&b.tenant, &b.id)));
        list
    }

    /// Syncs with the current snapshot and fetches the new agents' cards, waiting at most
    /// `limit` (a slow upstream does not hold the start; its card follows).
    pub(crate) async fn start(&self, catalog: &Catalog, limit: Duration) {
        let fresh = self.sync(&catalog.current());
        let fetches = futures_util::future::join_all(fresh.iter().map(|a| a.refresh()));
        let _ = tokio::time::timeout(limit, fetches).await;
    }

    /// Keeps the agents in step with reloads and refreshes the cards that are due, until the
    /// server drains. One fetch per agent at a time; fetches run concurrently.
    pub(crate) fn spawn_refresher(
        self: &Arc<Self>,
        catalog: Arc<Catalog>,
        drain: crate::http::Drain,
    ) -> tokio::task::JoinHandle<()> {
        let remotes = Arc::clone(self);
        tokio::spawn(async move {
            let running: Arc<Mutex<crate::shard::FastMap<usize, ()>>> = Arc::default();
            let mut ticker = tokio::time::interval(TICK);
            ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = ticker.tick() => {}
                    () = drain.signalled() => return,
                }
                remotes.sync(&catalog.current());
                let now = Instant::now();
                for agent in remotes.all() {
                    let key = Arc::as_ptr(&agent) as usize;
                    if !agent.is_due(now) || running.lock().insert(key, ()).is_some() {
                        continue;
                    }
                    let running = Arc::clone(&running);
                    tokio::spawn(async move {
                        agent.refresh().await;
                        running.lock().remove(&key);
                    });
                }
            }
        })
    }
}

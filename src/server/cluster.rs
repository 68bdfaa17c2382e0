//! The cluster wiring of one instance (`docs/cluster.md`), used by [`super::serve`] when
//! `[cluster] redis_url` is set: connecting the Redis session store and backplane (refusing the
//! start when Redis does not answer), the inbox that hands backplane messages to the local stream
//! registry, and the cluster task that keeps this instance's stream-holder registrations fresh
//! and relays configuration reloads between instances. Must not handle requests; it only
//! connects `session`'s Redis parts to the stream registry and the catalog.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{broadcast, watch};

use crate::catalog::Catalog;
use crate::http::Drain;
use crate::session::{Inbox, RedisBackplane, RedisConfig, SessionConfig, SessionId, Sessions};
use crate::transport::stream::StreamRegistry;

/// What a cluster member hands its subscription: messages for its streams go to the stream
/// registry; configuration notices wake the cluster task (never blocking the subscription).
struct ClusterInbox {
    streams: StreamRegistry,
    notices: watch::Sender<u64>,
}

impl Inbox for ClusterInbox {
    fn deliver(&self, session: &SessionId, message: &[u8]) -> bool {
        self.streams.deliver(session, message)
    }

    fn invalidate(&self, tenant: &str) -> usize {
        self.streams.invalidate(tenant)
    }

    fn close(&self, session: &SessionId) {
        self.streams.close_session(session);
    }

    fn config_changed(&self, version: u64) {
        self.notices.send_if_modified(|seen| {
            let newer = version > *seen;
            if newer {
                *seen = version;
            }
            newer
        });
    }
}

/// Connects the shared session store (a `PING` first: an unreachable Redis refuses the start)
/// and the backplane, subscribed as this instance (the stream registry's instance id).
pub(super) async fn connect_cluster(
    redis: &RedisConfig,
    limits: SessionConfig,
    streams: &StreamRegistry,
) -> Result<(Sessions, Arc<RedisBackplane>, watch::Receiver<u64>), String> {
    let refuse = |what: &str, err: &dyn std::fmt::Display| {
        format!(
            "[cluster] redis_url is set but Redis {what} ({err}); refusing to start without the \
             shared session store (fix the URL or start Redis; unset redis_url to run alone)"
        )
    };
    let sessions = Sessions::redis(redis, limits)
        .await
        .map_err(|err| refuse("did not answer PING", &err))?;
    let (notices, notices_rx) = watch::channel(0);
    let inbox = Arc::new(ClusterInbox {
        streams: streams.clone(),
        notices,
    });
    let backplane = RedisBackplane::connect(redis, streams.instance(), inbox)
        .await
        .map_err(|err| refuse("refused the subscription", &err))?;
    if let Sessions::Redis(store) = &sessions {
        backplane.serve_cache(store);
    }
    Ok((sessions, Arc::new(backplane), notices_rx))
}

/// The cluster task of one instance. Every `refresh_every` it refreshes the holder
/// registrations of every stream held here in one round trip (and releases those of streams
/// gone), reading the deployment's configuration version on the way. It announces every local
/// reload (SIGHUP, `POST /admin/reload`) to the other instances, and reloads when another
/// instance announced one — or when the version it reads is newer than the last one it applied,
/// which covers notices lost while Redis was away. A reload it made because of a notice is not
/// announced again. Each reload then reaches this instance's own live streams through
/// [`list_changed_task`]. Ends when the server drains.
pub(super) fn cluster_task(
    backplane: Arc<RedisBackplane>,
    streams: StreamRegistry,
    catalog: Arc<Catalog>,
    mut notices: watch::Receiver<u64>,
    drain: Drain,
    refresh_every: Duration,
) -> tokio::task::JoinHandle<()> {
    let mut changes = catalog.subscribe();
    tokio::spawn(async move {
        let mut applied = backplane.config_version().await.unwrap_or(0);
        // Snapshot versions this task produced by reloading on notice: not announced again.
        let mut followed: HashSet<u64> = HashSet::new();
        // A local reload whose announcement failed (Redis away): retried at the next tick.
        let mut unannounced = false;
        let mut tick = tokio::time::interval(refresh_every.max(Duration::from_millis(100)));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let drained = drain.signalled();
        tokio::pin!(drained);
        loop {
            tokio::select! {
                () = &mut drained => {
                    // This instance's streams end with the drain: release their registrations
                    // now rather than leave them to expire.
                    if let Err(err) = backplane.sync(Vec::new()).await {
                        tracing::debug!(%err, "stream holder registrations left to expire");
                    }
                    return;
                }
                _ = tick.tick() => {
                    if unannounced {
                        unannounced = !announce(&backplane, &mut applied).await;
                    }
                    match backplane.sync(streams.held_sessions()).await {
                        Ok(synced) if synced.config_version > applied => {
                            applied = synced.config_version;
                            follow(&catalog, &mut followed).await;
                        }
                        Ok(_) => {}
                        Err(err) => tracing::warn!(%err, "stream holder refresh failed"),
                    }
                }
                changed = notices.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    let version = *notices.borrow_and_update();
                    if version > applied {
                        applied = version;
                        follow(&catalog, &mut followed).await;
                    }
                }
                change = changes.recv() => match change {
                    Ok(set) if followed.remove(&set.version) => {}
                    Ok(_) => unannounced = !announce(&backplane, &mut applied).await,
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        let current = catalog.current().version();
                        followed.retain(|version| *version > current);
                        unannounced = !announce(&backplane, &mut applied).await;
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                },
            }
        }
    })
}

/// Tells the other instances this one reloaded; false when Redis could not be told.
async fn announce(backplane: &RedisBackplane, applied: &mut u64) -> bool {
    match backplane.announce_reload().await {
        Ok(version) => {
            *applied = (*applied).max(version);
            true
        }
        Err(err) => {
            tracing::warn!(%err, "reload not announced to the other instances yet; retrying");
            false
        }
    }
}

/// Reloads the configuration file because another instance did (the instances share it).
async fn follow(catalog: &Arc<Catalog>, followed: &mut HashSet<u64>) {
    let reload = {
        let catalog = Arc::clone(catalog);
        tokio::task::spawn_blocking(move || catalog.reload())
    };
    match reload.await {
        Ok(Ok(outcome)) => {
            tracing::info!(
                version = outcome.version,
                changed = outcome.changed.len(),
                "catalog reloaded: another instance announced a new configuration"
            );
            followed.insert(outcome.version);
        }
        Ok(Err(report)) => {
            tracing::warn!(%report, "another instance reloaded, but this instance's reload was refused; keeping the current catalog");
        }
        Err(err) => tracing::error!(%err, "reload task failed"),
    }
}

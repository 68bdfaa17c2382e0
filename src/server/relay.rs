//! The list_changed relay: catalog change sets in, `notifications/{tools,prompts,resources}/
//! list_changed` out on the live streams of the clients a reload affected.
//!
//! Owns the task [`list_changed_task`] and which notifications each change set turns into. Must
//! not build the messages (the dispatcher does, per era) or find the streams (the stream
//! registry does); it only connects the two.

use std::sync::Arc;

use tokio::sync::broadcast;

use crate::catalog::Catalog;
use crate::http::Drain;
use crate::mcp::{Dispatcher, Era, ListChanged};
use crate::transport::stream::StreamRegistry;

/// Pushes list-changed notifications to the live streams of every (tenant, client) a reload
/// affected: `notifications/tools/list_changed` where the tool listing changed, and
/// `notifications/prompts/list_changed` + `notifications/resources/list_changed` where the
/// exposed toolset prompts changed (both surfaces list the same prompts). Session streams get the
/// handshake-era message; listen streams get the stateless one tagged with their subscription id,
/// and only the kinds they subscribed to. A subscriber that fell behind (`Lagged`) notifies every
/// client of the current snapshot of every kind. Ends when the server drains.
pub(super) fn list_changed_task(
    catalog: Arc<Catalog>,
    streams: StreamRegistry,
    dispatcher: Arc<Dispatcher>,
    drain: Drain,
) -> tokio::task::JoinHandle<()> {
    let mut changes = catalog.subscribe();
    tokio::spawn(async move {
        let deliver = |tenant: &str, client: &str, which: ListChanged| {
            streams.deliver_list_changed(tenant, Some(client), which, |subscription_id| {
                let era = match subscription_id {
                    Some(_) => Era::Stateless,
                    None => Era::Handshake,
                };
                dispatcher.list_changed_message_for(which, era, subscription_id)
            });
        };
        let drained = drain.signalled();
        tokio::pin!(drained);
        loop {
            let change = tokio::select! {
                () = &mut drained => return,
                change = changes.recv() => change,
            };
            match change {
                Ok(set) => {
                    for key in &set.changed {
                        deliver(&key.tenant, &key.client, ListChanged::Tools);
                    }
                    for key in &set.prompts_changed {
                        deliver(&key.tenant, &key.client, ListChanged::Prompts);
                        deliver(&key.tenant, &key.client, ListChanged::Resources);
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    let snapshot = catalog.current();
                    for (view, _) in snapshot.fingerprints() {
                        for which in [
                            ListChanged::Tools,
                            ListChanged::Prompts,
                            ListChanged::Resources,
                        ] {
                            deliver(view.tenant(), view.client(), which);
                        }
                    }
                }
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    })
}

//! The catalog: immutable snapshots of a configuration, with schemas, plans and discovery.
//!
//! A [`crate::config::Config`] (loaded and overridden by `crate::config`) becomes a
//! [`Snapshot`] in [`snapshot::Snapshot::build`]: [`compile::validate`] checks it (the file's
//! meaning, plus what `schema.rs` and `plan.rs` find compiling each tool), then the snapshot
//! resolves it into what requests look up (visible tools, effective prompts from `prompt.rs`,
//! schemas, listing bytes with the `meta_tool.rs` entry, compiled plans). `discover.rs` answers
//! `discover_tool_schema` from a snapshot; `check.rs` is `sluice check`. [`Catalog`] holds the
//! current snapshot, swaps in a new one on [`Catalog::reload`], and announces which
//! (tenant, client) listings changed. Does no IO beyond loading the configuration file (through
//! [`crate::config::load`]), never reads the environment, never computes anything per request.

pub(crate) mod agent_tool;
pub mod check;
pub(crate) mod compile;
pub mod discover;
pub(crate) mod meta_tool;
pub mod plan;
pub(crate) mod prompt;
pub mod schema;
pub(crate) mod snapshot;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arc_swap::ArcSwap;
use parking_lot::Mutex;

use tokio::sync::broadcast;

pub use check::check;
pub use discover::{discover, DiscoverError, Discovery};
pub use snapshot::{CatalogTool, ClientKey, ClientView, Snapshot, ToolsetView};

use crate::config::{self, Config, Loc, Problem, Report};

/// How many change sets a slow subscriber may fall behind before it sees
/// `RecvError::Lagged` (and should then treat every client as changed).
pub const CHANGE_CHANNEL_CAPACITY: usize = 64;

/// The (tenant, client) listings that changed in one reload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangeSet {
    /// The new snapshot version.
    pub version: u64,
    /// Clients whose `tools/list` differs (appeared, disappeared, or changed), sorted.
    pub changed: Vec<ClientKey>,
    /// Clients whose exposed toolset prompts differ (`prompts/list`, `resources/list` and the
    /// texts behind them), sorted.
    pub prompts_changed: Vec<ClientKey>,
}

/// What a successful reload did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReloadOutcome {
    /// The new snapshot version.
    pub version: u64,
    /// Clients whose listing changed (the same list that was broadcast).
    pub changed: Vec<ClientKey>,
}

/// The live catalog: the current snapshot, replaced atomically.
#[derive(Debug)]
pub struct Catalog {
    /// The file reloads read; `None` for a catalog built from an in-memory configuration.
    path: Option<PathBuf>,
    /// The current snapshot. Readers take no lock (an `ArcSwap` load); a reload builds the new
    /// snapshot aside and swaps the pointer, so a reader gets a whole old or a whole new
    /// snapshot and is never blocked by a build.
    current: ArcSwap<Snapshot>,
    /// Serializes reloads so versions increase and each diff is against its predecessor.
    reloading: Mutex<()>,
    /// Change sets of successful reloads, for `notifications/tools/list_changed`.
    changes: broadcast::Sender<Arc<ChangeSet>>,
}

impl Catalog {
    /// Loads, validates and resolves the file; version 1.
    pub fn load(path: &Path) -> Result<Catalog, Report> {
        let config = config::load(path)?;
        let mut catalog = Catalog::from_config(&config)?;
        catalog.path = Some(path.to_owned());
        Ok(catalog)
    }

    /// A catalog over an in-memory configuration (tests, benches); [`reload`](Self::reload) is
    /// not available, [`replace`](Self::replace) is.
    pub fn from_config(config: &Config) -> Result<Catalog, Report> {
        let snapshot = Snapshot::build(config, 1, None)?;
        let (changes, _) = broadcast::channel(CHANGE_CHANNEL_CAPACITY);
        Ok(Catalog {
            path: None,
            current: ArcSwap::from_pointee(snapshot),
            reloading: Mutex::new(()),
            changes,
        })
    }

    /// The current snapshot.
    pub fn current(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    /// Re-reads the file and swaps in the new snapshot. On any problem the current snapshot
    /// stays and the report is returned.
    pub fn reload(&self) -> Result<ReloadOutcome, Report> {
        let Some(path) = &self.path else {
            return Err(Report {
                problems: vec![Problem {
                    loc: Loc::root(),
                    message: "this catalog was not loaded from a file".to_owned(),
                }],
            });
        };
        let config = config::load(path)?;
        self.replace(&config)
    }

    /// Swaps in a snapshot of `config` (validated first). On any problem nothing changes.
    pub fn replace(&self, config: &Config) -> Result<ReloadOutcome, Report> {
        let _reloading = self.reloading.lock();
        let old = self.current();
        let new = Arc::new(Snapshot::build(config, old.version() + 1, Some(&old))?);
        let changed = old.changed_clients(&new);
        let prompts_changed = old.changed_prompt_clients(&new);
        let version = new.version();
        self.current.store(new);
        // Nobody listening is fine: no live streams to notify.
        let _ = self.changes.send(Arc::new(ChangeSet {
            version,
            changed: changed.clone(),
            prompts_changed,
        }));
        Ok(ReloadOutcome { version, changed })
    }

    /// Subscribes to the change sets of later reloads.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<ChangeSet>> {
        self.changes.subscribe()
    }
}

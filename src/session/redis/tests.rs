//! Tests of `RedisStore` and `RedisBackplane` against a real Redis: the helpers and the store
//! here, the backplane in `tests/backplane.rs`.
//!
//! Redis is found at `SLUICE_TEST_REDIS_URL` (default `redis://127.0.0.1:6379`). When it is not
//! reachable each test prints a visible skip line and passes, unless `SLUICE_REQUIRE_REDIS=1`,
//! which makes it fail instead (`docs/cluster.md`). Each test works under its own random prefix and
//! deletes its keys at the end, so runs never see each other's sessions.
//!
//! Expiry runs on the Redis server clock, which `tokio::time::pause` cannot stop, so the
//! expiry tests use timeouts of a few hundred milliseconds and real waits, with margins of at
//! least 100 ms on either side of each deadline.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use ::redis::AsyncCommands as _;
use bytes::Bytes;

use super::*;
use crate::session::{
    BackplaneError, Handshake, Inbox, LocalStore, NewSession, Owner, SessionConfig, SessionError,
    SessionId, Sessions,
};

mod backplane;
mod cache;

const A: Owner<'static> = Owner::new("t", "c", "anonymous");

fn redis_url() -> String {
    std::env::var("SLUICE_TEST_REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
}

/// A fresh namespace on the test Redis, or `None` (after printing why) when Redis is not
/// reachable and not required. The A2A task store's tests use it too.
pub(crate) async fn redis_or_skip(test: &str) -> Option<RedisConfig> {
    let url = redis_url();
    let reachable = async {
        let client = ::redis::Client::open(url.as_str()).ok()?;
        let mut connection = client.get_multiplexed_async_connection().await.ok()?;
        ::redis::cmd("PING")
            .query_async::<String>(&mut connection)
            .await
            .ok()
    };
    let reachable = tokio::time::timeout(Duration::from_secs(2), reachable)
        .await
        .ok()
        .flatten()
        .is_some();
    if !reachable {
        assert!(
            std::env::var("SLUICE_REQUIRE_REDIS").as_deref() != Ok("1"),
            "{test}: Redis at {url} is unreachable and SLUICE_REQUIRE_REDIS=1"
        );
        // Straight to the process's stderr: the harness captures `eprintln!`, and a skip must
        // be visible in a passing run.
        let line = format!(
            "SKIP {test}: Redis at {url} is unreachable (set SLUICE_REQUIRE_REDIS=1 to fail)\n"
        );
        let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
        return None;
    }
    let prefix = format!("test-{test}-{}", SessionId::random().encode().as_str());
    Some(RedisConfig::new(url).with_prefix(prefix))
}

/// Deletes every key of the test's namespace.
async fn cleanup(config: &RedisConfig) {
    let client = ::redis::Client::open(config.url.as_str()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let pattern = format!("{}*", config.namespace());
    let keys: Vec<String> = {
        let mut iter = connection.scan_match::<_, String>(&pattern).await.unwrap();
        let mut keys = Vec::new();
        while let Some(key) = futures_util::StreamExt::next(&mut iter).await {
            keys.push(key.unwrap());
        }
        keys
    };
    if !keys.is_empty() {
        connection.del::<_, ()>(keys).await.unwrap();
    }
}

async fn pttl(config: &RedisConfig, key: &str) -> i64 {
    let client = ::redis::Client::open(config.url.as_str()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    connection.pttl(key).await.unwrap()
}

fn limits(idle_ms: u64, init_ms: u64, max_per_tenant: usize) -> SessionConfig {
    SessionConfig {
        idle: Duration::from_millis(idle_ms),
        init_timeout: Duration::from_millis(init_ms),
        max_per_tenant,
        max_per_caller: max_per_tenant,
    }
}

fn new(owner: Owner<'_>) -> NewSession<'_> {
    NewSession {
        owner,
        version: crate::protocol::ProtocolVersion::V2025_11_25,
        client_info: br#"{"name":"x","version":"1"}"#,
        capabilities: b"{}",
    }
}

async fn store(config: &RedisConfig, limits: SessionConfig) -> RedisStore {
    RedisStore::connect(config, limits).await.unwrap()
}

#[derive(Default)]
struct Recorder {
    delivered: Mutex<Vec<(SessionId, Vec<u8>)>>,
    invalidated: Mutex<Vec<String>>,
    /// When set, streams here are gone: `deliver` takes nothing.
    dead: std::sync::atomic::AtomicBool,
}

impl Inbox for Recorder {
    fn deliver(&self, session: &SessionId, message: &[u8]) -> bool {
        if self.dead.load(std::sync::atomic::Ordering::Relaxed) {
            return false;
        }
        self.delivered
            .lock()
            .unwrap()
            .push((*session, message.to_vec()));
        true
    }

    fn invalidate(&self, tenant: &str) -> usize {
        self.invalidated.lock().unwrap().push(tenant.to_owned());
        1
    }
}

/// Waits (up to two seconds) until `ready` holds.
async fn eventually(mut ready: impl FnMut() -> bool) {
    let waited = tokio::time::timeout(Duration::from_secs(2), async {
        while !ready() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert!(waited.is_ok(), "condition not reached within 2 s");
}

// === store ===

#[tokio::test]
async fn ownership_matches_the_local_store() {
    let Some(config) = redis_or_skip("ownership").await else {
        return;
    };
    let redis = store(&config, limits(100_000, 10_000, 10)).await;
    let local = LocalStore::new(limits(100_000, 10_000, 10));
    let redis_id = redis.create(new(A)).await.unwrap();
    let local_id = local.create(new(A)).unwrap();
    let owners = [
        A,
        Owner::new("t2", "c", "anonymous"),
        Owner::new("t", "c2", "anonymous"),
        Owner::new("t", "c", "mallory"),
        Owner::new("tc", "", "anonymous"),
        Owner::new("t:c", "", "anonymous"),
    ];
    for owner in owners {
        let expected = local.validate(&local_id, owner).map(|_| ());
        assert_eq!(
            redis.validate(&redis_id, owner).await.map(|_| ()),
            expected,
            "{owner:?}"
        );
        assert_eq!(
            redis.mark_initialized(&redis_id, owner).await,
            local.mark_initialized(&local_id, owner),
            "{owner:?}"
        );
    }
    let unknown = SessionId::random();
    assert_eq!(
        redis.validate(&unknown, A).await,
        Err(SessionError::NotFound)
    );
    assert_eq!(redis.delete(&unknown, A).await, Err(SessionError::NotFound));

    let info = redis.validate(&redis_id, A).await.unwrap();
    assert_eq!(info, local.validate(&local_id, A).unwrap());
    assert!(info.initialized);
    cleanup(&config).await;
}

#[tokio::test]
async fn delete_from_any_instance_and_foreign_delete_leaves_the_session() {
    let Some(config) = redis_or_skip("delete").await else {
        return;
    };
    let one = store(&config, limits(100_000, 10_000, 10)).await;
    let two = store(&config, limits(100_000, 10_000, 10)).await;
    let id = one.create(new(A)).await.unwrap();
    let mallory = Owner::new("t", "c", "mallory");
    assert_eq!(two.delete(&id, mallory).await, Err(SessionError::Foreign));
    assert!(one.validate(&id, A).await.is_ok());
    assert_eq!(two.count("t").await, Ok(1));

    assert_eq!(two.delete(&id, A).await, Ok(()));
    assert_eq!(one.validate(&id, A).await, Err(SessionError::NotFound));
    assert_eq!(one.delete(&id, A).await, Err(SessionError::NotFound));
    assert_eq!(one.count("t").await, Ok(0));
    cleanup(&config).await;
}

#[tokio::test]
async fn handshake_set_on_one_instance_is_seen_on_another() {
    let Some(config) = redis_or_skip("handshake").await else {
        return;
    };
    let one = store(&config, limits(100_000, 10_000, 10)).await;
    let two = store(&config, limits(100_000, 10_000, 10)).await;
    let id = one.create(new(A)).await.unwrap();
    let handshake = Handshake {
        version: crate::protocol::ProtocolVersion::V2024_11_05,
        client_info: br#"{"name":"legacy"}"#,
        capabilities: br#"{"roots":{}}"#,
    };
    assert_eq!(
        two.set_handshake(&id, Owner::new("t", "c", "mallory"), handshake)
            .await,
        Err(SessionError::Foreign)
    );
    two.set_handshake(&id, A, handshake).await.unwrap();
    let info = one.validate(&id, A).await.unwrap();
    assert_eq!(info.version, "2024-11-05");
    assert_eq!(
        info.client_info,
        Bytes::from_static(br#"{"name":"legacy"}"#)
    );
    assert_eq!(info.capabilities, Bytes::from_static(br#"{"roots":{}}"#));
    assert!(!info.initialized);
    cleanup(&config).await;
}

#[tokio::test]
async fn validate_refreshes_the_ttl_and_idle_sessions_expire() {
    let Some(config) = redis_or_skip("idle").await else {
        return;
    };
    let store = store(&config, limits(500, 60_000, 10)).await;
    let id = store.create(new(A)).await.unwrap();
    store.mark_initialized(&id, A).await.unwrap();
    let key = format!("{}session:{}", config.namespace(), id.encode().as_str());
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(300)).await;
        // 300 ms after the last refresh: alive, and the TTL is back to the full idle time.
        store.validate(&id, A).await.unwrap();
        let ttl = pttl(&config, &key).await;
        assert!(ttl > 400 && ttl <= 500, "ttl {ttl}");
    }
    // 900 ms after creation, well past one idle period: the refreshes kept it.
    assert_eq!(store.count("t").await, Ok(1));
    tokio::time::sleep(Duration::from_millis(650)).await;
    assert_eq!(store.validate(&id, A).await, Err(SessionError::NotFound));
    assert_eq!(store.count("t").await, Ok(0));
    assert_eq!(pttl(&config, &key).await, -2, "the record is gone");
    cleanup(&config).await;
}

#[tokio::test]
async fn expire_reports_sessions_this_instance_served() {
    let Some(config) = redis_or_skip("expire").await else {
        return;
    };
    let one = store(&config, limits(300, 60_000, 10)).await;
    let two = store(&config, limits(300, 60_000, 10)).await;
    let kept = one.create(new(A)).await.unwrap();
    let dropped = one.create(new(A)).await.unwrap();
    one.mark_initialized(&kept, A).await.unwrap();
    one.mark_initialized(&dropped, A).await.unwrap();
    assert_eq!(one.expire().await, Ok(Vec::new()));
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Another instance keeps `kept` alive; `one` must not report it.
    two.validate(&kept, A).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(one.expire().await, Ok(vec![dropped]));
    // Reported once.
    assert_eq!(one.expire().await, Ok(Vec::new()));
    assert!(one.validate(&kept, A).await.is_ok());
    cleanup(&config).await;
}

/// A store whose ended-session lifetimes land in the returned list.
async fn measured(config: &RedisConfig, limits: SessionConfig) -> (RedisStore, Lifetimes) {
    let store = store(config, limits).await;
    let lifetimes = Lifetimes::default();
    let sink = Arc::clone(&lifetimes);
    store.observe_lifetimes(crate::session::LifetimeSink(Arc::new(move |lived| {
        sink.lock().unwrap().push(lived);
    })));
    (store, lifetimes)
}

type Lifetimes = Arc<Mutex<Vec<Duration>>>;

async fn ledger_len(config: &RedisConfig) -> (i64, i64) {
    let client = ::redis::Client::open(config.url.as_str()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let ledger = format!("{}ledger", config.namespace());
    let created = format!("{}ledger:created", config.namespace());
    (
        connection.zcard(&ledger).await.unwrap(),
        connection.hlen(&created).await.unwrap(),
    )
}

#[tokio::test]
async fn sessions_redis_expires_are_measured_once_across_instances() {
    let Some(config) = redis_or_skip("ledger").await else {
        return;
    };
    let (one, lived_one) = measured(&config, limits(300, 60_000, 20)).await;
    let (two, lived_two) = measured(&config, limits(300, 60_000, 20)).await;
    let (three, lived_three) = measured(&config, limits(300, 60_000, 20)).await;
    let mut ids = Vec::new();
    for store in [&one, &one, &one, &two, &two, &two] {
        let id = store.create(new(A)).await.unwrap();
        store.mark_initialized(&id, A).await.unwrap();
        ids.push(id);
    }
    // Every instance serves every session, so each would report them all if it could.
    for id in &ids {
        three.validate(id, A).await.unwrap();
    }
    // One ends by DELETE: reported by the instance that deleted it, and only there.
    three.delete(&ids[0], A).await.unwrap();
    assert_eq!(lived_three.lock().unwrap().len(), 1);
    assert_eq!(ledger_len(&config).await, (5, 5));
    // Nothing has expired yet: a sweep claims nothing.
    let (a, b, c) = tokio::join!(one.expire(), two.expire(), three.expire());
    assert!(a.is_ok() && b.is_ok() && c.is_ok());
    let total =
        |lists: [&Lifetimes; 3]| lists.iter().map(|l| l.lock().unwrap().len()).sum::<usize>();
    assert_eq!(total([&lived_one, &lived_two, &lived_three]), 1);

    tokio::time::sleep(Duration::from_millis(450)).await;
    let (a, b, c) = tokio::join!(one.expire(), two.expire(), three.expire());
    assert!(a.is_ok() && b.is_ok() && c.is_ok());
    // Five expired by key TTL, each claimed by exactly one sweep; plus the delete.
    assert_eq!(total([&lived_one, &lived_two, &lived_three]), 6);
    let expired: Vec<Duration> = [&lived_one, &lived_two, &lived_three]
        .iter()
        .flat_map(|l| l.lock().unwrap().clone())
        .collect();
    // Each lifetime is creation to expiry: the 300 ms idle timeout after the last refresh.
    for lived in &expired {
        assert!(
            *lived < Duration::from_millis(450),
            "lifetime {lived:?} is longer than the session could have lived"
        );
    }
    let long = expired
        .iter()
        .filter(|l| **l >= Duration::from_millis(300))
        .count();
    assert!(
        long >= 5,
        "the expired sessions' lifetimes {expired:?} end before their expiry"
    );
    assert_eq!(ledger_len(&config).await, (0, 0));
    let (a, b, c) = tokio::join!(one.expire(), two.expire(), three.expire());
    assert!(a.is_ok() && b.is_ok() && c.is_ok());
    assert_eq!(total([&lived_one, &lived_two, &lived_three]), 6);
    cleanup(&config).await;
}

#[tokio::test]
async fn a_session_refreshed_elsewhere_is_measured_to_its_last_expiry() {
    let Some(config) = redis_or_skip("ledger-refresh").await else {
        return;
    };
    let (one, lived_one) = measured(&config, limits(300, 60_000, 10)).await;
    let (two, lived_two) = measured(&config, limits(300, 60_000, 10)).await;
    let id = one.create(new(A)).await.unwrap();
    one.mark_initialized(&id, A).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Refreshed through `two`: its expiry moves to 300 ms from now, and the ledger's with it.
    two.validate(&id, A).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    // Past the first expiry, before the refreshed one: nobody claims it.
    one.expire().await.unwrap();
    two.expire().await.unwrap();
    assert!(lived_one.lock().unwrap().is_empty() && lived_two.lock().unwrap().is_empty());
    assert!(two.validate(&id, A).await.is_ok());
    tokio::time::sleep(Duration::from_millis(450)).await;
    one.expire().await.unwrap();
    two.expire().await.unwrap();
    let lived: Vec<Duration> = [&lived_one, &lived_two]
        .iter()
        .flat_map(|l| l.lock().unwrap().clone())
        .collect();
    assert_eq!(lived.len(), 1, "{lived:?}");
    // Created, refreshed at ~200 ms and ~400 ms, expired 300 ms after that.
    assert!(
        lived[0] >= Duration::from_millis(650) && lived[0] < Duration::from_millis(900),
        "{lived:?}"
    );
    cleanup(&config).await;
}

#[tokio::test]
async fn uninitialized_sessions_expire_after_the_init_timeout() {
    let Some(config) = redis_or_skip("init").await else {
        return;
    };
    let store = store(&config, limits(60_000, 300, 10)).await;
    let abandoned = store.create(new(A)).await.unwrap();
    let finished = store.create(new(A)).await.unwrap();
    store.mark_initialized(&finished, A).await.unwrap();
    tokio::time::sleep(Duration::from_millis(150)).await;
    // Validation does not extend the init timeout.
    store.validate(&abandoned, A).await.unwrap();
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert_eq!(
        store.validate(&abandoned, A).await,
        Err(SessionError::NotFound)
    );
    assert_eq!(
        store.mark_initialized(&abandoned, A).await,
        Err(SessionError::NotFound)
    );
    assert!(store.validate(&finished, A).await.is_ok());
    assert_eq!(store.count("t").await, Ok(1));
    cleanup(&config).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tenant_cap_holds_under_concurrent_creates_from_three_instances() {
    let Some(config) = redis_or_skip("cap").await else {
        return;
    };
    const CAP: usize = 7;
    let instances = [
        Arc::new(store(&config, limits(100_000, 10_000, CAP)).await),
        Arc::new(store(&config, limits(100_000, 10_000, CAP)).await),
        Arc::new(store(&config, limits(100_000, 10_000, CAP)).await),
    ];
    let tasks: Vec<_> = (0..50)
        .map(|n| {
            let store = instances[n % 3].clone();
            tokio::spawn(async move { store.create(new(A)).await })
        })
        .collect();
    let mut created = Vec::new();
    let mut refused = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(id) => created.push(id),
            Err(SessionError::TenantCapReached { cap: CAP }) => refused += 1,
            Err(other) => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(created.len(), CAP);
    assert_eq!(refused, 50 - CAP);
    for instance in &instances {
        assert_eq!(instance.count("t").await, Ok(CAP));
    }
    // Another tenant is not affected.
    instances[1]
        .create(new(Owner::new("t2", "c", "anonymous")))
        .await
        .unwrap();
    // A released slot can be taken again, from any instance.
    instances[2].delete(&created[0], A).await.unwrap();
    instances[0].create(new(A)).await.unwrap();
    assert_eq!(
        instances[1].create(new(A)).await,
        Err(SessionError::TenantCapReached { cap: CAP })
    );
    let mut counts = instances[0].counts().await.unwrap();
    counts.sort();
    assert_eq!(
        counts,
        vec![("t".to_owned(), CAP as i64), ("t2".to_owned(), 1)]
    );
    cleanup(&config).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn caller_cap_holds_under_concurrent_creates_from_three_instances() {
    let Some(config) = redis_or_skip("callercap").await else {
        return;
    };
    const PER_CALLER: usize = 4;
    let limits = SessionConfig {
        max_per_caller: PER_CALLER,
        ..limits(100_000, 300, 100)
    };
    let instances = [
        Arc::new(store(&config, limits).await),
        Arc::new(store(&config, limits).await),
        Arc::new(store(&config, limits).await),
    ];
    let tasks: Vec<_> = (0..30)
        .map(|n| {
            let store = instances[n % 3].clone();
            tokio::spawn(async move { store.create(new(A)).await })
        })
        .collect();
    let mut created = Vec::new();
    for task in tasks {
        match task.await.unwrap() {
            Ok(id) => created.push(id),
            Err(SessionError::CallerCapReached { cap: PER_CALLER }) => {}
            Err(other) => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(created.len(), PER_CALLER, "exactly the caller cap");
    // Other callers of the tenant (another caller id, or the same id under another client)
    // still get theirs.
    instances[1]
        .create(new(Owner::new("t", "c", "bob")))
        .await
        .unwrap();
    instances[2]
        .create(new(Owner::new("t", "c2", "anonymous")))
        .await
        .unwrap();
    // A delete (from any instance) frees one slot of the caller's.
    instances[2].delete(&created[0], A).await.unwrap();
    instances[0].create(new(A)).await.unwrap();
    assert_eq!(
        instances[1].create(new(A)).await,
        Err(SessionError::CallerCapReached { cap: PER_CALLER })
    );
    // An expired (never initialized) session frees its slot too; a validated one keeps it:
    // validation moves its expiry in the caller's set as well.
    instances[0].mark_initialized(&created[1], A).await.unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(instances[1].validate(&created[1], A).await.is_ok());
    for _ in 0..PER_CALLER - 1 {
        instances[2].create(new(A)).await.unwrap();
    }
    assert_eq!(
        instances[0].create(new(A)).await,
        Err(SessionError::CallerCapReached { cap: PER_CALLER })
    );
    cleanup(&config).await;
}

#[tokio::test]
async fn cap_zero_refuses_and_expired_sessions_free_their_slot() {
    let Some(config) = redis_or_skip("capzero").await else {
        return;
    };
    let none = store(&config, limits(100_000, 10_000, 0)).await;
    assert_eq!(
        none.create(new(A)).await,
        Err(SessionError::TenantCapReached { cap: 0 })
    );
    let one = store(&config, limits(100_000, 200, 1)).await;
    one.create(new(A)).await.unwrap();
    assert_eq!(
        one.create(new(A)).await,
        Err(SessionError::TenantCapReached { cap: 1 })
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The first one was never initialized: its slot is free again.
    one.create(new(A)).await.unwrap();
    cleanup(&config).await;
}

#[tokio::test]
async fn unreachable_redis_is_unavailable_within_the_timeout() {
    let mut config = RedisConfig::new("redis://127.0.0.1:1").with_prefix("unreachable");
    config.command_timeout = Duration::from_millis(200);
    let bound = Duration::from_millis(600);

    let started = std::time::Instant::now();
    let refused = RedisStore::connect(&config, limits(1000, 1000, 1)).await;
    assert!(matches!(refused, Err(SessionError::Unavailable(_))));
    assert!(started.elapsed() < bound, "{:?}", started.elapsed());

    let store = RedisStore::new(&config, limits(1000, 1000, 1)).unwrap();
    let id = SessionId::random();
    // Every command fails on its own within the bound, again and again (no state that makes
    // a later one hang).
    for _ in 0..3 {
        let started = std::time::Instant::now();
        let created = store.create(new(A)).await;
        assert!(matches!(created, Err(SessionError::Unavailable(_))));
        assert!(started.elapsed() < bound, "{:?}", started.elapsed());

        let started = std::time::Instant::now();
        let validated = store.validate(&id, A).await;
        assert!(matches!(validated, Err(SessionError::Unavailable(_))));
        assert!(started.elapsed() < bound, "{:?}", started.elapsed());

        let started = std::time::Instant::now();
        let deleted = store.delete(&id, A).await;
        assert!(matches!(deleted, Err(SessionError::Unavailable(_))));
        assert!(started.elapsed() < bound, "{:?}", started.elapsed());

        let started = std::time::Instant::now();
        let counted = store.counts().await;
        assert!(matches!(counted, Err(SessionError::Unavailable(_))));
        assert!(started.elapsed() < bound, "{:?}", started.elapsed());
    }
    let sessions = Sessions::Redis(Arc::new(store));
    assert!(matches!(
        sessions.ping().await,
        Err(SessionError::Unavailable(_))
    ));

    let started = std::time::Instant::now();
    let backplane = RedisBackplane::connect(&config, "a", Arc::new(Recorder::default())).await;
    assert!(matches!(backplane, Err(BackplaneError::Unavailable(_))));
    assert!(started.elapsed() < bound, "{:?}", started.elapsed());
}

#[tokio::test]
async fn a_redis_that_never_answers_is_unavailable_within_the_timeout() {
    // A server that accepts connections and never writes a byte (a hung Redis).
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let silent = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    let mut config = RedisConfig::new(format!("redis://127.0.0.1:{port}")).with_prefix("silent");
    config.command_timeout = Duration::from_millis(200);
    let store = RedisStore::new(&config, limits(1000, 1000, 1)).unwrap();
    for _ in 0..2 {
        let started = std::time::Instant::now();
        let validated = store.validate(&SessionId::random(), A).await;
        assert!(matches!(validated, Err(SessionError::Unavailable(_))));
        let elapsed = started.elapsed();
        assert!(
            elapsed >= Duration::from_millis(150) && elapsed < Duration::from_millis(600),
            "{elapsed:?}"
        );
    }
    silent.abort();
}

#[tokio::test]
async fn sessions_front_routes_to_redis() {
    let Some(config) = redis_or_skip("front").await else {
        return;
    };
    let sessions = Sessions::redis(&config, limits(100_000, 10_000, 10))
        .await
        .unwrap();
    let id = sessions.create(new(A)).await.unwrap();
    sessions.mark_initialized(&id, A).await.unwrap();
    assert!(sessions.validate(&id, A).await.unwrap().initialized);
    assert_eq!(sessions.count("t").await, Ok(1));
    assert_eq!(sessions.counts().await, Ok(vec![("t".to_owned(), 1)]));
    sessions.ping().await.unwrap();
    sessions.delete(&id, A).await.unwrap();
    assert_eq!(sessions.counts().await, Ok(Vec::new()));
    cleanup(&config).await;
}

// === reconnection ===

/// Kills one client connection on the server (only the test's own, by id).
async fn kill_client(config: &RedisConfig, client_id: i64) {
    let client = ::redis::Client::open(config.url.as_str()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let killed: i64 = ::redis::cmd("CLIENT")
        .arg("KILL")
        .arg("ID")
        .arg(client_id)
        .query_async(&mut connection)
        .await
        .unwrap();
    assert_eq!(killed, 1);
}

#[tokio::test]
async fn the_store_reconnects_after_losing_its_connection() {
    let Some(config) = redis_or_skip("reconnect").await else {
        return;
    };
    let store = store(&config, limits(100_000, 10_000, 10)).await;
    let id = store.create(new(A)).await.unwrap();
    let before = store.client_id().await.unwrap();
    kill_client(&config, before).await;
    // The command that finds the connection dead may fail (`Unavailable`, never a hang);
    // one of the next ones succeeds on a new connection, with the session intact.
    let mut recovered = false;
    for _ in 0..20 {
        match store.validate(&id, A).await {
            Ok(_) => {
                recovered = true;
                break;
            }
            Err(SessionError::Unavailable(_)) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(other) => panic!("unexpected {other:?}"),
        }
    }
    assert!(recovered);
    assert_ne!(store.client_id().await.unwrap(), before);
    cleanup(&config).await;
}

//! Tests of the Redis store's session cache and refresh skipping against a real Redis (helpers in
//! `../tests.rs`): a DELETE on one instance refused at once on another, a lost notice bounded
//! by the max age, a lost subscription turning the cache off, ownership and caps unchanged, and
//! the expiry still refreshed once the refresh is due.

use super::*;

/// Two instances of one deployment: a store and a backplane each, the backplane serving its
/// store's cache.
async fn instance(
    config: &RedisConfig,
    name: &str,
    limits: SessionConfig,
) -> (RedisStore, RedisBackplane) {
    let store = store(config, limits).await;
    let backplane = RedisBackplane::connect(config, name, Arc::new(Recorder::default()))
        .await
        .unwrap();
    backplane.serve_cache(&store);
    (store, backplane)
}

fn with_cache(config: &RedisConfig, age: Duration) -> RedisConfig {
    RedisConfig {
        session_cache: age,
        ..config.clone()
    }
}

async fn field(config: &RedisConfig, id: &SessionId, name: &str) -> Option<String> {
    let client = ::redis::Client::open(config.url.as_str()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let key = format!("{}session:{}", config.namespace(), id.encode().as_str());
    connection.hget(key, name).await.unwrap()
}

#[tokio::test]
async fn a_delete_on_one_instance_is_refused_on_the_other_at_once() {
    let Some(config) = redis_or_skip("cache_delete").await else {
        return;
    };
    // A minute of cache age: only the notice can make the other instance see the delete.
    let config = with_cache(&config, Duration::from_secs(60));
    let (one, _one_bus) = instance(&config, "one", limits(100_000, 10_000, 10)).await;
    let (two, _two_bus) = instance(&config, "two", limits(100_000, 10_000, 10)).await;
    let id = one.create(new(A)).await.unwrap();
    one.mark_initialized(&id, A).await.unwrap();
    let info = two.validate(&id, A).await.unwrap();
    assert!(info.initialized);
    assert_eq!(two.cache().len(), 1, "the validation is cached on two");
    assert_eq!(two.validate(&id, A).await, Ok(info));

    assert_eq!(one.delete(&id, A).await, Ok(()));
    eventually(|| two.cache().len() == 0).await;
    assert_eq!(two.validate(&id, A).await, Err(SessionError::NotFound));
    // And the deleting instance itself never answers from its cache.
    assert_eq!(one.validate(&id, A).await, Err(SessionError::NotFound));
    cleanup(&config).await;
}

#[tokio::test]
async fn a_lost_notice_is_bounded_by_the_cache_age() {
    let Some(config) = redis_or_skip("cache_age").await else {
        return;
    };
    let config = with_cache(&config, Duration::from_millis(300));
    let (one, _one_bus) = instance(&config, "one", limits(100_000, 10_000, 10)).await;
    let id = one.create(new(A)).await.unwrap();
    one.mark_initialized(&id, A).await.unwrap();
    one.validate(&id, A).await.unwrap();
    // Removed behind the store's back (no notice): the cache still answers, for at most its
    // age.
    let client = ::redis::Client::open(config.url.as_str()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let key = format!("{}session:{}", config.namespace(), id.encode().as_str());
    let _: i64 = connection.del(&key).await.unwrap();
    assert!(
        one.validate(&id, A).await.is_ok(),
        "answered from the cache"
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(one.validate(&id, A).await, Err(SessionError::NotFound));
    cleanup(&config).await;
}

#[tokio::test]
async fn a_lost_subscription_turns_the_cache_off() {
    let Some(config) = redis_or_skip("cache_subscription").await else {
        return;
    };
    let config = with_cache(&config, Duration::from_secs(60));
    let (one, bus) = instance(&config, "one", limits(100_000, 10_000, 10)).await;
    let id = one.create(new(A)).await.unwrap();
    one.mark_initialized(&id, A).await.unwrap();
    one.validate(&id, A).await.unwrap();
    assert_eq!(one.cache().len(), 1);
    kill_client(&config, bus.subscription_client_id().await.unwrap()).await;
    eventually(|| one.cache().len() == 0).await;
    // While the subscription is down (and after it is back) every validation asks Redis.
    let client = ::redis::Client::open(config.url.as_str()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let key = format!("{}session:{}", config.namespace(), id.encode().as_str());
    let _: i64 = connection.del(&key).await.unwrap();
    assert_eq!(one.validate(&id, A).await, Err(SessionError::NotFound));
    cleanup(&config).await;
}

#[tokio::test]
async fn ownership_and_caps_hold_with_the_cache() {
    let Some(config) = redis_or_skip("cache_owner").await else {
        return;
    };
    let config = with_cache(&config, Duration::from_secs(60));
    let (one, _one_bus) = instance(&config, "one", limits(100_000, 10_000, 1)).await;
    let (two, _two_bus) = instance(&config, "two", limits(100_000, 10_000, 1)).await;
    let id = one.create(new(A)).await.unwrap();
    one.mark_initialized(&id, A).await.unwrap();
    two.validate(&id, A).await.unwrap();
    assert_eq!(two.cache().len(), 1);
    // Another owner with the right id is never answered from the cache.
    let mallory = Owner::new("t", "c", "mallory");
    assert_eq!(two.validate(&id, mallory).await, Err(SessionError::Foreign));
    assert_eq!(
        two.validate(&id, Owner::new("t2", "c", "anonymous")).await,
        Err(SessionError::Foreign)
    );
    assert!(two.validate(&id, A).await.is_ok());
    // The cap still counts the session on every instance.
    assert_eq!(
        two.create(new(A)).await,
        Err(SessionError::TenantCapReached { cap: 1 })
    );
    assert_eq!(two.delete(&id, A).await, Ok(()));
    eventually(|| one.cache().len() == 0).await;
    assert!(one.create(new(A)).await.is_ok(), "the slot is free again");
    cleanup(&config).await;
}

#[tokio::test]
async fn a_validation_writes_the_expiry_only_once_the_refresh_is_due() {
    let Some(config) = redis_or_skip("refresh_due").await else {
        return;
    };
    // Idle 2 s, refresh after 25% (500 ms); no cache, so every validation runs the script.
    let config = with_cache(&config, Duration::ZERO);
    let store = store(&config, limits(2_000, 60_000, 10)).await;
    let id = store.create(new(A)).await.unwrap();
    store.mark_initialized(&id, A).await.unwrap();
    let key = format!("{}session:{}", config.namespace(), id.encode().as_str());
    let written = field(&config, &id, "last_seen").await;
    tokio::time::sleep(Duration::from_millis(150)).await;
    store.validate(&id, A).await.unwrap();
    assert_eq!(
        field(&config, &id, "last_seen").await,
        written,
        "refreshed 150 ms ago: read only"
    );
    let ttl = pttl(&config, &key).await;
    assert!(ttl < 1_900, "the expiry did not move: {ttl}");
    // Near expiry (1.7 s after the last write, past the 500 ms share): refreshed.
    tokio::time::sleep(Duration::from_millis(1_550)).await;
    store.validate(&id, A).await.unwrap();
    assert_ne!(field(&config, &id, "last_seen").await, written);
    let ttl = pttl(&config, &key).await;
    assert!(
        ttl > 1_800 && ttl <= 2_000,
        "ttl back to the idle time: {ttl}"
    );
    // Still alive well past the first idle period.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(store.validate(&id, A).await.is_ok());
    cleanup(&config).await;
}

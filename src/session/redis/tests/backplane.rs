//! Tests of `RedisBackplane` against a real Redis (helpers in `../tests.rs`): routing to the
//! holder, the holder registry, a subscription that comes back, patient publishes.

use super::*;
use crate::session::redis::frame::encode_deliver;

#[tokio::test]
async fn a_message_published_on_one_instance_reaches_the_holder() {
    let Some(config) = redis_or_skip("route").await else {
        return;
    };
    let inbox_a = Arc::new(Recorder::default());
    let inbox_b = Arc::new(Recorder::default());
    let a = RedisBackplane::connect(&config, "a", inbox_a.clone())
        .await
        .unwrap();
    let b = RedisBackplane::connect(&config, "b", inbox_b.clone())
        .await
        .unwrap();
    let session = SessionId::random();
    b.register_holder(A, &session).await.unwrap();
    assert_eq!(a.holder_of(A, &session).await, Ok(Some("b".to_owned())));

    assert_eq!(a.publish(A, &session, b"hello").await, Ok(true));
    eventually(|| !inbox_b.delivered.lock().unwrap().is_empty()).await;
    assert_eq!(
        *inbox_b.delivered.lock().unwrap(),
        vec![(session, b"hello".to_vec())]
    );
    // Held here: delivered directly, no round trip through Redis.
    assert_eq!(b.publish(A, &session, b"local").await, Ok(true));
    assert_eq!(inbox_b.delivered.lock().unwrap().len(), 2);

    // Another caller with the right session id reaches nothing.
    let mallory = Owner::new("t", "c", "mallory");
    assert_eq!(a.holder_of(mallory, &session).await, Ok(None));
    assert_eq!(a.publish(mallory, &session, b"forged").await, Ok(false));
    assert_eq!(b.publish(mallory, &session, b"forged").await, Ok(false));
    // A message that reaches B for an owner it does not hold is dropped by B.
    let forged = encode_deliver(mallory, &session, b"forged").unwrap();
    let client = ::redis::Client::open(config.url.as_str()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    let channel = format!("{}instance:b", config.namespace());
    let n_receivers: i64 = connection.publish(&channel, forged.as_ref()).await.unwrap();
    assert_eq!(n_receivers, 1);
    // Followed by a real one: once that arrives, the forged one was handled (same channel,
    // in order) and must not have been delivered.
    assert_eq!(a.publish(A, &session, b"after").await, Ok(true));
    eventually(|| inbox_b.delivered.lock().unwrap().len() == 3).await;
    assert_eq!(
        inbox_b.delivered.lock().unwrap().last(),
        Some(&(session, b"after".to_vec()))
    );
    assert!(inbox_a.delivered.lock().unwrap().is_empty());

    // Catalog invalidations reach every instance, the sender included.
    a.broadcast_invalidation("t").await.unwrap();
    eventually(|| {
        !inbox_a.invalidated.lock().unwrap().is_empty()
            && !inbox_b.invalidated.lock().unwrap().is_empty()
    })
    .await;
    assert_eq!(*inbox_b.invalidated.lock().unwrap(), vec!["t".to_owned()]);

    // Once the stream is gone, nothing is routed.
    b.unregister(A, &session).await.unwrap();
    assert_eq!(a.holder_of(A, &session).await, Ok(None));
    assert_eq!(a.publish(A, &session, b"late").await, Ok(false));
    cleanup(&config).await;
}

#[tokio::test]
async fn holder_registry_round_trip_and_expiry() {
    let Some(mut config) = redis_or_skip("holders").await else {
        return;
    };
    config.holder_ttl = Duration::from_millis(300);
    let a = RedisBackplane::connect(&config, "a", Arc::new(Recorder::default()))
        .await
        .unwrap();
    let b = RedisBackplane::connect(&config, "b", Arc::new(Recorder::default()))
        .await
        .unwrap();
    let session = SessionId::random();

    // Two streams of one session on A: the registration outlives the first.
    a.register_holder(A, &session).await.unwrap();
    a.register_holder(A, &session).await.unwrap();
    assert_eq!(a.held(), 1);
    a.unregister(A, &session).await.unwrap();
    assert_eq!(b.holder_of(A, &session).await, Ok(Some("a".to_owned())));

    // Refreshed by its holder, it outlives its TTL.
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert_eq!(a.refresh(A, &session).await, Ok(true));
    }
    assert_eq!(a.refresh_all().await, Ok(1));
    assert_eq!(b.holder_of(A, &session).await, Ok(Some("a".to_owned())));

    // The client reconnected on B: A's refresh learns its stream is no longer the one.
    b.register_holder(A, &session).await.unwrap();
    assert_eq!(a.refresh(A, &session).await, Ok(false));
    // A's unregister does not remove B's registration.
    a.unregister(A, &session).await.unwrap();
    assert_eq!(a.holder_of(A, &session).await, Ok(Some("b".to_owned())));

    // Not refreshed (the holder died): gone after the TTL.
    tokio::time::sleep(Duration::from_millis(450)).await;
    assert_eq!(a.holder_of(A, &session).await, Ok(None));
    // The holder's next refresh re-creates it (Redis lost it, the stream is still live).
    assert_eq!(b.refresh(A, &session).await, Ok(true));
    assert_eq!(a.holder_of(A, &session).await, Ok(Some("b".to_owned())));
    b.unregister(A, &session).await.unwrap();
    assert_eq!(a.holder_of(A, &session).await, Ok(None));
    assert_eq!(b.held(), 0);
    cleanup(&config).await;
}

#[tokio::test]
async fn the_subscription_comes_back_after_losing_its_connection() {
    let Some(config) = redis_or_skip("resubscribe").await else {
        return;
    };
    let inbox_b = Arc::new(Recorder::default());
    let a = RedisBackplane::connect(&config, "a", Arc::new(Recorder::default()))
        .await
        .unwrap();
    let b = RedisBackplane::connect(&config, "b", inbox_b.clone())
        .await
        .unwrap();
    let session = SessionId::random();
    b.register_holder(A, &session).await.unwrap();
    kill_client(&config, b.subscription_client_id().await.unwrap()).await;
    // Published messages are lost while B is not subscribed (pub/sub is at most once); once
    // B has resubscribed, one gets through.
    let delivered = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            if a.publish(A, &session, b"again").await == Ok(true)
                && !inbox_b.delivered.lock().unwrap().is_empty()
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    assert!(delivered.is_ok(), "B never resubscribed");
    cleanup(&config).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_holder_not_listening_is_unreachable_and_a_patient_publish_waits_for_it() {
    let Some(config) = redis_or_skip("patient").await else {
        return;
    };
    let a = Arc::new(
        RedisBackplane::connect(&config, "a", Arc::new(Recorder::default()))
            .await
            .unwrap(),
    );
    assert!(a.is_subscribed(), "subscribed once connected");
    // "ghost" holds the stream but does not listen (as a holder does while its subscription
    // is renewed after a Redis restart): unreachable, and a plain publish is not a delivery.
    let session = SessionId::random();
    let holder_key = format!(
        "{}holder:t:c:anonymous:{}",
        config.namespace(),
        session.encode().as_str()
    );
    let client = ::redis::Client::open(config.url.as_str()).unwrap();
    let mut connection = client.get_multiplexed_async_connection().await.unwrap();
    connection
        .set_ex::<_, _, ()>(&holder_key, "ghost", 30)
        .await
        .unwrap();
    assert_eq!(a.reachable(A, &session).await, Ok(false));
    assert_eq!(a.publish(A, &session, b"lost").await, Ok(false));

    // A patient publish waits until the holder listens again, then delivers once.
    let patient = {
        let a = Arc::clone(&a);
        tokio::spawn(async move { a.publish_patiently(A, &session, b"late").await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let inbox = Arc::new(Recorder::default());
    let ghost = RedisBackplane::connect(&config, "ghost", inbox.clone())
        .await
        .unwrap();
    ghost.register_holder(A, &session).await.unwrap();
    assert_eq!(patient.await.unwrap(), Ok(true));
    eventually(|| !inbox.delivered.lock().unwrap().is_empty()).await;
    assert_eq!(
        *inbox.delivered.lock().unwrap(),
        vec![(session, b"late".to_vec())]
    );
    assert_eq!(a.reachable(A, &session).await, Ok(true));

    // Nobody holds it: given up at once. A holder that never listens: given up after the
    // holder TTL.
    ghost.unregister(A, &session).await.unwrap();
    assert_eq!(a.reachable(A, &session).await, Ok(false));
    assert_eq!(a.publish_patiently(A, &session, b"x").await, Ok(false));
    let impatient = RedisBackplane::connect(
        &RedisConfig {
            holder_ttl: Duration::from_millis(300),
            ..config.clone()
        },
        "impatient",
        Arc::new(Recorder::default()),
    )
    .await
    .unwrap();
    connection
        .set_ex::<_, _, ()>(&holder_key, "ghost2", 30)
        .await
        .unwrap();
    let gave_up = tokio::time::timeout(
        Duration::from_secs(5),
        impatient.publish_patiently(A, &session, b"x"),
    )
    .await;
    assert_eq!(gave_up, Ok(Ok(false)));
    cleanup(&config).await;
}

#[tokio::test]
async fn a_stream_replaced_on_another_instance_gets_the_message_there() {
    let Some(config) = redis_or_skip("moved").await else {
        return;
    };
    let inbox_a = Arc::new(Recorder::default());
    let inbox_b = Arc::new(Recorder::default());
    let a = RedisBackplane::connect(&config, "a", inbox_a.clone())
        .await
        .unwrap();
    let b = RedisBackplane::connect(&config, "b", inbox_b.clone())
        .await
        .unwrap();
    let session = SessionId::random();
    a.register_holder(A, &session).await.unwrap();
    // The client's stream on A died and it reconnected on B before A noticed.
    inbox_a
        .dead
        .store(true, std::sync::atomic::Ordering::Relaxed);
    b.register_holder(A, &session).await.unwrap();
    assert_eq!(a.publish(A, &session, b"moved").await, Ok(true));
    eventually(|| !inbox_b.delivered.lock().unwrap().is_empty()).await;
    assert_eq!(
        *inbox_b.delivered.lock().unwrap(),
        vec![(session, b"moved".to_vec())]
    );
    cleanup(&config).await;
}

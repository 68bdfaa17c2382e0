//! Integration tests: sessions (store, expiry, cap, ownership) and the live stream registry
//! (event ids, resumption, retention, list-changed delivery, keep-alive, polling close), plus
//! one end-to-end resume over a real hyper server on 127.0.0.1.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use sluice::mcp::{ListChanged, SubscriptionFilter};
use sluice::protocol::ProtocolVersion;
use sluice::session::{
    Bus, Handshake, NewSession, Owner, SessionConfig, SessionError, SessionId, Sessions,
};
use sluice::sse::{Decoder, Event};
use sluice::transport::stream::{
    list_changed_message, parse_event_id, spawn_janitor, Opened, Resumed, StreamConfig,
    StreamError, StreamKind, StreamRegistry,
};
use tokio::sync::mpsc;
use tokio::time::advance;

const ALICE: Owner<'static> = Owner::new("tenant-a", "client-a", "alice");
const BOB: Owner<'static> = Owner::new("tenant-a", "client-a", "bob");
const OTHER_CLIENT: Owner<'static> = Owner::new("tenant-a", "client-b", "alice");

fn config() -> SessionConfig {
    SessionConfig {
        idle: Duration::from_secs(600),
        init_timeout: Duration::from_secs(30),
        max_per_tenant: 100,
        max_per_caller: 100,
    }
}

fn new_session(owner: Owner<'static>) -> NewSession<'static> {
    NewSession {
        owner,
        version: ProtocolVersion::V2025_11_25,
        client_info: br#"{"name":"test","version":"1.0"}"#,
        capabilities: br#"{"roots":{}}"#,
    }
}

async fn initialized(sessions: &Sessions, owner: Owner<'static>) -> SessionId {
    let id = sessions.create(new_session(owner)).await.expect("create");
    sessions
        .mark_initialized(&id, owner)
        .await
        .expect("initialized");
    id
}

// === sessions ===

#[tokio::test(start_paused = true)]
async fn idle_sessions_expire_and_activity_keeps_them() {
    let sessions = Sessions::local(config());
    let idle = initialized(&sessions, ALICE).await;
    let busy = initialized(&sessions, ALICE).await;
    for _ in 0..3 {
        advance(Duration::from_secs(400)).await;
        sessions.validate(&busy, ALICE).await.expect("busy stays");
    }
    // 1200 s without a request: expired, and NotFound even before a sweep removes it.
    assert_eq!(
        sessions.validate(&idle, ALICE).await,
        Err(SessionError::NotFound)
    );
    assert_eq!(
        sessions.expire().await,
        Ok(vec![]),
        "already removed by the lookup"
    );
    advance(Duration::from_secs(600)).await;
    assert_eq!(sessions.expire().await, Ok(vec![busy]));
    assert_eq!(sessions.count("tenant-a").await, Ok(0));
}

#[tokio::test(start_paused = true)]
async fn uninitialized_sessions_expire_after_the_init_timeout() {
    let sessions = Sessions::local(config());
    let never = sessions.create(new_session(ALICE)).await.unwrap();
    let done = sessions.create(new_session(ALICE)).await.unwrap();
    advance(Duration::from_secs(10)).await;
    sessions.mark_initialized(&done, ALICE).await.unwrap();
    // Validation refreshes last-seen but does not stop the init clock.
    sessions.validate(&never, ALICE).await.unwrap();
    advance(Duration::from_secs(25)).await;
    let expired = sessions.expire().await.unwrap();
    assert_eq!(expired, vec![never]);
    assert_eq!(
        sessions.validate(&never, ALICE).await,
        Err(SessionError::NotFound)
    );
    let info = sessions.validate(&done, ALICE).await.unwrap();
    assert!(info.initialized);
    assert_eq!(info.version, "2025-11-25");
    assert_eq!(&info.capabilities[..], br#"{"roots":{}}"#);
}

#[tokio::test]
async fn ownership_mismatch_is_foreign_and_has_no_effect() {
    let sessions = Sessions::local(config());
    let id = initialized(&sessions, ALICE).await;
    for intruder in [
        BOB,
        OTHER_CLIENT,
        Owner::new("tenant-b", "client-a", "alice"),
    ] {
        assert_eq!(
            sessions.validate(&id, intruder).await,
            Err(SessionError::Foreign)
        );
        assert_eq!(
            sessions.mark_initialized(&id, intruder).await,
            Err(SessionError::Foreign)
        );
        assert_eq!(
            sessions.delete(&id, intruder).await,
            Err(SessionError::Foreign)
        );
    }
    // Unknown ids look exactly the same.
    let unknown = SessionId::random();
    assert_eq!(
        sessions.validate(&unknown, ALICE).await,
        Err(SessionError::NotFound)
    );
    assert!(
        sessions.validate(&id, ALICE).await.is_ok(),
        "the owner still has it"
    );
}

#[tokio::test]
async fn delete_then_not_found() {
    let sessions = Sessions::local(config());
    let id = initialized(&sessions, ALICE).await;
    assert_eq!(sessions.count("tenant-a").await, Ok(1));
    assert_eq!(sessions.delete(&id, ALICE).await, Ok(()));
    assert_eq!(
        sessions.validate(&id, ALICE).await,
        Err(SessionError::NotFound)
    );
    assert_eq!(
        sessions.delete(&id, ALICE).await,
        Err(SessionError::NotFound)
    );
    assert_eq!(sessions.count("tenant-a").await, Ok(0));
}

#[tokio::test]
async fn legacy_handshake_updates_the_session() {
    let sessions = Sessions::local(config());
    let id = sessions
        .create(NewSession {
            owner: ALICE,
            version: ProtocolVersion::V2024_11_05,
            client_info: b"",
            capabilities: b"",
        })
        .await
        .unwrap();
    let handshake = Handshake {
        version: ProtocolVersion::V2025_03_26,
        client_info: br#"{"name":"late"}"#,
        capabilities: b"{}",
    };
    sessions.set_handshake(&id, ALICE, handshake).await.unwrap();
    let info = sessions.validate(&id, ALICE).await.unwrap();
    assert_eq!(info.version, "2025-03-26");
    assert_eq!(&info.client_info[..], br#"{"name":"late"}"#);
    assert_eq!(
        sessions.set_handshake(&id, BOB, handshake).await,
        Err(SessionError::Foreign)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tenant_cap_holds_under_concurrent_creates() {
    const CAP: usize = 37;
    let sessions = Sessions::local(SessionConfig {
        max_per_tenant: CAP,
        max_per_caller: CAP,
        ..config()
    });
    let tasks: Vec<_> = (0..200)
        .map(|_| {
            let sessions = sessions.clone();
            tokio::spawn(async move { sessions.create(new_session(ALICE)).await })
        })
        .collect();
    let mut created = HashSet::new();
    let mut refused = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(id) => assert!(created.insert(id), "ids are unique"),
            Err(SessionError::TenantCapReached { cap }) => {
                assert_eq!(cap, CAP);
                refused += 1;
            }
            Err(other) => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(created.len(), CAP);
    assert_eq!(refused, 200 - CAP);
    assert_eq!(sessions.count("tenant-a").await, Ok(CAP));
    // Another tenant has its own cap.
    assert!(sessions
        .create(new_session(Owner::new("tenant-b", "c", "x")))
        .await
        .is_ok());
    // A freed slot can be taken again.
    let first = *created.iter().next().unwrap();
    sessions.delete(&first, ALICE).await.unwrap();
    assert!(sessions.create(new_session(ALICE)).await.is_ok());
    assert!(matches!(
        sessions.create(new_session(ALICE)).await,
        Err(SessionError::TenantCapReached { .. })
    ));
}

// === stream helpers ===

fn registry(retain_events: usize) -> StreamRegistry {
    StreamRegistry::new(StreamConfig {
        instance: Some("inst1".to_owned()),
        retain: Duration::from_secs(60),
        retain_events,
        keepalive: Duration::from_secs(15),
        queue_messages: 8,
        queue_bytes: sluice::transport::stream::DEFAULT_STREAM_QUEUE_BYTES,
        max_per_session: 8,
    })
    .expect("registry")
}

/// Every frame queued on `rx` right now, decoded.
fn drain(rx: &mut mpsc::Receiver<Bytes>) -> Vec<Event> {
    let mut buf = BytesMut::new();
    while let Ok(frame) = rx.try_recv() {
        buf.extend_from_slice(&frame);
    }
    decode_all(&mut buf)
}

fn decode_all(buf: &mut BytesMut) -> Vec<Event> {
    let mut decoder = Decoder::new();
    let mut events = Vec::new();
    while let Ok(Some(event)) = decoder.decode(buf) {
        events.push(event);
    }
    events
}

/// Raw frames queued on `rx` right now.
fn raw(rx: &mut mpsc::Receiver<Bytes>) -> Vec<Bytes> {
    let mut frames = Vec::new();
    while let Ok(frame) = rx.try_recv() {
        frames.push(frame);
    }
    frames
}

/// The data of every message event. A priming event (an id and an empty `data:` line) is
/// dispatched by WHATWG decoders with empty data; it is left out here and checked on its own.
fn datas(events: &[Event]) -> Vec<&[u8]> {
    events
        .iter()
        .filter(|event| !event.data.is_empty())
        .map(|event| &event.data[..])
        .collect()
}

/// Advances paused time one second at a time, letting the janitor run at each step (one big
/// leap would make its intervals skip the ticks in between).
async fn step(secs: u64) {
    for _ in 0..secs {
        advance(Duration::from_secs(1)).await;
        settle().await;
    }
}

/// Lets spawned tasks (the janitor) run what became due.
async fn settle() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

fn id_of(event: &Event) -> String {
    String::from_utf8(event.id.clone().expect("event id").to_vec()).unwrap()
}

fn replay(resumed: Result<Resumed, StreamError>) -> (mpsc::Receiver<Bytes>, usize) {
    match resumed.expect("resume") {
        Resumed::Replay { rx, replayed, .. } => (rx, replayed),
        Resumed::Fresh => panic!("expected a replay, got fresh"),
    }
}

fn is_fresh(resumed: Result<Resumed, StreamError>) -> bool {
    matches!(resumed, Ok(Resumed::Fresh))
}

// === event ids and resumption ===

#[tokio::test]
async fn frames_carry_instance_stream_and_seq() {
    let streams = registry(16);
    let session = SessionId::random();
    let Opened { writer, mut rx, .. } = streams
        .open(Some(session), ALICE, StreamKind::Post)
        .unwrap();
    writer.prime(Some(3000)).await.unwrap();
    writer.send(br#"{"a":1}"#).await.unwrap();
    writer.send(br#"{"a":2}"#).await.unwrap();
    let events = drain(&mut rx);
    // The priming event: an id (seq 1), `retry`, and empty data.
    assert!(events[0].data.is_empty());
    assert_eq!(
        parse_event_id(events[0].id.as_ref().unwrap()).unwrap().seq,
        1
    );
    let events = &events[1..];
    assert_eq!(datas(events), vec![&br#"{"a":1}"#[..], br#"{"a":2}"#]);
    let first = parse_event_id(events[0].id.as_ref().unwrap()).unwrap();
    assert_eq!(first.instance, b"inst1");
    assert_eq!(first.stream, writer.stream_id());
    assert_eq!(first.seq, 2, "the priming event took seq 1");
    assert_eq!(
        parse_event_id(events[1].id.as_ref().unwrap()).unwrap().seq,
        3
    );
    assert_eq!(events[0].retry, Some(3000));
    assert_eq!(writer.last_event_id().unwrap().as_str(), id_of(&events[1]));
}

#[tokio::test]
async fn resume_replays_only_later_frames_of_the_same_stream() {
    let streams = registry(16);
    let session = SessionId::random();
    let a = streams
        .open(Some(session), ALICE, StreamKind::Post)
        .unwrap();
    let mut b = streams
        .open(Some(session), ALICE, StreamKind::Post)
        .unwrap();
    for n in 1..=4 {
        a.writer.send(format!("a{n}").as_bytes()).await.unwrap();
        b.writer.send(format!("b{n}").as_bytes()).await.unwrap();
    }
    let mut a_rx = a.rx;
    let a_events = drain(&mut a_rx);
    drop(drain(&mut b.rx));
    // The client saw a2 and reconnects.
    let (mut rx, replayed) =
        replay(streams.resume(id_of(&a_events[1]).as_bytes(), &session, ALICE));
    assert_eq!(replayed, 2);
    assert_eq!(datas(&drain(&mut rx)), vec![&b"a3"[..], b"a4"]);
    // Live frames follow on the resumed connection, and the old connection is detached.
    a.writer.send(b"a5").await.unwrap();
    assert_eq!(datas(&drain(&mut rx)), vec![&b"a5"[..]]);
    assert!(drain(&mut a_rx).is_empty());
    // Resuming from the last id replays nothing.
    let last = a.writer.last_event_id().unwrap();
    let (mut rx, replayed) = replay(streams.resume(last.as_bytes(), &session, ALICE));
    assert_eq!(replayed, 0);
    assert!(drain(&mut rx).is_empty());
}

#[tokio::test]
async fn foreign_and_malformed_ids_give_a_fresh_stream() {
    let streams = registry(16);
    let mine = SessionId::random();
    let theirs = SessionId::random();
    let opened = streams.open(Some(theirs), BOB, StreamKind::Post).unwrap();
    opened.writer.send(b"secret-1").await.unwrap();
    opened.writer.send(b"secret-2").await.unwrap();
    let first = {
        let mut rx = opened.rx;
        id_of(&drain(&mut rx)[0])
    };
    let stream = opened.writer.stream_id();
    // Another session (and another caller) presenting that stream's id: nothing replayed.
    assert!(is_fresh(streams.resume(first.as_bytes(), &mine, ALICE)));
    // The right session id with the wrong caller: still nothing.
    assert!(is_fresh(streams.resume(first.as_bytes(), &theirs, ALICE)));
    // Another instance, an unknown stream, a seq from the future, and garbage.
    for id in [
        format!("other.{stream}.1"),
        "inst1.999999.1".to_owned(),
        format!("inst1.{stream}.99"),
        "inst1".to_owned(),
        format!("inst1.{stream}.-1"),
        "\u{0}\u{1}".to_owned(),
        String::new(),
    ] {
        assert!(
            is_fresh(streams.resume(id.as_bytes(), &theirs, BOB)),
            "{id:?}"
        );
    }
    // The owner gets the replay.
    let (mut rx, replayed) = replay(streams.resume(first.as_bytes(), &theirs, BOB));
    assert_eq!(replayed, 1);
    assert_eq!(datas(&drain(&mut rx)), vec![&b"secret-2"[..]]);
}

#[tokio::test]
async fn aged_out_ids_give_a_fresh_stream() {
    let streams = registry(3);
    let session = SessionId::random();
    let Opened { writer, mut rx, .. } =
        streams.open(Some(session), ALICE, StreamKind::Get).unwrap();
    for n in 1..=6 {
        writer.send(format!("m{n}").as_bytes()).await.unwrap();
    }
    let ids: Vec<String> = drain(&mut rx).iter().map(id_of).collect();
    // The ring holds m4..m6: resuming after m3 loses nothing; after m2, m3 is gone.
    assert!(is_fresh(streams.resume(ids[1].as_bytes(), &session, ALICE)));
    drop(rx);
    let (mut rx, replayed) = replay(streams.resume(ids[2].as_bytes(), &session, ALICE));
    assert_eq!(replayed, 3);
    assert_eq!(datas(&drain(&mut rx)), vec![&b"m4"[..], b"m5", b"m6"]);
}

#[tokio::test(start_paused = true)]
async fn finished_post_streams_are_resumable_within_retain_only() {
    let streams = registry(16);
    let session = SessionId::random();
    let Opened { writer, rx, .. } = streams
        .open(Some(session), ALICE, StreamKind::Post)
        .unwrap();
    writer.prime(None).await.unwrap();
    let priming = writer.last_event_id().unwrap();
    // The client drops before the response; the handler still answers.
    drop(rx);
    writer.send(b"progress").await.unwrap();
    writer.send(b"response").await.unwrap();
    writer.finish();
    advance(Duration::from_secs(59)).await;
    assert_eq!(streams.sweep(), 0);
    let (mut replayed_rx, replayed) = replay(streams.resume(priming.as_bytes(), &session, ALICE));
    assert_eq!(replayed, 2);
    assert_eq!(
        datas(&drain(&mut replayed_rx)),
        vec![&b"progress"[..], b"response"]
    );
    // A finished stream ends after its replay.
    assert!(replayed_rx.recv().await.is_none());
    advance(Duration::from_secs(1)).await;
    // Past retention it is fresh, even before the sweep, and the sweep drops it.
    assert!(is_fresh(streams.resume(
        priming.as_bytes(),
        &session,
        ALICE
    )));
    assert_eq!(streams.sweep(), 1);
    assert!(streams.is_empty());
}

#[tokio::test]
async fn dropping_a_post_writer_finishes_the_stream() {
    let streams = registry(16);
    let session = SessionId::random();
    let Opened { writer, mut rx, .. } = streams
        .open(Some(session), ALICE, StreamKind::Post)
        .unwrap();
    writer.send(b"only").await.unwrap();
    drop(writer);
    assert_eq!(datas(&drain(&mut rx)), vec![&b"only"[..]]);
    assert!(rx.recv().await.is_none(), "body ends");
}

#[tokio::test]
async fn inline_post_frames_are_retained() {
    let streams = registry(16);
    let session = SessionId::random();
    let writer = streams.open_inline(session, ALICE).unwrap();
    let priming = writer.push_priming(None).unwrap();
    let response = writer.push(b"result").unwrap();
    writer.finish();
    let mut buf = BytesMut::new();
    buf.extend_from_slice(&priming);
    buf.extend_from_slice(&response);
    let events = decode_all(&mut buf);
    assert_eq!(datas(&events), vec![&b"result"[..]]);
    let priming_id = parse_event_id(&priming[4..priming.len() - 9]).unwrap();
    assert_eq!(priming_id.seq, 1);
    let id = format!("inst1.{}.1", priming_id.stream);
    let (mut rx, replayed) = replay(streams.resume(id.as_bytes(), &session, ALICE));
    assert_eq!(replayed, 1);
    assert_eq!(datas(&drain(&mut rx)), vec![&b"result"[..]]);
}

// === standalone streams ===

#[tokio::test]
async fn second_get_conflicts_until_the_first_is_gone() {
    let streams = registry(16);
    let session = SessionId::random();
    let first = streams.open(Some(session), ALICE, StreamKind::Get).unwrap();
    assert_eq!(
        streams
            .open(Some(session), ALICE, StreamKind::Get)
            .unwrap_err(),
        StreamError::Conflict
    );
    // Another session is independent; POST streams do not conflict.
    assert!(streams
        .open(Some(SessionId::random()), ALICE, StreamKind::Get)
        .is_ok());
    assert!(streams.open(Some(session), ALICE, StreamKind::Post).is_ok());
    // The client goes away: a new GET is allowed.
    drop(first.rx);
    let second = streams.open(Some(session), ALICE, StreamKind::Get).unwrap();
    // Ending the stream server-side also frees the slot.
    second.writer.finish();
    assert!(streams.open(Some(session), ALICE, StreamKind::Get).is_ok());
}

#[tokio::test]
async fn kinds_check_their_session() {
    let streams = registry(16);
    let listen = StreamKind::Listen {
        subscription_id: Bytes::from_static(b"1"),
        filter: tools_only(),
    };
    assert!(matches!(
        streams.open(Some(SessionId::random()), ALICE, listen),
        Err(StreamError::Session(_))
    ));
    for kind in [StreamKind::Get, StreamKind::Post, StreamKind::Legacy] {
        assert!(matches!(
            streams.open(None, ALICE, kind),
            Err(StreamError::Session(_))
        ));
    }
}

#[tokio::test]
async fn close_session_ends_every_stream() {
    let streams = registry(16);
    let session = SessionId::random();
    let other = SessionId::random();
    let mut get = streams.open(Some(session), ALICE, StreamKind::Get).unwrap();
    let mut post = streams
        .open(Some(session), ALICE, StreamKind::Post)
        .unwrap();
    let mut kept = streams.open(Some(other), ALICE, StreamKind::Get).unwrap();
    post.writer.send(b"before").await.unwrap();
    let before = post.writer.last_event_id().unwrap();
    assert_eq!(streams.close_session(&session), 2);
    assert_eq!(datas(&drain(&mut post.rx)), vec![&b"before"[..]]);
    assert!(post.rx.recv().await.is_none());
    assert!(get.rx.recv().await.is_none());
    assert_eq!(post.writer.send(b"after").await, Err(StreamError::Closed));
    assert!(is_fresh(streams.resume(before.as_bytes(), &session, ALICE)));
    get.writer.closed().await;
    // The other session's stream is untouched.
    kept.writer.send(b"still here").await.unwrap();
    assert_eq!(datas(&drain(&mut kept.rx)), vec![&b"still here"[..]]);
    assert_eq!(streams.len(), 1);
}

#[tokio::test]
async fn legacy_stream_has_endpoint_and_messages_without_ids() {
    let streams = registry(16);
    let session = SessionId::random();
    let Opened { writer, mut rx, .. } = streams
        .open(Some(session), ALICE, StreamKind::Legacy)
        .unwrap();
    writer
        .send_named(b"endpoint", b"/runtime/t/c/messages?sessionId=x")
        .await
        .unwrap();
    assert_eq!(writer.prime(None).await, Err(StreamError::NotResumable));
    // The legacy transport answers POST /messages through the session's standalone stream.
    let standalone = streams.standalone(&session).expect("live");
    standalone.send(br#"{"id":1}"#).await.unwrap();
    drop(standalone);
    let events = drain(&mut rx);
    assert_eq!(events[0].event_type(), b"endpoint");
    assert_eq!(&events[1].data[..], br#"{"id":1}"#);
    assert!(events.iter().all(|event| event.id.is_none()));
    // The client leaves: the transport learns it (to end the session), writes fail.
    drop(rx);
    writer.closed().await;
    assert_eq!(writer.send(b"late").await, Err(StreamError::Closed));
    assert_eq!(streams.sweep(), 1);
}

// === list_changed ===

#[tokio::test]
async fn list_changed_reaches_each_live_session_once() {
    let streams = registry(16);
    // s1: GET and a live POST → the GET gets it.
    let s1 = SessionId::random();
    let mut s1_get = streams.open(Some(s1), ALICE, StreamKind::Get).unwrap();
    let mut s1_post = streams.open(Some(s1), ALICE, StreamKind::Post).unwrap();
    // s2: two live POSTs → the most recent gets it.
    let s2 = SessionId::random();
    let mut s2_old = streams.open(Some(s2), ALICE, StreamKind::Post).unwrap();
    let mut s2_new = streams.open(Some(s2), ALICE, StreamKind::Post).unwrap();
    // s3: its only stream finished (retained, not attached) → kept in its ring for a resume.
    let s3 = SessionId::random();
    let s3_post = streams.open(Some(s3), ALICE, StreamKind::Post).unwrap();
    s3_post.writer.send(b"done").await.unwrap();
    let s3_last = s3_post.writer.last_event_id().unwrap();
    s3_post.writer.finish();
    // s4: GET whose client left → nothing.
    let s4 = SessionId::random();
    let s4_get = streams.open(Some(s4), ALICE, StreamKind::Get).unwrap();
    drop(s4_get.rx);
    // Other client and other tenant → nothing.
    let mut elsewhere = streams
        .open(Some(SessionId::random()), OTHER_CLIENT, StreamKind::Get)
        .unwrap();
    let mut other_tenant = streams
        .open(
            Some(SessionId::random()),
            Owner::new("tenant-b", "client-a", "alice"),
            StreamKind::Get,
        )
        .unwrap();
    // Listen streams of the same owner: the one asking for tool changes gets it.
    let mut listen = streams
        .open(
            None,
            ALICE,
            StreamKind::Listen {
                subscription_id: Bytes::from_static(b"\"sub-9\""),
                filter: tools_only(),
            },
        )
        .unwrap();
    let mut listen_resources = streams
        .open(
            None,
            ALICE,
            StreamKind::Listen {
                subscription_id: Bytes::from_static(b"10"),
                filter: SubscriptionFilter {
                    resources_list_changed: true,
                    ..SubscriptionFilter::default()
                },
            },
        )
        .unwrap();

    let delivered = streams.deliver_list_changed(
        "tenant-a",
        Some("client-a"),
        ListChanged::Tools,
        list_changed_message,
    );
    assert_eq!(delivered, 3);
    let expected = &list_changed_message(None)[..];
    assert_eq!(datas(&drain(&mut s1_get.rx)), vec![expected]);
    assert!(drain(&mut s1_post.rx).is_empty());
    assert!(drain(&mut s2_old.rx).is_empty());
    assert_eq!(datas(&drain(&mut s2_new.rx)), vec![expected]);
    assert!(drain(&mut elsewhere.rx).is_empty());
    assert!(drain(&mut other_tenant.rx).is_empty());
    let listened = drain(&mut listen.rx);
    assert_eq!(
        datas(&listened),
        vec![&list_changed_message(Some(b"\"sub-9\""))[..]]
    );
    assert!(listened[0].id.is_none(), "listen streams carry no ids");
    assert!(drain(&mut listen_resources.rx).is_empty());
    // A resources change reaches the listen stream that asked for it (and the live session
    // streams), not the one that asked for tools only.
    let delivered =
        streams.deliver_list_changed("tenant-a", Some("client-a"), ListChanged::Resources, |_| {
            Bytes::from_static(b"resources")
        });
    assert_eq!(delivered, 3);
    assert_eq!(
        datas(&drain(&mut listen_resources.rx)),
        vec![&b"resources"[..]]
    );
    assert!(drain(&mut listen.rx).is_empty());
    assert_eq!(datas(&drain(&mut s1_get.rx)), vec![&b"resources"[..]]);
    assert_eq!(datas(&drain(&mut s2_new.rx)), vec![&b"resources"[..]]);
    // s3's retained POST stream kept both messages: resuming it replays them. Nothing for s4.
    let (mut rx, replayed) = replay(streams.resume(s3_last.as_bytes(), &s3, ALICE));
    assert_eq!(replayed, 2);
    assert_eq!(drain(&mut rx).len(), 2);
    assert!(streams.standalone(&s4).is_none());
    // The whole tenant (catalog invalidation through the bus) reaches the other client too.
    let bus = Bus::local(Arc::new(streams.clone()));
    bus.broadcast_invalidation("tenant-a").await.unwrap();
    assert_eq!(drain(&mut elsewhere.rx).len(), 1);
    assert_eq!(drain(&mut s1_get.rx).len(), 1);
    assert!(drain(&mut other_tenant.rx).is_empty());
    // And the bus delivers a message to a session's standalone stream.
    assert_eq!(
        bus.publish(ALICE, &s1, Bytes::from_static(b"{}")).await,
        Ok(true)
    );
    assert_eq!(
        bus.publish(ALICE, &s4, Bytes::from_static(b"{}")).await,
        Ok(false)
    );
    assert_eq!(datas(&drain(&mut s1_get.rx)), vec![&b"{}"[..]]);
}

/// A listen filter asking for tool list changes only.
fn tools_only() -> SubscriptionFilter {
    SubscriptionFilter {
        tools_list_changed: true,
        ..SubscriptionFilter::default()
    }
}

// === keep-alive, polling close, janitor ===

#[tokio::test(start_paused = true)]
async fn idle_streams_get_keepalives_and_frames_reset_the_clock() {
    let streams = registry(16);
    let session = SessionId::random();
    let sessions = Sessions::local(config());
    let janitor = spawn_janitor(&streams, sessions, Duration::from_secs(5));
    let Opened { writer, mut rx, .. } =
        streams.open(Some(session), ALICE, StreamKind::Get).unwrap();
    // Let the janitor's first ticks run at t=0.
    settle().await;
    step(14).await;
    settle().await;
    assert!(raw(&mut rx).is_empty(), "nothing before 15 s");
    step(1).await; // t = 15: a scan at 15 s sees 15 s of silence
    settle().await;
    assert_eq!(raw(&mut rx), vec![Bytes::from_static(b": keepalive\n\n")]);
    // A real frame at t = 20 resets the clock: nothing at 30, one by 35.
    step(5).await;
    writer.send(b"real").await.unwrap();
    assert_eq!(raw(&mut rx).len(), 1);
    step(10).await; // t = 30
    settle().await;
    assert!(raw(&mut rx).is_empty());
    step(5).await; // t = 35
    settle().await;
    assert_eq!(raw(&mut rx), vec![Bytes::from_static(b": keepalive\n\n")]);
    // Keep-alives carry no id and do not enter the ring.
    assert_eq!(
        writer.last_event_id().unwrap().as_str().rsplit('.').next(),
        Some("1")
    );
    janitor.abort();
}

#[tokio::test(start_paused = true)]
async fn janitor_closes_streams_of_expired_sessions() {
    let streams = registry(16);
    let sessions = Sessions::local(config());
    let session = initialized(&sessions, ALICE).await;
    let janitor = spawn_janitor(&streams, sessions.clone(), Duration::from_secs(5));
    let mut get = streams.open(Some(session), ALICE, StreamKind::Get).unwrap();
    // Keep-alives do not count as session activity: only requests do.
    step(605).await;
    settle().await;
    while let Some(frame) = get.rx.recv().await {
        assert_eq!(&frame[..], b": keepalive\n\n");
    }
    assert_eq!(
        sessions.validate(&session, ALICE).await,
        Err(SessionError::NotFound)
    );
    assert!(streams.is_empty());
    janitor.abort();
}

#[tokio::test]
async fn polling_close_sends_retry_then_ends_the_connection() {
    let streams = registry(16);
    let session = SessionId::random();
    let Opened { writer, mut rx, .. } = streams
        .open(Some(session), ALICE, StreamKind::Post)
        .unwrap();
    writer.prime(None).await.unwrap();
    writer.send(b"step-1").await.unwrap();
    writer.close_connection(2500).await.unwrap();
    let mut buf = BytesMut::new();
    while let Some(frame) = rx.recv().await {
        buf.extend_from_slice(&frame);
    }
    let mut decoder = Decoder::new();
    let mut events = Vec::new();
    while let Ok(Some(event)) = decoder.decode(&mut buf) {
        events.push(event);
    }
    assert_eq!(datas(&events), vec![&b"step-1"[..]]);
    assert_eq!(decoder.retry(), Some(2500), "retry came before the close");
    let last = decoder.last_event_id().map(<[u8]>::to_vec).unwrap();
    assert_eq!(&last[..], writer.last_event_id().unwrap().as_bytes());
    // The stream lives on: the work continues, the client polls back and gets the rest.
    writer.send(b"response").await.unwrap();
    writer.finish();
    let (mut rx, replayed) = replay(streams.resume(&last, &session, ALICE));
    assert_eq!(replayed, 1);
    assert_eq!(datas(&drain(&mut rx)), vec![&b"response"[..]]);
    // No polling close before any event with an id.
    let fresh = streams
        .open(Some(session), ALICE, StreamKind::Post)
        .unwrap();
    assert_eq!(
        fresh.writer.close_connection(100).await,
        Err(StreamError::NotResumable)
    );
}

#[tokio::test]
async fn slow_clients_make_writers_wait_and_keep_order() {
    let streams = registry(64);
    let session = SessionId::random();
    let Opened { writer, mut rx, .. } =
        streams.open(Some(session), ALICE, StreamKind::Get).unwrap();
    let writer = Arc::new(writer);
    let mut tasks = Vec::new();
    for task_idx in 0..4 {
        let writer = writer.clone();
        tasks.push(tokio::spawn(async move {
            for n in 0..10 {
                writer
                    .send(format!("{task_idx}-{n}").as_bytes())
                    .await
                    .unwrap();
            }
        }));
    }
    let mut buf = BytesMut::new();
    let mut n_frames = 0;
    while n_frames < 40 {
        let frame = rx.recv().await.expect("frame");
        buf.extend_from_slice(&frame);
        n_frames += 1;
    }
    for task in tasks {
        task.await.unwrap();
    }
    let events = decode_all(&mut buf);
    let seqs: Vec<u64> = events
        .iter()
        .map(|event| parse_event_id(event.id.as_ref().unwrap()).unwrap().seq)
        .collect();
    assert_eq!(
        seqs,
        (1..=40).collect::<Vec<_>>(),
        "channel order is seq order"
    );
}

// === end to end over TCP ===

mod e2e {
    use std::convert::Infallible;

    use http::{Request, Response};
    use http_body_util::{BodyExt, Empty};
    use hyper::body::Incoming;
    use hyper::service::service_fn;
    use hyper_util::rt::TokioIo;
    use sluice::http::response::{event_stream, Body};
    use sluice::http::server::Drain;
    use tokio::net::{TcpListener, TcpStream};

    use super::*;

    /// A minimal transport: GET opens the session's standalone stream, or resumes the one named
    /// by `Last-Event-ID`.
    async fn serve(streams: StreamRegistry, session: SessionId) -> std::net::SocketAddr {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let drain = Drain::new();
        tokio::spawn(async move {
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    return;
                };
                let streams = streams.clone();
                let drain = drain.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |request: Request<Incoming>| {
                        let streams = streams.clone();
                        let drain = drain.clone();
                        async move {
                            let last = request.headers().get("last-event-id").cloned();
                            let rx = match last
                                .map(|id| streams.resume(id.as_bytes(), &session, ALICE))
                            {
                                Some(Ok(Resumed::Replay { rx, .. })) => rx,
                                _ => {
                                    streams
                                        .open(Some(session), ALICE, StreamKind::Get)
                                        .unwrap()
                                        .rx
                                }
                            };
                            Ok::<Response<Body>, Infallible>(event_stream(Body::stream(rx, &drain)))
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(socket), service)
                        .await;
                });
            }
        });
        addr
    }

    /// Opens a GET and returns the body.
    async fn get(addr: std::net::SocketAddr, last_event_id: Option<&str>) -> Incoming {
        let socket = TcpStream::connect(addr).await.unwrap();
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(socket))
            .await
            .unwrap();
        tokio::spawn(conn);
        let mut request = Request::get("/mcp").header("accept", "text/event-stream");
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id);
        }
        let response = sender
            .send_request(request.body(Empty::<Bytes>::new()).unwrap())
            .await
            .unwrap();
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        response.into_body()
    }

    /// Reads events until `n` message events arrived.
    async fn read_events(body: &mut Incoming, n: usize) -> Vec<Event> {
        let mut decoder = Decoder::new();
        let mut buf = BytesMut::new();
        let mut events = Vec::new();
        while events.len() < n {
            let frame = body.frame().await.expect("body open").expect("frame");
            if let Ok(data) = frame.into_data() {
                buf.extend_from_slice(&data);
            }
            while let Ok(Some(event)) = decoder.decode(&mut buf) {
                events.push(event);
            }
        }
        events
    }

    #[tokio::test]
    async fn get_stream_survives_a_disconnect_and_resumes_over_tcp() {
        let streams = registry(16);
        let session = SessionId::random();
        let addr = serve(streams.clone(), session).await;

        let mut body = get(addr, None).await;
        // Wait until the server registered the stream, then push through the registry.
        let writer = loop {
            if let Some(writer) = streams.standalone(&session) {
                break writer;
            }
            tokio::task::yield_now().await;
        };
        writer.send(b"one").await.unwrap();
        let seen = read_events(&mut body, 1).await;
        assert_eq!(datas(&seen), vec![&b"one"[..]]);
        let last = id_of(&seen[0]);

        // The client disconnects; what is sent meanwhile stays in the ring.
        // The server may not notice at once; the frames land in the ring either way.
        drop(body);
        writer.send(b"two").await.unwrap();
        writer.send(b"three").await.unwrap();

        let mut body = get(addr, Some(&last)).await;
        let resumed = read_events(&mut body, 2).await;
        assert_eq!(datas(&resumed), vec![&b"two"[..], b"three"]);
        // The resumed connection is the live one again.
        writer.send(b"four").await.unwrap();
        assert_eq!(datas(&read_events(&mut body, 1).await), vec![&b"four"[..]]);
        // And a second fresh GET while it is connected is a conflict.
        assert_eq!(
            streams
                .open(Some(session), ALICE, StreamKind::Get)
                .unwrap_err(),
            StreamError::Conflict
        );
    }
}

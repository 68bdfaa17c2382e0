//! The merge property tests: the final result and the groups do not depend on arrival order
//! (checked against `merge.rs`'s naive reference), and the result is exactly that of the
//! previous, sort-first algorithm (`merge/sorted.rs`).

use super::*;

fn single(identity: &str, id: &str, email: Value, phone: Value) -> FederatedRecord {
    FederatedRecord {
        record_ref: FederatedRecord::single_source_ref("person", identity, id),
        display_name: Value::Null,
        email,
        phone,
        lifecycle: Value::Null,
        sources: vec![Provenance {
            source_type: "crm".into(),
            source_identity: identity.into(),
            external_id: id.into(),
            record_type: "person".into(),
            observed_at: String::new(),
            capabilities: vec!["read".to_owned()].into(),
            version: Value::Null,
        }],
        identity_match: None,
        attributes: vec![("k".into(), json!(id))],
    }
}

fn arbitrary_record() -> impl Strategy<Value = FederatedRecord> {
    (
        0..4usize,
        0..30usize,
        prop::option::of(0..6usize),
        prop::option::of(0..6usize),
        prop::option::of(0..3usize),
        0..3usize,
    )
        .prop_map(|(source, id, email, phone, name, observed)| {
            let identity = format!("s{source}");
            let mut record = single(
                &identity,
                &id.to_string(),
                email.map_or(Value::Null, |e| json!(format!(" User{e}@Example.org"))),
                phone.map_or(Value::Null, |p| json!(format!("+1 555 01{p}"))),
            );
            record.display_name = name.map_or(Value::Null, |n| json!(format!("name {n}")));
            record.sources[0].observed_at = format!("2026-10-0{}T00:00:00Z", observed + 1);
            record
        })
}

fn as_groups(records: &[FederatedRecord]) -> Vec<Vec<String>> {
    let mut groups: Vec<Vec<String>> = records
        .iter()
        .map(|r| match &r.identity_match {
            Some(m) => m.record_refs.clone(),
            None => vec![r.record_ref.clone()],
        })
        .collect();
    groups.sort();
    groups
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Whatever order pages and sources arrive in, the final result is the same records, and
    /// the groups are those of the naive reference.
    #[test]
    fn merge_is_independent_of_arrival_order(
        (records, shuffled) in prop::collection::vec(arbitrary_record(), 0..60)
            .prop_flat_map(|records| {
                let shuffled = Just(records.clone()).prop_shuffle();
                (Just(records), shuffled)
            })
    ) {
        let expected_groups = super::merge::naive_groups(&records);
        let merged = merge_records(records);
        let merged_again = merge_records(shuffled);
        prop_assert_eq!(&merged, &merged_again);
        prop_assert_eq!(as_groups(&merged), expected_groups);
        let refs: Vec<&str> = merged.iter().map(|r| r.record_ref.as_str()).collect();
        let mut sorted = refs.clone();
        sorted.sort_unstable();
        prop_assert_eq!(refs, sorted);
    }

    /// The merge gives exactly what the previous algorithm gave (same groups, same fields, same
    /// order), on raw records and on merged chunks merged again (what the final result does).
    #[test]
    fn merge_agrees_with_the_sorted_oracle(
        records in prop::collection::vec(arbitrary_record(), 0..80),
        chunk in 1..12usize,
    ) {
        prop_assert_eq!(
            merge_records(records.clone()),
            super::merge::merge_records_sorted(records.clone())
        );
        let merged_chunks: Vec<FederatedRecord> =
            records.chunks(chunk).flat_map(|c| merge_records(c.to_vec())).collect();
        prop_assert_eq!(
            merge_records(merged_chunks.clone()),
            super::merge::merge_records_sorted(merged_chunks)
        );
    }

    /// Each chunk's source-local federation (what event pages show) is order-independent too.
    #[test]
    fn chunk_federation_is_order_independent(
        records in prop::collection::vec(arbitrary_record(), 0..40),
        chunk in 1..10usize,
    ) {
        let chunks: Vec<Vec<FederatedRecord>> =
            records.chunks(chunk).map(|c| merge_records(c.to_vec())).collect();
        for (c, raw) in chunks.iter().zip(records.chunks(chunk)) {
            let mut reversed = raw.to_vec();
            reversed.reverse();
            prop_assert_eq!(c, &merge_records(reversed));
        }
    }
}

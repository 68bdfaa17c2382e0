//! Identity merge: records that share a record ref, a normalized email or a normalized phone
//! (transitively) become one record.
//!
//! Owns `merge_records`, the key normalizers and the canonical input order that makes the result
//! independent of arrival order ("Identity merging across pages and sources is authoritative in
//! the final result"). Used twice: on each delivery chunk (source-local federation, "Event pages
//! apply source-local federation within each chunk") and on everything delivered (the final
//! result). Must not do IO or know events.
//!
//! Cost: one hash-map probe per key with a union-find over indices, a sort of each group's own
//! members, and one sort of the groups on fixed-size keys: no pairwise scans and no sort of the
//! whole input (see [`merge_records`]). `merge/sorted.rs` keeps the previous algorithm (a
//! canonical sort of every record first) as a test oracle: both give the same result.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::record::{FederatedRecord, IdentityMatch, MatchRule, Provenance};

#[cfg(any(test, feature = "test-util"))]
mod sorted;
#[cfg(any(test, feature = "test-util"))]
pub use sorted::merge_records_sorted;

/// Email as compared for identity: trimmed and lowercased; `None` when empty or not a string.
pub(crate) fn normalize_email(value: &Value) -> Option<String> {
    let text = value.as_str()?.trim();
    if text.is_empty() {
        return None;
    }
    Some(text.to_lowercase())
}

/// Phone as compared for identity: its digits, a leading `+` kept; `None` without digits or
/// when not a string.
pub(crate) fn normalize_phone(value: &Value) -> Option<String> {
    let text = value.as_str()?.trim();
    let mut out = String::with_capacity(text.len());
    if text.starts_with('+') {
        out.push('+');
    }
    out.extend(text.chars().filter(char::is_ascii_digit));
    if out.len() == usize::from(out.starts_with('+')) {
        return None;
    }
    Some(out)
}

/// The canonical order of input records: by first provenance (source_type, source_identity,
/// external_id), then record ref, observation time, version, and finally the whole JSON text, so
/// that records comparing equal are identical and their order cannot change the result.
fn canonical_order(a: &FederatedRecord, b: &FederatedRecord) -> Ordering {
    first_key(a)
        .cmp(&first_key(b))
        .then_with(|| a.record_ref.cmp(&b.record_ref))
        .then_with(|| first_observed(a).cmp(&first_observed(b)))
        .then_with(|| a.to_json().cmp(&b.to_json()))
}

fn first_key(record: &FederatedRecord) -> Option<(&str, &str, &str)> {
    record.sources.first().map(Provenance::order_key)
}

fn first_observed(record: &FederatedRecord) -> Option<&str> {
    record.sources.first().map(|p| p.observed_at.as_str())
}

/// Union-find over record indices with path halving and union by size.
struct Sets {
    parent: Vec<u32>,
    size: Vec<u32>,
}

impl Sets {
    fn new(n: usize) -> Self {
        Self {
            parent: (0..n as u32).collect(),
            size: vec![1; n],
        }
    }

    fn find(&mut self, mut x: u32) -> u32 {
        while self.parent[x as usize] != x {
            let grand = self.parent[self.parent[x as usize] as usize];
            self.parent[x as usize] = grand;
            x = grand;
        }
        x
    }

    fn union(&mut self, a: u32, b: u32) {
        let (mut a, mut b) = (self.find(a), self.find(b));
        if a == b {
            return;
        }
        if self.size[a as usize] < self.size[b as usize] {
            std::mem::swap(&mut a, &mut b);
        }
        self.parent[b as usize] = a;
        self.size[a as usize] += self.size[b as usize];
    }
}

/// Every record ref a record stands for (its own, plus its members' when already merged).
fn member_refs(record: &FederatedRecord) -> impl Iterator<Item = &str> {
    std::iter::once(record.record_ref.as_str()).chain(
        record
            .identity_match
            .iter()
            .flat_map(|m| m.record_refs.iter().map(String::as_str)),
    )
}

/// Merges records by identity. The result does not depend on the order of `records`; it is
/// sorted by record ref.
///
/// - Two records join when they share a record ref, a normalized email or a normalized phone;
///   joins are transitive.
/// - A merged record's ref is the smallest member ref; `sources` is the union of the members'
///   provenance in (source_type, source_identity, external_id) order without duplicates; each
///   scalar field and each attribute is the first non-null value in that member order.
/// - `identity_match` lists the rules shared by at least two members and the distinct member
///   refs; it is `null` when the group holds one distinct ref (the same record seen twice).
///
/// Cost: one hash probe per key into a union-find over arrival indices (which records join
/// does not depend on the order they are visited in), a counting sort of the members by group,
/// the canonical sort of each group's own members only (`canonical_order`; most groups hold
/// one or two), and one sort of the groups by their ref on fixed-size keys (`RefKey`), so no
/// step compares whole records across the input.
pub fn merge_records(records: Vec<FederatedRecord>) -> Vec<FederatedRecord> {
    if records.len() <= 1 {
        return records;
    }
    let n = records.len();
    let mut sets = Sets::new(n);
    // Rules seen on a key shared by two records, applied to the group once sets are final.
    let mut shared: Vec<(u32, MatchRule)> = Vec::new();
    {
        let mut by_ref: HashMap<&str, u32> = HashMap::with_capacity(n);
        let mut by_email: HashMap<String, u32> = HashMap::with_capacity(n);
        let mut by_phone: HashMap<String, u32> = HashMap::with_capacity(n);
        for (idx, record) in records.iter().enumerate() {
            let idx = idx as u32;
            for record_ref in member_refs(record) {
                match by_ref.get(record_ref) {
                    Some(&other) if other != idx => {
                        sets.union(idx, other);
                        shared.push((idx, MatchRule::RecordRef));
                    }
                    Some(_) => {}
                    None => {
                        by_ref.insert(record_ref, idx);
                    }
                }
            }
            for (key, rule, map) in [
                (
                    normalize_email(&record.email),
                    MatchRule::Email,
                    &mut by_email,
                ),
                (
                    normalize_phone(&record.phone),
                    MatchRule::Phone,
                    &mut by_phone,
                ),
            ] {
                let Some(key) = key else { continue };
                match map.get(&key) {
                    Some(&other) => {
                        sets.union(idx, other);
                        shared.push((idx, rule));
                    }
                    None => {
                        map.insert(key, idx);
                    }
                }
            }
        }
    }

    // Groups numbered by their first member in arrival order.
    const NONE: u32 = u32::MAX;
    let mut group_of_root: Vec<u32> = vec![NONE; n];
    let mut group_of_idx: Vec<u32> = Vec::with_capacity(n);
    let mut n_groups = 0u32;
    for idx in 0..n as u32 {
        let root = sets.find(idx) as usize;
        if group_of_root[root] == NONE {
            group_of_root[root] = n_groups;
            n_groups += 1;
        }
        group_of_idx.push(group_of_root[root]);
    }
    drop(group_of_root);
    drop(sets);
    let n_groups = n_groups as usize;
    // Members of each group, contiguous (a counting sort; arrival order within a group).
    let mut starts: Vec<u32> = vec![0; n_groups + 1];
    for &group in &group_of_idx {
        starts[group as usize + 1] += 1;
    }
    for group in 0..n_groups {
        starts[group + 1] += starts[group];
    }
    let mut fill: Vec<u32> = starts[..n_groups].to_vec();
    let mut members: Vec<u32> = vec![0; n];
    for (idx, &group) in group_of_idx.iter().enumerate() {
        members[fill[group as usize] as usize] = idx as u32;
        fill[group as usize] += 1;
    }
    drop(fill);
    let mut rules_of_group: Vec<u8> = vec![0; n_groups];
    for (idx, rule) in shared {
        rules_of_group[group_of_idx[idx as usize] as usize] |= 1 << (rule as u8);
    }
    drop(group_of_idx);
    let members_of = |group: usize| &members[starts[group] as usize..starts[group + 1] as usize];

    // Output order: by the group's record ref (its smallest member ref), unique per group: a
    // ref names one group only, since records sharing a ref join.
    let refs_of_groups: Vec<&str> = (0..n_groups)
        .map(|group| {
            members_of(group)
                .iter()
                .flat_map(|&idx| member_refs(&records[idx as usize]))
                .min()
                .unwrap_or("")
        })
        .collect();
    let group_order = order_by_ref(&refs_of_groups);
    drop(refs_of_groups);

    let mut slots: Vec<Option<FederatedRecord>> = records.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(n_groups);
    for group in group_order {
        let group = group as usize;
        let mut taken: Vec<FederatedRecord> = members_of(group)
            .iter()
            .filter_map(|&idx| slots[idx as usize].take())
            .collect();
        if taken.len() == 1 {
            out.extend(taken.pop());
        } else {
            // Canonical order within the group only: what `merge_group` reads first wins.
            taken.sort_by(canonical_order);
            out.push(merge_group(taken, rules_of_group[group]));
        }
    }
    out
}

/// A group's place in the output: the 16 bytes of its ref after the prefix every ref shares,
/// big-endian, zero-padded. Keys order like the refs themselves (`a < b` whenever
/// `key(a) < key(b)`); equal keys fall back to comparing the refs, so the order is exact.
type RefKey = u128;

fn ref_key(text: &str, common: usize) -> RefKey {
    let mut key = [0u8; 16];
    let tail = text.as_bytes().get(common..).unwrap_or_default();
    let len = tail.len().min(16);
    key[..len].copy_from_slice(&tail[..len]);
    u128::from_be_bytes(key)
}

/// Indices of `refs` in ascending order of the refs (each distinct). Sorts fixed-size keys, so
/// most comparisons touch no string.
fn order_by_ref(refs: &[&str]) -> Vec<u32> {
    let first = refs.first().copied().unwrap_or("");
    let common = refs.iter().fold(first.len(), |common, text| {
        first.as_bytes()[..common]
            .iter()
            .zip(text.as_bytes())
            .take_while(|(a, b)| a == b)
            .count()
    });
    let mut keys: Vec<(RefKey, u32)> = refs
        .iter()
        .enumerate()
        .map(|(idx, text)| (ref_key(text, common), idx as u32))
        .collect();
    keys.sort_unstable_by(|a, b| {
        a.0.cmp(&b.0)
            .then_with(|| refs[a.1 as usize].cmp(refs[b.1 as usize]))
    });
    keys.into_iter().map(|(_, idx)| idx).collect()
}

/// Merges one group whose members are in canonical order.
fn merge_group(members: Vec<FederatedRecord>, rule_bits: u8) -> FederatedRecord {
    let mut refs: Vec<String> = members
        .iter()
        .flat_map(member_refs)
        .map(str::to_owned)
        .collect();
    refs.sort_unstable();
    refs.dedup();
    let mut sources: Vec<Provenance> = Vec::with_capacity(members.len());
    let mut display_name = Value::Null;
    let mut email = Value::Null;
    let mut phone = Value::Null;
    let mut lifecycle = Value::Null;
    let mut attributes: Vec<(Arc<str>, Value)> = Vec::new();
    for member in members {
        for (slot, value) in [
            (&mut display_name, member.display_name),
            (&mut email, member.email),
            (&mut phone, member.phone),
            (&mut lifecycle, member.lifecycle),
        ] {
            if slot.is_null() {
                *slot = value;
            }
        }
        for (name, value) in member.attributes {
            match attributes.iter_mut().find(|(seen, _)| *seen == name) {
                Some((_, slot)) => {
                    if slot.is_null() {
                        *slot = value;
                    }
                }
                None => attributes.push((name, value)),
            }
        }
        sources.extend(member.sources);
    }
    // Stable: equal keys keep member order, so the first (canonical) entry survives dedup.
    sources.sort_by(|a, b| a.order_key().cmp(&b.order_key()));
    sources.dedup_by(|later, earlier| later.order_key() == earlier.order_key());
    attributes.sort_by(|a, b| a.0.cmp(&b.0));
    let identity_match = (refs.len() > 1).then(|| IdentityMatch {
        rules: [MatchRule::Email, MatchRule::Phone, MatchRule::RecordRef]
            .into_iter()
            .filter(|rule| rule_bits & (1 << (*rule as u8)) != 0)
            .collect(),
        record_refs: refs.clone(),
    });
    let record_ref = refs.into_iter().next().unwrap_or_default();
    FederatedRecord {
        record_ref,
        display_name,
        email,
        phone,
        lifecycle,
        sources,
        identity_match,
        attributes,
    }
}

/// The naive reference: the same rules by repeated pairwise passes until nothing changes, "so
/// simple it is unlikely to be wrong". Quadratic; tests only.
#[cfg(test)]
pub(crate) fn naive_groups(records: &[FederatedRecord]) -> Vec<Vec<String>> {
    let n = records.len();
    let mut group: Vec<usize> = (0..n).collect();
    let joined = |a: &FederatedRecord, b: &FederatedRecord| {
        a.record_ref == b.record_ref
            || normalize_email(&a.email).is_some_and(|e| Some(e) == normalize_email(&b.email))
            || normalize_phone(&a.phone).is_some_and(|p| Some(p) == normalize_phone(&b.phone))
    };
    let mut changed = true;
    while changed {
        changed = false;
        for i in 0..n {
            for j in 0..n {
                if group[i] != group[j] && joined(&records[i], &records[j]) {
                    let (keep, drop) = (group[i].min(group[j]), group[i].max(group[j]));
                    for g in group.iter_mut() {
                        if *g == drop {
                            *g = keep;
                        }
                    }
                    changed = true;
                }
            }
        }
    }
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut ids: Vec<usize> = group.clone();
    ids.sort_unstable();
    ids.dedup();
    for id in ids {
        let mut refs: Vec<String> = (0..n)
            .filter(|&i| group[i] == id)
            .map(|i| records[i].record_ref.clone())
            .collect();
        refs.sort_unstable();
        refs.dedup();
        out.push(refs);
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    pub(crate) fn rec(source: &str, id: &str, email: Value, phone: Value) -> FederatedRecord {
        FederatedRecord {
            record_ref: FederatedRecord::single_source_ref("person", source, id),
            display_name: json!(format!("{source}/{id}")),
            email,
            phone,
            lifecycle: Value::Null,
            sources: vec![Provenance {
                source_type: "crm".into(),
                source_identity: source.into(),
                external_id: id.into(),
                record_type: "person".into(),
                observed_at: "2026-10-08T12:00:00Z".into(),
                capabilities: vec!["read".to_owned()].into(),
                version: Value::Null,
            }],
            identity_match: None,
            attributes: vec![],
        }
    }

    #[test]
    fn normalizers() {
        assert_eq!(
            normalize_email(&json!("  Ada@X.org ")),
            Some("ada@x.org".into())
        );
        assert_eq!(normalize_email(&json!("   ")), None);
        assert_eq!(normalize_email(&json!(5)), None);
        assert_eq!(
            normalize_phone(&json!(" +1 (555) 010-99 ")),
            Some("+155501099".into())
        );
        assert_eq!(normalize_phone(&json!("555.0")), Some("5550".into()));
        assert_eq!(normalize_phone(&json!("+")), None);
        assert_eq!(normalize_phone(&json!("n/a")), None);
        assert_eq!(normalize_phone(&Value::Null), None);
    }

    #[test]
    fn transitive_merge_by_email_and_phone() {
        let records = vec![
            rec("b", "1", json!("ADA@x.org"), Value::Null),
            rec("a", "9", json!(" ada@x.org"), json!("+1 555")),
            rec("c", "3", Value::Null, json!("+1555")),
            rec("c", "4", json!("other@x.org"), json!("555")),
        ];
        let merged = merge_records(records);
        assert_eq!(merged.len(), 2);
        let group = &merged[0];
        assert_eq!(group.record_ref, "bos:person:a:9");
        let matched = group.identity_match.as_ref().unwrap();
        assert_eq!(matched.rules, vec![MatchRule::Email, MatchRule::Phone]);
        assert_eq!(
            matched.record_refs,
            vec!["bos:person:a:9", "bos:person:b:1", "bos:person:c:3"]
        );
        let order: Vec<_> = group
            .sources
            .iter()
            .map(|p| p.external_id.as_str())
            .collect();
        assert_eq!(order, vec!["9", "1", "3"]);
        // First non-null in provenance order: source `a` first.
        assert_eq!(group.email, json!(" ada@x.org"));
        assert_eq!(group.display_name, json!("a/9"));
        assert_eq!(merged[1].record_ref, "bos:person:c:4");
        assert!(merged[1].identity_match.is_none());
    }

    #[test]
    fn duplicates_of_one_record_collapse_without_identity_match() {
        let merged = merge_records(vec![
            rec("a", "1", Value::Null, Value::Null),
            rec("a", "1", Value::Null, Value::Null),
        ]);
        assert_eq!(merged.len(), 1);
        assert_eq!(merged[0].sources.len(), 1);
        assert!(merged[0].identity_match.is_none());
    }

    #[test]
    fn attributes_first_non_null_wins() {
        let mut first = rec("a", "1", json!("x@y"), Value::Null);
        first.attributes = vec![("tier".into(), Value::Null), ("z".into(), json!(1))];
        let mut second = rec("b", "1", json!("x@y"), Value::Null);
        second.attributes = vec![("a".into(), json!(true)), ("tier".into(), json!("gold"))];
        let merged = merge_records(vec![second, first]);
        assert_eq!(
            merged[0].attributes,
            vec![
                (Arc::from("a"), json!(true)),
                (Arc::from("tier"), json!("gold")),
                (Arc::from("z"), json!(1))
            ]
        );
    }

    #[test]
    fn agrees_with_naive_reference() {
        let mut records = Vec::new();
        for i in 0..60u32 {
            let email = if i % 3 == 0 {
                json!(format!("p{}@x", i % 7))
            } else {
                Value::Null
            };
            let phone = if i % 4 == 0 {
                json!(format!("+{}", i % 5))
            } else {
                Value::Null
            };
            records.push(rec(
                &format!("s{}", i % 4),
                &format!("{}", i % 25),
                email,
                phone,
            ));
        }
        let expected = naive_groups(&records);
        let mut got: Vec<Vec<String>> = merge_records(records)
            .into_iter()
            .map(|r| match r.identity_match {
                Some(m) => m.record_refs,
                None => vec![r.record_ref],
            })
            .collect();
        got.sort();
        assert_eq!(got, expected);
    }
}

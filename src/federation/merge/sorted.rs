//! The identity merge as it was before issue 15, kept as the oracle the current
//! `merge_records` is checked against (`federation/tests/merge_props.rs`) and as the baseline
//! `benches/federation.rs` runs in the same group.
//!
//! Owns only that reference: it sorts every record into canonical order first
//! (`canonical_positions`), then unions over positions; the current code sorts only within
//! groups. Must not be used by the runtime (built for tests and the `test-util` feature only).

use std::collections::HashMap;
use std::sync::Arc;

use super::{canonical_order, member_refs, merge_group, normalize_email, normalize_phone, Sets};
use crate::federation::record::{FederatedRecord, MatchRule};

/// Record indices in canonical order. Sorts compact keys — (rank of the first provenance's
/// source pair, external id) — and falls back to `canonical_order` only on equal keys, so most
/// comparisons are one integer and one short string.
fn canonical_positions(records: &[FederatedRecord]) -> Vec<u32> {
    // Ranks of distinct (source_type, source_identity) pairs; records of one source share the
    // same `Arc`s, so pairs are found by pointer and ranked by text once.
    let mut by_pointer: HashMap<(usize, usize), u32> = HashMap::new();
    let mut pairs: Vec<(&str, &str)> = Vec::new();
    let mut pair_of: Vec<u32> = Vec::with_capacity(records.len());
    for record in records {
        let pair = match record.sources.first() {
            Some(p) => {
                let pointers = (
                    Arc::as_ptr(&p.source_type) as *const u8 as usize,
                    Arc::as_ptr(&p.source_identity) as *const u8 as usize,
                );
                *by_pointer.entry(pointers).or_insert_with(|| {
                    pairs.push((&p.source_type, &p.source_identity));
                    pairs.len() as u32 - 1
                })
            }
            None => u32::MAX,
        };
        pair_of.push(pair);
    }
    let mut ranked: Vec<u32> = (0..pairs.len() as u32).collect();
    ranked.sort_unstable_by_key(|&i| pairs[i as usize]);
    let mut rank_of_pair: Vec<u32> = vec![0; pairs.len()];
    let mut rank = 0u32;
    for (idx, &pair) in ranked.iter().enumerate() {
        if idx > 0 && pairs[ranked[idx - 1] as usize] != pairs[pair as usize] {
            rank += 1;
        }
        rank_of_pair[pair as usize] = rank;
    }
    let mut keys: Vec<(u32, &str, u32)> = records
        .iter()
        .zip(pair_of)
        .enumerate()
        .map(|(idx, (record, pair))| {
            // A record without provenance sorts first, as `canonical_order` puts `None` first.
            let rank = rank_of_pair.get(pair as usize).map_or(0, |r| r + 1);
            let external_id = record
                .sources
                .first()
                .map_or("", |p| p.external_id.as_str());
            (rank, external_id, idx as u32)
        })
        .collect();
    keys.sort_unstable_by(|a, b| {
        (a.0, a.1)
            .cmp(&(b.0, b.1))
            .then_with(|| canonical_order(&records[a.2 as usize], &records[b.2 as usize]))
    });
    keys.into_iter().map(|(_, _, idx)| idx).collect()
}

/// The previous `merge_records`: canonical positions of every record first (a sort of the whole
/// input), then the same union-find over positions. Same rules and result as
/// [`merge_records`](super::merge_records).
///
/// - Two records join when they share a record ref, a normalized email or a normalized phone;
///   joins are transitive.
/// - A merged record's ref is the smallest member ref; `sources` is the union of the members'
///   provenance in (source_type, source_identity, external_id) order without duplicates; each
///   scalar field and each attribute is the first non-null value in that member order.
/// - `identity_match` lists the rules shared by at least two members and the distinct member
///   refs; it is `null` when the group holds one distinct ref (the same record seen twice).
pub fn merge_records_sorted(records: Vec<FederatedRecord>) -> Vec<FederatedRecord> {
    if records.len() <= 1 {
        return records;
    }
    let n = records.len();
    // Canonical positions: `order[pos]` is the index of the record at canonical position `pos`.
    // Indices are sorted instead of records so that large records are never moved.
    let order = canonical_positions(&records);
    let at = |pos: u32| &records[order[pos as usize] as usize];

    // Union-find over canonical positions.
    let mut sets = Sets::new(n);
    // Rules seen on a key shared by two records, applied to the group once sets are final.
    let mut shared: Vec<(u32, MatchRule)> = Vec::new();
    {
        let mut by_ref: HashMap<&str, u32> = HashMap::with_capacity(n);
        let mut by_email: HashMap<String, u32> = HashMap::with_capacity(n);
        let mut by_phone: HashMap<String, u32> = HashMap::with_capacity(n);
        for pos in 0..n as u32 {
            let record = at(pos);
            for record_ref in member_refs(record) {
                match by_ref.get(record_ref) {
                    Some(&other) if other != pos => {
                        sets.union(pos, other);
                        shared.push((pos, MatchRule::RecordRef));
                    }
                    Some(_) => {}
                    None => {
                        by_ref.insert(record_ref, pos);
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
                        sets.union(pos, other);
                        shared.push((pos, rule));
                    }
                    None => {
                        map.insert(key, pos);
                    }
                }
            }
        }
    }

    // Groups numbered by their first member in canonical order.
    const NONE: u32 = u32::MAX;
    let mut group_of_root: Vec<u32> = vec![NONE; n];
    let mut group_of_pos: Vec<u32> = Vec::with_capacity(n);
    let mut n_groups = 0u32;
    for pos in 0..n as u32 {
        let root = sets.find(pos) as usize;
        if group_of_root[root] == NONE {
            group_of_root[root] = n_groups;
            n_groups += 1;
        }
        group_of_pos.push(group_of_root[root]);
    }
    let n_groups = n_groups as usize;
    // Members of each group, contiguous and in canonical order (a counting sort).
    let mut starts: Vec<usize> = vec![0; n_groups + 1];
    for &group in &group_of_pos {
        starts[group as usize + 1] += 1;
    }
    for group in 0..n_groups {
        starts[group + 1] += starts[group];
    }
    let mut fill = starts.clone();
    let mut members: Vec<u32> = vec![0; n];
    for (pos, &group) in group_of_pos.iter().enumerate() {
        members[fill[group as usize]] = pos as u32;
        fill[group as usize] += 1;
    }
    let mut rules_of_group: Vec<u8> = vec![0; n_groups];
    for (pos, rule) in shared {
        rules_of_group[group_of_pos[pos as usize] as usize] |= 1 << (rule as u8);
    }
    // Output order: by the group's record ref (its smallest member ref), unique per group.
    let group_ref = |group: usize| -> &str {
        members[starts[group]..starts[group + 1]]
            .iter()
            .flat_map(|&pos| member_refs(at(pos)))
            .min()
            .unwrap_or("")
    };
    let refs_of_groups: Vec<&str> = (0..n_groups).map(group_ref).collect();
    let mut group_order: Vec<u32> = (0..n_groups as u32).collect();
    group_order
        .sort_unstable_by(|&a, &b| refs_of_groups[a as usize].cmp(refs_of_groups[b as usize]));
    drop(refs_of_groups);

    let positions_to_index: Vec<u32> = order;
    let mut slots: Vec<Option<FederatedRecord>> = records.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(n_groups);
    for group in group_order {
        let group = group as usize;
        let mut taken: Vec<FederatedRecord> = members[starts[group]..starts[group + 1]]
            .iter()
            .filter_map(|&pos| slots[positions_to_index[pos as usize] as usize].take())
            .collect();
        if taken.len() == 1 {
            out.extend(taken.pop());
        } else {
            out.push(merge_group(taken, rules_of_group[group]));
        }
    }
    out
}

//! The result size guard's cases: results that fit, cuts of the largest array first, strings
//! that look like structure, nested arrays, refusals, and a property over random JSON (a cut
//! result is JSON within the limit whose arrays are prefixes of the original's).

use super::*;
use serde_json::{json, Value};

fn cut(value: &Value, limit: usize) -> Capped {
    apply(
        &Bytes::from(value.to_string()),
        limit,
        OversizePolicy::Truncate,
    )
}

fn parsed(capped: &Capped) -> (Value, Value) {
    let Capped::Cut(cut) = capped else {
        panic!("not cut: {capped:?}");
    };
    (
        serde_json::from_slice(&cut.body).expect("the cut result is JSON"),
        serde_json::from_slice(&cut.meta).expect("the meta is JSON"),
    )
}

#[test]
fn a_result_within_its_limit_is_left_alone() {
    let value = json!({"items": [1, 2, 3]});
    assert_eq!(cut(&value, 1_000), Capped::Fits);
    let exact = value.to_string().len();
    assert_eq!(cut(&value, exact), Capped::Fits);
}

#[test]
fn the_largest_array_loses_elements_from_its_end_until_the_result_fits() {
    let rows: Vec<Value> = (0..100)
        .map(|i| json!({"id": i, "name": format!("customer {i}"), "tags": ["a", "b"]}))
        .collect();
    let value = json!({"total": 100, "customers": rows, "note": "x"});
    let capped = cut(&value, 1_000);
    let (result, meta) = parsed(&capped);
    let Capped::Cut(Cut { body, .. }) = &capped else {
        unreachable!()
    };
    assert!(body.len() <= 1_000, "{}", body.len());
    // The other members are as they were; the kept rows are the first ones, whole.
    assert_eq!(result["total"], 100);
    assert_eq!(result["note"], "x");
    let kept = result["customers"].as_array().expect("still an array");
    assert!(!kept.is_empty() && kept.len() < 100);
    for (i, row) in kept.iter().enumerate() {
        assert_eq!(row, &value["customers"][i]);
    }
    assert_eq!(
        meta,
        json!({"limitBytes": 1000, "originalBytes": value.to_string().len(),
               "resultBytes": body.len(),
               "cut": [{"path": "/customers", "kept": kept.len(), "of": 100}]})
    );
}

#[test]
fn strings_with_brackets_commas_and_escapes_are_not_mistaken_for_structure() {
    let tricky: Vec<Value> = (0..40)
        .map(|i| json!(format!("a \"quoted\" [{i}], with }} and \\ and ,")))
        .collect();
    let value = json!({"weird/key~": tricky});
    let (result, meta) = parsed(&cut(&value, 300));
    let kept = result["weird/key~"].as_array().expect("array");
    assert!(kept.len() < 40);
    assert_eq!(kept[0], value["weird/key~"][0]);
    assert_eq!(meta["cut"][0]["path"], "/weird~1key~0");
}

#[test]
fn nested_arrays_inside_dropped_elements_are_not_cut_twice() {
    let value = json!([
        [1, 2, 3, 4, 5, 6, 7, 8],
        [9, 10, 11, 12, 13, 14, 15, 16],
        [17, 18, 19, 20, 21, 22, 23, 24]
    ]);
    let (result, meta) = parsed(&cut(&value, 30));
    assert!(result.to_string().len() <= 30, "{result}");
    let cuts = meta["cut"].as_array().expect("cuts");
    assert_eq!(cuts[0]["path"], "");
    assert!(
        cuts.iter().all(|c| c["kept"].as_u64() < c["of"].as_u64()),
        "{meta}"
    );
}

#[test]
fn a_result_with_nothing_to_cut_or_a_refusing_tool_is_refused_with_a_reason() {
    let value = json!({"blob": "x".repeat(500)});
    let Capped::Refused(text) = cut(&value, 100) else {
        panic!("no array: refused");
    };
    assert!(text.contains("cannot be cut"), "{text}");
    let body = Bytes::from(json!({"items": [1, 2, 3, 4, 5]}).to_string());
    let Capped::Refused(text) = apply(&body, 10, OversizePolicy::Refuse) else {
        panic!("refuse policy");
    };
    assert!(
        text.contains("over this tool's max_result_bytes (10)"),
        "{text}"
    );
    // Not JSON at all (never produced by a translation, but never a panic either).
    assert!(matches!(
        apply(&Bytes::from_static(b"[1,2,"), 2, OversizePolicy::Truncate),
        Capped::Refused(_)
    ));
}

mod props {
    use super::*;
    use proptest::prelude::*;

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(|n| json!(n)),
            "[a-z\\[\\]{},\"\\\\ ]{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 64, 8, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..12).prop_map(Value::Array),
                prop::collection::btree_map("[a-z/~]{1,4}", inner, 0..6)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn a_cut_result_is_json_within_the_limit_and_keeps_array_prefixes(
            value in json_value(),
            limit in 1usize..400,
        ) {
            let body = Bytes::from(value.to_string());
            match apply(&body, limit, OversizePolicy::Truncate) {
                Capped::Fits => prop_assert!(body.len() <= limit),
                Capped::Refused(_) => prop_assert!(body.len() > limit),
                Capped::Cut(cut) => {
                    prop_assert!(cut.body.len() <= limit, "{} > {limit}", cut.body.len());
                    let result: Value = serde_json::from_slice(&cut.body).expect("JSON");
                    prop_assert!(is_pruned(&result, &value), "{result} from {value}");
                    let _: Value = serde_json::from_slice(&cut.meta).expect("meta JSON");
                }
            }
        }
    }

    /// Whether `cut` is `original` with some arrays shortened from their end.
    fn is_pruned(cut: &Value, original: &Value) -> bool {
        match (cut, original) {
            (Value::Array(a), Value::Array(b)) => {
                a.len() <= b.len() && a.iter().zip(b).all(|(x, y)| is_pruned(x, y))
            }
            (Value::Object(a), Value::Object(b)) => {
                a.len() == b.len()
                    && a.iter()
                        .all(|(k, v)| b.get(k).is_some_and(|w| is_pruned(v, w)))
            }
            (a, b) => a == b,
        }
    }
}

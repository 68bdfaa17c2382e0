//! Unit tests of `plan.rs`.
use super::*;
use crate::config::{FieldRule, FieldType, Location, RestDownstream};

fn rule(source: &str, exposed: &str, ty: FieldType, location: Location) -> FieldRule {
    FieldRule::plain(source, exposed, ty, location)
}

fn tool(method: &str, url: &str, inputs: Vec<FieldRule>) -> Tool {
    Tool {
        name: "t".into(),
        description: std::string::String::new(),
        published: true,
        schema_mode: Default::default(),
        log_payloads: false,
        scope: None,
        keep_unmapped_output: false,
        max_result_bytes: None,
        on_oversize: None,
        downstream: Downstream::Rest(RestDownstream {
            method: method.into(),
            url: url.into(),
            headers: Default::default(),
            timeout_ms: None,
        }),
        inputs,
        outputs: vec![],
    }
}

/// Compiles and returns the problems as `field: message` lines (empty when it compiles).
fn check(t: &Tool, expected: &[&str]) {
    let got: Vec<std::string::String> = match ToolPlan::compile(t) {
        Ok(_) => vec![],
        Err(ps) => ps
            .into_iter()
            .map(|p| format!("{}: {}", p.field.unwrap_or_default(), p.message))
            .collect(),
    };
    assert_eq!(got.len(), expected.len(), "{got:#?}");
    for (g, e) in got.iter().zip(expected) {
        assert!(g.contains(e), "{g:?} does not contain {e:?}");
    }
}

use FieldType::{Array, Boolean, Integer, Number, Object, String as Str};
use Location::*;

#[test]
fn compiles_good_tools() {
    check(
        &tool(
            "GET",
            "https://api.example/c/{id}?x=1",
            vec![rule("id", "customerId", Str, Path)],
        ),
        &[],
    );
    check(
        &tool(
            "post",
            "http://127.0.0.1:9/x",
            vec![rule(
                "client.addresses[*].town",
                "customer.addresses[*].city",
                Str,
                Body,
            )],
        ),
        &[],
    );
    check(
        &tool(
            "POST",
            "http://h/x",
            vec![rule("m[*][*]", "grid[*][*]", Integer, Body)],
        ),
        &[],
    );
    check(
        &tool(
            "GET",
            "http://h/x",
            vec![
                rule("X-Tenant", "tenant", Str, Header),
                rule("q", "query", Str, Query),
            ],
        ),
        &[],
    );
}

#[test]
fn url_problems() {
    check(&tool("GET", "http://h/{id", vec![]), &["unbalanced"]);
    check(&tool("GET", "http://h/id}", vec![]), &["unbalanced"]);
    check(&tool("GET", "ftp://h/x", vec![]), &["http:// or https://"]);
    check(
        &tool("GET", "http:// bad host/x", vec![]),
        &["not a valid absolute URL"],
    );
    check(&tool("GET", "http://h/{id}", vec![]), &["no input field"]);
    check(
        &tool("GET", "http://{host}/x", vec![rule("host", "h", Str, Path)]),
        &["host part"],
    );
    check(
        &tool("GET", "http://h/x", vec![rule("id", "id", Str, Path)]),
        &["id: path field names parameter {id}"],
    );
}

#[test]
fn path_problems() {
    check(
        &tool("POST", "http://h/x", vec![rule("a..b", "a", Str, Body)]),
        &["a: source path \"a..b\" does not parse"],
    );
    check(
        &tool("POST", "http://h/x", vec![rule("a", "a[0]", Str, Body)]),
        &["a[0]: exposed path does not parse"],
    );
    check(
        &tool("POST", "http://h/x", vec![rule("a[*].b", "a.b", Str, Body)]),
        &["same [*] structure"],
    );
    check(
        &tool(
            "POST",
            "http://h/x",
            vec![rule("a", "x", Str, Body), rule("a", "y", Str, Body)],
        ),
        &["y: source path a overlaps"],
    );
    check(
        &tool(
            "POST",
            "http://h/x",
            vec![rule("a", "x", Str, Body), rule("b", "x.y", Str, Body)],
        ),
        &["x.y: exposed path x.y overlaps"],
    );
}

fn typed(mut r: FieldRule, items: FieldType) -> FieldRule {
    r.items = Some(items);
    r
}

#[test]
fn parameters_may_nest_and_query_arrays_compile() {
    // Nested exposed paths for every non-body location, sharing a parent object.
    check(
        &tool(
            "GET",
            "http://h/c/{id}",
            vec![
                rule("id", "customer.id", Integer, Path),
                rule("from", "period.from", Str, Query),
                rule("to", "period.to", Str, Query),
                rule("X-Lang", "prefs.lang", Str, Header),
                rule("deep", "a.b.c.d", Number, Query),
            ],
        ),
        &[],
    );
    // Query arrays: an `array` field of scalars, or a `[*]` leaf on both sides.
    check(
        &tool(
            "GET",
            "http://h/x",
            vec![
                rule("expand", "include", Array, Query),
                typed(rule("ids", "ids", Array, Query), Integer),
                rule("region[*]", "regions[*]", Str, Query),
                rule("flag[*]", "filter.flags[*]", Boolean, Query),
                typed(rule("n[*]", "numbers[*]", Array, Query), Number),
            ],
        ),
        &[],
    );
}

#[test]
fn location_problems() {
    // Sources of non-body fields are one name (query: optionally `name[*]`).
    check(
        &tool("GET", "http://h/x", vec![rule("a.b", "a", Str, Query)]),
        &["a: the source of a query field must be one parameter name, optionally ending in [*]"],
    );
    check(
        &tool(
            "GET",
            "http://h/x",
            vec![rule("a[*][*]", "a[*][*]", Str, Query)],
        ),
        &["a[*][*]: the source of a query field must be one parameter name"],
    );
    check(
        &tool("GET", "http://h/x/{a}", vec![rule("p.a", "a", Str, Path)]),
        &[
            "a: the source of a path field must be one parameter name (the exposed",
            "no input field with location \"path\" naming it",
        ],
    );
    check(
        &tool("GET", "http://h/x", vec![rule("X-A.b", "a", Str, Header)]),
        &["a: the source of a header field must be one header name (the exposed"],
    );
    // The `[*]` structure must still line up.
    check(
        &tool(
            "GET",
            "http://h/x",
            vec![rule("r", "regions[*]", Str, Query)],
        ),
        &["regions[*]: source path \"r\" and exposed path do not have the same [*] structure"],
    );
    check(
        &tool(
            "GET",
            "http://h/x",
            vec![rule("r[*]", "s[*].r", Str, Query)],
        ),
        &["same [*] structure"],
    );
    check(
        &tool("GET", "http://h/x", vec![rule("r[*]", "r", Array, Query)]),
        &["same [*] structure"],
    );
    // Query values: scalars or arrays of scalars only.
    check(
        &tool("GET", "http://h/x", vec![rule("x", "x", Object, Query)]),
        &["x: a query field must be a scalar or an array of scalars"],
    );
    check(
        &tool(
            "GET",
            "http://h/x",
            vec![typed(rule("x", "x", Array, Query), Object)],
        ),
        &["x: a query field must be a scalar or an array of scalars"],
    );
    check(
        &tool(
            "GET",
            "http://h/x",
            vec![typed(rule("x", "x", Array, Query), Array)],
        ),
        &["nested arrays cannot be sent in a query"],
    );
    check(
        &tool(
            "GET",
            "http://h/x",
            vec![rule("x[*]", "x[*]", Object, Query)],
        ),
        &["arrays of objects"],
    );
    check(
        &tool(
            "GET",
            "http://h/x",
            vec![typed(rule("x[*]", "x[*]", Array, Query), Array)],
        ),
        &["x[*]: a query field must be a scalar or an array of scalars"],
    );
    // Headers and path parameters stay scalar.
    check(
        &tool("GET", "http://h/x", vec![rule("a", "a", Array, Header)]),
        &["a: a header field must be a single scalar value, not an object or array (a list could be sent comma-joined, but header values are not joined)"],
    );
    check(
        &tool(
            "GET",
            "http://h/x",
            vec![rule("X-A[*]", "a[*]", Str, Header)],
        ),
        &["a[*]: a header field must be a single scalar value, not an array (a list could"],
    );
    check(
        &tool("GET", "http://h/x/{a}", vec![rule("a", "a", Object, Path)]),
        &[
            "a: a path field must be a single scalar value, not an object or array",
            "no input field with location \"path\" naming it",
        ],
    );
    check(
        &tool(
            "GET",
            "http://h/x/{a}",
            vec![rule("a[*]", "a[*]", Str, Path)],
        ),
        &[
            "a[*]: a path field must be a single scalar value, not an array",
            "no input field with location \"path\" naming it",
        ],
    );
    check(
        &tool(
            "GET",
            "http://h/x",
            vec![rule("bad@name", "a", Str, Header)],
        ),
        &["not a valid header name"],
    );
    check(
        &tool("GET", "http://h/x", vec![rule("Host", "a", Str, Header)]),
        &["managed by the HTTP client"],
    );
    // A nested exposed path still may not overlap another field's.
    check(
        &tool(
            "GET",
            "http://h/x",
            vec![rule("a", "p", Str, Query), rule("b", "p.b", Str, Query)],
        ),
        &["p.b: exposed path p.b overlaps"],
    );
}

#[test]
fn nested_parameters_share_their_parent_object() {
    let mut from = rule("from", "period.from", Str, Query);
    from.required = true;
    let t = tool(
        "GET",
        "http://h/x",
        vec![
            from,
            rule("to", "period.to", Str, Query),
            rule("region[*]", "regions[*]", Str, Query),
        ],
    );
    let plan = ToolPlan::compile(&t).unwrap();
    assert_eq!(plan.input.from.len(), 2);
    let period = &plan.input.from[0];
    assert_eq!((&*period.key, period.required), ("period", true));
    let FromNode::Object(members) = &period.node else {
        panic!()
    };
    let got: Vec<_> = members.iter().map(|m| (&*m.path, m.required)).collect();
    assert_eq!(got, [("period.from", true), ("period.to", false)]);
    let names: Vec<_> = plan.input.leaves.iter().map(|l| &*l.name).collect();
    assert_eq!(names, ["from", "to", "region"]);
    assert_eq!(plan.input.leaves[2].ty, Str);
    assert!(plan.input.to.is_empty());
    assert!(!plan.sends_body);
}

#[test]
fn reports_every_problem() {
    check(
        &tool(
            "GE T",
            "ftp://h/{p}",
            vec![rule("a..b", "a", Str, Body), rule("x", "x", Object, Query)],
        ),
        &[
            "invalid HTTP method",
            "does not parse",
            "scalar or an array of scalars",
            "http:// or https://",
            "no input field",
        ],
    );
}

#[test]
fn tree_shape() {
    let t = tool(
        "POST",
        "http://h/x",
        vec![
            rule(
                "client.addresses[*].town",
                "customer.addresses[*].city",
                Str,
                Body,
            ),
            rule(
                "client.addresses[*].zip",
                "customer.addresses[*].postcode",
                Str,
                Body,
            ),
            rule("client.name", "customer.name", Str, Body),
        ],
    );
    let plan = ToolPlan::compile(&t).unwrap();
    assert_eq!(
        plan.input.leaves[0].to.as_slice(),
        &[Step::Child(0), Step::Child(0), Step::Each, Step::Child(0)]
    );
    assert_eq!(
        plan.input.leaves[1].to.as_slice(),
        &[Step::Child(0), Step::Child(0), Step::Each, Step::Child(1)]
    );
    assert_eq!(
        plan.input.leaves[2].to.as_slice(),
        &[Step::Child(0), Step::Child(1)]
    );
    let FromNode::Object(customer) = &plan.input.from[0].node else {
        panic!()
    };
    let FromNode::Array { to_array, .. } = &customer[0].node else {
        panic!()
    };
    assert_eq!(
        to_array.as_deref(),
        Some(&[Step::Child(0), Step::Child(0)][..])
    );
    assert_eq!(&*customer[0].path, "customer.addresses");
    assert!(plan.sends_body);
}

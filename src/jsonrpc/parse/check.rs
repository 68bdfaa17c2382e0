//! The tape checks of a parse: building the simd-json tape with this thread's buffers
//! (`simd_scratch.rs`),
//! walking an object's members, and the rule that no object repeats a member name (for
//! messages and, through [`has_repeated_name`], the REST surface's arguments).
//!
//! Owns only walks over the tape; what the members mean is `parse.rs`'s `classify`. Must not
//! allocate on the common path (small objects are compared on the stack).

use std::collections::HashSet;

use simd_json::{Node, Tape};

use super::Limits;

/// Objects with at most this many members are checked for a repeated name pairwise, on the
/// stack; a larger object goes through a hash set (one allocation per parse that meets one).
const PAIRWISE_UP_TO: usize = 8;

pub(super) fn build_tape<'a>(
    body: &'a mut [u8],
    limits: &Limits,
) -> Result<Tape<'a>, simd_json::Error> {
    let len = body.len();
    crate::simd_scratch::with_buffers(len, limits.max_depth, |buffers| {
        simd_json::to_tape_with_buffers(body, buffers)
    })
}

/// Number of tape nodes a value occupies, itself included.
fn node_span(node: &Node<'_>) -> usize {
    match node {
        Node::Object { count, .. } | Node::Array { count, .. } => count + 1,
        Node::String(_) | Node::Static(_) => 1,
    }
}

/// Iterates `(name, value index)` over the members of the object whose header is at `at`.
pub(super) fn members<'t, 'a>(
    nodes: &'t [Node<'a>],
    at: usize,
) -> impl Iterator<Item = (&'a str, usize)> + 't {
    let n_members = match nodes.get(at) {
        Some(Node::Object { len, .. }) => *len,
        _ => 0,
    };
    let mut pos = at + 1;
    (0..n_members).map_while(move |_| {
        let Some(Node::String(name)) = nodes.get(pos) else {
            return None;
        };
        let value_idx = pos + 1;
        pos = value_idx + nodes.get(value_idx).map_or(1, node_span);
        Some((*name, value_idx))
    })
}

/// Whether any object of a JSON document repeats a member name: the rule [`super::parse`] applies to
/// messages, for other JSON bodies (the REST surface's arguments) so every surface reads the
/// same input the same way.
pub(crate) fn has_repeated_name(tape: &Tape<'_>) -> bool {
    repeated_name(&tape.0).is_some()
}

/// The tape index of the first object (in document order) in which a member name repeats.
///
/// One pass over the tape: each object's direct members are compared pairwise on the stack
/// when there are at most [`PAIRWISE_UP_TO`] of them (every message envelope, `ping`'s
/// included, so the common path allocates nothing), else through one hash set reused for
/// every large object of the message. Names are compared after unescaping (`"a"` and
/// `"\u0061"` are the same name).
pub(super) fn repeated_name(nodes: &[Node<'_>]) -> Option<usize> {
    let mut large: Option<HashSet<&str>> = None;
    for (at, node) in nodes.iter().enumerate() {
        let Node::Object { len, .. } = node else {
            continue;
        };
        let n_members = *len;
        if n_members < 2 {
            continue;
        }
        let repeated = if n_members <= PAIRWISE_UP_TO {
            let mut names = [""; PAIRWISE_UP_TO];
            let mut n_seen = 0;
            let mut repeated = false;
            for (name, _) in members(nodes, at) {
                if names.get(..n_seen).is_some_and(|seen| seen.contains(&name)) {
                    repeated = true;
                    break;
                }
                if let Some(slot) = names.get_mut(n_seen) {
                    *slot = name;
                    n_seen += 1;
                }
            }
            repeated
        } else {
            let seen = large.get_or_insert_with(|| HashSet::with_capacity(n_members));
            seen.clear();
            !members(nodes, at).all(|(name, _)| seen.insert(name))
        };
        if repeated {
            return Some(at);
        }
    }
    None
}

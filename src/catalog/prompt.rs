//! Effective system prompts: what a toolset's prompt resource and prompt say to one client.
//!
//! Owns the composition rule of seed 003 ("MCP System Prompt Resources"). Pure function; the
//! snapshot calls it once per (client, assigned toolset). Must not know about MCP framing.

use crate::config::PromptMode;

/// Separator between prompt parts: one blank line.
pub(crate) const PART_SEPARATOR: &str = "\n\n";

/// Composes the effective prompt of a toolset for a client application.
///
/// "The effective prompt is composed from: the toolset default system prompt; the client
/// application's system prompt when the toolset assignment enables it; an optional
/// assignment-specific custom system prompt." Append puts the custom prompt after that default
/// chain; Override replaces the whole chain with it. Each part is trimmed; blank or absent parts
/// are skipped; the result is `None` when nothing is left. An Override without a (non-blank)
/// custom prompt overrides nothing: the default chain stays.
pub(crate) fn effective_prompt(
    toolset_default: Option<&str>,
    client_prompt: Option<&str>,
    include_client_prompt: bool,
    custom: Option<&str>,
    mode: PromptMode,
) -> Option<String> {
    let custom = part(custom);
    let parts: Vec<&str> = match (custom, mode) {
        (Some(custom), PromptMode::Override) => vec![custom],
        _ => {
            let client = if include_client_prompt {
                part(client_prompt)
            } else {
                None
            };
            [part(toolset_default), client, custom]
                .into_iter()
                .flatten()
                .collect()
        }
    };
    (!parts.is_empty()).then(|| parts.join(PART_SEPARATOR))
}

/// A prompt part, trimmed; `None` when absent or blank.
fn part(text: Option<&str>) -> Option<&str> {
    text.map(str::trim).filter(|t| !t.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use PromptMode::{Append, Override};

    fn check(
        default: Option<&str>,
        client: Option<&str>,
        include: bool,
        custom: Option<&str>,
        mode: PromptMode,
        expected: Option<&str>,
    ) {
        assert_eq!(
            effective_prompt(default, client, include, custom, mode).as_deref(),
            expected,
            "{default:?} {client:?} {include} {custom:?} {mode:?}"
        );
    }

    #[test]
    fn all_combinations() {
        let d = Some("D");
        let c = Some("C");
        let x = Some("X");
        // include client prompt × custom none/append/override × default present/absent
        check(d, c, true, None, Append, Some("D\n\nC"));
        check(d, c, true, x, Append, Some("D\n\nC\n\nX"));
        check(d, c, true, x, Override, Some("X"));
        check(None, c, true, None, Append, Some("C"));
        check(None, c, true, x, Append, Some("C\n\nX"));
        check(None, c, true, x, Override, Some("X"));
        check(d, c, false, None, Append, Some("D"));
        check(d, c, false, x, Append, Some("D\n\nX"));
        check(d, c, false, x, Override, Some("X"));
        check(None, c, false, None, Append, None);
        check(None, c, false, x, Append, Some("X"));
        check(None, c, false, x, Override, Some("X"));
    }

    #[test]
    fn blank_parts_are_absent() {
        check(Some("  \n"), Some(""), true, None, Append, None);
        check(
            Some("D\n"),
            Some("\n C \n"),
            true,
            Some(" "),
            Override,
            Some("D\n\nC"),
        );
        check(None, None, true, None, Override, None);
        check(None, None, false, Some("X\n"), Override, Some("X"));
    }
}

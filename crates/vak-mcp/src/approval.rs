//! Asking the person before a call whose permission posture is `Ask`, through MCP elicitation.

use rmcp::RoleServer;
use rmcp::service::{ElicitationError, RequestContext};
use schemars::JsonSchema;
use serde::Deserialize;
use vak_tool_core::{Capability, PermissionMode, Posture, ToolOutput, ToolSpec, posture};

/// The person's answer to "allow this call?".
#[derive(Debug, Deserialize, JsonSchema)]
struct Approval {
    /// Whether to run the call.
    allow: bool,
}
rmcp::elicit_safe!(Approval);

/// The name of a permission mode as the configuration file spells it.
pub(crate) fn mode_name(mode: PermissionMode) -> &'static str {
    match mode {
        PermissionMode::ReadOnly => "read-only",
        PermissionMode::WorkspaceWrite => "workspace-write",
        PermissionMode::FullAccess => "full-access",
    }
}

/// An approval the person already gave for this request, through an input-required round trip
/// (MCP 2026-07-28 without a session, see [`crate::stateless`]): the mode it was approved for.
/// The server puts it in the request's extensions before the call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Approved(pub(crate) PermissionMode);

/// The least mode that allows `spec` without asking: what an approved call runs in.
pub(crate) fn allowing_mode(spec: &ToolSpec) -> PermissionMode {
    [PermissionMode::WorkspaceWrite, PermissionMode::FullAccess]
        .into_iter()
        .find(|candidate| posture(spec, *candidate) == Posture::Allow)
        .unwrap_or(PermissionMode::FullAccess)
}

/// The question put to the person: "Allow bash of `make test`?", and what it may then do.
pub(crate) fn question(spec: &ToolSpec, args: &serde_json::Value, mode: PermissionMode) -> String {
    let (said, block) = describe_call(args);
    let mut question = format!("Allow {}{said}?{}", spec.name, reach(spec, mode));
    if let Some(block) = block {
        question.push('\n');
        question.push_str(&block);
    }
    question
}

/// The error result of a call that was not approved, saying `why` and which mode would allow it.
pub(crate) fn refusal(spec: &ToolSpec, mode: PermissionMode, why: &str) -> ToolOutput {
    ToolOutput::error(format!(
        "`{}` was not run: {why}. In permission mode `{}` it needs the person's approval; \
         `[permissions] mode = \"{}\"` in .vak/config.toml allows it without asking. Try \
         another tool, or ask the person to change the mode.",
        spec.name,
        mode_name(mode),
        mode_name(allowing_mode(spec))
    ))
}

/// Asks the person through the client whether to run `spec` with `args` in permission mode
/// `mode`. `Ok` is the mode the call was approved for (the least that allows it without
/// asking), for the call's context; `Err` is the refusal to return.
pub(crate) async fn approve(
    spec: &ToolSpec,
    args: &serde_json::Value,
    mode: PermissionMode,
    context: &RequestContext<RoleServer>,
) -> Result<PermissionMode, ToolOutput> {
    if let Some(Approved(approved)) = context.extensions.get::<Approved>() {
        return Ok(*approved);
    }
    let allowing_mode = allowing_mode(spec);
    let refused = |why: &str| refusal(spec, mode, why);
    let answer = tokio::select! {
        answer = context.peer.elicit::<Approval>(question(spec, args, mode)) => answer,
        () = context.ct.cancelled() => return Err(refused("the call was cancelled while asking")),
    };
    match answer {
        Ok(Some(Approval { allow: true })) => Ok(allowing_mode),
        Ok(Some(Approval { allow: false }) | None) | Err(ElicitationError::UserDeclined) => {
            Err(refused("the person declined it"))
        }
        Err(ElicitationError::UserCancelled) => Err(refused("the person dismissed the question")),
        Err(ElicitationError::CapabilityNotSupported) => Err(refused(
            "this MCP client cannot ask the person (it does not support elicitation)",
        )),
        Err(error) => Err(refused(&format!("asking the person failed ({error})"))),
    }
}

/// What an approved call may do, when the mode asks before it for what it changes: a command
/// runs sandboxed as in `workspace-write` (never unconfined), a write changes the workspace.
fn reach(spec: &ToolSpec, mode: PermissionMode) -> &'static str {
    if mode != PermissionMode::ReadOnly {
        return "";
    }
    if spec.has(Capability::Execute) {
        " If allowed, it runs sandboxed as in workspace-write: it may change files inside the \
         workspace, nothing outside it."
    } else if spec.has(Capability::WriteFs) {
        " If allowed, it may change files inside the workspace."
    } else {
        ""
    }
}

/// The widest line of a call shown in a question; longer ones are folded.
const FOLD_AT: usize = 100;

/// A description of a call for the approval question: the URL, command or path when there is
/// one, otherwise the arguments, every character of it shown ([`render`]). Short, it is put
/// in the sentence; long or of several lines, the sentence names it and the block that follows
/// the question shows it, folded.
fn describe_call(args: &serde_json::Value) -> (String, Option<String>) {
    let (noun, text) = ["url", "command", "path"]
        .into_iter()
        .find_map(|key| {
            args.get(key)
                .and_then(|value| value.as_str())
                .map(|value| (key, value.to_owned()))
        })
        .unwrap_or_else(|| ("arguments", args.to_string()));
    let lines = render(&text);
    match lines.as_slice() {
        [line] if line.chars().count() <= FOLD_AT => {
            let preposition = if noun == "arguments" { "with" } else { "of" };
            (format!(" {preposition} {line}"), None)
        }
        _ => {
            let count = text.chars().count();
            let said = format!(
                " of the {noun} below ({count} characters, shown whole: control and invisible \
                 characters escaped as \\u{{...}}, runs of spaces counted as ⟪N spaces⟫, long \
                 lines folded at {FOLD_AT} with ↩)"
            );
            (said, Some(lines.join("\n")))
        }
    }
}

/// Every character of `text`, so that a person sees all that will run: newlines end a line
/// (shown as `\n`), tabs are `\t`, control, format (bidirectional overrides, zero-width) and
/// other invisible characters are `\u{...}`, a backslash is `\\`, a run of more than three
/// spaces is `⟪N spaces⟫` (its brackets escaped where the text has them), and lines wider
/// than [`FOLD_AT`] are folded with `↩`, never inside an escape.
fn render(text: &str) -> Vec<String> {
    let mut lines: Vec<Vec<String>> = vec![Vec::new()];
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let token = match c {
            '\n' => {
                if let Some(line) = lines.last_mut() {
                    line.push("\\n".to_owned());
                }
                lines.push(Vec::new());
                continue;
            }
            ' ' => {
                let mut run = 1;
                while chars.next_if_eq(&' ').is_some() {
                    run += 1;
                }
                if run > 3 {
                    format!("⟪{run} spaces⟫")
                } else {
                    " ".repeat(run)
                }
            }
            '\t' => "\\t".to_owned(),
            '\\' => "\\\\".to_owned(),
            c if c.is_control() || invisible(c) || c == '⟪' || c == '⟫' || c == '↩' => {
                format!("\\u{{{:04x}}}", u32::from(c))
            }
            c => c.to_string(),
        };
        if let Some(line) = lines.last_mut() {
            line.push(token);
        }
    }
    let mut out = Vec::new();
    for tokens in lines {
        let mut line = String::new();
        let mut width = 0;
        for token in tokens {
            let token_width = token.chars().count();
            if width > 0 && width + token_width > FOLD_AT {
                line.push('↩');
                out.push(std::mem::take(&mut line));
                width = 0;
            }
            line.push_str(&token);
            width += token_width;
        }
        out.push(line);
    }
    out
}

/// Characters that show as nothing (or as something else): format characters such as the
/// bidirectional overrides and zero-width ones, and the other blank spaces of Unicode.
fn invisible(c: char) -> bool {
    matches!(
        u32::from(c),
        0x00A0
            | 0x00AD
            | 0x034F
            | 0x061C
            | 0x115F..=0x1160
            | 0x17B4..=0x17B5
            | 0x180B..=0x180F
            | 0x2000..=0x200F
            | 0x2028..=0x202F
            | 0x205F..=0x206F
            | 0x3000
            | 0x3164
            | 0xFE00..=0xFE0F
            | 0xFEFF
            | 0xFFA0
            | 0xFFF0..=0xFFFB
            | 0xE0000..=0xE0FFF
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_short_call_is_asked_in_one_sentence() {
        assert_eq!(
            describe_call(&json!({"command": "make test"})),
            (" of make test".to_owned(), None)
        );
        assert_eq!(
            describe_call(&json!({"a": 1})),
            (r#" with {"a":1}"#.to_owned(), None)
        );
    }

    #[test]
    fn the_whole_command_is_shown_however_long() {
        let command = format!("echo harmless{}; touch approved-blind", " ".repeat(240));
        let (said, block) = describe_call(&json!({ "command": command }));
        assert_eq!(said, " of echo harmless⟪240 spaces⟫; touch approved-blind");
        assert_eq!(block, None);
        let long = format!("echo {}; rm -rf ~/x", "a".repeat(300));
        let (_, block) = describe_call(&json!({ "command": long }));
        let block = block.unwrap_or_default();
        assert!(block.contains('↩'), "{block}");
        assert!(
            block
                .lines()
                .all(|line| line.chars().count() <= FOLD_AT + 1),
            "{block}"
        );
        let shown: String = block
            .lines()
            .map(|line| line.trim_end_matches('↩'))
            .collect();
        assert_eq!(shown, long);
        assert!(!block.contains('…'), "{block}");
    }

    #[test]
    fn what_would_hide_is_escaped() {
        let lines = render("ls\necho \u{202e}txt.exe\t\u{1b}[2J \u{200b}\\ ⟪");
        assert_eq!(
            lines,
            [
                "ls\\n",
                "echo \\u{202e}txt.exe\\t\\u{001b}[2J \\u{200b}\\\\ \\u{27ea}"
            ]
        );
    }
}

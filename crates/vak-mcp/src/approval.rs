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
    format!(
        "Allow {}{}?{}",
        spec.name,
        describe_call(args),
        reach(spec, mode)
    )
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

/// A short description of a call for the approval question: the URL, command or path when
/// there is one, otherwise the arguments, cut to a readable length.
fn describe_call(args: &serde_json::Value) -> String {
    for key in ["url", "command", "path"] {
        if let Some(value) = args.get(key).and_then(|value| value.as_str()) {
            return format!(" of {}", cut(value, 200));
        }
    }
    format!(" with {}", cut(&args.to_string(), 200))
}

fn cut(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

//! MCP 2026-07-28 over HTTP: requests that come without a session.
//!
//! From protocol 2026-07-28 on, a request carries its protocol version and the client's
//! capabilities in its own `_meta` and is served on its own: rmcp makes a server for it (a
//! [`Server::session`](crate::Server) of the HTTP template) and drops it after the reply. What
//! such requests still share lives in one [`Stateless`] per HTTP server:
//!
//! - **Results for `recall`.** Every result is recorded in one ledger for all requests without a
//!   session: its call ids are random (`r` and 32 hex digits), so only whoever was sent a window
//!   can recall the rest of it; it holds at most `[mcp] ledger_bytes`, oldest evicted first, and
//!   forgets a result `[mcp] session_idle_ms` after it was recorded.
//! - **Approvals.** A tool whose posture is `Ask` is not run at once: the reply is an
//!   input-required result asking the person (an `elicitation/create` under the key
//!   `approval`) and a `requestState` naming the pending approval; the client asks and calls
//!   again with the same name and arguments, the answer under `inputResponses.approval` and the
//!   `requestState` as it was. A pending approval is used once, for exactly that call, and
//!   expires like a result.
//! - **Background jobs.** `bash` with `run_in_background` and `jobs` reach one table of jobs
//!   the server keeps for such requests, by ids no one can guess, bounded per server and per
//!   credential, each stopped once idle (see [`jobs`]).
//! - **Nothing else.** A call that would change any other state of a session is refused with an
//!   error saying to use a session: there is none to own it, and no one could reach it again.
//!
//! The HTTP front also answers here what rmcp would get wrong for such a request: the methods
//! 2026-07-28 removed are 404 with `-32601`, and `inputResponses` must be an object of objects.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rmcp::RoleServer;
use rmcp::model::{CallToolRequestParams, InputRequiredResult, ProtocolVersion};
use rmcp::service::RequestContext;
use serde_json::{Value, json};
use vak_tool_core::{Access, PermissionMode, Posture, Registry, Session, ToolContext, ToolOutput};

use crate::approval;
use crate::ledger::Ledger;
use crate::recall::{RECALL, Shared};
use crate::stateless::jobs::Jobs;
use crate::{McpSettings, gate};

pub(crate) mod jobs;

/// The key of the approval question in an input-required result and of its answer in the
/// retried call's `inputResponses`.
pub(crate) const APPROVAL_KEY: &str = "approval";

/// JSON-RPC's "method not found" and "invalid params".
#[cfg_attr(
    not(feature = "http"),
    allow(dead_code, reason = "used by the HTTP transport")
)]
const METHOD_NOT_FOUND: i64 = -32601;
#[cfg_attr(
    not(feature = "http"),
    allow(dead_code, reason = "used by the HTTP transport")
)]
const INVALID_PARAMS: i64 = -32602;

/// Pending approvals kept at most; the oldest is dropped past it.
const MAX_PENDING: usize = 1024;

/// The methods 2026-07-28 removed: asked without a session, they are 404 and `-32601`.
#[cfg_attr(
    not(feature = "http"),
    allow(dead_code, reason = "used by the HTTP transport")
)]
const REMOVED_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
];

/// What the requests without a session share on one HTTP server.
#[derive(Debug)]
pub(crate) struct Stateless {
    ledger: Arc<Mutex<Ledger>>,
    pending: Mutex<VecDeque<Pending>>,
    keep: Duration,
    /// The background jobs of such requests.
    jobs: Arc<Jobs>,
}

/// An approval asked for and not yet answered.
#[derive(Debug)]
struct Pending {
    id: String,
    tool: String,
    args: Value,
    asked: Instant,
}

/// What becomes of a `tools/call` without a session before it runs.
#[derive(Debug)]
pub(crate) enum Gate {
    /// Run it as it is.
    Run,
    /// Run it: the person approved it for this mode.
    Approved(PermissionMode),
    /// Answer with this error result; nothing runs.
    Refused(ToolOutput),
    /// Answer with this input-required result (the question to the person); nothing runs yet.
    Ask(Box<InputRequiredResult>),
}

impl Stateless {
    pub(crate) fn new(settings: &McpSettings) -> Self {
        let keep = settings_keep(settings);
        Self {
            ledger: Arc::new(Mutex::new(Ledger::unguessable(settings.ledger_bytes, keep))),
            pending: Mutex::default(),
            keep,
            jobs: Jobs::new(settings),
        }
    }

    /// Whether the request came without a session: it names protocol 2026-07-28 or later in its
    /// own `_meta`.
    pub(crate) fn serves(context: &RequestContext<RoleServer>) -> bool {
        context
            .meta
            .protocol_version()
            .is_some_and(|version| version.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
    }

    /// The background jobs of requests without a session.
    pub(crate) fn jobs(&self) -> &Jobs {
        &self.jobs
    }

    /// Makes `session` (the request's own) record its results in, and recall from, the shared
    /// ledger.
    pub(crate) fn join(&self, session: &Session) {
        Shared::join(session, &self.ledger);
    }

    /// Decides what becomes of a call without a session before it runs (see the module docs).
    pub(crate) fn gate(
        &self,
        registry: &Registry,
        ctx: &ToolContext,
        mode: PermissionMode,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Gate {
        let name = request.name.as_ref();
        let Some(spec) = registry.spec(name) else {
            return Gate::Run;
        };
        let args = match &request.arguments {
            Some(map) => Value::Object(map.clone()),
            None => Value::Object(serde_json::Map::new()),
        };
        let claims = registry.claims(name, &args, ctx);
        let keeps = claims.state.iter().find(|state| {
            state.access == Access::Write
                && name != RECALL
                // The jobs `bash` and `jobs` claim, which [`jobs`] keeps for such requests.
                && !(state.name == vak_tool_core::StateKey::JOBS && self.jobs.enabled())
        });
        if let Some(state) = keeps {
            return Gate::Refused(ToolOutput::error(format!(
                "`{name}` was not run: this call keeps state between calls (the session's \
                 {}), and a request without a session (MCP 2026-07-28 over HTTP) has none to \
                 keep it in. Open a session for it: connect with protocol 2025-11-25 (an \
                 `initialize` gives an Mcp-Session-Id), or serve over stdio. Without a session, \
                 run the command in the foreground (`run_in_background` false).",
                state.name
            )));
        }
        if registry.posture(spec, mode) != Posture::Ask {
            return Gate::Run;
        }
        // The person is asked only about a call that would run.
        if let Err(refusal) = registry.check(name, &args, ctx) {
            return Gate::Refused(refusal);
        }
        if let Some(state) = &request.request_state {
            let Some(pending) = self.take(state) else {
                return Gate::Refused(approval::refusal(
                    spec,
                    mode,
                    "its `requestState` names no approval this server is waiting for (it was \
                     answered already, expired, or was issued by another server); call again \
                     without `requestState` and `inputResponses` to be asked anew",
                ));
            };
            if pending.tool != name || pending.args != args {
                return Gate::Refused(approval::refusal(
                    spec,
                    mode,
                    "its `requestState` was issued for another call (another tool or other \
                     arguments): the person's answer applies only to the call they were asked \
                     about",
                ));
            }
            let answer = request
                .input_responses
                .as_ref()
                .and_then(|responses| responses.get(APPROVAL_KEY));
            // Not answered: asked again below.
            if let Some(answer) = answer {
                return answer_of(answer, spec, mode);
            }
        }
        let can_ask = context
            .client_capabilities()
            .is_some_and(|capabilities| capabilities.elicitation.is_some());
        if !can_ask {
            return Gate::Refused(approval::refusal(
                spec,
                mode,
                "this MCP client cannot ask the person (its request declares no elicitation \
                 capability in `_meta`)",
            ));
        }
        let id = self.ask(name, args.clone());
        let input = json!({
            "resultType": "input_required",
            "inputRequests": {
                APPROVAL_KEY: {
                    "method": "elicitation/create",
                    "params": {
                        "mode": "form",
                        "message": approval::question(spec, &args, mode),
                        "requestedSchema": {
                            "type": "object",
                            "properties": {
                                "allow": {"type": "boolean", "description": "Whether to run the call."}
                            },
                            "required": ["allow"]
                        }
                    }
                }
            },
            "requestState": id,
        });
        match serde_json::from_value::<InputRequiredResult>(input) {
            Ok(input) => Gate::Ask(Box::new(input)),
            Err(error) => Gate::Refused(approval::refusal(
                spec,
                mode,
                &format!("the question could not be built ({error}); this is a bug in vak-tools"),
            )),
        }
    }

    /// Records a pending approval of `tool` with `args`; its unguessable id.
    fn ask(&self, tool: &str, args: Value) -> String {
        let id = format!("approval-{}", uuid::Uuid::new_v4().simple());
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        pending.retain(|waiting| waiting.asked.elapsed() <= self.keep);
        if pending.len() >= MAX_PENDING {
            pending.pop_front();
        }
        pending.push_back(Pending {
            id: id.clone(),
            tool: tool.to_owned(),
            args,
            asked: Instant::now(),
        });
        id
    }

    /// Takes the pending approval `id`, unless it is unknown or expired.
    fn take(&self, id: &str) -> Option<Pending> {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        let at = pending.iter().position(|waiting| waiting.id == id)?;
        pending
            .remove(at)
            .filter(|waiting| waiting.asked.elapsed() <= self.keep)
    }
}

/// How long results and pending approvals of requests without a session are kept.
fn settings_keep(settings: &McpSettings) -> Duration {
    settings.session_idle()
}

/// The person's answer (an `ElicitResult`) as what becomes of the call.
fn answer_of(answer: &Value, spec: &vak_tool_core::ToolSpec, mode: PermissionMode) -> Gate {
    let action = answer.get("action").and_then(Value::as_str);
    let allow = answer
        .get("content")
        .and_then(|content| content.get("allow"))
        .and_then(Value::as_bool);
    match (action, allow) {
        (Some("accept"), Some(true)) => Gate::Approved(approval::allowing_mode(spec)),
        (Some("accept" | "decline"), _) => {
            Gate::Refused(approval::refusal(spec, mode, "the person declined it"))
        }
        (Some("cancel"), _) => Gate::Refused(approval::refusal(
            spec,
            mode,
            "the person dismissed the question",
        )),
        _ => Gate::Refused(approval::refusal(
            spec,
            mode,
            "the answer under `inputResponses.approval` is not an elicitation result \
             (`{\"action\": \"accept\", \"content\": {\"allow\": true}}`)",
        )),
    }
}

/// The answer the HTTP front gives itself to a request without a session that rmcp would get
/// wrong: its HTTP status and JSON-RPC reply. `header` is the request's `MCP-Protocol-Version`.
#[cfg_attr(
    not(feature = "http"),
    allow(dead_code, reason = "used by the HTTP transport")
)]
pub(crate) fn refused(header: Option<&str>, message: &Value) -> Option<(u16, Value)> {
    let meta_version = message
        .pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion")
        .and_then(Value::as_str);
    let version = meta_version.or(header)?;
    if version < ProtocolVersion::V_2026_07_28.as_str() {
        return None;
    }
    let method = message.get("method").and_then(Value::as_str)?;
    let id = message.get("id").cloned();
    if REMOVED_METHODS.contains(&method) && meta_version.is_some() {
        return Some((
            404,
            gate::error_reply(
                id,
                METHOD_NOT_FOUND,
                &format!(
                    "`{method}` is not part of MCP {version}: a request carries its protocol \
                     version and capabilities in its own `_meta`, with no session to open or \
                     keep alive"
                ),
            ),
        ));
    }
    if method == "tools/call"
        && let Some(responses) = message.pointer("/params/inputResponses")
    {
        let well_formed = responses
            .as_object()
            .is_some_and(|responses| responses.values().all(Value::is_object));
        if !well_formed {
            return Some((
                400,
                gate::error_reply(
                    id,
                    INVALID_PARAMS,
                    "`inputResponses` must be an object whose values are the client's results \
                     (objects) for the input requests of the previous input-required result, \
                     under the same keys",
                ),
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removed_methods_without_a_session_are_404() {
        let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                          "io.modelcontextprotocol/clientCapabilities": {}});
        for method in REMOVED_METHODS {
            let message =
                json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": {"_meta": meta}});
            let (status, reply) = refused(Some("2026-07-28"), &message).expect("refused");
            assert_eq!(status, 404, "{method}");
            assert_eq!(reply["error"]["code"], -32601);
            assert_eq!(reply["id"], 7);
        }
        // A handshake of an older version is untouched, whatever it names.
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                "params": {"protocolVersion": "2026-07-28"}});
        assert_eq!(refused(None, &initialize), None);
        let older = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
        assert_eq!(refused(Some("2025-11-25"), &older), None);
    }

    #[test]
    fn input_responses_must_be_objects() {
        let call = |responses: Value| {
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
                "name": "bash", "arguments": {}, "inputResponses": responses,
                "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}})
        };
        for bad in [json!(null), json!(5), json!({"approval": 12345}), json!([])] {
            let (status, reply) = refused(Some("2026-07-28"), &call(bad.clone())).expect("refused");
            assert_eq!(
                (status, reply["error"]["code"].clone()),
                (400, json!(-32602)),
                "{bad}"
            );
        }
        let good = call(json!({"approval": {"action": "accept", "content": {"allow": true}}}));
        assert_eq!(refused(Some("2026-07-28"), &good), None);
    }
}

//! What the MCP server takes from a client before rmcp sees it: JSON-RPC conformance rmcp's own
//! reading does not give.
//!
//! rmcp reads each message into a typed enum whose last arm is "a custom request", so a
//! `tools/call` with no `params` (or `arguments` that is not an object) comes out as an unknown
//! method (-32601) instead of invalid params (-32602); it answers a batch and a request with an
//! unusable id with an error that has no `id` at all, where JSON-RPC wants `"id": null`; and a
//! notification that arrives before `initialize` ends its handshake with an error, which ends the
//! server. The [`Gate`] sits in front of it, on plain JSON values:
//!
//! - a message that cannot be answered as it is gets its JSON-RPC error here (parse error
//!   -32700, invalid request -32600, invalid params -32602), with `"id": null` when the request
//!   has no usable id;
//! - a notification or response before the session has started is ignored (logged), never
//!   fatal;
//! - a batch is split into its messages under a protocol version that has batches (2025-03-26
//!   and older); their replies are gathered and sent back as one array, as JSON-RPC says. Later
//!   versions removed batches: there a batch is one invalid-request error.
//!
//! Everything else goes to rmcp unchanged. The gate holds no I/O: the stdio transport
//! (`stdio`) feeds it lines and writes what it returns; the HTTP transport vets each POST with
//! it.

use rmcp::model::{CallToolRequestParams, ClientJsonRpcMessage, ClientRequest};
use serde::Deserialize;
use serde_json::{Value, json};

/// JSON-RPC's "the text is not JSON".
pub(crate) const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's "this is not a valid request object".
pub(crate) const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC's "the method exists, its parameters are wrong".
const INVALID_PARAMS: i64 = -32602;

/// The request methods MCP defines for a client to send. One of them that rmcp could only read as
/// a custom request has parameters of the wrong shape.
const STANDARD_REQUESTS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "subscriptions/listen",
    "completion/complete",
    "logging/setLevel",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
];

/// The `_meta` key that carries the protocol version on each request of the
/// initialize-less lifecycle (2026-07-28 and later).
const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// The newest protocol version whose JSON-RPC layer has batches (2025-06-18 removed them).
pub(crate) const LAST_VERSION_WITH_BATCHES: &str = "2025-03-26";

/// The conformance state of one client connection.
#[derive(Debug, Default)]
pub(crate) struct Gate {
    /// A lifecycle has begun (an `initialize`, or a request carrying its own protocol
    /// version): notifications and responses may reach rmcp.
    started: bool,
    /// The id of the `initialize` request whose answer is still to come.
    initialize_id: Option<Value>,
    /// The protocol version the server answered `initialize` with.
    version: Option<String>,
    /// Batches whose replies are still being gathered.
    batches: Vec<Batch>,
    /// Ids (as JSON text) of requests sent on their own, delivered and not answered yet.
    running: std::collections::HashSet<String>,
}

/// A batch whose requests are still running.
#[derive(Debug)]
struct Batch {
    /// Ids of the batch's requests not answered yet.
    waiting: Vec<Value>,
    /// The replies so far, in the order they came.
    replies: Vec<Value>,
}

/// What one message (or batch) from the client comes to.
#[derive(Debug, Default)]
pub(crate) struct Inbound {
    /// Messages for rmcp, in order.
    pub(crate) deliver: Vec<ClientJsonRpcMessage>,
    /// Replies to write to the client now, each a JSON-RPC message or a batch of them.
    pub(crate) replies: Vec<Value>,
}

/// What the gate makes of one message.
enum One {
    Deliver(Box<ClientJsonRpcMessage>),
    Reply(Value),
    Ignore,
}

impl Gate {
    /// A gate for a new connection.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// The protocol version agreed on by `initialize`, once it has been answered.
    #[cfg(test)]
    pub(crate) fn version(&self) -> Option<&str> {
        self.version.as_deref()
    }

    /// Takes one line (one JSON text) from the client.
    pub(crate) fn inbound(&mut self, text: &[u8]) -> Inbound {
        let mut inbound = Inbound::default();
        match serde_json::from_slice::<Value>(text) {
            Err(error) => inbound.replies.push(error_reply(
                None,
                PARSE_ERROR,
                &format!("the message is not JSON ({error})"),
            )),
            Ok(Value::Array(items)) => self.batch(items, &mut inbound),
            Ok(message) => match self.one(message, false) {
                One::Deliver(message) => {
                    if let ClientJsonRpcMessage::Request(request) = message.as_ref() {
                        let id = serde_json::to_value(&request.id).unwrap_or(Value::Null);
                        if self.in_flight(&id) {
                            // The running request keeps its answer; this one is refused.
                            inbound.replies.push(duplicate(id));
                            return inbound;
                        }
                        self.running.insert(id.to_string());
                    }
                    inbound.deliver.push(*message);
                }
                One::Reply(reply) => inbound.replies.push(reply),
                One::Ignore => {}
            },
        }
        // A cancellation may have been the last thing a batch waited for.
        inbound.replies.extend(self.finished_batches());
        inbound
    }

    /// Takes one message rmcp sends; returns what to write now (nothing while it is held for
    /// its batch, or the whole batch once it is complete).
    pub(crate) fn outbound(&mut self, mut message: Value) -> Vec<Value> {
        if let Value::Object(map) = &mut message
            && map.contains_key("error")
            && !map.contains_key("id")
        {
            // JSON-RPC: an error about a request whose id could not be read carries a null id.
            map.insert("id".into(), Value::Null);
        }
        let id = message.get("id").cloned();
        let is_reply = message.get("result").is_some() || message.get("error").is_some();
        if let (true, Some(id)) = (is_reply, &id) {
            self.running.remove(&id.to_string());
        }
        if is_reply && id.is_some() && id == self.initialize_id {
            self.initialize_id = None;
            if let Some(version) = message
                .pointer("/result/protocolVersion")
                .and_then(Value::as_str)
            {
                self.version = Some(version.to_owned());
            }
        }
        if let (true, Some(id)) = (is_reply, id)
            && let Some(batch) = self
                .batches
                .iter_mut()
                .find(|batch| batch.waiting.contains(&id))
        {
            batch.waiting.retain(|waiting| *waiting != id);
            batch.replies.push(message);
            return self.finished_batches();
        }
        vec![message]
    }

    /// The replies of every batch that waits for nothing more, each as one array.
    fn finished_batches(&mut self) -> Vec<Value> {
        let (done, running): (Vec<Batch>, Vec<Batch>) = std::mem::take(&mut self.batches)
            .into_iter()
            .partition(|batch| batch.waiting.is_empty());
        self.batches = running;
        done.into_iter()
            .filter(|batch| !batch.replies.is_empty())
            .map(|batch| Value::Array(batch.replies))
            .collect()
    }

    fn batch(&mut self, items: Vec<Value>, inbound: &mut Inbound) {
        if items.is_empty() {
            inbound.replies.push(error_reply(
                None,
                INVALID_REQUEST,
                "an empty batch: send at least one message",
            ));
            return;
        }
        let allowed = self.version.as_deref().is_some_and(has_batches);
        if !allowed {
            let why = match &self.version {
                None => "send `initialize` first, on its own: a batch may not hold it".to_owned(),
                Some(version) => format!(
                    "this session speaks protocol {version}, which has no JSON-RPC batches \
                     (they ended with {LAST_VERSION_WITH_BATCHES}): send one message at a time"
                ),
            };
            inbound.replies.push(error_reply(
                None,
                INVALID_REQUEST,
                &format!("a batch: {why}"),
            ));
            return;
        }
        let mut batch = Batch {
            waiting: Vec::new(),
            replies: Vec::new(),
        };
        for item in items {
            match self.one(item, true) {
                One::Deliver(message) => {
                    if let ClientJsonRpcMessage::Request(request) = message.as_ref() {
                        let id = serde_json::to_value(&request.id).unwrap_or(Value::Null);
                        if batch.waiting.contains(&id) || self.in_flight(&id) {
                            batch.replies.push(duplicate(id));
                            continue;
                        }
                        batch.waiting.push(id);
                    }
                    inbound.deliver.push(*message);
                }
                One::Reply(reply) => batch.replies.push(reply),
                One::Ignore => {}
            }
        }
        self.batches.push(batch);
    }

    /// Vets one message; `in_batch` when it came inside a batch.
    fn one(&mut self, message: Value, in_batch: bool) -> One {
        let Value::Object(map) = &message else {
            return One::Reply(error_reply(
                None,
                INVALID_REQUEST,
                "a JSON-RPC message is an object with `jsonrpc`, and `method` or `result`",
            ));
        };
        let method = map.get("method").and_then(Value::as_str).map(str::to_owned);
        let id = match map.get("id") {
            None => None,
            Some(id) if usable_id(id) => Some(id.clone()),
            Some(_) if method.is_some() => {
                return One::Reply(error_reply(
                    None,
                    INVALID_REQUEST,
                    "the request's `id` must be a string or an integer",
                ));
            }
            // A response whose id names nothing we could have asked (an id-less error about
            // something the server sent, say): nothing to route it to.
            Some(_) => {
                tracing::debug!(%message, "ignoring a response without a usable id");
                return One::Ignore;
            }
        };
        match (method, id) {
            (Some(method), Some(id)) => self.request(&method, id, &message, in_batch),
            (Some(method), None) => self.notification(&method, &message),
            (None, _) => self.response(&message),
        }
    }

    fn request(&mut self, method: &str, id: Value, message: &Value, in_batch: bool) -> One {
        if in_batch && method == "initialize" {
            return One::Reply(error_reply(
                Some(id),
                INVALID_REQUEST,
                "`initialize` may not be part of a batch: send it on its own",
            ));
        }
        let parsed = match read_request(method, &id, message) {
            Ok(parsed) => parsed,
            Err(reply) => return One::Reply(reply),
        };
        if method == "initialize" {
            self.started = true;
            self.initialize_id = Some(id);
        } else if method != "server/discover"
            && message
                .get("params")
                .and_then(|params| params.get("_meta"))
                .and_then(|meta| meta.get(META_PROTOCOL_VERSION))
                .is_some()
        {
            // The initialize-less lifecycle: rmcp starts the session on such a request.
            self.started = true;
        }
        One::Deliver(Box::new(parsed))
    }

    fn notification(&mut self, method: &str, message: &Value) -> One {
        if !self.started {
            tracing::debug!(method, "ignoring a notification sent before `initialize`");
            return One::Ignore;
        }
        if method == "notifications/cancelled"
            && let Some(id) = message
                .get("params")
                .and_then(|params| params.get("requestId"))
        {
            // A cancelled request is never answered: its batch stops waiting for it, and its id
            // is free again.
            for batch in &mut self.batches {
                batch.waiting.retain(|waiting| waiting != id);
            }
            self.running.remove(&id.to_string());
        }
        match ClientJsonRpcMessage::deserialize(message) {
            Ok(parsed) => One::Deliver(Box::new(parsed)),
            Err(error) => {
                tracing::debug!(method, %error, "ignoring a malformed notification");
                One::Ignore
            }
        }
    }

    /// Whether a request with `id` is running: sent on its own or in a batch, not answered.
    fn in_flight(&self, id: &Value) -> bool {
        self.running.contains(&id.to_string())
            || self.batches.iter().any(|batch| batch.waiting.contains(id))
    }

    fn response(&mut self, message: &Value) -> One {
        if !self.started {
            tracing::debug!(%message, "ignoring a response sent before `initialize`");
            return One::Ignore;
        }
        match ClientJsonRpcMessage::deserialize(message) {
            Ok(parsed) => One::Deliver(Box::new(parsed)),
            Err(error) => One::Reply(error_reply(
                None,
                INVALID_REQUEST,
                &format!("not a valid JSON-RPC message ({error})"),
            )),
        }
    }
}

/// The refusal of a request whose id is the id of a request still running.
fn duplicate(id: Value) -> Value {
    error_reply(
        Some(id),
        INVALID_REQUEST,
        "this id is already used by a request still running: give each request its own id \
         (the running one keeps its answer)",
    )
}

/// The request rmcp reads from `message`, or the error reply when it cannot be served as it is:
/// not a request rmcp can read (-32600), or a standard method whose params it could only read as
/// a custom request (-32602).
fn read_request(method: &str, id: &Value, message: &Value) -> Result<ClientJsonRpcMessage, Value> {
    let parsed = ClientJsonRpcMessage::deserialize(message).map_err(|error| {
        error_reply(
            Some(id.clone()),
            INVALID_REQUEST,
            &format!("not a valid JSON-RPC request ({error})"),
        )
    })?;
    if let ClientJsonRpcMessage::Request(request) = &parsed
        && matches!(request.request, ClientRequest::CustomRequest(_))
        && STANDARD_REQUESTS.contains(&method)
    {
        return Err(error_reply(
            Some(id.clone()),
            INVALID_PARAMS,
            &params_problem(method, message.get("params")),
        ));
    }
    Ok(parsed)
}

/// One message of an HTTP POST, vetted without session state: `Some` error reply (and whether
/// it is the client's malformed message, a 400) when rmcp should not see it. Notifications and
/// responses pass; rmcp answers them with a status.
#[cfg(feature = "http")]
pub(crate) fn vet_message(message: &Value) -> Option<(Value, bool)> {
    let malformed = |text: &str| Some((error_reply(None, INVALID_REQUEST, text), true));
    let Value::Object(map) = message else {
        return malformed(
            "a JSON-RPC message is an object with `jsonrpc`, and `method` or `result`",
        );
    };
    let (Some(method), Some(id)) = (map.get("method").and_then(Value::as_str), map.get("id"))
    else {
        return None;
    };
    if !usable_id(id) {
        return malformed("the request's `id` must be a string or an integer");
    }
    read_request(method, id, message)
        .err()
        .map(|reply| (reply, false))
}

/// Whether protocol `version` has JSON-RPC batches (2025-03-26 and older).
pub(crate) fn has_batches(version: &str) -> bool {
    version <= LAST_VERSION_WITH_BATCHES
}

/// Whether JSON-RPC lets `id` name a request MCP can answer: a string or an integer.
fn usable_id(id: &Value) -> bool {
    id.is_string() || id.is_i64() || id.is_u64()
}

/// A JSON-RPC error reply; `id` is `null` when the request had no usable one.
pub(crate) fn error_reply(id: Option<Value>, code: i64, message: &str) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id.unwrap_or(Value::Null),
        "error": {"code": code, "message": message},
    })
}

/// Why the parameters of a standard method could not be read, for the -32602 message.
fn params_problem(method: &str, params: Option<&Value>) -> String {
    let Some(params) = params else {
        return match method {
            "tools/call" => {
                "`tools/call` needs `params`: {\"name\": TOOL, \"arguments\": {…}}".to_owned()
            }
            _ => format!("`{method}` needs `params`"),
        };
    };
    match method {
        "tools/call" => match serde_json::from_value::<CallToolRequestParams>(params.clone()) {
            Err(error) => format!(
                "invalid params for `tools/call`: {error}; it takes {{\"name\": TOOL, \
                 \"arguments\": {{…}}}} with the arguments as a JSON object"
            ),
            Ok(_) => "invalid params for `tools/call`".to_owned(),
        },
        _ => format!("invalid params for `{method}`"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn initialize(gate: &mut Gate, version: &str) {
        let inbound = gate.inbound(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": version, "capabilities": {},
                "clientInfo": {"name": "t", "version": "0"}}})
            .to_string()
            .as_bytes(),
        );
        assert_eq!(inbound.deliver.len(), 1);
        let answer = json!({"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": version}});
        assert_eq!(gate.outbound(answer.clone()), vec![answer]);
        assert_eq!(gate.version(), Some(version));
    }

    fn inbound(gate: &mut Gate, message: Value) -> Inbound {
        gate.inbound(message.to_string().as_bytes())
    }

    #[test]
    fn bad_tools_call_params_are_invalid_params_with_the_id() {
        let mut gate = Gate::new();
        initialize(&mut gate, "2025-06-18");
        for (id, params) in [
            (json!(1), None),
            (json!("two"), Some(json!({}))),
            (json!(3), Some(json!({"name": "read", "arguments": "str"}))),
        ] {
            let mut message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call"});
            if let Some(params) = params {
                message["params"] = params;
            }
            let out = inbound(&mut gate, message);
            assert!(out.deliver.is_empty());
            assert_eq!(out.replies.len(), 1);
            assert_eq!(out.replies[0]["id"], id);
            assert_eq!(out.replies[0]["error"]["code"], INVALID_PARAMS);
        }
        // A good one goes through, and so does an unknown method (rmcp says -32601); each has
        // its own id (the first is still running when the second comes).
        for (id, method) in [(9, "tools/call"), (10, "no/such")] {
            let out = inbound(
                &mut gate,
                json!({"jsonrpc": "2.0", "id": id, "method": method,
                    "params": {"name": "read", "arguments": {"path": "x"}}}),
            );
            assert_eq!((out.deliver.len(), out.replies.len()), (1, 0), "{method}");
        }
    }

    #[test]
    fn notifications_and_responses_before_initialize_are_ignored() {
        let mut gate = Gate::new();
        let out = inbound(
            &mut gate,
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        );
        assert!(out.deliver.is_empty() && out.replies.is_empty());
        let out = inbound(&mut gate, json!({"jsonrpc": "2.0", "id": 5, "result": {}}));
        assert!(out.deliver.is_empty() && out.replies.is_empty());
        initialize(&mut gate, "2025-06-18");
        let out = inbound(
            &mut gate,
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        );
        assert_eq!(out.deliver.len(), 1);
    }

    #[test]
    fn unusable_ids_and_garbage_get_a_null_id() {
        let mut gate = Gate::new();
        for text in [
            "garbage".to_owned(),
            json!({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}).to_string(),
            json!({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}).to_string(),
            "[]".to_owned(),
            "7".to_owned(),
        ] {
            let out = gate.inbound(text.as_bytes());
            assert!(out.deliver.is_empty(), "{text}");
            assert_eq!(out.replies.len(), 1, "{text}");
            assert!(out.replies[0]["error"]["code"].is_i64(), "{text}");
            assert_eq!(out.replies[0].get("id"), Some(&Value::Null), "{text}");
        }
        // rmcp's own id-less errors get one too.
        let out = gate.outbound(json!({"jsonrpc": "2.0", "error": {"code": -1, "message": "x"}}));
        assert_eq!(out[0].get("id"), Some(&Value::Null));
    }

    #[test]
    fn a_batch_is_split_and_its_replies_gathered_into_one_array() {
        let mut gate = Gate::new();
        initialize(&mut gate, "2025-03-26");
        let out = inbound(
            &mut gate,
            json!([
                {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call"},
                {"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
            ]),
        );
        assert_eq!(out.deliver.len(), 3, "ping, the notification, tools/list");
        assert!(out.replies.is_empty(), "held until the batch is answered");
        assert!(
            gate.outbound(json!({"jsonrpc": "2.0", "id": 3, "result": {"tools": []}}))
                .is_empty()
        );
        // Not of the batch: written at once.
        let other = json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}});
        assert_eq!(gate.outbound(other.clone()), vec![other]);
        let out = gate.outbound(json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
        assert_eq!(out.len(), 1);
        let replies = out[0].as_array().unwrap();
        let mut ids: Vec<i64> = replies.iter().map(|r| r["id"].as_i64().unwrap()).collect();
        ids.sort_unstable();
        assert_eq!(ids, [1, 2, 3]);
        let invalid = replies.iter().find(|r| r["id"] == 2).unwrap();
        assert_eq!(invalid["error"]["code"], INVALID_PARAMS);
    }

    #[test]
    fn a_request_id_in_flight_is_refused_until_it_is_answered_or_cancelled() {
        let mut gate = Gate::new();
        initialize(&mut gate, "2025-06-18");
        let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"});
        assert_eq!(inbound(&mut gate, call.clone()).deliver.len(), 1);
        // The same id while the first runs: refused, not delivered.
        let out = inbound(&mut gate, call.clone());
        assert!(out.deliver.is_empty());
        assert_eq!(out.replies[0]["id"], 7);
        assert_eq!(out.replies[0]["error"]["code"], INVALID_REQUEST);
        // Nor inside a batch of a session that has batches.
        let mut batched = Gate::new();
        initialize(&mut batched, "2025-03-26");
        assert_eq!(inbound(&mut batched, call.clone()).deliver.len(), 1);
        let out = inbound(&mut batched, json!([call.clone()]));
        assert!(out.deliver.is_empty());
        assert_eq!(out.replies[0][0]["error"]["code"], INVALID_REQUEST);
        // Answered, the id is free again.
        let answer = json!({"jsonrpc": "2.0", "id": 7, "result": {"tools": []}});
        assert_eq!(gate.outbound(answer.clone()), vec![answer]);
        assert_eq!(inbound(&mut gate, call.clone()).deliver.len(), 1);
        // Cancelled, too (a cancelled request is not answered).
        inbound(
            &mut gate,
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 7}}),
        );
        assert_eq!(inbound(&mut gate, call).deliver.len(), 1);
        // A string id is another id than the number.
        let named = json!({"jsonrpc": "2.0", "id": "7", "method": "tools/list"});
        assert_eq!(inbound(&mut gate, named).deliver.len(), 1);
    }

    #[test]
    fn a_cancelled_batch_member_is_not_waited_for() {
        let mut gate = Gate::new();
        initialize(&mut gate, "2025-03-26");
        let out = inbound(
            &mut gate,
            json!([
                {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                {"jsonrpc": "2.0", "id": 2, "method": "ping"},
            ]),
        );
        assert_eq!(out.deliver.len(), 2);
        assert!(
            gate.outbound(json!({"jsonrpc": "2.0", "id": 1, "result": {}}))
                .is_empty()
        );
        let out = inbound(
            &mut gate,
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": 2}}),
        );
        assert_eq!(out.deliver.len(), 1);
        assert_eq!(out.replies.len(), 1);
        assert_eq!(out.replies[0].as_array().unwrap().len(), 1);
    }

    #[test]
    fn a_batch_of_notifications_only_is_not_answered_and_bad_batches_are() {
        let mut gate = Gate::new();
        // Before initialize: refused, with a null id.
        let batch = json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]);
        let out = inbound(&mut gate, batch.clone());
        assert!(out.deliver.is_empty());
        assert_eq!(out.replies[0]["id"], Value::Null);
        initialize(&mut gate, "2025-03-26");
        let out = inbound(
            &mut gate,
            json!([{"jsonrpc": "2.0", "method": "notifications/initialized"}]),
        );
        assert_eq!((out.deliver.len(), out.replies.len()), (1, 0));
        // initialize inside a batch, a duplicate id.
        let out = inbound(
            &mut gate,
            json!([
                {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}},
                {"jsonrpc": "2.0", "id": 2, "method": "ping"},
                {"jsonrpc": "2.0", "id": 2, "method": "ping"},
            ]),
        );
        assert_eq!(out.deliver.len(), 1);
        let out = gate.outbound(json!({"jsonrpc": "2.0", "id": 2, "result": {}}));
        let replies = out[0].as_array().unwrap();
        assert_eq!(replies.len(), 3);
        assert_eq!(
            replies
                .iter()
                .filter(|r| r["error"]["code"] == INVALID_REQUEST)
                .count(),
            2
        );
    }

    #[cfg(feature = "http")]
    #[test]
    fn an_http_message_is_vetted_without_session_state() {
        let vet = |message: &str| vet_message(&serde_json::from_str(message).unwrap());
        let (reply, malformed) = vet("7").unwrap();
        assert_eq!(
            (reply["error"]["code"].as_i64(), malformed),
            (Some(INVALID_REQUEST), true)
        );
        assert_eq!(reply["id"], Value::Null);
        let (reply, malformed) = vet(r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#).unwrap();
        assert_eq!((reply["id"].clone(), malformed), (Value::Null, true));
        let (reply, malformed) =
            vet(r#"{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{}}"#).unwrap();
        assert_eq!(
            (reply["error"]["code"].as_i64(), malformed),
            (Some(INVALID_PARAMS), false)
        );
        assert_eq!(reply["id"], "x");
        for fine in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read"}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"no/such"}"#,
        ] {
            assert!(vet(fine).is_none(), "{fine}");
        }
        assert!(has_batches("2024-11-05") && has_batches("2025-03-26"));
        assert!(!has_batches("2025-06-18") && !has_batches("2026-07-28"));
    }

    #[test]
    fn batches_are_refused_after_2025_03_26() {
        let mut gate = Gate::new();
        initialize(&mut gate, "2025-06-18");
        let out = inbound(
            &mut gate,
            json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]),
        );
        assert!(out.deliver.is_empty());
        assert_eq!(out.replies.len(), 1);
        assert_eq!(out.replies[0]["error"]["code"], INVALID_REQUEST);
        assert_eq!(out.replies[0]["id"], Value::Null);
        let text = out.replies[0]["error"]["message"].as_str().unwrap();
        assert!(text.contains("2025-06-18"), "{text}");
    }
}

//! Calls over HTTP take their place in their session's queue in the order the front reads them
//! as the stdio transport does for the lines it reads: a `tools/call` POSTed after
//! another one's POST was read never overtakes it when their claims conflict, however rmcp's
//! session worker then schedules the two handlers. A call the front admitted but rmcp refused
//! (a bad header, a session that ended), or whose client left before rmcp took it, leaves the
//! queue at once.
//!
//! A request rmcp serves without a session (protocol 2026-07-28: the version in its own `_meta`
//! or in its `MCP-Protocol-Version`) never joins a session's queue, even when it also names one
//! in `Mcp-Session-Id`: no handler of that session would ever take its place, and the session's
//! later calls would wait for it forever.

use bytes::Bytes;
use http::{HeaderMap, Request, Response, StatusCode};
use http_body_util::Full;
use rmcp::model::{
    ClientJsonRpcMessage, ClientRequest, GetMeta, JsonRpcMessage, ProtocolVersion, RequestId,
};
use serde_json::Value;

use super::{Body, Front};
use crate::Server;

/// A `tools/call` the front admitted in its session's queue and has not yet handed to rmcp.
/// Dropped before rmcp took it (refused, or the client went away while the front waited on
/// rmcp), its place goes.
#[derive(Default)]
pub(super) struct Arrived {
    call: Option<(Server, RequestId)>,
}

impl Drop for Arrived {
    fn drop(&mut self) {
        if let Some((server, id)) = self.call.take() {
            server.forget(&id);
        }
    }
}

/// Whether rmcp serves `request` without a session (a server of its own, dropped after the
/// reply), as its routing decides: the request's `_meta` carries everything 2026-07-28 asks of
/// it, or the version it names (in `_meta`, else in `MCP-Protocol-Version`) has no `initialize`.
pub(super) fn served_without_session(headers: &HeaderMap, request: &ClientRequest) -> bool {
    let meta = request.get_meta();
    if meta
        .missing_required_keys(&ProtocolVersion::V_2026_07_28)
        .is_empty()
    {
        return true;
    }
    let named = meta
        .protocol_version()
        .map(|version| version.as_str().to_owned());
    let named = named.or_else(|| {
        headers
            .get("mcp-protocol-version")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
    });
    named.is_some_and(|version| version.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// [`served_without_session`] of a message as read from a body; `false` for anything rmcp
/// cannot read as a request.
pub(super) fn value_served_without_session(headers: &HeaderMap, message: &Value) -> bool {
    match serde_json::from_value::<ClientJsonRpcMessage>(message.clone()) {
        Ok(JsonRpcMessage::Request(request)) => served_without_session(headers, &request.request),
        _ => false,
    }
}

impl Front {
    /// Takes a POSTed message as the front reads it: a `tools/call` of an open session joins
    /// that session's queue now. Call it synchronously, in the order messages are read.
    pub(super) fn arrive(&self, headers: &HeaderMap, message: &Value) -> Arrived {
        if message.get("method").and_then(Value::as_str) != Some("tools/call") {
            return Arrived::default();
        }
        let Some(server) = self.sessions.server(headers) else {
            return Arrived::default();
        };
        // Read as rmcp will read it; a message rmcp cannot read is not admitted.
        let Ok(parsed) = serde_json::from_value::<ClientJsonRpcMessage>(message.clone()) else {
            return Arrived::default();
        };
        let JsonRpcMessage::Request(request) = &parsed else {
            return Arrived::default();
        };
        if !matches!(request.request, ClientRequest::CallToolRequest(_)) {
            return Arrived::default();
        }
        if served_without_session(headers, &request.request) {
            return Arrived::default();
        }
        let id = request.id.clone();
        server.admit(&parsed);
        Arrived {
            call: Some((server, id)),
        }
    }

    /// Hands a request to rmcp: once rmcp took it (200), the call's handler takes the place
    /// [`arrive`](Self::arrive) gave it; otherwise the place goes.
    pub(super) async fn to_rmcp(
        &self,
        request: Request<Full<Bytes>>,
        mut arrived: Arrived,
    ) -> Response<Body> {
        let response = self.rmcp.handle(request).await;
        if response.status() == StatusCode::OK {
            arrived.call = None;
        }
        response
    }
}

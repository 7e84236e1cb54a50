//! JSON-RPC batches over HTTP (protocol 2025-03-26 and older), which rmcp does not serve: each
//! message goes to rmcp as a POST of its own and the replies come back as one array.

use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use serde_json::Value;

use super::{Body, Front, json, respond};
use crate::gate::{self, error_reply};

/// The reply to request `id` in rmcp's answer to one POST: its JSON body, or the `data:` of its
/// event stream; an error reply that says what came instead when there is none.
async fn reply_in(response: Response<Body>, id: Value) -> Value {
    let status = response.status();
    let body = match response.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(never) => match never {},
    };
    let text = String::from_utf8_lossy(&body);
    let is_reply = |message: &Value| {
        message.get("id") == Some(&id)
            && (message.get("result").is_some() || message.get("error").is_some())
    };
    if let Ok(message) = serde_json::from_str::<Value>(&text)
        && is_reply(&message)
    {
        return message;
    }
    text.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(is_reply)
        .unwrap_or_else(|| {
            error_reply(
                Some(id.clone()),
                gate::INVALID_REQUEST,
                &format!("HTTP {status}: {}", text.trim()),
            )
        })
}

impl Front {
    /// Answers a JSON-RPC batch POST: under protocol 2025-03-26 and older (the
    /// `MCP-Protocol-Version` header, absent meaning 2025-03-26) each message goes to rmcp as a
    /// POST of its own, concurrently, and the replies to its requests come back as one JSON
    /// array (202 when it held no request). What rmcp streams besides a reply (progress, a
    /// question to the person) has no place in a batch's answer and is not relayed.
    pub(super) async fn batch(
        self: &Arc<Self>,
        parts: &http::request::Parts,
        items: Vec<Value>,
    ) -> Response<Body> {
        let version = parts
            .headers
            .get("mcp-protocol-version")
            .and_then(|version| version.to_str().ok())
            .unwrap_or(gate::LAST_VERSION_WITH_BATCHES);
        let refuse = |why: String| {
            json(
                StatusCode::BAD_REQUEST,
                &error_reply(None, gate::INVALID_REQUEST, &why),
            )
        };
        if !gate::has_batches(version) {
            return refuse(format!(
                "a batch: protocol {version} has no JSON-RPC batches (they ended with {}): send \
                 one message per POST",
                gate::LAST_VERSION_WITH_BATCHES
            ));
        }
        if items.is_empty() {
            return refuse("an empty batch: send at least one message".to_owned());
        }
        let mut replies = Vec::new();
        let mut members = tokio::task::JoinSet::new();
        for item in items {
            let id = item.get("id").cloned();
            if item.get("method").and_then(Value::as_str) == Some("initialize") {
                replies.push(error_reply(
                    id,
                    gate::INVALID_REQUEST,
                    "`initialize` may not be part of a batch: send it on its own",
                ));
                continue;
            }
            if let Some((reply, _)) = gate::vet_message(&item) {
                replies.push(reply);
                continue;
            }
            let answers = item.get("method").is_some().then_some(id).flatten();
            let mut request = Request::new(Full::new(Bytes::from(item.to_string())));
            *request.method_mut() = Method::POST;
            *request.uri_mut() = parts.uri.clone();
            *request.headers_mut() = parts.headers.clone();
            request.headers_mut().remove(header::CONTENT_LENGTH);
            let front = Arc::clone(self);
            members.spawn(async move {
                let response = front.rmcp.handle(request).await;
                let id = answers?;
                Some(reply_in(response, id).await)
            });
        }
        while let Some(member) = members.join_next().await {
            if let Ok(Some(reply)) = member {
                replies.push(reply);
            }
        }
        if replies.is_empty() {
            return respond(StatusCode::ACCEPTED, "application/json", String::new());
        }
        json(StatusCode::OK, &Value::Array(replies))
    }
}

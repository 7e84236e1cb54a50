//! JSON-RPC batches over HTTP (protocol 2025-03-26 and older), which rmcp does not serve: each
//! message goes to rmcp as a POST of its own and the replies come back as one array.
//!
//! What a member's call streams before its reply (progress notifications, a question to the
//! person) is relayed: as the 2025-03-26 specification allows for a POST holding requests, the
//! answer is then an event stream carrying those messages as they come and, last, the batch's
//! replies as one array. A batch whose calls stream nothing is answered with plain JSON.
//!
//! A batch holds at most `[mcp] max_batch` messages (one past it is refused whole, -32600): each
//! member costs rmcp a request of its own, and rmcp's session does work in proportion to the
//! requests it holds for each one it serves. A `ping` of an open session is answered here, at
//! no cost to rmcp. A request whose id is another's of the same batch, or of a request of the
//! session in flight, is answered -32600 and not run; the others run and are answered.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode, header};
use http_body_util::channel::Channel;
use http_body_util::{BodyExt, Full};
use serde_json::Value;
use tokio::sync::mpsc;

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
    let is_reply = |message: &Value| is_reply(message, &id);
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

/// What a member of a batch heard from rmcp.
enum Heard {
    /// A message streamed before the reply (a progress notification, a request to the client).
    Message(Value),
    /// The reply to the member's request.
    Reply(Value),
}

/// Relays rmcp's answer to member request `id`: each message its event stream carries before
/// the reply, then the reply (an error reply that says what came instead when there is none).
async fn relay(response: Response<Body>, id: Value, heard: &mpsc::Sender<Heard>) {
    let is_stream = response.status() == StatusCode::OK
        && response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|kind| kind.starts_with("text/event-stream"));
    if !is_stream {
        let _ = heard.send(Heard::Reply(reply_in(response, id).await)).await;
        return;
    }
    let mut body = response.into_body();
    let mut read = Vec::new();
    loop {
        while let Some(event) = next_event(&mut read) {
            let Some(message) = event_message(&event) else {
                continue;
            };
            if is_reply(&message, &id) {
                let _ = heard.send(Heard::Reply(message)).await;
                return;
            }
            if heard.send(Heard::Message(message)).await.is_err() {
                return;
            }
        }
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    // Events end with a blank line, whatever the line ends.
                    read.extend(data.iter().filter(|byte| **byte != b'\r'));
                }
            }
            Some(Err(never)) => match never {},
            None => break,
        }
    }
    let reply = error_reply(
        Some(id),
        gate::INVALID_REQUEST,
        "the server's event stream for this request ended without its reply",
    );
    let _ = heard.send(Heard::Reply(reply)).await;
}

fn is_reply(message: &Value, id: &Value) -> bool {
    message.get("id") == Some(id)
        && (message.get("result").is_some() || message.get("error").is_some())
}

/// Takes the first whole event (up to a blank line) out of `read`.
fn next_event(read: &mut Vec<u8>) -> Option<String> {
    let end = read.windows(2).position(|pair| pair == b"\n\n")?;
    let event: Vec<u8> = read.drain(..end + 2).collect();
    Some(String::from_utf8_lossy(&event).into_owned())
}

/// The JSON-RPC message an event carries in its `data:` lines; `None` for comments, priming
/// and `retry:` events.
fn event_message(event: &str) -> Option<Value> {
    serde_json::from_str(&event_data(event)?).ok()
}

/// What an event's `data:` lines carry, joined; `None` when they carry nothing (comments,
/// priming and `retry:` events).
pub(super) fn event_data(event: &str) -> Option<String> {
    let data: Vec<&str> = event
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(|data| data.strip_prefix(' ').unwrap_or(data))
        .collect();
    let data = data.join("\n");
    (!data.trim().is_empty()).then_some(data)
}

/// Whether the request's `Accept` takes `text/event-stream`.
fn accepts_event_stream(headers: &HeaderMap) -> bool {
    super::plain_json::accepts(headers, "text/event-stream")
}

/// One server-sent event carrying `message`.
fn event(message: &Value) -> Bytes {
    Bytes::from(format!("event: message\ndata: {message}\n\n"))
}

/// The answer to a batch once a member streamed `first`: an event stream of `first`, of what
/// the members stream next, and last of every reply (`replies`, those heard later) as one array.
fn streamed(
    first: Value,
    mut replies: Vec<Value>,
    mut hearing: mpsc::Receiver<Heard>,
) -> Response<Body> {
    let (mut events, sent) = Channel::<Bytes, Infallible>::new(16);
    tokio::spawn(async move {
        if events.send_data(event(&first)).await.is_err() {
            return;
        }
        while let Some(member) = hearing.recv().await {
            match member {
                Heard::Message(message) => {
                    if events.send_data(event(&message)).await.is_err() {
                        // The client went: the members' calls end as a lone POST's would.
                        return;
                    }
                }
                Heard::Reply(reply) => replies.push(reply),
            }
        }
        let _ = events.send_data(event(&Value::Array(replies))).await;
    });
    let mut response = Response::new(sent.boxed());
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        header::HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-cache"),
    );
    response
}

impl Front {
    /// The refusal of a batch of `members` messages, past `[mcp] max_batch`.
    pub(super) fn too_large(&self, members: usize) -> Response<Body> {
        json(
            StatusCode::BAD_REQUEST,
            &error_reply(
                None,
                gate::INVALID_REQUEST,
                &format!(
                    "a batch of {members} messages: at most {} are taken in one ([mcp] \
                     max_batch); send it in smaller batches",
                    self.max_batch
                ),
            ),
        )
    }

    /// Answers a JSON-RPC batch POST: under protocol 2025-03-26 and older (the
    /// `MCP-Protocol-Version` header, absent meaning 2025-03-26) each message goes to rmcp as a
    /// POST of its own, concurrently, and the replies to its requests come back as one JSON
    /// array (202 when it held no request). When a member's call streams a message before its
    /// reply (progress, a question to the person) and the client takes event streams, the
    /// answer becomes one: see the module docs.
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
        if items.len() > self.max_batch {
            return self.too_large(items.len());
        }
        let streams = accepts_event_stream(&parts.headers);
        let in_session = self.sessions.server(&parts.headers).is_some();
        let mut replies = Vec::new();
        let mut ids = std::collections::HashSet::new();
        let (heard, mut hearing) = mpsc::channel(64);
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
            let mut claimed = None;
            if let Some(id) = &answers {
                let unique = ids.insert(id.to_string());
                let claim = if unique {
                    self.sessions.claim_id(&parts.headers, id)
                } else {
                    Err(())
                };
                match claim {
                    Ok(claim) => claimed = claim,
                    Err(()) => {
                        replies.push(super::duplicate_id(id.clone()));
                        continue;
                    }
                }
                if in_session && item.get("method").and_then(Value::as_str) == Some("ping") {
                    replies.push(serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {}}));
                    continue;
                }
            }
            let mut request = Request::new(Full::new(Bytes::from(item.to_string())));
            *request.method_mut() = Method::POST;
            *request.uri_mut() = parts.uri.clone();
            *request.headers_mut() = parts.headers.clone();
            request.headers_mut().remove(header::CONTENT_LENGTH);
            // Admitted here, in the batch's order, before the members race to rmcp.
            let arrived = self.arrive(&parts.headers, &item);
            let front = Arc::clone(self);
            let heard = heard.clone();
            tokio::spawn(async move {
                let _claimed = claimed;
                let response = front.to_rmcp(request, arrived).await;
                if let Some(id) = answers {
                    relay(response, id, &heard).await;
                }
            });
        }
        // Every member holds a sender until it is done: the channel ends with the last.
        drop(heard);
        while let Some(member) = hearing.recv().await {
            match member {
                Heard::Reply(reply) => replies.push(reply),
                Heard::Message(message) if streams => {
                    return streamed(message, replies, hearing);
                }
                Heard::Message(message) => {
                    tracing::debug!(%message, "not relayed: the client takes no event stream");
                }
            }
        }
        if replies.is_empty() {
            return respond(StatusCode::ACCEPTED, "application/json", String::new());
        }
        json(StatusCode::OK, &Value::Array(replies))
    }
}

/// The members of `body` when it is one JSON array, counted without building them (so that a
/// batch past `[mcp] max_batch` is refused before its messages take any memory); `None` when
/// it is not an array or not well-formed JSON (the parse that follows says why).
pub(super) fn members(body: &[u8]) -> Option<usize> {
    struct Count;
    impl<'de> serde::de::Visitor<'de> for Count {
        type Value = usize;

        fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            formatter.write_str("a JSON array")
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<usize, A::Error> {
            let mut count = 0;
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
                count += 1;
            }
            Ok(count)
        }
    }
    let start = body.iter().position(|byte| !byte.is_ascii_whitespace())?;
    if body[start] != b'[' {
        return None;
    }
    let mut reader = serde_json::Deserializer::from_slice(body);
    serde::Deserializer::deserialize_seq(&mut reader, Count).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_taken_whole_and_only_data_counts() {
        let progress = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#;
        let mut read =
            b"id: 0\nretry: 3000\ndata:\n\n: keep-alive\n\nevent: message\ndata: ".to_vec();
        let first = next_event(&mut read).unwrap();
        assert_eq!(
            event_message(&first),
            None,
            "a priming event carries no message"
        );
        let comment = next_event(&mut read).unwrap();
        assert_eq!(event_message(&comment), None);
        // Half an event: not yet.
        assert_eq!(next_event(&mut read), None);
        read.extend_from_slice(progress.as_bytes());
        read.extend_from_slice(b"\n\nda");
        let event = next_event(&mut read).unwrap();
        assert_eq!(
            event_message(&event),
            Some(serde_json::from_str::<Value>(progress).unwrap())
        );
        assert_eq!(read, b"da");
    }

    #[test]
    fn a_reply_answers_its_own_id_only() {
        let reply = serde_json::json!({"jsonrpc": "2.0", "id": 3, "result": {}});
        assert!(is_reply(&reply, &serde_json::json!(3)));
        assert!(!is_reply(&reply, &serde_json::json!("3")));
        let request =
            serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "elicitation/create"});
        assert!(!is_reply(&request, &serde_json::json!(3)));
    }

    #[test]
    fn event_streams_are_taken_when_accepted() {
        let with = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::ACCEPT, value.parse().unwrap());
            headers
        };
        assert!(accepts_event_stream(&with(
            "application/json, text/event-stream"
        )));
        assert!(accepts_event_stream(&with("*/*")));
        assert!(!accepts_event_stream(&with("application/json")));
        assert!(!accepts_event_stream(&HeaderMap::new()));
    }

    #[test]
    fn members_are_counted_without_building_them() {
        assert_eq!(
            members(br#" [{"id": 1, "method": "ping"}, {"a": [1, 2]}, 3]"#),
            Some(3)
        );
        assert_eq!(members(b"[]"), Some(0));
        assert_eq!(members(br#"{"id": 1}"#), None);
        assert_eq!(members(b"[1, 2"), None);
    }
}

//! A request's answer as one plain JSON body when nothing else comes before it.
//!
//! rmcp answers every request of a session with an event stream (`text/event-stream`), even when
//! the stream carries nothing but the reply. A client's SSE reader bounds each event (the
//! official Python SDK at 1 MiB by default), so a large result (an image `read` sends, 4 MiB of
//! base64) fails there while the same result over stdio arrives. When the client accepts
//! `application/json` (every Streamable HTTP client must), the server reads rmcp's stream and:
//!
//! - if the first message is the reply, answers with that message alone as `application/json`
//!   (no event size applies);
//! - if something comes first (a progress notification, a question to the person), or nothing
//!   has come after [`JSON_WAIT`] (a long call: the client then gets the stream and its
//!   keep-alive comments instead of a silent connection), it streams as rmcp would, the events
//!   read so far first.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::{HeaderMap, HeaderValue, Response, header};
use http_body_util::BodyExt;
use hyper::body::{Body as HttpBody, Frame};
use serde_json::Value;

use super::Body;

/// How long the server waits for a reply to send as plain JSON before it streams instead.
pub(crate) const JSON_WAIT: Duration = Duration::from_secs(30);

/// Whether the request's `Accept` takes `application/json`.
pub(crate) fn accepts_json(headers: &HeaderMap) -> bool {
    accepts(headers, "application/json")
}

/// Whether the request's `Accept` takes the media type `media` (named, or `*/*`).
pub(super) fn accepts(headers: &HeaderMap, media: &str) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|item| item.split(';').next().unwrap_or_default().trim())
        .any(|kind| kind.eq_ignore_ascii_case(media) || kind == "*/*")
}

/// rmcp's answer to one request, as plain JSON when its first message is the reply (see the
/// module docs); any other answer unchanged.
pub(crate) async fn when_alone(response: Response<Body>) -> Response<Body> {
    let is_stream = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|kind| kind.starts_with("text/event-stream"));
    if response.status() != http::StatusCode::OK || !is_stream {
        return response;
    }
    let (mut parts, mut body) = response.into_parts();
    let mut read = BytesMut::new();
    let deadline = tokio::time::sleep(JSON_WAIT);
    tokio::pin!(deadline);
    loop {
        match first_message(&read) {
            First::Reply(message) => {
                parts.headers.insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                parts.headers.remove(header::CACHE_CONTROL);
                parts.headers.remove(header::CONTENT_LENGTH);
                let body = http_body_util::Full::new(Bytes::from(message)).boxed();
                return Response::from_parts(parts, body);
            }
            First::Other => break,
            First::NotYet => {}
        }
        let frame = tokio::select! {
            frame = body.frame() => frame,
            () = &mut deadline => break,
        };
        match frame {
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    read.extend_from_slice(&data);
                }
            }
            Some(Err(never)) => match never {},
            None => break,
        }
    }
    let body = Prefixed {
        prefix: Some(read.freeze()).filter(|bytes| !bytes.is_empty()),
        rest: body,
    };
    Response::from_parts(parts, BodyExt::boxed(body))
}

/// What the first message of an event stream read so far is.
#[derive(Debug, PartialEq)]
enum First {
    /// No whole event with data yet.
    NotYet,
    /// A JSON-RPC reply (a result or an error): its text.
    Reply(String),
    /// Something else comes first: the answer must stream.
    Other,
}

/// The first event with data in `read` (events end with a blank line; comments, priming and
/// `retry:` events carry none).
fn first_message(read: &[u8]) -> First {
    let text = String::from_utf8_lossy(read);
    let text = text.replace("\r\n", "\n");
    let mut events: Vec<&str> = text.split("\n\n").collect();
    // What follows the last blank line is an event still being read.
    events.pop();
    for event in events {
        let Some(data) = super::batch::event_data(event) else {
            continue;
        };
        return match serde_json::from_str::<Value>(&data) {
            Ok(message)
                if message.get("id").is_some()
                    && (message.get("result").is_some() || message.get("error").is_some()) =>
            {
                First::Reply(data)
            }
            _ => First::Other,
        };
    }
    First::NotYet
}

/// A body that sends `prefix` (what was read already), then the rest of `rest`.
struct Prefixed {
    prefix: Option<Bytes>,
    rest: Body,
}

impl HttpBody for Prefixed {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if let Some(prefix) = self.prefix.take() {
            return Poll::Ready(Some(Ok(Frame::data(prefix))));
        }
        Pin::new(&mut self.rest).poll_frame(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_event_with_data_decides() {
        let reply = r#"{"jsonrpc":"2.0","id":3,"result":{}}"#;
        let progress = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{}}"#;
        assert_eq!(first_message(b""), First::NotYet);
        assert_eq!(
            first_message(b"id: 0\nretry: 3000\ndata:\n\n"),
            First::NotYet
        );
        assert_eq!(first_message(b": keep-alive\n\n"), First::NotYet);
        let half = format!("data: {}", &reply[..10]);
        assert_eq!(first_message(half.as_bytes()), First::NotYet);
        let whole = format!("id: 0\nretry: 3000\ndata:\n\nevent: message\ndata: {reply}\n\n");
        assert_eq!(
            first_message(whole.as_bytes()),
            First::Reply(reply.to_owned())
        );
        let crlf = format!("data: {reply}\r\n\r\n");
        assert_eq!(
            first_message(crlf.as_bytes()),
            First::Reply(reply.to_owned())
        );
        let streamed = format!("data: {progress}\n\ndata: {reply}\n\n");
        assert_eq!(first_message(streamed.as_bytes()), First::Other);
    }

    #[test]
    fn accept_headers() {
        let with = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::ACCEPT, value.parse().unwrap());
            headers
        };
        assert!(accepts_json(&with("application/json, text/event-stream")));
        assert!(accepts_json(&with(
            "text/event-stream;q=1, Application/JSON;q=0.5"
        )));
        assert!(!accepts_json(&with("text/event-stream")));
        assert!(!accepts_json(&HeaderMap::new()));
    }
}

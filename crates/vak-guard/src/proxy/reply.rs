//! The proxy's own answers: plain text, a given body, nothing.

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Empty, Full};

pub(super) type ProxyBody = BoxBody<Bytes, hyper::Error>;

/// `status` with `text` as a plain-text body, and the connection closed after it.
pub(super) fn plain(status: StatusCode, text: &str) -> Response<ProxyBody> {
    let mut response = Response::new(full(format!("{text}\n")));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

pub(super) fn full(text: String) -> ProxyBody {
    Full::new(Bytes::from(text))
        .map_err(|never| match never {})
        .boxed()
}

pub(super) fn empty() -> ProxyBody {
    Empty::new().map_err(|never| match never {}).boxed()
}

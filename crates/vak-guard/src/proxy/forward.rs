//! An absolute-form request (`GET http://host/path`): check the URL, dial through the dialer,
//! forward the request in origin form on that fresh connection, relay the answer.

use std::sync::Arc;

use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use url::Url;

use super::Requested;
use super::dialer::DialError;
use super::record::{Blocked, State};
use super::reply::{ProxyBody, plain};

pub(super) async fn forward(state: Arc<State>, request: Request<Incoming>) -> Response<ProxyBody> {
    let uri = request.uri().clone();
    if uri.scheme_str() != Some("http") || uri.authority().is_none() {
        return plain(
            StatusCode::BAD_REQUEST,
            "this proxy serves absolute http:// requests and CONNECT only",
        );
    }
    let Ok(mut url) = Url::parse(&uri.to_string()) else {
        return plain(StatusCode::BAD_REQUEST, "unparsable request URL");
    };
    url.set_fragment(None);
    let requested = Requested::Url(&url);
    match state.dialer.check_url(&url) {
        Ok(()) => {}
        Err(DialError::Denied {
            rule,
            address,
            detail,
        }) => {
            let blocked = Blocked::new(url.as_str(), rule, address, detail);
            return state.refuse(requested, blocked);
        }
        Err(DialError::Failed(reason)) => return plain(StatusCode::BAD_REQUEST, &reason),
    }
    let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
        return plain(StatusCode::BAD_REQUEST, "the request URL names no host");
    };
    let upstream = match state.dial(host, port, requested, url.as_str()).await {
        Ok(upstream) => upstream,
        Err(answer) => return answer,
    };
    let Ok((mut sender, connection)) =
        hyper::client::conn::http1::handshake(TokioIo::new(upstream)).await
    else {
        return state.fail(requested, "the connection to the server failed".into());
    };
    let stop = state.stop.clone();
    tokio::spawn(async move {
        tokio::select! {
            () = stop.cancelled() => {}
            _ = connection => {}
        }
    });

    let (mut parts, body) = request.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    let host_header = &url[url::Position::BeforeHost..url::Position::AfterPort];
    if let Ok(value) = HeaderValue::from_str(host_header) {
        parts.headers.insert(header::HOST, value);
    }
    let origin_form = &url[url::Position::BeforePath..url::Position::AfterQuery];
    parts.uri = match origin_form.parse() {
        Ok(uri) => uri,
        Err(_) => return plain(StatusCode::BAD_REQUEST, "unusable request path"),
    };
    let response = match sender.send_request(Request::from_parts(parts, body)).await {
        Ok(response) => response,
        Err(error) => {
            return state.fail(requested, format!("the server did not answer ({error})"));
        }
    };
    if let Some(watch) = &state.watch {
        let location = response
            .headers()
            .get(header::LOCATION)
            .and_then(|location| location.to_str().ok());
        watch.answered(&url, response.status().as_u16(), location);
    }
    let (mut parts, body) = response.into_parts();
    strip_hop_by_hop(&mut parts.headers);
    Response::from_parts(parts, body.boxed())
}

fn strip_hop_by_hop(headers: &mut HeaderMap) {
    let listed: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in listed {
        headers.remove(name);
    }
    for name in [
        "connection",
        "proxy-connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    ] {
        headers.remove(name);
    }
}

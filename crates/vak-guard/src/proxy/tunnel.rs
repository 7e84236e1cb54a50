//! `CONNECT host:port`: dial through the dialer, answer `200`, then copy bytes both ways.

use std::sync::Arc;

use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;

use super::Requested;
use super::record::State;
use super::reply::{ProxyBody, empty, plain};

pub(super) async fn tunnel(state: Arc<State>, request: Request<Incoming>) -> Response<ProxyBody> {
    let Some(authority) = request.uri().authority().cloned() else {
        return plain(StatusCode::BAD_REQUEST, "CONNECT needs host:port");
    };
    let host = authority.host();
    let port = authority.port_u16().unwrap_or(443);
    let requested = Requested::Tunnel { host, port };
    let upstream = match state.dial(host, port, requested, authority.as_str()).await {
        Ok(upstream) => upstream,
        Err(answer) => return answer,
    };
    let stop = state.stop.clone();
    tokio::spawn(async move {
        let copy = async move {
            let Ok(upgraded) = hyper::upgrade::on(request).await else {
                return;
            };
            let mut upgraded = TokioIo::new(upgraded);
            let mut upstream = upstream;
            let _ = tokio::io::copy_bidirectional(&mut upgraded, &mut upstream).await;
        };
        tokio::select! {
            () = stop.cancelled() => {}
            () = copy => {}
        }
    });
    Response::new(empty())
}

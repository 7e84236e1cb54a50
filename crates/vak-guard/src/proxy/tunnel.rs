//! `CONNECT host:port`: dial through the dialer, answer `200`, then copy bytes both ways.

use std::sync::Arc;

use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;

use super::Requested;
use super::dialer::DialError;
use super::record::{Blocked, State};
use super::reply::{ProxyBody, empty, plain};

pub(super) async fn tunnel(state: Arc<State>, request: Request<Incoming>) -> Response<ProxyBody> {
    let Some(authority) = request.uri().authority().cloned() else {
        return plain(StatusCode::BAD_REQUEST, "CONNECT needs host:port");
    };
    let host = authority.host();
    let port = authority.port_u16().unwrap_or(443);
    let requested = Requested::Tunnel { host, port };
    let upstream = match state.dialer.dial(host, port).await {
        Ok((upstream, _address)) => upstream,
        Err(DialError::Denied {
            rule,
            address,
            detail,
        }) => {
            let blocked = Blocked::new(authority.as_str(), rule, address, detail);
            return state.refuse(requested, blocked);
        }
        Err(DialError::Failed(reason)) => return state.fail(requested, reason),
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

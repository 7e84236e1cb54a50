//! The listener: accept connections, serve each as HTTP/1.1 (with upgrades, for `CONNECT`),
//! and send each request to its handler; everything stops with the proxy.

use std::convert::Infallible;
use std::sync::Arc;

use http::{Method, Request, Response};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use super::record::State;
use super::reply::ProxyBody;
use super::{forward, tunnel};

pub(super) async fn accept_loop(listener: TcpListener, state: Arc<State>) {
    loop {
        let accepted = tokio::select! {
            () = state.stop.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _peer)) = accepted else {
            continue;
        };
        let state = Arc::clone(&state);
        let stop = state.stop.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let state = Arc::clone(&state);
                async move { Ok::<_, Infallible>(handle(state, request).await) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            tokio::select! {
                () = stop.cancelled() => {}
                _ = connection => {}
            }
        });
    }
}

async fn handle(state: Arc<State>, request: Request<Incoming>) -> Response<ProxyBody> {
    if request.method() == Method::CONNECT {
        tunnel::tunnel(state, request).await
    } else {
        forward::forward(state, request).await
    }
}

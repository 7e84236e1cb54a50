//! The screening proxy's [`Dialer`] in production: every proxied request dialled through the
//! SSRF guard of `vak-tool-net`, on a chain of the page's scope.

use std::net::SocketAddr;

use tokio::net::TcpStream;
use url::Url;
use vak_tool_core::BoxFuture;
use vak_tool_net::guard::{Chain, Guard, Refusal};

use crate::proxy::{DialError, Dialer};

/// Dials every proxied request through the guard, on a chain of the page's scope: the allow
/// list applies only when the target itself was an allowed address.
pub(crate) struct GuardDialer {
    guard: Guard,
    intranet: bool,
}

impl GuardDialer {
    pub(crate) fn new(guard: Guard, intranet: bool) -> Self {
        Self { guard, intranet }
    }

    fn chain(&self) -> Chain {
        if self.intranet {
            Chain::intranet()
        } else {
            Chain::public()
        }
    }
}

impl Dialer for GuardDialer {
    fn check_url(&self, url: &Url) -> Result<(), DialError> {
        self.guard
            .check_parsed(url, None, &self.chain())
            .map_err(|refusal| dial_error(&refusal, url.port_or_known_default()))
    }

    fn dial<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> BoxFuture<'a, Result<(TcpStream, SocketAddr), DialError>> {
        Box::pin(async move {
            let mut chain = self.chain();
            match self.guard.connect(host, port, &mut chain).await {
                Ok(connection) => Ok((connection.stream, connection.peer)),
                Err(refusal) => Err(dial_error(&refusal, Some(port))),
            }
        })
    }
}

/// A policy refusal becomes a recorded `403`; a host that does not resolve or answer a `502`.
fn dial_error(refusal: &Refusal, port: Option<u16>) -> DialError {
    let detail = refusal.to_string();
    if !refusal.rule().is_policy() {
        return DialError::Failed(detail);
    }
    let first = detail.lines().next().unwrap_or_default();
    let rule = first
        .strip_prefix("refused by the network guard: ")
        .unwrap_or(first)
        .to_owned();
    DialError::Denied {
        rule,
        address: refusal
            .address()
            .map(|address| SocketAddr::new(address, port.unwrap_or(0))),
        detail,
    }
}

#[cfg(test)]
mod tests {
    use vak_tool_net::NetSettings;

    use super::*;
    use crate::target::check_target;

    fn guard() -> Guard {
        Guard::new(&NetSettings::default().with_allow(["127.0.0.2/32"]))
    }

    #[tokio::test]
    async fn the_allow_list_follows_the_target() {
        // An allowed intranet target: its page may use the allow list, nothing more.
        let target = check_target(&guard(), "http://127.0.0.2:8080/")
            .await
            .unwrap();
        assert!(target.intranet);
        let intranet = GuardDialer::new(guard(), true);
        let url = Url::parse("http://127.0.0.2:8080/x").unwrap();
        assert!(intranet.check_url(&url).is_ok());
        let url = Url::parse("http://127.0.0.3:8080/x").unwrap();
        assert!(matches!(
            intranet.check_url(&url),
            Err(DialError::Denied { .. })
        ));

        // A public target's page may not use it at all.
        let public = GuardDialer::new(guard(), false);
        let url = Url::parse("http://127.0.0.2:8080/x").unwrap();
        let Err(DialError::Denied { rule, detail, .. }) = public.check_url(&url) else {
            panic!("a public page reached an allowed intranet address");
        };
        assert!(
            rule.contains("only for a request chain that starts there"),
            "{rule}"
        );
        assert!(detail.contains("[net] allow"), "{detail}");
        let Err(DialError::Denied { address, .. }) = public.dial("127.0.0.2", 8080).await else {
            panic!("a public page dialled an allowed intranet address");
        };
        assert_eq!(address, Some("127.0.0.2:8080".parse().unwrap()));
    }

    #[tokio::test]
    async fn unreachable_is_not_a_refusal() {
        let closed = {
            let listener = std::net::TcpListener::bind("127.0.0.2:0").unwrap();
            listener.local_addr().unwrap()
        };
        let dialer = GuardDialer::new(guard(), true);
        let result = dialer.dial("127.0.0.2", closed.port()).await;
        assert!(matches!(result, Err(DialError::Failed(_))), "{result:?}");
    }
}

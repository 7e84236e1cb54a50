//! The browse target, checked and vetted by the SSRF guard before anything starts.

use url::Url;
use vak_guard::proxy::Scope;
use vak_guard::{Chain, Guard, Refusal};

use crate::error::BrowseError;

/// The target, checked and vetted before anything starts.
pub(crate) struct Target {
    /// The URL as the guard parsed it: what the browser is given.
    pub(crate) url: Url,
    /// Whether the target needed `[net] allow`; then the page's own requests may use it too.
    pub(crate) intranet: bool,
}

impl Target {
    /// Which of the page's requests may use `[net] allow`: every one when the target itself
    /// needed it, none when the target was public.
    pub(crate) fn scope(&self) -> Scope {
        if self.intranet {
            Scope::Intranet
        } else {
            Scope::Public
        }
    }
}

/// The refusal of the target `input`.
fn refused(input: &str) -> impl Fn(Refusal) -> BrowseError + '_ {
    move |refusal: Refusal| BrowseError::TargetRefused {
        url: input.trim().to_owned(),
        reason: refusal.to_string(),
    }
}

/// What needs no lookup: the URL's rules and the egress allow-list (a refused name is never
/// resolved). Also what is checked before the person is asked about the call.
pub(crate) fn check_unresolved(guard: &Guard, input: &str) -> Result<Url, BrowseError> {
    let url = guard
        .check_url(input, &Chain::new())
        .map_err(refused(input))?;
    let host = url.host_str().unwrap_or_default();
    let port = url.port_or_known_default().unwrap_or(0);
    guard.check_egress(host, port).map_err(refused(input))?;
    Ok(url)
}

/// Checks the target's URL and resolves and judges its host, like `webfetch`'s first hop.
pub(crate) async fn check_target(guard: &Guard, input: &str) -> Result<Target, BrowseError> {
    let url = check_unresolved(guard, input)?;
    let host = url.host_str().unwrap_or_default();
    let vetted = guard
        .vet(host, &Chain::new())
        .await
        .map_err(refused(input))?;
    Ok(Target {
        url,
        intranet: vetted.exempted,
    })
}

#[cfg(test)]
mod tests {
    use vak_guard::GuardSettings;
    use vak_guard::proxy::{DialError, Dialer as _, GuardDialer};

    use super::*;

    #[tokio::test]
    async fn targets_are_checked_before_launch() {
        let guard = Guard::new(&GuardSettings::default().open().with_allow(["127.0.0.2/32"]));
        assert!(
            check_target(&guard, "http://127.0.0.2:8080/")
                .await
                .unwrap()
                .intranet
        );
        for (url, why) in [
            ("http://127.0.0.1/", "127.0.0.0/8"),
            ("https://user:pw@example.com/", "user name or password"),
            ("http://example.com:25/", "port 25"),
            ("ftp://example.com/", "scheme `ftp`"),
            ("http://metadata.google.internal/", "metadata"),
        ] {
            let Err(error) = check_target(&guard, url).await else {
                panic!("{url} was accepted");
            };
            let text = error.to_string();
            assert!(text.contains(why), "{url}: {text}");
        }
    }

    /// The machine's own address is refused as a target before the browser
    /// starts, and for every request of a page (the proxy's dialer is the same guard), even
    /// with the range around it allowed.
    #[tokio::test]
    async fn the_machines_own_address_is_refused() {
        #[derive(Debug)]
        struct Machine;
        impl vak_guard::Interfaces for Machine {
            fn addresses(&self) -> std::io::Result<Vec<std::net::IpAddr>> {
                Ok(vec![std::net::IpAddr::from([93, 184, 216, 34])])
            }
        }
        let guard = Guard::new(
            &GuardSettings::default()
                .open()
                .with_allow(["93.184.216.0/24"]),
        )
        .with_interfaces(std::sync::Arc::new(Machine));
        let why = "93.184.216.34 is an address of this machine";
        let Err(error) = check_target(&guard, "http://93.184.216.34:8080/").await else {
            panic!("the machine's own address was accepted as a target");
        };
        assert!(error.to_string().contains(why), "{error}");
        for scope in [Scope::Intranet, Scope::Public] {
            let dialer = GuardDialer::new(guard.clone(), scope);
            let url = Url::parse("http://93.184.216.34:8080/admin").unwrap();
            let Err(DialError::Denied { detail, .. }) = dialer.check_url(&url) else {
                panic!("a page reached the machine's own address");
            };
            assert!(detail.contains(why), "{detail}");
        }
    }

    #[tokio::test]
    async fn the_allow_list_follows_the_target() {
        let guard = Guard::new(&GuardSettings::default().open().with_allow(["127.0.0.2/32"]));
        let allowed = Url::parse("http://127.0.0.2:8080/x").unwrap();
        // An allowed intranet target: its page may use the allow list, nothing more.
        let intranet = check_target(&guard, "http://127.0.0.2:8080/")
            .await
            .unwrap();
        assert_eq!(intranet.scope(), Scope::Intranet);
        let dialer = GuardDialer::new(guard.clone(), intranet.scope());
        assert!(dialer.check_url(&allowed).is_ok());
        let other = Url::parse("http://127.0.0.3:8080/x").unwrap();
        assert!(matches!(
            dialer.check_url(&other),
            Err(DialError::Denied { .. })
        ));
        // A public target's page may not use it at all.
        let public = Target {
            url: Url::parse("https://example.com/").unwrap(),
            intranet: false,
        };
        assert_eq!(public.scope(), Scope::Public);
        let dialer = GuardDialer::new(guard, public.scope());
        assert!(matches!(
            dialer.check_url(&allowed),
            Err(DialError::Denied { .. })
        ));
    }
}

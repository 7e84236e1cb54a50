//! The SSRF guard of vak-tools, and the guarded forward proxy built on it: every outbound
//! connection of `webfetch`, of `browse`'s browser and of `bash`'s sandboxed commands is made
//! here, and only here.
//!
//! - [`Guard`]: parse, screen, resolve once, judge every address, dial only the vetted address,
//!   check the peer. [`GuardSettings`] is what it judges by (`[net] allow`).
//! - [`proxy`]: an HTTP/1.1 forward proxy (absolute-form requests and `CONNECT` tunnels) whose
//!   every connection goes through a [`proxy::Dialer`], in production the guard.
//!
//! The crate is kept lean on purpose (no TLS, no decompression, no HTML): `bash` and `browse`
//! depend on it without pulling `webfetch`'s stacks.
//!
//!
//! A request goes through these steps, in this order, on every hop of a redirect chain:
//!
//! 1. [`Guard::check_url`]: parse once with the `url` crate (WHATWG: decimal, octal, hex, short
//!    and full-width IPv4 spellings all become an IPv4 host; UTS 46 maps names); the scheme must
//!    be `http` or `https`; no user name or password; no port from the Fetch Standard's bad-port
//!    list; `localhost` names and cloud metadata names are refused without resolving; an address
//!    literal is judged at once.
//! 2. [`Guard::vet`]: resolve a name exactly once through the [`Resolver`], judge **every**
//!    address against the guard's own table ([`special_range`]) and against the machine's own
//!    addresses (every address of its network interfaces, see [`Interfaces`]: a server bound to
//!    `0.0.0.0` answers on them), and refuse the whole name when any address is refused.
//! 3. [`Guard::connect`] (which does 1's host rules and 2 itself): connect only to a vetted
//!    address, then check that the socket's `peer_addr()` is that address before a byte is sent.
//!
//! No proxy variable (`HTTP_PROXY`, `ALL_PROXY`, ...) and no `.netrc` is ever consulted: the
//! guard dials the vetted address itself.
//!
//! # `[net] allow` and request chains
//!
//! [`GuardSettings::allow`] lists CIDRs, addresses, host names and
//! `*.suffix` names exempted from the special-range block, for a user's own intranet. Cloud
//! metadata endpoints stay refused unless an entry names that exact address (a `/32` or `/128`,
//! or the bare address); a wider CIDR or a host name never exempts them. Entries that cannot be
//! understood exempt nothing.
//!
//! The exemption also depends on where a request stands in its [`Chain`]: an allowed private
//! address is reachable only when the chain *starts* there. A chain from [`Chain::new`] lets its
//! first hop use the allow list, and its later hops only if the first hop did; so a public page
//! cannot redirect into the intranet, while an intranet page may redirect within it.
//!
//! # For `browse`: using the guard in a forward proxy
//!
//! A proxy in front of a headless browser sees a stream of requests (`CONNECT host:port` for
//! https, absolute-form `GET http://...` for http) that all belong to one page load. The whole
//! page load is one chain, started by the browse target:
//!
//! 1. Before starting the browser, check the target with [`Guard::check_url`] and
//!    [`Guard::vet`] on a fresh [`Chain::new`]; [`Vetted::exempted`] tells whether the target is
//!    an allowed intranet address.
//! 2. For every proxied request, use [`Chain::intranet`] if the target was exempted, otherwise
//!    [`Chain::public`] (the allow list is never used). A public page therefore cannot reach the
//!    intranet through a sub-resource, a redirect or a script, and an intranet page can load what
//!    the user allowed.
//! 3. Dial every request with [`Guard::connect`] (`CONNECT`: the host and port of the request
//!    line; absolute-form: [`Guard::check_url`] on the URL first, then
//!    [`Guard::connect_url`]). Never dial anything the browser names without the guard; relay
//!    bytes only over the returned [`Connection::stream`]. Turn a [`Refusal`] into a `403` whose
//!    body is the refusal's `Display` text, and keep the first one for the tool's result.
//! 4. Run each dial under the tool's deadline: the guard has no timeout of its own.
//!
//! Build the guard once, from the `[net]` settings the tool was registered with, and share it
//! (it is cheap to clone): it parses the allow list once.
//!
//! ```no_run
//! # async fn demo() -> Result<(), vak_guard::Refusal> {
//! use vak_guard::{Chain, Guard, GuardSettings};
//!
//! let guard = Guard::new(&GuardSettings::default().with_allow(["10.1.0.0/16"]));
//! let mut chain = Chain::new();
//! let url = guard.check_url("https://example.com/docs", &chain)?;
//! let connection = guard.connect_url(&url, &mut chain).await?;
//! assert_eq!(connection.stream.peer_addr().ok(), Some(connection.peer));
//! # Ok(()) }
//! ```

#![forbid(unsafe_code)]

mod guard;
pub mod proxy;
mod settings;

pub use guard::{
    BAD_PORTS, Chain, Connection, DEFAULT_DOMAINS, Guard, Interfaces, Refusal, Resolver, Rule,
    SpecialRange, SystemInterfaces, SystemResolver, Vetted, host_spelling, special_range,
};
pub use settings::{Egress, GuardSettings};

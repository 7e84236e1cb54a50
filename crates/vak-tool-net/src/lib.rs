//! The `webfetch` tool: one page of the web, as Markdown, text or the raw body.
//!
//! - [`NetSettings`]: the `[net]` section of the configuration: the guard's policy every guarded
//!   tool shares ([`vak_guard::GuardSettings`], embedded), and `webfetch`'s limits.
//! - [`WebFetch`]: the tool. One GET, redirects followed by hand (at most
//!   [`MAX_REDIRECTS`], each hop screened again in full by the SSRF guard of `vak-guard`), one
//!   deadline for the whole chain, the body capped on *decoded* bytes, text-like content types
//!   only; HTML converted by `vak-markdown`.
//!
//! # Design choices
//!
//! - **HTTP stack**: hyper 1.x's connection-level client (`client::conn::http1`) over a socket the
//!   guard opened, so that no library ever resolves a name or dials on its own (no pooling
//!   client, no proxy variables, no `.netrc`). hyper adds no `Host` header at this level; the
//!   tool sets it.
//! - **TLS**: tokio-rustls with the **ring** crypto provider, named explicitly when the config is
//!   built (rustls' default features are off, so aws-lc-rs is never in the graph: ring builds with
//!   a plain C compiler, no cmake or Go, and one provider keeps the graph small). Roots come from
//!   `webpki-roots` (Mozilla's list, so results do not depend on the machine), plus
//!   [`WebFetch::with_extra_roots`] for tests. The server name (SNI and verification) is the URL's
//!   host; for an address literal rustls sends no SNI and verifies the address.
//! - **Bodies**: `gzip` and `br` are accepted and decoded with `async-compression`; the
//!   cap counts decoded bytes, so a decompression bomb stops at the cap, and a `Content-Length`
//!   above the cap is refused before the body is read.
//! - **Text**: the charset is taken in the WHATWG order (byte order mark, then the
//!   `Content-Type` charset, then a `<meta>` prescan for HTML) and decoded with `encoding_rs`;
//!   without any, UTF-8 if the bytes are valid UTF-8, otherwise windows-1252.
//!
//! - **No credentials, no ambient configuration**: no cookie jar, no `Authorization`, no client
//!   certificate; proxy variables and `.netrc` are never read.
//! - **Deep HTML**: nesting is capped by a linear pre-pass before html5ever (whose tree builder is
//!   quadratic in depth) and flattened again below 256 levels of the tree; conversion runs on its
//!   own thread with a 64 MiB stack under what is left of the deadline.
//!
//! The guard (and the forward proxy `browse` and `bash` serve) live in `vak-guard`, the HTML
//! converter in `vak-markdown`: `browse` and `bash` depend on those, not on this crate and its
//! TLS and decompression stacks.
//!
//! ```
//! use vak_tool_core::Registry;
//! use vak_tool_net::NetSettings;
//!
//! let settings = NetSettings::default().with_allow(["10.1.0.0/16"]);
//! let mut registry = Registry::new();
//! vak_tool_net::register(&mut registry, &settings);
//! assert_eq!(registry.names(), ["webfetch"]);
//! ```
#![forbid(unsafe_code)]

mod fetch;
mod settings;

pub use fetch::{
    DOCUMENT_BYTES, DOCUMENT_TIMEOUT, MAX_REDIRECTS, WebFetch, WebFetchArgs, get_document,
};
pub use settings::NetSettings;
use vak_tool_core::Registry;

/// Adds `webfetch` to a registry, with the `[net]` settings (its allow list and limits).
pub fn register(registry: &mut Registry, settings: &NetSettings) {
    registry.register(WebFetch::new(settings));
}

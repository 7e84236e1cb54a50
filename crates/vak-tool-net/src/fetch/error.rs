//! What can go wrong in a fetch, as model-facing sentences.

use std::time::Duration;

use vak_tool_core::human;

use vak_guard::Refusal;
use vak_markdown::ConvertError;

/// A failed fetch. Each message says what happened and what to try instead.
#[derive(Debug, thiserror::Error)]
pub(crate) enum FetchError {
    /// The guard refused a hop or could not connect.
    #[error("{0}")]
    Guard(Box<Refusal>),
    /// The chain's deadline passed.
    #[error(
        "the fetch did not finish within {} (stopped while {stage} {url}{redirect}{received}). \
         The server is slow or stalled; try again later, or fetch a smaller resource.",
        human::duration(*limit),
        redirect = if *hop > 0 { format!(", redirect {hop} of the chain") } else { String::new() },
        received = if *body_bytes > 0 { format!(", after {} of body", human::Size(*body_bytes as u64)) } else { String::new() }
    )]
    Deadline {
        limit: Duration,
        stage: &'static str,
        url: String,
        hop: usize,
        body_bytes: usize,
    },
    /// The call was cancelled.
    #[error("the fetch was cancelled")]
    Cancelled,
    /// The TLS handshake failed.
    #[error(
        "the TLS handshake with {url} failed: {source}. The certificate may be invalid, expired \
         or for another name; webfetch only trusts the public web PKI."
    )]
    Tls { url: String, source: std::io::Error },
    /// HTTP/1 failed.
    #[error("the HTTP exchange with {url} failed: {source}. Try again, or check the URL.")]
    Http { url: String, source: hyper::Error },
    /// A request could not be built (a URL hyper rejects).
    #[error("could not build a request for {url}: {reason}")]
    Request { url: String, reason: String },
    /// One redirect too many.
    #[error(
        "too many redirects: {followed} already followed ({}), and {url} answered {status} with \
         another one to `{location}`. Fetch the final URL directly if you know it.",
        chain.join(" -> ")
    )]
    TooManyRedirects {
        followed: usize,
        chain: Vec<String>,
        url: String,
        status: u16,
        location: String,
    },
    /// A redirect back to a URL already in the chain.
    #[error(
        "redirect loop: {url} redirects to {target}, which was already fetched in this chain \
         ({}). The site may need cookies or JavaScript; try `browse`.",
        chain.join(" -> ")
    )]
    RedirectLoop {
        chain: Vec<String>,
        url: String,
        target: String,
    },
    /// A `Location` that cannot be joined to the URL.
    #[error("{url} redirects to `{location}`, which is not a usable URL ({reason})")]
    BadLocation {
        url: String,
        location: String,
        reason: String,
    },
    /// A content type that is not text.
    #[error(
        "{url} is `{content_type}`, not a text type webfetch returns (HTML, text, Markdown, JSON, \
         XML, JavaScript). For a binary file (image, PDF, archive) use `bash` with curl to save it \
         in the workspace."
    )]
    ContentType { url: String, content_type: String },
    /// A declared body larger than the cap.
    #[error(
        "{url} declares a body of {} (Content-Length: {length}), more than the {} limit; \
         nothing was read. Look for a smaller page (a section, a raw file, an API), or use \
         `bash` with curl to save it in the workspace and read it in parts.",
        human::Size(*length),
        human::Size(*cap as u64)
    )]
    TooLarge {
        url: String,
        length: u64,
        cap: usize,
    },
    /// A content coding that was not asked for.
    #[error(
        "{url} sent the body with `Content-Encoding: {coding}`, which webfetch does not decode"
    )]
    Coding { url: String, coding: String },
    /// Reading or decoding the body failed.
    #[error(
        "reading the body of {url} failed after {}: {source}",
        human::Size(*received as u64)
    )]
    Body {
        url: String,
        received: usize,
        source: std::io::Error,
    },
    /// The HTML conversion failed.
    #[error("{0}; try `format: \"raw\"` to get the HTML itself")]
    Convert(#[from] ConvertError),
}

impl From<Refusal> for FetchError {
    fn from(refusal: Refusal) -> Self {
        FetchError::Guard(Box::new(refusal))
    }
}

//! The `webfetch` tool: the request chain, the body, and the result text.

mod body;
mod charset;
mod document;
mod error;
mod http;

pub use document::{DOCUMENT_BYTES, DOCUMENT_TIMEOUT, get_document};

use std::fmt::Write as _;
use std::sync::Arc;

use ::http::StatusCode;
use ::http::header::{CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, LOCATION};
use tokio::time::Instant;
use url::Url;

use rustls::pki_types::CertificateDer;
use schemars::JsonSchema;
use serde::Deserialize;
use vak_tool_core::{Capability, Tool, ToolContext, ToolError, ToolOutput, human};

use crate::NetSettings;
use body::{Coding, Cut};
use charset::Mime;
use error::FetchError;
use vak_guard::{Chain, Guard, Interfaces, Resolver, host_spelling};
use vak_markdown::{self as markdown, Flavour};

/// Redirects followed at most; the hop after the last one is refused.
pub const MAX_REDIRECTS: usize = 3;

/// Arguments of `webfetch`, parsed from the model's JSON (the input schema is generated from
/// this type). Its fields are private: the tool is called through a
/// [`Registry`](vak_tool_core::Registry).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebFetchArgs {
    /// The http:// or https:// URL to fetch.
    url: String,
    /// How to return the body: `markdown` (default; HTML converted, links absolute), `text`
    /// (plain text) or `raw` (the decoded body as sent).
    #[serde(default)]
    format: Format,
}

/// The `format` parameter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Format {
    /// HTML converted to Markdown.
    #[default]
    Markdown,
    /// Plain text.
    Text,
    /// The decoded body.
    Raw,
}

/// The `webfetch` tool.
#[derive(Debug, Clone)]
pub struct WebFetch {
    settings: NetSettings,
    guard: Guard,
    extra_roots: Vec<CertificateDer<'static>>,
}

impl Default for WebFetch {
    fn default() -> Self {
        Self::new(&NetSettings::default())
    }
}

impl WebFetch {
    /// The tool with these `[net]` settings (the allow list and its limits), the system
    /// resolver and the `webpki-roots` trust anchors.
    pub fn new(settings: &NetSettings) -> Self {
        Self {
            settings: settings.clone(),
            guard: Guard::new(&settings.guard),
            extra_roots: Vec::new(),
        }
    }

    /// The same tool resolving names through `resolver` (tests script answers with it).
    #[must_use]
    pub fn with_resolver(mut self, resolver: Arc<dyn Resolver>) -> Self {
        self.guard = self.guard.with_resolver(resolver);
        self
    }

    /// The same tool taking the machine's own addresses (which the guard refuses) from
    /// `interfaces` (tests give a list of their own).
    #[must_use]
    pub fn with_interfaces(mut self, interfaces: Arc<dyn Interfaces>) -> Self {
        self.guard = self.guard.with_interfaces(interfaces);
        self
    }

    /// The same tool trusting these extra root certificates as well (a test CA, say).
    #[must_use]
    pub fn with_extra_roots(
        mut self,
        roots: impl IntoIterator<Item = CertificateDer<'static>>,
    ) -> Self {
        self.extra_roots.extend(roots);
        self
    }
}

impl Tool for WebFetch {
    type Args = WebFetchArgs;

    fn name(&self) -> &str {
        "webfetch"
    }

    /// Built from the settings: the limits and the allow list the model reads are the ones
    /// that apply.
    fn description(&self) -> String {
        let settings = &self.settings;
        let mut text = format!(
            "Fetches one public web page or text document over http(s) with a GET and returns \
             it as Markdown (default), plain text, or the raw decoded body. Use it to read \
             documentation, articles, API references, JSON or plain-text files on the public \
             internet; it runs no JavaScript (use `browse` for pages that need it). The result \
             starts with the final URL, the HTTP status, the content type and any redirects. \
             Limits: at most {MAX_REDIRECTS} redirects, {deadline} for the whole fetch, {body} of \
             decoded body (longer bodies are cut and the cut is reported), text-like content \
             types only (HTML, text, Markdown, JSON, XML, JavaScript; not images, PDFs or \
             archives). Private, loopback, link-local and cloud metadata addresses are refused",
            deadline = human::duration(settings.deadline()),
            body = human::size(settings.body_bytes as u64),
        );
        if !settings.guard.allow.is_empty() {
            let _ = write!(
                text,
                " (except what the configuration allows: {}, and only when the fetch starts \
                 there; a public page cannot redirect into them)",
                settings.guard.allow.join(", ")
            );
        }
        text.push_str(
            ", as are credentials in the URL; no cookies or authorization are ever sent. Only \
             hosts on the egress allow-list are fetched (`[net] allow_domains`, the package \
             registries and source forges); a refusal names the line the person adds. A local \
             development server is reached once the person lists it in `[net] allow` and \
             `allow_domains` (the refusal gives both lines).",
        );
        text
    }

    fn capabilities(&self) -> Vec<Capability> {
        vec![Capability::Network]
    }

    fn claims(&self, args: &WebFetchArgs, ctx: &ToolContext) -> vak_tool_core::Claims {
        let _ = (args, ctx);
        vak_tool_core::Claims::none().network()
    }

    fn claims_rule(&self) -> String {
        "reaches the network only".to_owned()
    }

    /// The first hop's rules that need no lookup, and the egress allow-list.
    fn check(&self, args: &WebFetchArgs, _ctx: &ToolContext) -> Result<(), ToolError> {
        let url = self
            .guard
            .check_url(&args.url, &Chain::new())
            .map_err(FetchError::from)?;
        let host = url.host_str().unwrap_or_default();
        let port = url.port_or_known_default().unwrap_or(0);
        self.guard
            .check_egress(host, port)
            .map_err(FetchError::from)?;
        Ok(())
    }

    async fn run(&self, args: WebFetchArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(self.fetch_page(&args, ctx).await?.into_output())
    }
}

/// Where the chain stands, for the deadline message.
#[derive(Debug, Default)]
struct Progress {
    stage: &'static str,
    url: String,
    hop: usize,
    body_bytes: usize,
}

/// A fetched page, ready to be written out.
#[derive(Debug)]
struct Page {
    url: Url,
    status: StatusCode,
    content_type: String,
    redirects: Vec<(String, u16)>,
    body: String,
    cut: Option<(usize, Cut)>,
    encoding: Option<String>,
    note: Option<String>,
}

impl Page {
    fn into_output(self) -> ToolOutput {
        let mut out = String::new();
        let _ = writeln!(out, "URL: {}", self.url);
        let _ = writeln!(out, "Status: {}", self.status);
        let _ = writeln!(out, "Content-Type: {}", self.content_type);
        if !self.redirects.is_empty() {
            let mut hops: Vec<String> = self
                .redirects
                .iter()
                .map(|(url, status)| format!("{url} ({status})"))
                .collect();
            hops.push(self.url.to_string());
            let _ = writeln!(out, "Redirects: {}", hops.join(" -> "));
        }
        if let Some(encoding) = &self.encoding {
            let _ = writeln!(out, "Encoding: {encoding}");
        }
        if let Some((kept, cut)) = self.cut {
            let more = match cut {
                Cut::Exactly(more) => format!("the remaining {} were not read", human::Size(more)),
                Cut::AtLeast(more) => format!("at least {} more were not read", human::Size(more)),
            };
            let _ = writeln!(
                out,
                "Truncated: the body was cut at {} (decoded); {more}. Use `bash` with curl to \
                 save the whole document in the workspace if you need the rest.",
                human::Size(kept as u64)
            );
        }
        if let Some(note) = &self.note {
            let _ = writeln!(out, "Note: {note}");
        }
        out.push('\n');
        out.push_str(&self.body);
        if self.status.is_client_error() || self.status.is_server_error() {
            ToolOutput::error(format!(
                "The server answered {} (an HTTP error); its page follows.\n\n{out}",
                self.status
            ))
        } else {
            ToolOutput::text(out)
        }
    }
}

impl WebFetch {
    async fn fetch_page(&self, args: &WebFetchArgs, ctx: &ToolContext) -> Result<Page, FetchError> {
        let limit = self.settings.deadline();
        let deadline = Instant::now() + limit;
        let mut progress = Progress {
            stage: "starting",
            url: args.url.clone(),
            ..Progress::default()
        };
        let outcome = tokio::select! {
            () = ctx.cancel().cancelled() => return Err(FetchError::Cancelled),
            outcome = tokio::time::timeout_at(
                deadline,
                self.fetch(args, deadline, &mut progress),
            ) => outcome,
        };
        let (page, html) = match outcome {
            Ok(result) => result?,
            Err(_) => {
                return Err(FetchError::Deadline {
                    limit,
                    stage: progress.stage,
                    url: progress.url,
                    hop: progress.hop,
                    body_bytes: progress.body_bytes,
                });
            }
        };
        let Some(flavour) = html else {
            return Ok(page);
        };
        let left = deadline.saturating_duration_since(Instant::now());
        let converted = tokio::select! {
            () = ctx.cancel().cancelled() => return Err(FetchError::Cancelled),
            converted = markdown::convert(page.body.clone(), page.url.clone(), flavour, left) => converted?,
        };
        Ok(Page {
            body: converted,
            ..page
        })
    }

    /// The chain up to the decoded body; says whether the body still needs converting.
    async fn fetch(
        &self,
        args: &WebFetchArgs,
        deadline: Instant,
        progress: &mut Progress,
    ) -> Result<(Page, Option<Flavour>), FetchError> {
        let guard = &self.guard;
        let tls = http::tls_config(&self.extra_roots).map_err(|reason| FetchError::Request {
            url: args.url.clone(),
            reason: format!("TLS setup failed: {reason}"),
        })?;
        let cap = self.settings.body_bytes;
        let mut chain = Chain::new();
        let mut url = guard.check_url(&args.url, &chain)?;
        let mut redirects: Vec<(String, u16)> = Vec::new();
        loop {
            progress.hop = redirects.len();
            progress.url = url.to_string();
            progress.stage = "connecting to";
            let connection = guard.connect_url(&url, &mut chain).await?;
            progress.stage = if url.scheme() == "https" {
                "negotiating TLS and waiting for the response of"
            } else {
                "waiting for the response of"
            };
            let (response, connection_task) = http::get(connection, &url, &tls).await?;
            let status = response.status();
            let location = response
                .headers()
                .get(LOCATION)
                .map(|value| String::from_utf8_lossy(value.as_bytes()).trim().to_string());
            if status.is_redirection()
                && let Some(location) = location
            {
                drop(response);
                drop(connection_task);
                if redirects.len() >= MAX_REDIRECTS {
                    let mut hops: Vec<String> = redirects.iter().map(|(u, _)| u.clone()).collect();
                    hops.push(url.to_string());
                    return Err(FetchError::TooManyRedirects {
                        followed: redirects.len(),
                        chain: hops,
                        url: url.to_string(),
                        status: status.as_u16(),
                        location,
                    });
                }
                let next = url
                    .join(&location)
                    .map_err(|error| FetchError::BadLocation {
                        url: url.to_string(),
                        location: location.clone(),
                        reason: error.to_string(),
                    })?;
                guard.check_parsed(&next, host_spelling(&location), &chain)?;
                let seen = |candidate: &str| {
                    candidate == url.as_str() || redirects.iter().any(|(u, _)| u == candidate)
                };
                if seen(next.as_str()) {
                    let mut hops: Vec<String> = redirects.iter().map(|(u, _)| u.clone()).collect();
                    hops.push(url.to_string());
                    return Err(FetchError::RedirectLoop {
                        chain: hops,
                        url: url.to_string(),
                        target: next.to_string(),
                    });
                }
                redirects.push((url.to_string(), status.as_u16()));
                url = next;
                continue;
            }
            return self
                .finish(
                    args,
                    url,
                    status,
                    response,
                    connection_task,
                    redirects,
                    (cap, deadline),
                    progress,
                )
                .await;
        }
    }

    #[allow(
        clippy::too_many_arguments,
        reason = "one call site, all parts of one response"
    )]
    async fn finish(
        &self,
        args: &WebFetchArgs,
        url: Url,
        status: StatusCode,
        response: hyper::Response<hyper::body::Incoming>,
        connection_task: http::ConnectionTask,
        redirects: Vec<(String, u16)>,
        (cap, deadline): (usize, Instant),
        progress: &mut Progress,
    ) -> Result<(Page, Option<Flavour>), FetchError> {
        let headers = response.headers();
        let header = |name| {
            headers.get(name).map(|value: &::http::HeaderValue| {
                String::from_utf8_lossy(value.as_bytes()).trim().to_string()
            })
        };
        let content_type = header(CONTENT_TYPE);
        let mime = content_type.as_deref().map(Mime::parse);
        if let Some(mime) = &mime
            && !mime.is_text()
        {
            return Err(FetchError::ContentType {
                url: url.to_string(),
                content_type: content_type.unwrap_or_default(),
            });
        }
        let coding_header = header(CONTENT_ENCODING);
        let Some(coding) = Coding::parse(coding_header.as_deref()) else {
            return Err(FetchError::Coding {
                url: url.to_string(),
                coding: coding_header.unwrap_or_default(),
            });
        };
        if let Some(length) = header(CONTENT_LENGTH).and_then(|value| value.parse::<u64>().ok())
            && length > cap as u64
        {
            return Err(FetchError::TooLarge {
                url: url.to_string(),
                length,
                cap,
            });
        }
        progress.stage = "reading the body of";
        let (bytes, cut) = body::read_capped(
            response.into_body(),
            coding,
            cap,
            deadline,
            &mut progress.body_bytes,
        )
        .await
        .map_err(|source| FetchError::Body {
            url: url.to_string(),
            received: progress.body_bytes,
            source,
        })?;
        drop(connection_task);
        let mut note = None;
        let mime = match mime {
            Some(mime) => mime,
            None => {
                if looks_binary(&bytes) {
                    return Err(FetchError::ContentType {
                        url: url.to_string(),
                        content_type: "no Content-Type, and the body looks binary".into(),
                    });
                }
                if charset::looks_like_html(&bytes) {
                    note = Some("the server sent no Content-Type; the body looks like HTML".into());
                    Mime::parse("text/html")
                } else {
                    note =
                        Some("the server sent no Content-Type; the body was read as text".into());
                    Mime::parse("text/plain")
                }
            }
        };
        let (decoded, encoding, source) = charset::decode(&bytes, &mime, cut.is_some());
        let encoding = (encoding != encoding_rs::UTF_8 || source != charset::Source::Default)
            .then(|| format!("{} (from the {})", encoding.name(), source.describe()));
        let flavour = match args.format {
            Format::Raw => None,
            Format::Markdown if mime.is_html() => Some(Flavour::Markdown),
            Format::Text if mime.is_html() => Some(Flavour::Text),
            Format::Markdown | Format::Text => None,
        };
        let page = Page {
            url,
            status,
            content_type: content_type.unwrap_or_else(|| "(none)".into()),
            redirects,
            body: decoded,
            cut: cut.map(|cut| (bytes.len(), cut)),
            encoding,
            note,
        };
        Ok((page, flavour))
    }
}

/// A NUL byte in the first 8 KiB: not text.
fn looks_binary(bytes: &[u8]) -> bool {
    bytes[..bytes.len().min(8192)].contains(&0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_description_follows_the_settings() {
        let default = WebFetch::default().description();
        assert!(default.contains("15 s for the whole fetch"), "{default}");
        let body = format!("{} of decoded body", human::size(512 * 1024));
        assert!(default.contains(&body), "{default}");
        assert!(default.contains("at most 3 redirects"), "{default}");
        assert!(!default.contains("configuration allows"), "{default}");

        let settings = NetSettings {
            deadline_ms: 2_500,
            body_bytes: 3 * 1024 * 1024,
            guard: vak_guard::GuardSettings::default().with_allow(["10.1.0.0/16", "wiki.corp"]),
        };
        let changed = WebFetch::new(&settings).description();
        assert!(changed.contains("2.5 s for the whole fetch"), "{changed}");
        let body = format!("{} of decoded body", human::size(3 * 1024 * 1024));
        assert!(changed.contains(&body), "{changed}");
        assert!(
            changed.contains("configuration allows: 10.1.0.0/16, wiki.corp"),
            "{changed}"
        );
        assert!(!changed.contains("15 s") && !changed.contains(&human::size(512 * 1024)));
    }
}

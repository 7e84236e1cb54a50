//! Chromium's own network-error page, recognised in a dumped DOM whatever the version.
//!
//! When a page cannot be loaded, headless Chromium either prints nothing and logs
//! `Page load failed: net::ERR_…` (156 and later), or prints its built-in error page as if it
//! were the page, without that log line (148 and 150). The error page is recognised by its
//! structure, never by its words, so that a real page that merely says "This site can’t be
//! reached" stays a page: the `<body>` element carries the class `neterror`, the document has
//! the `main-frame-error` container, and the code is the one the page was rendered for
//! (`"errorCode":"ERR_…"` in its `loadTimeDataRaw`, or its `error-code` element).

/// What the DOM says about a network error, when it is Chromium's error page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NetErrorPage {
    /// The `ERR_…` code the page was rendered for, when the page names one.
    pub(crate) code: Option<String>,
}

/// Recognises Chromium's network-error page in `dom`.
pub(crate) fn net_error_page(dom: &str) -> Option<NetErrorPage> {
    if !body_has_class(dom, "neterror") || !dom.contains("id=\"main-frame-error\"") {
        return None;
    }
    let code = after_marker(dom, "\"errorCode\":\"").or_else(|| error_code_element(dom));
    Some(NetErrorPage { code })
}

/// Whether the first `<body …>` tag has `class` among its classes.
fn body_has_class(dom: &str, class: &str) -> bool {
    let lower = dom.to_ascii_lowercase();
    let Some(start) = find_body_tag(&lower) else {
        return false;
    };
    let tag_end = lower[start..]
        .find('>')
        .map_or(lower.len(), |end| start + end);
    let tag = &lower[start..tag_end];
    let Some(attr) = tag.find("class=") else {
        return false;
    };
    let value = &tag[attr + "class=".len()..];
    let value = match value.chars().next() {
        Some(quote @ ('"' | '\'')) => value[1..].split(quote).next().unwrap_or_default(),
        _ => value.split_whitespace().next().unwrap_or_default(),
    };
    value.split_whitespace().any(|name| name == class)
}

/// The byte offset of the first `<body` that starts a tag (not `<bodyx`).
fn find_body_tag(lower: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(found) = lower[from..].find("<body") {
        let start = from + found;
        let next = lower[start + "<body".len()..].chars().next();
        if matches!(next, Some(c) if c.is_ascii_whitespace() || c == '>') {
            return Some(start);
        }
        from = start + "<body".len();
    }
    None
}

/// The `ERR_…` code that follows the last `marker`, if any.
fn after_marker(dom: &str, marker: &str) -> Option<String> {
    let start = dom.rfind(marker)? + marker.len();
    err_code_at(&dom[start..])
}

/// The code in `<div class="error-code">…ERR_…</div>` (Lit leaves comments before it; the page's
/// template, with `${data.errorCode}` in the same element, comes first and is skipped).
fn error_code_element(dom: &str) -> Option<String> {
    dom.match_indices("class=\"error-code\"")
        .find_map(|(start, _)| {
            let rest = &dom[start..];
            let open_end = rest.find('>')? + 1;
            let close = rest[open_end..].find("</")? + open_end;
            let inner = &rest[open_end..close];
            err_code_at(&inner[inner.find("ERR_")?..])
        })
}

/// `ERR_` followed by capitals, digits and underscores at the start of `text`.
fn err_code_at(text: &str) -> Option<String> {
    let code: String = text
        .chars()
        .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
        .collect();
    (code.starts_with("ERR_") && code.len() > "ERR_".len()).then_some(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real outputs of Debian's Chromium, recorded for an https URL whose server hangs up at
    /// once and an http URL whose server hangs up at once (docs in the fixtures' README).
    const C150_HTTPS_DOM: &str = include_str!("../tests/fixtures/chromium-150/https-closed.dom");
    const C150_HTTP_DOM: &str = include_str!("../tests/fixtures/chromium-150/http-closed.dom");

    #[test]
    fn chromium_150_error_pages_are_recognised_with_their_code() {
        assert_eq!(
            net_error_page(C150_HTTPS_DOM),
            Some(NetErrorPage {
                code: Some("ERR_CONNECTION_CLOSED".into())
            })
        );
        assert_eq!(
            net_error_page(C150_HTTP_DOM).and_then(|page| page.code),
            Some("ERR_SOCKET_NOT_CONNECTED".into())
        );
    }

    #[test]
    fn the_code_comes_from_the_element_when_load_time_data_is_cut_off() {
        let cut = &C150_HTTPS_DOM[..C150_HTTPS_DOM.rfind("var loadTimeDataRaw").unwrap()];
        assert_eq!(
            net_error_page(cut).and_then(|page| page.code).as_deref(),
            Some("ERR_CONNECTION_CLOSED")
        );
    }

    /// (dom, is the error page, code)
    #[test]
    fn only_the_structure_counts_not_the_words() {
        let cases: &[(&str, bool, Option<&str>)] = &[
            // A real page that talks about the error, even naming a code.
            (
                "<html><body><h1>This site can’t be reached</h1><p>ERR_CONNECTION_CLOSED</p></body></html>",
                false,
                None,
            ),
            // The class alone, or the container alone, is not enough.
            (
                "<html><body class=\"neterror\"><p>x</p></body></html>",
                false,
                None,
            ),
            (
                "<html><body><div id=\"main-frame-error\"></div></body></html>",
                false,
                None,
            ),
            // The class on another element than body.
            (
                "<html><body><div class=\"neterror\" id=\"main-frame-error\"></div></body></html>",
                false,
                None,
            ),
            // <bodyguard> is not <body>.
            (
                "<html><bodyguard class=\"neterror\"></bodyguard><div id=\"main-frame-error\"></div></html>",
                false,
                None,
            ),
            // Both markers, no code: still the error page.
            (
                "<html><BODY CLASS='neterror offline'><div id=\"main-frame-error\"></div></BODY></html>",
                true,
                None,
            ),
            (
                "<html><body class=neterror><div id=\"main-frame-error\"><div class=\"error-code\"><!--?lit$1$-->ERR_NAME_NOT_RESOLVED</div></div></body></html>",
                true,
                Some("ERR_NAME_NOT_RESOLVED"),
            ),
            ("", false, None),
            ("<body", false, None),
        ];
        for (dom, is_page, code) in cases {
            let got = net_error_page(dom);
            assert_eq!(got.is_some(), *is_page, "{dom}");
            assert_eq!(got.and_then(|page| page.code).as_deref(), *code, "{dom}");
        }
    }
}

//! A linear pre-pass over raw HTML that caps element nesting before html5ever sees it.
//!
//! html5ever's tree builder is quadratic in nesting depth (every `<div>` start tag scans the
//! stack of open elements for a `<p>` in button scope), so 100,000 nested `<div>`s take minutes.
//! This pass counts open elements and, past [`MAX_PARSE_DEPTH`], drops start and end tags (the
//! text between them stays). Void elements and elements whose end tag is optional (`p`, `li`,
//! `td`...) are not counted, so sloppy but ordinary pages are never touched. Comments, doctype,
//! and the content of raw-text elements (`script`, `style`, ...) are copied as they are.

use std::borrow::Cow;

/// Open elements kept; deeper tags are dropped before parsing.
pub(crate) const MAX_PARSE_DEPTH: usize = 512;

const NOT_COUNTED: &[&str] = &[
    // void
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
    "wbr", "param", "keygen", "frame", "basefont", "bgsound",
    // optional end tags, or closed implicitly
    "p", "li", "dt", "dd", "tr", "td", "th", "option", "optgroup", "rb", "rt", "rtc", "rp", "thead",
    "tbody", "tfoot", "colgroup", "caption", "html", "head", "body",
];

const RAW_TEXT: &[&str] = &[
    "script",
    "style",
    "textarea",
    "title",
    "xmp",
    "iframe",
    "noembed",
    "noframes",
    "noscript",
    "plaintext",
];

/// `html` with nesting capped at `max` counted elements; borrowed when nothing was dropped.
pub(crate) fn cap_depth(html: &str, max: usize) -> Cow<'_, str> {
    let bytes = html.as_bytes();
    let mut out: Option<String> = None;
    let mut depth = 0usize;
    let mut skipped = 0usize;
    // Copy `html[copied..at]` when the output is being built.
    let mut copied = 0usize;
    let mut at = 0usize;
    while let Some(offset) = memchr(b'<', &bytes[at..]) {
        let start = at + offset;
        let rest = &bytes[start..];
        if rest.starts_with(b"<!--") {
            at = start + find(&rest[4..], b"-->").map_or(rest.len(), |end| end + 7);
            continue;
        }
        if rest.starts_with(b"<!") || rest.starts_with(b"<?") {
            at = start + find(rest, b">").map_or(rest.len(), |end| end + 1);
            continue;
        }
        let (closing, name_start) = if rest.starts_with(b"</") {
            (true, 2)
        } else {
            (false, 1)
        };
        let name_len = rest[name_start..]
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || **b == b'-' || **b == b':')
            .count();
        if name_len == 0 || !rest[name_start].is_ascii_alphabetic() {
            at = start + 1;
            continue;
        }
        let name = html[start + name_start..start + name_start + name_len].to_ascii_lowercase();
        let end = start + tag_end(rest);
        let self_closing = bytes[..end].ends_with(b"/>");
        let counted = !NOT_COUNTED.contains(&name.as_str()) && !self_closing;
        let mut drop_tag = false;
        if counted {
            if closing {
                if skipped > 0 {
                    skipped -= 1;
                    drop_tag = true;
                } else {
                    depth = depth.saturating_sub(1);
                }
            } else if depth >= max {
                skipped += 1;
                drop_tag = true;
            } else {
                depth += 1;
            }
        }
        if drop_tag {
            let buffer = out.get_or_insert_with(|| String::with_capacity(html.len()));
            buffer.push_str(&html[copied..start]);
            copied = end;
        }
        at = end;
        if !closing && !drop_tag && RAW_TEXT.contains(&name.as_str()) {
            at = raw_text_end(bytes, at, &name);
        }
    }
    match out {
        None => Cow::Borrowed(html),
        Some(mut buffer) => {
            buffer.push_str(&html[copied..]);
            Cow::Owned(buffer)
        }
    }
}

/// The index just past the `>` that ends the tag at the start of `rest`, skipping quoted
/// attribute values.
fn tag_end(rest: &[u8]) -> usize {
    let mut quote = None;
    for (index, byte) in rest.iter().enumerate().skip(1) {
        match (quote, byte) {
            (None, b'"' | b'\'') => quote = Some(*byte),
            (Some(open), _) if open == *byte => quote = None,
            (None, b'>') => return index + 1,
            _ => {}
        }
    }
    rest.len()
}

/// Where the raw text of `name` starting at `at` ends (at its end tag, or the end of input).
fn raw_text_end(bytes: &[u8], at: usize, name: &str) -> usize {
    let mut search = at;
    while let Some(offset) = find(&bytes[search..], b"</") {
        let candidate = search + offset;
        let after = &bytes[candidate + 2..];
        if after.len() >= name.len() && after[..name.len()].eq_ignore_ascii_case(name.as_bytes()) {
            return candidate;
        }
        search = candidate + 2;
    }
    bytes.len()
}

fn memchr(needle: u8, haystack: &[u8]) -> Option<usize> {
    haystack.iter().position(|byte| *byte == needle)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shallow_pages_are_untouched() {
        let html = "<!doctype html><html><body><p>a<p>b<ul><li>x<li>y</ul>\
                    <script>if (a<b) { document.write('<div><div>') }</script>\
                    <!-- <div><div><div> --><div title='a>b'>ok</div></body></html>";
        assert!(matches!(cap_depth(html, 2), Cow::Borrowed(_)));
    }

    #[test]
    fn deep_nesting_is_capped() {
        let html = format!("{}text{}", "<div>".repeat(10), "</div>".repeat(10));
        let capped = cap_depth(&html, 3);
        assert_eq!(capped, "<div><div><div>text</div></div></div>");
        let html = "<div><span><b>x</b></span><i>y</i></div>";
        assert_eq!(cap_depth(html, 2), "<div><span>x</span><i>y</i></div>");
    }
}

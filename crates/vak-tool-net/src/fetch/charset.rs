//! Content types webfetch accepts, and the WHATWG charset order.

use encoding_rs::{Encoding, UTF_8, WINDOWS_1252};

/// A parsed `Content-Type`: the essence (`text/html`) and its `charset`, lowercase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mime {
    pub(crate) essence: String,
    pub(crate) charset: Option<String>,
}

impl Mime {
    pub(crate) fn parse(value: &str) -> Self {
        let mut parts = value.split(';');
        let essence = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        let charset = parts.find_map(|part| {
            let (key, value) = part.split_once('=')?;
            (key.trim().eq_ignore_ascii_case("charset"))
                .then(|| value.trim().trim_matches(['"', '\'']).to_ascii_lowercase())
        });
        Self { essence, charset }
    }

    /// HTML or XHTML: converted for `markdown` and `text`.
    pub(crate) fn is_html(&self) -> bool {
        matches!(self.essence.as_str(), "text/html" | "application/xhtml+xml")
    }

    /// Whether webfetch returns bodies of this type.
    pub(crate) fn is_text(&self) -> bool {
        let essence = self.essence.as_str();
        if essence.starts_with("text/") {
            return true;
        }
        let Some(subtype) = essence.strip_prefix("application/") else {
            return false;
        };
        subtype.ends_with("+json")
            || subtype.ends_with("+xml")
            || matches!(
                subtype,
                "json"
                    | "xml"
                    | "xhtml+xml"
                    | "javascript"
                    | "x-javascript"
                    | "ecmascript"
                    | "x-ecmascript"
                    | "x-ndjson"
                    | "ndjson"
                    | "jsonl"
                    | "x-jsonlines"
                    | "yaml"
                    | "x-yaml"
                    | "toml"
                    | "x-toml"
                    | "x-sh"
                    | "x-httpd-php"
                    | "sql"
                    | "graphql"
                    | "x-tex"
                    | "x-latex"
                    | "x-www-form-urlencoded"
                    | "csv"
            )
    }
}

/// Where the encoding came from, for the result header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    Bom,
    Header,
    Meta,
    XmlDeclaration,
    Default,
}

impl Source {
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Source::Bom => "byte order mark",
            Source::Header => "Content-Type charset",
            Source::Meta => "<meta> charset",
            Source::XmlDeclaration => "XML declaration",
            Source::Default => "default",
        }
    }
}

/// Decodes `bytes` in the WHATWG order: BOM, then the header's charset, then (HTML only) a
/// `<meta>` prescan of the first 1024 bytes; otherwise UTF-8 when the bytes are valid UTF-8 and
/// windows-1252 when they are not.
///
/// `truncated` says the body was cut at the cap, so a multi-byte sequence cut at its very end
/// does not count against UTF-8.
pub(crate) fn decode(
    bytes: &[u8],
    mime: &Mime,
    truncated: bool,
) -> (String, &'static Encoding, Source) {
    let (encoding, source) = sniff(bytes, mime, truncated);
    // `decode` strips a BOM (and follows it, which agrees with the sniff above).
    let (text, used, _) = encoding.decode(bytes);
    (text.into_owned(), used, source)
}

fn sniff(bytes: &[u8], mime: &Mime, truncated: bool) -> (&'static Encoding, Source) {
    if let Some((encoding, _)) = Encoding::for_bom(bytes) {
        return (encoding, Source::Bom);
    }
    if let Some(encoding) = mime
        .charset
        .as_deref()
        .and_then(|label| Encoding::for_label(label.as_bytes()))
    {
        return (encoding, Source::Header);
    }
    if mime.is_html()
        && let Some(encoding) = prescan(&bytes[..bytes.len().min(1024)])
    {
        return (encoding, Source::Meta);
    }
    if !mime.is_html()
        && mime.essence.contains("xml")
        && let Some(encoding) = xml_declaration(&bytes[..bytes.len().min(1024)])
    {
        return (encoding, Source::XmlDeclaration);
    }
    // A cut multi-byte sequence at the very end (the cap) must not make valid UTF-8 look invalid.
    let valid = match std::str::from_utf8(bytes) {
        Ok(_) => true,
        Err(error) => truncated && error.error_len().is_none(),
    };
    if valid || mime.essence.contains("json") {
        (UTF_8, Source::Default)
    } else {
        (WINDOWS_1252, Source::Default)
    }
}

/// A simplified form of the HTML prescan: `<meta charset=...>` and
/// `<meta http-equiv=content-type content="...; charset=...">`, skipping comments. A declared
/// UTF-16 means UTF-8 and `x-user-defined` means windows-1252, as in the standard.
fn prescan(head: &[u8]) -> Option<&'static Encoding> {
    let lower: Vec<u8> = head.iter().map(u8::to_ascii_lowercase).collect();
    let mut at = 0;
    while at < lower.len() {
        let rest = &lower[at..];
        if rest.starts_with(b"<!--") {
            at += find(rest, b"-->").map_or(rest.len(), |end| end + 3);
            continue;
        }
        if rest.starts_with(b"<meta")
            && rest
                .get(5)
                .is_some_and(|b| b.is_ascii_whitespace() || *b == b'/')
        {
            let end = find(rest, b">").unwrap_or(rest.len());
            let attributes = parse_attributes(&rest[5..end]);
            let get = |name: &str| {
                attributes
                    .iter()
                    .find(|(key, _)| key == name)
                    .map(|(_, value)| value.as_str())
            };
            let label = match (get("charset"), get("http-equiv"), get("content")) {
                (Some(charset), _, _) => Some(charset.to_string()),
                (None, Some("content-type"), Some(content)) => charset_in_content(content),
                _ => None,
            };
            if let Some(encoding) =
                label.and_then(|label| Encoding::for_label(label.trim().as_bytes()))
            {
                let name = encoding.name();
                if name.starts_with("UTF-16") {
                    return Some(UTF_8);
                }
                if name == "x-user-defined" {
                    return Some(WINDOWS_1252);
                }
                return Some(encoding);
            }
            at += end.max(1);
            continue;
        }
        at += 1;
    }
    None
}

/// The `encoding` of an `<?xml ... ?>` declaration at the very start.
fn xml_declaration(head: &[u8]) -> Option<&'static Encoding> {
    if !head.starts_with(b"<?xml") {
        return None;
    }
    let end = find(head, b"?>")?;
    let declaration = String::from_utf8_lossy(&head[5..end]);
    let attributes = parse_attributes(declaration.as_bytes());
    let label = attributes
        .iter()
        .find(|(key, _)| key.eq_ignore_ascii_case("encoding"))?;
    Encoding::for_label(label.1.trim().as_bytes())
}

/// Whether a body without a `Content-Type` starts like an HTML document.
pub(crate) fn looks_like_html(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(512)];
    let start = head
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(head.len());
    let head: Vec<u8> = head[start..].iter().map(u8::to_ascii_lowercase).collect();
    head.starts_with(b"<!doctype html") || head.starts_with(b"<html")
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

fn parse_attributes(text: &[u8]) -> Vec<(String, String)> {
    let text = String::from_utf8_lossy(text);
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    let bytes = text.as_bytes();
    while let Some(&(start, c)) = chars.peek() {
        if c.is_whitespace() || c == '/' {
            chars.next();
            continue;
        }
        let mut name_end = start;
        while let Some(&(index, c)) = chars.peek() {
            if c == '=' || c.is_whitespace() || c == '/' {
                break;
            }
            name_end = index + c.len_utf8();
            chars.next();
        }
        let name = text[start..name_end].to_string();
        while chars.peek().is_some_and(|(_, c)| c.is_whitespace()) {
            chars.next();
        }
        let mut value = String::new();
        if chars.peek().is_some_and(|(_, c)| *c == '=') {
            chars.next();
            while chars.peek().is_some_and(|(_, c)| c.is_whitespace()) {
                chars.next();
            }
            match chars.peek().map(|(index, c)| (*index, *c)) {
                Some((index, quote @ ('"' | '\''))) => {
                    chars.next();
                    let close = text[index + 1..]
                        .find(quote)
                        .map_or(bytes.len(), |i| index + 1 + i);
                    value = text[index + 1..close].to_string();
                    while chars.peek().is_some_and(|(i, _)| *i <= close) {
                        chars.next();
                    }
                }
                Some(_) => {
                    while let Some(&(_, c)) = chars.peek() {
                        if c.is_whitespace() {
                            break;
                        }
                        value.push(c);
                        chars.next();
                    }
                }
                None => {}
            }
        }
        if name.is_empty() {
            chars.next();
        } else {
            out.push((name, value));
        }
    }
    out
}

fn charset_in_content(content: &str) -> Option<String> {
    let at = content.find("charset")?;
    let rest = content[at + "charset".len()..].trim_start();
    let rest = rest.strip_prefix('=')?.trim_start();
    let rest = rest.trim_start_matches(['"', '\'']);
    let end = rest.find([';', '"', '\'', ' ']).unwrap_or(rest.len());
    Some(rest[..end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(bytes: &[u8], content_type: &str) -> (String, &'static str, Source) {
        let truncated = content_type.contains("truncated");
        let (text, encoding, source) = decode(bytes, &Mime::parse(content_type), truncated);
        (text, encoding.name(), source)
    }

    #[test]
    fn charset_order() {
        let cases: &[(&[u8], &str, &str, &str, Source)] = &[
            (
                b"caf\xc3\xa9",
                "text/plain",
                "café",
                "UTF-8",
                Source::Default,
            ),
            (
                b"caf\xe9",
                "text/plain",
                "café",
                "windows-1252",
                Source::Default,
            ),
            (
                b"caf\xe9",
                "text/plain; charset=iso-8859-1",
                "café",
                "windows-1252",
                Source::Header,
            ),
            (
                b"\xef\xbb\xbfcaf\xc3\xa9",
                "text/plain; charset=iso-8859-1",
                "café",
                "UTF-8",
                Source::Bom,
            ),
            (b"\xff\xfec\x00", "text/plain", "c", "UTF-16LE", Source::Bom),
            (
                b"<meta charset=\"shift_jis\">\x82\xa0",
                "text/html",
                "<meta charset=\"shift_jis\">あ",
                "Shift_JIS",
                Source::Meta,
            ),
            (
                b"<meta http-equiv='Content-Type' content='text/html; charset=koi8-r'>\xc1",
                "text/html",
                "<meta http-equiv='Content-Type' content='text/html; charset=koi8-r'>а",
                "KOI8-R",
                Source::Meta,
            ),
            (
                b"<!-- <meta charset=koi8-r> --><p>\xc3\xa9",
                "text/html",
                "<!-- <meta charset=koi8-r> --><p>é",
                "UTF-8",
                Source::Default,
            ),
            (
                b"<meta charset=utf-16><p>x",
                "text/html",
                "<meta charset=utf-16><p>x",
                "UTF-8",
                Source::Meta,
            ),
            (
                b"<meta charset=\"koi8-r\">\xc1",
                "text/html; charset=utf-8",
                "<meta charset=\"koi8-r\">\u{fffd}",
                "UTF-8",
                Source::Header,
            ),
            (
                b"<?xml version='1.0' encoding='ISO-8859-1'?><a>\xe9</a>",
                "application/xml",
                "<?xml version='1.0' encoding='ISO-8859-1'?><a>é</a>",
                "windows-1252",
                Source::XmlDeclaration,
            ),
            (
                b"<?xml version=\"1.0\"?><a>\xc3\xa9</a>",
                "text/xml",
                "<?xml version=\"1.0\"?><a>é</a>",
                "UTF-8",
                Source::Default,
            ),
            // A multi-byte character cut by the cap stays UTF-8.
            (
                b"caf\xc3",
                "text/plain; truncated",
                "caf\u{fffd}",
                "UTF-8",
                Source::Default,
            ),
            (
                b"caf\xc3",
                "text/plain",
                "caf\u{c3}",
                "windows-1252",
                Source::Default,
            ),
        ];
        for (bytes, content_type, text, encoding, source) in cases {
            let got = decoded(bytes, content_type);
            assert_eq!(
                got,
                (text.to_string(), *encoding, *source),
                "{content_type} {bytes:?}"
            );
        }
    }

    #[test]
    fn html_is_sniffed_without_a_content_type() {
        assert!(looks_like_html(b"  <!DOCTYPE html><p>x"));
        assert!(looks_like_html(b"<HTML lang=en>"));
        assert!(!looks_like_html(b"plain <html> later"));
        assert!(!looks_like_html(b"{\"a\": 1}"));
    }

    #[test]
    fn content_types() {
        for yes in [
            "text/html; charset=utf-8",
            "TEXT/PLAIN",
            "text/markdown",
            "application/json",
            "application/xhtml+xml",
            "application/ld+json",
            "application/rss+xml",
            "application/javascript",
            "text/xml",
            "application/xml",
            "text/csv",
        ] {
            assert!(Mime::parse(yes).is_text(), "{yes}");
        }
        for no in [
            "image/png",
            "application/octet-stream",
            "application/pdf",
            "application/zip",
            "application/gzip",
            "video/mp4",
            "audio/mpeg",
            "font/woff2",
            "",
        ] {
            assert!(!Mime::parse(no).is_text(), "{no}");
        }
    }
}

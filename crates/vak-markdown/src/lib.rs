//! HTML to Markdown (and to plain text), for the two tools that read web pages: `webfetch`
//! (vak-tool-net) and `browse` (vak-tool-browse). A crate of its own so that `browse` gets the
//! converter without webfetch's TLS and decompression stacks.
//!
//! Nesting is first capped by a linear pre-pass (html5ever's tree builder is quadratic in
//! depth); the page is then parsed once with html5ever (through `htmd`) and cleaned up in one iterative pass
//! (no recursion, so no depth can overflow the stack here):
//!
//! - elements that carry no readable text are dropped with their content: `script`, `style`,
//!   `noscript`, `template`, `svg`, `math`, `iframe`, `frame`, `frameset`, `object`, `embed`,
//!   `canvas`, `audio`, `video`, `head` metadata (`link`, `meta`, `base`), and form controls
//!   (`select`, `button`, `input`, `textarea`);
//! - `href` and `src` are made absolute against the page's URL (or its `<base href>`);
//! - below [`MAX_DEPTH`] levels the tree is flattened: the deeper elements are replaced by their
//!   text, in order, so that the converter (which recurses) stays within its stack.
//!
//! `htmd` (Apache-2.0) then writes the Markdown. The conversion functions are synchronous and
//! CPU-bound; from async code call [`convert`], which runs them on a dedicated thread with a
//! large stack under a deadline.
//!
//! ```
//! let base = url::Url::parse("https://example.com/").unwrap();
//! assert_eq!(vak_markdown::html_to_markdown("<p>Hi <b>there</b></p>", &base), "Hi **there**");
//! assert_eq!(vak_markdown::html_to_text("<p>Hi</p><p>there</p>"), "Hi\nthere");
//! ```
#![forbid(unsafe_code)]

mod depth_cap;

use std::rc::Rc;
use std::time::Duration;

use htmd::{HtmlToMarkdown, Node};
use markup5ever_rcdom::NodeData;
use url::Url;

/// Elements at this depth keep only the text of their descendants.
pub const MAX_DEPTH: usize = 256;

/// The stack of the conversion thread that [`convert`] starts.
pub const CONVERT_STACK_BYTES: usize = 64 * 1024 * 1024;

const DROPPED: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "math", "iframe", "frame", "frameset",
    "object", "embed", "canvas", "audio", "video", "link", "meta", "base", "select", "button",
    "input", "textarea", "dialog",
];

const BLOCKS: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "body",
    "dd",
    "details",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "html",
    "li",
    "main",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "summary",
    "table",
    "title",
    "tr",
    "ul",
];

/// What [`convert`] produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    /// Markdown, links absolute.
    Markdown,
    /// Plain text: block elements on their own lines, no markup.
    Text,
}

/// Why [`convert`] gave no text.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConvertError {
    /// The deadline passed before the conversion finished.
    #[error("converting the page took longer than the time left ({0:?})")]
    Deadline(Duration),
    /// The conversion thread could not start, or died.
    #[error("the conversion thread failed: {0}")]
    Thread(String),
}

/// Converts an HTML document to Markdown: text-free elements dropped, links and image sources
/// absolute against `base`. Synchronous and recursive inside `htmd`: from async code, or for
/// untrusted input on a small stack, use [`convert`].
///
/// ```
/// use url::Url;
/// use vak_markdown::html_to_markdown;
///
/// let base = Url::parse("https://example.com/docs/intro.html").unwrap();
/// let md = html_to_markdown("<h1>Hi</h1><script>x()</script><a href='next.html'>next</a>", &base);
/// assert!(md.contains("# Hi"));
/// assert!(md.contains("(https://example.com/docs/next.html)"));
/// assert!(!md.contains("x()"));
/// ```
pub fn html_to_markdown(html: &str, base: &Url) -> String {
    let converter = HtmlToMarkdown::builder().scripting_enabled(false).build();
    let html = crate::depth_cap::cap_depth(html, crate::depth_cap::MAX_PARSE_DEPTH);
    let Ok(tree) = converter.html_to_tree(&html) else {
        return String::new();
    };
    clean(&tree, base);
    converter.tree_to_markdown(&tree)
}

/// Converts an HTML document to plain text: block elements on their own lines, text-free
/// elements dropped, whitespace collapsed outside `pre`.
pub fn html_to_text(html: &str) -> String {
    let converter = HtmlToMarkdown::builder().scripting_enabled(false).build();
    let html = crate::depth_cap::cap_depth(html, crate::depth_cap::MAX_PARSE_DEPTH);
    let Ok(tree) = converter.html_to_tree(&html) else {
        return String::new();
    };
    // The base only matters for attributes, which text drops.
    if let Ok(base) = Url::parse("about:blank") {
        clean(&tree, &base);
    }
    text_of(&tree)
}

/// Runs [`html_to_markdown`] or [`html_to_text`] on a fresh thread with a
/// [`CONVERT_STACK_BYTES`] stack, and waits at most `timeout`. A conversion that overruns is
/// abandoned (its thread finishes on its own and its result is dropped).
pub async fn convert(
    html: String,
    base: Url,
    flavour: Flavour,
    timeout: Duration,
) -> Result<String, ConvertError> {
    let (sender, receiver) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("vak-html-convert".into())
        .stack_size(CONVERT_STACK_BYTES)
        .spawn(move || {
            let text = match flavour {
                Flavour::Markdown => html_to_markdown(&html, &base),
                Flavour::Text => html_to_text(&html),
            };
            let _ = sender.send(text);
        })
        .map_err(|error| ConvertError::Thread(error.to_string()))?;
    match tokio::time::timeout(timeout, receiver).await {
        Ok(Ok(text)) => Ok(text),
        Ok(Err(_)) => Err(ConvertError::Thread("it stopped without a result".into())),
        Err(_) => Err(ConvertError::Deadline(timeout)),
    }
}

fn tag(node: &Node) -> Option<&str> {
    match &node.data {
        NodeData::Element { name, .. } => Some(&name.local),
        _ => None,
    }
}

/// The document's `<base href>`, joined to `base`.
fn document_base(tree: &Rc<Node>, base: &Url) -> Url {
    let mut stack = vec![Rc::clone(tree)];
    while let Some(node) = stack.pop() {
        if let NodeData::Element { name, attrs, .. } = &node.data
            && &*name.local == "base"
        {
            let href = attrs
                .borrow()
                .iter()
                .find(|attr| &*attr.name.local == "href")
                .map(|attr| attr.value.to_string());
            if let Some(joined) = href.and_then(|href| base.join(href.trim()).ok()) {
                return joined;
            }
        }
        stack.extend(node.children.borrow().iter().rev().cloned());
    }
    base.clone()
}

/// Drops text-free elements, makes links absolute, flattens below [`MAX_DEPTH`].
fn clean(tree: &Rc<Node>, base: &Url) {
    let base = document_base(tree, base);
    let mut stack = vec![(Rc::clone(tree), 0usize)];
    while let Some((node, depth)) = stack.pop() {
        node.children
            .borrow_mut()
            .retain(|child| !tag(child).is_some_and(|tag| DROPPED.contains(&tag)));
        absolutise(&node, &base);
        if depth >= MAX_DEPTH {
            flatten(&node);
            continue;
        }
        for child in node.children.borrow().iter() {
            stack.push((Rc::clone(child), depth + 1));
        }
    }
}

fn absolutise(node: &Node, base: &Url) {
    let NodeData::Element { attrs, .. } = &node.data else {
        return;
    };
    for attr in attrs.borrow_mut().iter_mut() {
        if matches!(&*attr.name.local, "href" | "src")
            && let Ok(joined) = base.join(attr.value.trim())
        {
            attr.value = joined.as_str().into();
        }
    }
}

/// Replaces the children of `node` by the text nodes of its whole subtree, in order.
fn flatten(node: &Rc<Node>) {
    let mut texts = Vec::new();
    let mut stack: Vec<Rc<Node>> = node.children.borrow().iter().rev().cloned().collect();
    while let Some(current) = stack.pop() {
        match &current.data {
            NodeData::Text { .. } => texts.push(current),
            NodeData::Element { name, .. } if DROPPED.contains(&&*name.local) => {}
            _ => stack.extend(current.children.borrow().iter().rev().cloned()),
        }
    }
    for text in &texts {
        text.parent.set(Some(Rc::downgrade(node)));
    }
    // Dropping the old children happens here; rcdom's `Drop` is iterative.
    *node.children.borrow_mut() = texts;
}

/// Plain text of a cleaned tree, without recursion.
fn text_of(tree: &Rc<Node>) -> String {
    enum Step {
        Enter(Rc<Node>, bool),
        Leave(bool),
    }
    let mut out = String::new();
    let mut stack = vec![Step::Enter(Rc::clone(tree), false)];
    while let Some(step) = stack.pop() {
        match step {
            Step::Leave(block) => {
                if block && !out.ends_with('\n') {
                    out.push('\n');
                }
            }
            Step::Enter(node, in_pre) => match &node.data {
                NodeData::Text { contents } => {
                    let contents = contents.borrow();
                    if in_pre {
                        out.push_str(&contents);
                    } else {
                        push_collapsed(&mut out, &contents);
                    }
                }
                NodeData::Element { name, .. } => {
                    let tag = &*name.local;
                    if tag == "br" {
                        out.push('\n');
                        continue;
                    }
                    if matches!(tag, "td" | "th") && !out.ends_with(['\n', '\t']) && !out.is_empty()
                    {
                        out.push('\t');
                    }
                    let block = BLOCKS.contains(&tag);
                    if block && !out.ends_with('\n') && !out.is_empty() {
                        out.push('\n');
                    }
                    let in_pre = in_pre || tag == "pre";
                    stack.push(Step::Leave(block));
                    for child in node.children.borrow().iter().rev() {
                        stack.push(Step::Enter(Rc::clone(child), in_pre));
                    }
                }
                NodeData::Document => {
                    for child in node.children.borrow().iter().rev() {
                        stack.push(Step::Enter(Rc::clone(child), in_pre));
                    }
                }
                _ => {}
            },
        }
    }
    tidy_lines(&out)
}

fn push_collapsed(out: &mut String, text: &str) {
    for (index, word) in text.split_ascii_whitespace().enumerate() {
        let starts_with_space = text.starts_with(|c: char| c.is_ascii_whitespace());
        if (index > 0 || starts_with_space) && !out.ends_with([' ', '\n']) && !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    if text.ends_with(|c: char| c.is_ascii_whitespace())
        && !text.trim().is_empty()
        && !out.ends_with([' ', '\n'])
    {
        out.push(' ');
    }
}

/// Trims trailing spaces of each line and keeps at most one blank line in a row.
fn tidy_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank_run = 0;
    for line in text.lines() {
        let line = line.trim_end();
        if line.trim().is_empty() {
            blank_run += 1;
            if blank_run > 1 || out.is_empty() {
                continue;
            }
        } else {
            blank_run = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Url {
        Url::parse("https://example.com/a/b.html").unwrap()
    }

    #[test]
    fn drops_and_absolutises() {
        let html = r#"<html><head><title>T</title><style>p{}</style></head><body>
            <p>Hello <a href="/x?y=1">there</a> <img src="i.png" alt="pic"></p>
            <script>alert(1)</script><noscript>enable js</noscript><template><p>tpl</p></template>
            <svg><text>vector</text></svg></body></html>"#;
        let md = html_to_markdown(html, &base());
        assert!(md.contains("[there](https://example.com/x?y=1)"), "{md}");
        assert!(md.contains("https://example.com/a/i.png"), "{md}");
        for gone in ["alert", "enable js", "tpl", "vector", "p{}"] {
            assert!(!md.contains(gone), "{gone}: {md}");
        }
    }

    #[test]
    fn base_element_counts() {
        let html = r#"<base href="https://other.example/root/"><a href="page">p</a>"#;
        let md = html_to_markdown(html, &base());
        assert!(md.contains("(https://other.example/root/page)"), "{md}");
    }

    #[test]
    fn text_has_lines_and_no_markup() {
        let html = "<h1>Title</h1><p>one   two</p><ul><li>a</li><li>b</li></ul><pre>x  y</pre>";
        let text = html_to_text(html);
        assert_eq!(text, "Title\none two\na\nb\nx  y");
    }
}

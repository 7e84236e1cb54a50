//! Line endings: which one a text uses, and a text with its endings turned into another.

use std::borrow::Cow;

/// A line ending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Eol {
    /// `\n`
    Lf,
    /// `\r\n`
    Crlf,
}

impl Eol {
    /// The bytes of the ending.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Eol::Lf => "\n",
            Eol::Crlf => "\r\n",
        }
    }

    /// The ending most lines of `text` use: `None` when it has no line ending at all, and on a
    /// tie.
    pub(crate) fn dominant(text: &str) -> Option<Eol> {
        let (crlf, lf) = count_endings(text);
        match crlf.cmp(&lf) {
            std::cmp::Ordering::Greater => Some(Eol::Crlf),
            std::cmp::Ordering::Less => Some(Eol::Lf),
            std::cmp::Ordering::Equal => None,
        }
    }
}

/// How many lines of `text` end with `\r\n` and how many with a lone `\n`.
pub(crate) fn count_endings(text: &str) -> (usize, usize) {
    let bytes = text.as_bytes();
    let mut crlf = 0;
    let mut lf = 0;
    for i in memchr::memchr_iter(b'\n', bytes) {
        if i > 0 && bytes[i - 1] == b'\r' {
            crlf += 1;
        } else {
            lf += 1;
        }
    }
    (crlf, lf)
}

/// `text` with every line ending turned into `eol` (a lone `\r` is left alone).
pub(crate) fn with_endings(text: &str, eol: Eol) -> Cow<'_, str> {
    let (crlf, lf) = count_endings(text);
    match eol {
        Eol::Lf if crlf > 0 => Cow::Owned(text.replace("\r\n", "\n")),
        Eol::Crlf if lf > 0 => {
            let mut out = String::with_capacity(text.len() + lf);
            let mut previous = '\0';
            for c in text.chars() {
                if c == '\n' && previous != '\r' {
                    out.push('\r');
                }
                out.push(c);
                previous = c;
            }
            Cow::Owned(out)
        }
        _ => Cow::Borrowed(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endings() {
        assert_eq!(count_endings("a\r\nb\nc\r\n"), (2, 1));
        assert_eq!(Eol::dominant("a\r\nb\nc\r\n"), Some(Eol::Crlf));
        assert_eq!(Eol::dominant("a\nb"), Some(Eol::Lf));
        assert_eq!(Eol::dominant("ab"), None);
        assert_eq!(with_endings("a\nb\r\nc\n", Eol::Crlf), "a\r\nb\r\nc\r\n");
        assert_eq!(with_endings("a\nb\r\nc", Eol::Lf), "a\nb\nc");
        assert!(matches!(with_endings("a\nb", Eol::Lf), Cow::Borrowed(_)));
    }
}

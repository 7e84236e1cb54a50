//! Byte offsets as 1-based line numbers, and line ranges as results and errors write them.

/// Turns byte offsets into 1-based line numbers, for offsets given in increasing order (each
/// call counts only the newlines since the previous one).
pub(crate) struct LineCounter<'a> {
    bytes: &'a [u8],
    pos: usize,
    line: usize,
}

impl<'a> LineCounter<'a> {
    /// A counter over `text`.
    pub(crate) fn new(text: &'a str) -> Self {
        Self {
            bytes: text.as_bytes(),
            pos: 0,
            line: 1,
        }
    }

    /// The line that holds byte `offset`. Offsets before the previous one restart the count.
    pub(crate) fn line_at(&mut self, offset: usize) -> usize {
        let offset = offset.min(self.bytes.len());
        if offset < self.pos {
            self.pos = 0;
            self.line = 1;
        }
        self.line += memchr::memchr_iter(b'\n', &self.bytes[self.pos..offset]).count();
        self.pos = offset;
        self.line
    }

    /// The first and last line of the byte range `start..end`. A range that ends with a newline
    /// ends on the line of that newline; an empty range sits on the line of `start`.
    pub(crate) fn span(&mut self, start: usize, end: usize) -> (usize, usize) {
        let first = self.line_at(start);
        let last_byte = if end > start { end - 1 } else { start };
        (first, self.line_at(last_byte))
    }
}

/// `first-last`, or just `first` when they are the same line.
pub(crate) fn line_range(first: usize, last: usize) -> String {
    if first == last {
        format!("{first}")
    } else {
        format!("{first}-{last}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_numbers() {
        let text = "a\nb\nc\n";
        let mut counter = LineCounter::new(text);
        assert_eq!(counter.line_at(0), 1);
        assert_eq!(counter.line_at(2), 2);
        assert_eq!(counter.span(2, 6), (2, 3));
        assert_eq!(counter.span(0, 2), (1, 1));
        assert_eq!(counter.span(6, 6), (4, 4));
        assert_eq!(line_range(3, 3), "3");
        assert_eq!(line_range(3, 5), "3-5");
    }
}

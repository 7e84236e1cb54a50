//! One streaming pass over a text file: the page of lines asked for, the exact line count and
//! the content hash, in memory bounded by the page budget and one read buffer.
//!
//! The file is read in fixed-size chunks. Before the page, whole chunks are skipped by counting
//! their newlines (SIMD `memchr`); inside the page, lines are copied until the line limit or the
//! byte budget is reached; after it, newlines are only counted. Every byte also goes through the
//! hasher. Nothing ever holds more than the budget plus one chunk, whatever the file's size or
//! the length of its lines.

use std::io::{self, Read};
use std::ops::Range;
use std::sync::mpsc;

use vak_tool_core::CancellationToken;

use crate::hash::ContentHasher;

/// The UTF-8 byte order mark.
const BOM: &[u8] = b"\xef\xbb\xbf";

/// What page to cut out of a file.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PageRequest {
    /// The first line to show, 1-based.
    pub(crate) offset: u64,
    /// The most lines to show (at least 1).
    pub(crate) limit: u64,
    /// The most bytes the rendered page may take (line numbers and tabs included).
    pub(crate) budget: usize,
    /// The size of each read.
    pub(crate) chunk: usize,
    /// Whether to hash on a second thread (worth it for large files only).
    pub(crate) parallel_hash: bool,
    /// The byte that ends a line: `\n` (a `\r` before it is removed, CRLF), or `\r` for a
    /// file whose lines end with a lone carriage return (classic Mac OS).
    pub(crate) eol: u8,
}

/// The one line that alone exceeds the budget, cut at a character boundary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CutLine {
    /// Its line number.
    pub(crate) line: u64,
    /// Characters shown.
    pub(crate) shown_chars: u64,
    /// Characters not shown (line ending excluded).
    pub(crate) hidden_chars: u64,
    /// The 1-based byte position in the file of the first byte not shown (for `tail -c +N`).
    pub(crate) resume_byte: u64,
}

/// The result of one pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Page {
    /// The raw bytes of the shown lines, back to back, line endings removed.
    pub(crate) text: Vec<u8>,
    /// Each shown line's span in `text`, in order.
    pub(crate) lines: Vec<Range<usize>>,
    /// The number of the first shown line (the requested offset).
    pub(crate) first: u64,
    /// The exact number of lines in the file (a last line without a newline counts).
    pub(crate) total_lines: u64,
    /// The file's size in bytes, as read.
    pub(crate) bytes: u64,
    /// Whether the file starts with a UTF-8 byte order mark (never part of a line).
    pub(crate) bom: bool,
    /// How many shown lines ended with `\r\n` (the `\r` is removed).
    pub(crate) crlf_lines: u64,
    /// The first line not shown, when the page stopped before the end of the file.
    pub(crate) next: Option<u64>,
    /// Whether the byte budget (not the line limit) ended the page.
    pub(crate) full: bool,
    /// The line cut short because it alone exceeds the budget.
    pub(crate) cut: Option<CutLine>,
    /// The hash of the whole file.
    pub(crate) hash: String,
    /// The position of the first NUL byte: the text is binary after all, and the scan stopped
    /// there (the rest of the page is meaningless).
    pub(crate) nul: Option<u64>,
    /// Whether lines ended with a lone `\r` (the request's `eol`).
    pub(crate) cr_lines: bool,
}

/// Where the scan is relative to the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Before the first line of the page.
    Skip,
    /// Copying lines of the page.
    Copy,
    /// Copying the part of an over-long first line that fits, counting the rest.
    Cutting,
    /// After the page: only counting.
    Count,
}

struct Scanner {
    request: PageRequest,
    phase: Phase,
    /// The line the next byte belongs to.
    line: u64,
    newlines: u64,
    /// The file position (0-based, BOM included) of the next byte.
    pos: u64,
    last_byte: Option<u8>,
    text: Vec<u8>,
    lines: Vec<Range<usize>>,
    /// Where the current line starts in `text`.
    line_start: usize,
    /// The file position of the current line's first byte.
    line_pos: u64,
    /// Bytes of the page used so far, as rendered.
    used: usize,
    crlf_lines: u64,
    next: Option<u64>,
    full: bool,
    cut: Option<CutLine>,
    /// While cutting: characters after the kept part, and the last byte of the line.
    cut_rest_chars: u64,
    cut_last: Option<u8>,
    /// Where the first NUL byte is.
    nul: Option<u64>,
}

/// The width that `cat -n` gives a line number: six columns, more for larger numbers.
fn number_width(line: u64) -> usize {
    let digits = line.checked_ilog10().unwrap_or(0) as usize + 1;
    digits.max(6)
}

/// The number of characters in UTF-8 `bytes` (each byte that does not continue a character
/// starts one; a stray invalid byte counts as one, as lossy decoding shows it).
fn count_chars(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|&&byte| byte & 0xc0 != 0x80).count() as u64
}

impl Scanner {
    fn new(request: PageRequest) -> Self {
        Self {
            request,
            phase: if request.offset <= 1 {
                Phase::Copy
            } else {
                Phase::Skip
            },
            line: 1,
            newlines: 0,
            pos: 0,
            last_byte: None,
            text: Vec::new(),
            lines: Vec::new(),
            line_start: 0,
            line_pos: 0,
            used: 0,
            crlf_lines: 0,
            next: None,
            full: false,
            cut: None,
            cut_rest_chars: 0,
            cut_last: None,
            nul: None,
        }
    }

    /// Feeds one chunk of line content (the BOM already removed).
    fn feed(&mut self, data: &[u8]) {
        if let Some(&last) = data.last() {
            self.last_byte = Some(last);
        }
        let mut i = 0;
        while i < data.len() {
            let rest = &data[i..];
            match self.phase {
                Phase::Skip => {
                    let needed = self.request.offset - self.line;
                    let in_rest = memchr::memchr_iter(self.request.eol, rest).count() as u64;
                    if in_rest < needed {
                        self.line += in_rest;
                        self.newlines += in_rest;
                        i = data.len();
                    } else {
                        // The page starts inside this chunk: find exactly where.
                        let mut consumed = rest.len();
                        for (seen, at) in memchr::memchr_iter(self.request.eol, rest).enumerate() {
                            if seen as u64 + 1 == needed {
                                consumed = at + 1;
                                break;
                            }
                        }
                        self.line += needed;
                        self.newlines += needed;
                        i += consumed;
                        self.phase = Phase::Copy;
                        self.start_line(self.pos + i as u64);
                    }
                }
                Phase::Copy | Phase::Cutting => {
                    let (part, ends) = match memchr::memchr(self.request.eol, rest) {
                        Some(at) => (&rest[..at], true),
                        None => (rest, false),
                    };
                    self.copy_part(part);
                    i += part.len();
                    if ends {
                        i += 1;
                        if matches!(self.phase, Phase::Copy | Phase::Cutting) {
                            self.end_line();
                        }
                        self.newlines += 1;
                        self.line += 1;
                        if self.phase == Phase::Copy {
                            self.start_line(self.pos + i as u64);
                        }
                    }
                }
                Phase::Count => {
                    self.newlines += memchr::memchr_iter(self.request.eol, rest).count() as u64;
                    i = data.len();
                }
            }
        }
        self.pos += data.len() as u64;
    }

    /// Whether a `\r` before the line's end is part of a CRLF ending (not in `\r` mode).
    fn crlf(&self) -> bool {
        self.request.eol == b'\n'
    }

    fn start_line(&mut self, pos: u64) {
        self.line_start = self.text.len();
        self.line_pos = pos;
    }

    /// How many bytes of content the current line may have and still fit the page.
    fn room(&self) -> usize {
        let overhead = number_width(self.line) + 2; // tab and newline
        self.request
            .budget
            .saturating_sub(self.used)
            .saturating_sub(overhead)
    }

    /// Copies part of the current line (no newline in it).
    fn copy_part(&mut self, part: &[u8]) {
        if self.phase == Phase::Cutting {
            self.cut_rest_chars += count_chars(part);
            if let Some(&last) = part.last() {
                self.cut_last = Some(last);
            }
            return;
        }
        let have = self.text.len() - self.line_start;
        let room = self.room();
        // One byte of slack for a `\r` that will be removed at the line's end.
        if have + part.len() <= room
            || (self.crlf() && have + part.len() == room + 1 && part.last() == Some(&b'\r'))
        {
            self.text.extend_from_slice(part);
        } else if self.lines.is_empty() {
            // The first line of the page alone exceeds the budget: keep what fits, count the rest.
            let take = room.saturating_sub(have).min(part.len());
            self.text.extend_from_slice(&part[..take]);
            self.cut_rest_chars = count_chars(&part[take..]);
            self.cut_last = part.last().copied();
            self.phase = Phase::Cutting;
        } else {
            // This line does not fit after the others: the page ends before it.
            self.text.truncate(self.line_start);
            self.next = Some(self.line);
            self.full = true;
            self.phase = Phase::Count;
        }
    }

    /// Ends the current line of the page (at a newline, or at the end of the file).
    fn end_line(&mut self) {
        match self.phase {
            Phase::Copy => {
                if self.crlf()
                    && self.text.last() == Some(&b'\r')
                    && self.text.len() > self.line_start
                {
                    self.text.pop();
                    self.crlf_lines += 1;
                }
                let len = self.text.len() - self.line_start;
                self.used += number_width(self.line) + 2 + len;
                self.lines.push(self.line_start..self.text.len());
                if self.lines.len() as u64 >= self.request.limit {
                    self.next = Some(self.line + 1);
                    self.phase = Phase::Count;
                }
            }
            Phase::Cutting => {
                if self.crlf() && self.cut_last == Some(b'\r') {
                    self.cut_rest_chars = self.cut_rest_chars.saturating_sub(1);
                }
                let end = char_boundary(&self.text, self.line_start);
                let dropped = count_chars(&self.text[end..]);
                self.text.truncate(end);
                let kept = end - self.line_start;
                self.cut = Some(CutLine {
                    line: self.line,
                    shown_chars: count_chars(&self.text[self.line_start..]),
                    hidden_chars: self.cut_rest_chars + dropped,
                    resume_byte: self.line_pos + kept as u64 + 1,
                });
                self.lines.push(self.line_start..self.text.len());
                self.next = Some(self.line + 1);
                self.full = true;
                self.phase = Phase::Count;
            }
            Phase::Skip | Phase::Count => {}
        }
    }

    fn finish(mut self, bom: bool, hash: String) -> Page {
        // A last line without a newline.
        let unterminated = matches!(self.last_byte, Some(byte) if byte != self.request.eol);
        if unterminated && matches!(self.phase, Phase::Copy | Phase::Cutting) {
            self.end_line();
        }
        let total_lines = self.newlines + u64::from(unterminated);
        let next = self.next.filter(|&next| next <= total_lines);
        Page {
            text: self.text,
            lines: self.lines,
            first: self.request.offset,
            total_lines,
            bytes: self.pos,
            bom,
            crlf_lines: self.crlf_lines,
            full: self.full && next.is_some(),
            next,
            cut: self.cut,
            hash,
            nul: self.nul,
            cr_lines: self.request.eol == b'\r',
        }
    }
}

/// The end of `text` moved back, not below `floor`, so that it does not split a UTF-8
/// character (stray invalid bytes are left as they are).
fn char_boundary(text: &[u8], floor: usize) -> usize {
    let end = text.len();
    let mut lead = end;
    while lead > floor && end - lead < 4 && text[lead - 1] & 0xc0 == 0x80 {
        lead -= 1;
    }
    if lead == floor {
        return end;
    }
    let lead = lead - 1;
    let width = match text[lead] {
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => return end,
    };
    if lead + width > end { lead } else { end }
}

/// Reads until `buf` is full or the input ends; returns how many bytes were read.
fn fill(reader: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(filled)
}

/// Where the scan sends each chunk after it has looked at it: to the hasher.
trait Hashing {
    /// A buffer to read the next chunk into (any length; it is resized).
    fn buffer(&mut self) -> Vec<u8>;
    /// Hashes a chunk (and may hand its buffer back later).
    fn hash(&mut self, chunk: Vec<u8>) -> io::Result<()>;
}

/// Hashing on the scanning thread, reusing one buffer.
struct Inline {
    hasher: ContentHasher,
    spare: Option<Vec<u8>>,
}

impl Hashing for Inline {
    fn buffer(&mut self) -> Vec<u8> {
        self.spare.take().unwrap_or_default()
    }

    fn hash(&mut self, chunk: Vec<u8>) -> io::Result<()> {
        self.hasher.update(&chunk);
        self.spare = Some(chunk);
        Ok(())
    }
}

/// Hashing on a second thread while the scan goes on: SHA-256 is the slow part of a pass, so a
/// large file costs about the hash alone rather than hash plus scan. At most four buffers exist
/// at once (two queued, one being hashed, one being filled).
struct Pipelined {
    full: mpsc::SyncSender<Vec<u8>>,
    free: mpsc::Receiver<Vec<u8>>,
}

impl Hashing for Pipelined {
    fn buffer(&mut self) -> Vec<u8> {
        self.free.try_recv().unwrap_or_default()
    }

    fn hash(&mut self, chunk: Vec<u8>) -> io::Result<()> {
        self.full
            .send(chunk)
            .map_err(|_| io::Error::other("the hashing thread stopped"))
    }
}

/// Reads all of `reader` once and cuts out the requested page.
///
/// Returns `Ok(None)` when `cancel` fires before the end.
pub(crate) fn scan(
    reader: &mut impl Read,
    request: PageRequest,
    cancel: &CancellationToken,
) -> io::Result<Option<Page>> {
    if !request.parallel_hash {
        let mut inline = Inline {
            hasher: ContentHasher::default(),
            spare: None,
        };
        let scanned = scan_with(reader, request, cancel, &mut inline)?;
        return Ok(scanned.map(|(scanner, bom)| scanner.finish(bom, inline.hasher.finish())));
    }
    std::thread::scope(|scope| {
        let (full_tx, full_rx) = mpsc::sync_channel::<Vec<u8>>(2);
        let (free_tx, free_rx) = mpsc::channel();
        let worker = std::thread::Builder::new()
            .name("vak-read-hash".into())
            .spawn_scoped(scope, move || {
                let mut hasher = ContentHasher::default();
                for chunk in full_rx {
                    hasher.update(&chunk);
                    // The scan may have finished already; then the buffer is simply dropped.
                    let _ = free_tx.send(chunk);
                }
                hasher.finish()
            })?;
        let mut pipelined = Pipelined {
            full: full_tx,
            free: free_rx,
        };
        let scanned = scan_with(reader, request, cancel, &mut pipelined);
        // Closing the channel ends the hashing thread.
        drop(pipelined);
        let hash = worker
            .join()
            .map_err(|_| io::Error::other("the hashing thread failed"))?;
        Ok(scanned?.map(|(scanner, bom)| scanner.finish(bom, hash)))
    })
}

/// The scanning loop: returns the scanner at the end of the input and whether there was a BOM.
fn scan_with(
    reader: &mut impl Read,
    request: PageRequest,
    cancel: &CancellationToken,
    hashing: &mut impl Hashing,
) -> io::Result<Option<(Scanner, bool)>> {
    let size = request.chunk.max(BOM.len());
    let mut scanner = Scanner::new(request);
    let mut first = true;
    let mut bom = false;
    loop {
        if cancel.is_cancelled() {
            return Ok(None);
        }
        let mut buf = hashing.buffer();
        buf.resize(size, 0);
        let n = fill(reader, &mut buf)?;
        if n == 0 {
            break;
        }
        buf.truncate(n);
        let mut content = &buf[..];
        if first {
            first = false;
            if let Some(rest) = content.strip_prefix(BOM) {
                bom = true;
                content = rest;
                scanner.pos = BOM.len() as u64;
                scanner.line_pos = BOM.len() as u64;
            }
        }
        if let Some(at) = memchr::memchr(0, content) {
            // Binary after all: no page of it will be shown.
            scanner.nul = Some(scanner.pos + at as u64);
            break;
        }
        scanner.feed(content);
        hashing.hash(buf)?;
        if n < size {
            break;
        }
    }
    Ok(Some((scanner, bom)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::line_count::EXAMPLES;

    fn page_of(
        bytes: &[u8],
        offset: u64,
        limit: u64,
        budget: usize,
        chunk: usize,
        parallel_hash: bool,
    ) -> Page {
        let request = PageRequest {
            offset,
            limit,
            budget,
            chunk,
            parallel_hash,
            eol: b'\n',
        };
        scan(&mut &bytes[..], request, &CancellationToken::new())
            .unwrap()
            .unwrap()
    }

    fn shown(page: &Page) -> Vec<String> {
        page.lines
            .iter()
            .map(|range| String::from_utf8_lossy(&page.text[range.clone()]).into_owned())
            .collect()
    }

    /// The same answers whatever the chunk size, so chunk boundaries never matter.
    fn check(bytes: &[u8], offset: u64, limit: u64, budget: usize) -> Page {
        let reference = page_of(bytes, offset, limit, budget, 1 << 16, false);
        for chunk in [4, 5, 7, 16, 64] {
            for parallel_hash in [false, true] {
                assert_eq!(
                    page_of(bytes, offset, limit, budget, chunk, parallel_hash),
                    reference,
                    "chunk {chunk} (parallel hash {parallel_hash}) differs for {:?}",
                    String::from_utf8_lossy(bytes)
                );
            }
        }
        assert_eq!(reference.hash, crate::hash::content_hash(bytes));
        assert_eq!(reference.bytes, bytes.len() as u64);
        reference
    }

    #[test]
    fn line_counts() {
        for (text, total) in EXAMPLES {
            assert_eq!(
                check(text.as_bytes(), 1, 10, 1000).total_lines,
                total,
                "{text:?}"
            );
        }
        assert_eq!(check(b"\xef\xbb\xbf", 1, 10, 1000).total_lines, 0);
        assert_eq!(check(b"\xef\xbb\xbfa", 1, 10, 1000).total_lines, 1);
    }

    #[test]
    fn pages_and_continuations() {
        let text: String = (1..=30).map(|n| format!("line {n}\n")).collect();
        // (offset, limit, first shown, last shown, next)
        let cases = [
            (1, 10, "line 1", "line 10", Some(11)),
            (25, 10, "line 25", "line 30", None),
            (21, 10, "line 21", "line 30", None),
            (30, 1, "line 30", "line 30", None),
            (2, 1, "line 2", "line 2", Some(3)),
        ];
        for (offset, limit, first, last, next) in cases {
            let page = check(text.as_bytes(), offset, limit, 100_000);
            let lines = shown(&page);
            assert_eq!(lines.first().map(String::as_str), Some(first));
            assert_eq!(lines.last().map(String::as_str), Some(last));
            assert_eq!(page.next, next, "offset {offset} limit {limit}");
            assert_eq!(page.total_lines, 30);
        }
        let past = check(text.as_bytes(), 31, 10, 100_000);
        assert!(past.lines.is_empty());
        assert_eq!(past.next, None);
    }

    #[test]
    fn budget_ends_the_page_between_lines() {
        // Each line renders as 6 + 1 + 9 + 1 = 17 bytes.
        let text: String = (0..10).map(|n| format!("abcdefgh{n}\n")).collect();
        let page = check(text.as_bytes(), 1, 100, 17 * 3 + 5);
        assert_eq!(shown(&page), ["abcdefgh0", "abcdefgh1", "abcdefgh2"]);
        assert_eq!(page.next, Some(4));
        assert!(page.full);
        assert_eq!(page.cut, None);
        let by_limit = check(text.as_bytes(), 1, 3, 1000);
        assert_eq!((by_limit.next, by_limit.full), (Some(4), false));
        let exact = check(text.as_bytes(), 1, 100, 17 * 3);
        assert_eq!(exact.lines.len(), 3);
    }

    #[test]
    fn a_line_alone_over_the_budget_is_cut_at_a_char_boundary() {
        let long = "é".repeat(50); // 100 bytes
        let text = format!("{long}\r\nnext\n");
        // Room for the line: 20 - 8 = 12 bytes = 6 characters.
        let page = check(text.as_bytes(), 1, 10, 20);
        assert_eq!(shown(&page), ["éééééé"]);
        let cut = page.cut.clone().unwrap();
        assert_eq!(
            cut,
            CutLine {
                line: 1,
                shown_chars: 6,
                hidden_chars: 44,
                resume_byte: 13,
            }
        );
        assert_eq!(page.next, Some(2));
        // An odd room falls inside a character and backs off.
        let page = check(text.as_bytes(), 1, 10, 21);
        assert_eq!(shown(&page), ["éééééé"]);
        assert_eq!(page.cut.unwrap().hidden_chars, 44);
        // The cut line as the last line, without a newline.
        let page = check("x".repeat(40).as_bytes(), 1, 10, 20);
        assert_eq!(page.cut.unwrap().hidden_chars, 28);
        assert_eq!(page.next, None);
        // A long line after shorter ones ends the page before it.
        let page = check(format!("a\n{long}\n").as_bytes(), 1, 10, 20);
        assert_eq!(shown(&page), ["a"]);
        assert_eq!(page.next, Some(2));
        assert_eq!(page.cut, None);
    }

    #[test]
    fn cuts_never_split_a_character() {
        let text = "a€😀".as_bytes(); // 1 + 3 + 4 bytes
        // (bytes kept before backing off, bytes left after)
        for (kept, want) in [
            (1, 1),
            (2, 1),
            (3, 1),
            (4, 4),
            (5, 4),
            (6, 4),
            (7, 4),
            (8, 8),
        ] {
            assert_eq!(char_boundary(&text[..kept], 0), want, "kept {kept}");
        }
        // Stray continuation bytes are left alone; the floor is respected.
        assert_eq!(char_boundary(b"\x80\x80", 0), 2);
        assert_eq!(char_boundary("x€".as_bytes(), 1), 4);
        assert_eq!(char_boundary(&"x€".as_bytes()[..3], 1), 1);
    }

    #[test]
    fn crlf_and_bom() {
        let page = check(b"\xef\xbb\xbfone\r\ntwo\r\nthree", 1, 10, 1000);
        assert!(page.bom);
        assert_eq!(shown(&page), ["one", "two", "three"]);
        assert_eq!(page.crlf_lines, 2);
        let page = check(b"\xef\xbb\xbfone\r\ntwo\r\n", 2, 10, 1000);
        assert_eq!(shown(&page), ["two"]);
        // A lone `\r` inside a line stays.
        let page = check(b"a\rb\n", 1, 10, 1000);
        assert_eq!(page.text, b"a\rb");
    }

    fn page_with(bytes: &[u8], offset: u64, chunk: usize, eol: u8) -> Page {
        let request = PageRequest {
            offset,
            limit: 10,
            budget: 1000,
            chunk,
            parallel_hash: false,
            eol,
        };
        scan(&mut &bytes[..], request, &CancellationToken::new())
            .unwrap()
            .unwrap()
    }

    #[test]
    fn lines_ending_with_a_lone_carriage_return() {
        for chunk in [3, 4, 64] {
            let page = page_with(b"one\rtwo\rthree", 2, chunk, b'\r');
            assert_eq!(shown(&page), ["two", "three"], "chunk {chunk}");
            assert_eq!((page.total_lines, page.crlf_lines), (3, 0));
            assert!(page.cr_lines);
            let page = page_with(b"one\r\r", 1, chunk, b'\r');
            assert_eq!(shown(&page), ["one", ""]);
            assert_eq!(page.total_lines, 2);
        }
    }

    #[test]
    fn a_nul_anywhere_stops_the_scan() {
        for chunk in [3, 4, 64] {
            let page = page_with(b"abc\ndefgh\0ij\n", 1, chunk, b'\n');
            assert_eq!(page.nul, Some(9), "chunk {chunk}");
        }
        let page = page_with(b"\xef\xbb\xbfa\0", 1, 64, b'\n');
        assert_eq!(page.nul, Some(4));
        assert_eq!(page_with(b"abc\n", 1, 64, b'\n').nul, None);
    }

    #[test]
    fn cancelled_scans_stop() {
        let cancel = CancellationToken::new();
        cancel.cancel();
        let request = PageRequest {
            offset: 1,
            limit: 1,
            budget: 100,
            chunk: 16,
            parallel_hash: false,
            eol: b'\n',
        };
        assert_eq!(scan(&mut &b"abc"[..], request, &cancel).unwrap(), None);
        let request = PageRequest {
            parallel_hash: true,
            ..request
        };
        assert_eq!(scan(&mut &b"abc"[..], request, &cancel).unwrap(), None);
    }
}

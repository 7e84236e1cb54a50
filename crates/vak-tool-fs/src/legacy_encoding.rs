//! Legacy single-byte encodings (Windows-1252, ISO 8859-x, KOI8-R, …): which one a text that is
//! not UTF-8 is in, when the detector is sure, and which characters such an encoding cannot
//! hold.
//!
//! Detection is `chardetng` (Firefox's detector) over the bytes, and then our own checks, since
//! `chardetng` always has a guess: the guess must be a single-byte encoding, the bytes must
//! decode without a replacement and without C1 control characters (U+0080 to U+009F, which text
//! never holds but random bytes decoded as Windows-1252 do), and the bytes must hold fewer valid
//! UTF-8 characters beyond ASCII than bad sequences (a UTF-8 file with one stray byte stays
//! UTF-8, shown lossily).

use encoding_rs::Encoding;

/// The legacy single-byte encoding of `bytes` when the detector is sure of one; `None` for
/// UTF-8 (a sequence cut at the end counts as UTF-8 unless `complete`), for ASCII and whenever
/// the guess is doubtful. `complete` says `bytes` is the whole file rather than its start.
pub(crate) fn detect(bytes: &[u8], complete: bool) -> Option<&'static Encoding> {
    match std::str::from_utf8(bytes) {
        Ok(_) => return None,
        // The start of a file may end inside a UTF-8 sequence.
        Err(error) if error.error_len().is_none() && !complete => return None,
        Err(_) => {}
    }
    // As much valid UTF-8 beyond ASCII as bad bytes: a UTF-8 text with a few bad bytes, not a
    // legacy one (where a valid sequence is an accident of two letters in a row).
    let (mut utf8, mut bad) = (0usize, 0usize);
    for chunk in bytes.utf8_chunks() {
        utf8 += chunk.valid().chars().filter(|c| !c.is_ascii()).count();
        bad += usize::from(!chunk.invalid().is_empty());
    }
    if utf8 >= bad {
        return None;
    }
    let mut detector = chardetng::EncodingDetector::new();
    detector.feed(bytes, complete);
    let (encoding, sure) = detector.guess_assess(None, false);
    if !sure || !encoding.is_single_byte() || encoding == encoding_rs::UTF_8 {
        return None;
    }
    let (text, _, replaced) = encoding.decode(bytes);
    let c1 = text.chars().any(|c| ('\u{80}'..='\u{9f}').contains(&c));
    (!replaced && !c1).then_some(encoding)
}

/// The distinct characters of `text` that `encoding` cannot hold, in order of appearance.
pub(crate) fn unencodable(encoding: &'static Encoding, text: &str) -> Vec<char> {
    let mut missing = Vec::new();
    let mut checked = Vec::new();
    for c in text.chars().filter(|c| !c.is_ascii()) {
        if checked.contains(&c) {
            continue;
        }
        checked.push(c);
        let mut buffer = [0; 4];
        let (_, _, unmappable) = encoding.encode(c.encode_utf8(&mut buffer));
        if unmappable {
            missing.push(c);
        }
    }
    missing
}

/// Characters as a model reads them: `'€' (U+20AC), '✓' (U+2713)`, at most `shown` of them.
pub(crate) fn list_chars(chars: &[char], shown: usize) -> String {
    let mut listed: Vec<String> = chars
        .iter()
        .take(shown)
        .map(|c| format!("'{c}' (U+{:04X})", u32::from(*c)))
        .collect();
    if chars.len() > shown {
        listed.push(format!("and {} more", chars.len() - shown));
    }
    listed.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sure_of_latin_text_and_not_of_utf8_or_noise() {
        let latin = b"The na\xefve caf\xe9 serves cr\xe8me br\xfbl\xe9e.\n";
        assert_eq!(detect(latin, true), Some(encoding_rs::WINDOWS_1252));
        assert_eq!(detect(b"caf\xe9\n", true), Some(encoding_rs::WINDOWS_1252));
        assert_eq!(detect("café\n".as_bytes(), true), None);
        assert_eq!(detect(b"plain ascii\n", true), None);
        // UTF-8 with one stray byte stays UTF-8.
        assert_eq!(detect(b"caf\xc3\xa9 and \xe9\n", true), None);
        // A UTF-8 sequence cut at the end of a file's start.
        assert_eq!(detect(b"caf\xc3", false), None);
        // Bytes that decode to C1 controls are not text.
        let noise: Vec<u8> = (0x20..=0xff).collect();
        assert_eq!(detect(&noise, true), None);
    }

    #[test]
    fn what_an_encoding_cannot_hold() {
        // KOI8 letters in a row can make a valid UTF-8 sequence ("ещё" is C5 DD A3).
        let koi8 = encoding_rs::KOI8_R
            .encode("Съешь же ещё этих мягких французских булок, да выпей чаю.\n")
            .0;
        assert!(detect(&koi8, true).is_some_and(|found| found.name().starts_with("KOI8")));
        let cp1252 = encoding_rs::WINDOWS_1252;
        assert!(unencodable(cp1252, "café € “quoted”").is_empty());
        assert_eq!(unencodable(cp1252, "✓ ok ✓ 😀"), ['✓', '😀']);
        assert_eq!(list_chars(&['✓', '😀'], 1), "'✓' (U+2713), and 1 more");
    }
}

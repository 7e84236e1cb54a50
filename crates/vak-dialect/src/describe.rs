//! Descriptions fitted to an API's length limit: whole sentences, the first one and the ones
//! that state a limit or a default first.

/// The most characters of a tool description OpenAI's Chat Completions takes; a longer one
/// makes it reject the whole request.
pub const OPENAI_DESCRIPTION_CHARS: usize = 1024;

/// A tool description in at most `max` characters, for an API that takes no more (see
/// [`OPENAI_DESCRIPTION_CHARS`]): whole sentences, in their order. The first sentence (what
/// the tool does) is always kept; then the sentences that state a limit or a default (they
/// hold a digit: `at most 600000`, `256 KiB`), then the others in order, each while it fits.
/// A text that fits comes back unchanged (borrowed). Only a first sentence longer than `max`
/// is cut inside, ending with `…`.
///
/// ```
/// use vak_dialect::fit_description;
/// let text = "Runs a command. It is careful. Output stops at 30 KiB. Ask when unsure.";
/// assert_eq!(fit_description(text, 200), text);
/// assert_eq!(fit_description(text, 40), "Runs a command. Output stops at 30 KiB.");
/// ```
pub fn fit_description(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if text.chars().count() <= max {
        return std::borrow::Cow::Borrowed(text);
    }
    let sentences = sentences(text);
    let length = |sentence: &str| sentence.trim().chars().count();
    let mut keep = vec![false; sentences.len()];
    let mut used = 0;
    let has_digit = |sentence: &str| states_a_number(sentence);
    let order = (0..sentences.len())
        .filter(|&i| i == 0)
        .chain((1..sentences.len()).filter(|&i| has_digit(sentences[i])))
        .chain((1..sentences.len()).filter(|&i| !has_digit(sentences[i])));
    for i in order {
        // One space between kept sentences.
        let cost = length(sentences[i]) + usize::from(used > 0);
        if used + cost <= max {
            keep[i] = true;
            used += cost;
        }
    }
    if !keep[0] {
        let cut: String = text.chars().take(max.saturating_sub(1)).collect();
        return std::borrow::Cow::Owned(format!("{cut}…"));
    }
    let kept: Vec<&str> = sentences
        .iter()
        .zip(&keep)
        .filter(|(_, keep)| **keep)
        .map(|(sentence, _)| sentence.trim())
        .collect();
    std::borrow::Cow::Owned(kept.join(" "))
}

/// Whether a text states a number (a limit, a default): see [`stated_numbers`].
pub(crate) fn states_a_number(text: &str) -> bool {
    !stated_numbers(text).is_empty()
}

/// The numbers a text states (`600000`, `1,568`, `256`), each once, as written: a run of digits
/// that is not part of a name or a range (`UTF-16`, `ISO 8859-1`, `3-5` are not numbers in this
/// sense). [`fit_description`] keeps the sentences that state one; a test checks that what it
/// drops is in the schema.
pub fn stated_numbers(text: &str) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b',') {
            i += 1;
        }
        let before = start.checked_sub(1).map(|b| bytes[b]);
        let named = before.is_some_and(|b| b.is_ascii_alphabetic() || b == b'-' || b == b'_')
            || text[..start].ends_with("ISO ")
            || bytes.get(i) == Some(&b'-');
        let number = text[start..i].trim_end_matches(',');
        if !named && !out.contains(&number) {
            out.push(number);
        }
    }
    out
}

/// The sentences of a text: each ends after `.`, `!` or `?` (and a closing bracket or quote)
/// followed by white space and a capital letter or a backtick, so that `e.g. a scan` and
/// `1.5 KiB` stay whole.
fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    for (i, &(_, c)) in chars.iter().enumerate() {
        if !matches!(c, '.' | '!' | '?') {
            continue;
        }
        let mut j = i + 1;
        while j < chars.len() && matches!(chars[j].1, ')' | '"' | '\'') {
            j += 1;
        }
        let Some(&(space_at, space)) = chars.get(j) else {
            continue;
        };
        if !space.is_whitespace() {
            continue;
        }
        let next = chars[j..].iter().find(|(_, c)| !c.is_whitespace());
        if next.is_some_and(|(_, c)| c.is_uppercase() || *c == '`') {
            out.push(&text[start..space_at]);
            start = space_at;
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out.retain(|sentence| !sentence.trim().is_empty());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_that_state_a_limit() {
        for (text, states) in [
            ("at most 600000", true),
            ("1,568 px", true),
            ("a 2 s grace", true),
            ("UTF-16 text", false),
            ("Windows-1252 or ISO 8859-1", false),
            ("such as \"3-5\"", false),
            ("no digits", false),
        ] {
            assert_eq!(states_a_number(text), states, "{text}");
        }
        assert_eq!(
            stated_numbers("1,568 px, at most 1,568 or 600000, UTF-16, pages 3-5."),
            ["1,568", "600000"]
        );
    }
}

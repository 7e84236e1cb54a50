//! The `read` line-number prefixes (spaces, the number, a tab) that a model sometimes pastes
//! into `old_text` along with the text.

/// Removes the `read` line-number prefix (spaces, digits, a tab) from every line of `text`, if
/// every line has one and the numbers count up by one. `None` when that is not the case.
pub(crate) fn strip_read_prefixes(text: &str) -> Option<String> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    let mut out = String::with_capacity(text.len());
    let mut expected: Option<u64> = None;
    for (index, line) in body.split('\n').enumerate() {
        let rest = line.trim_start_matches(' ');
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 || digits > 12 {
            return None;
        }
        let number: u64 = rest[..digits].parse().ok()?;
        let content = rest[digits..].strip_prefix('\t')?;
        if let Some(want) = expected
            && number != want
        {
            return None;
        }
        expected = Some(number + 1);
        if index > 0 {
            out.push('\n');
        }
        out.push_str(content);
    }
    if body.len() < text.len() {
        out.push('\n');
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_prefixes() {
        assert_eq!(
            strip_read_prefixes("    12\tfn main() {\n    13\t}\n").as_deref(),
            Some("fn main() {\n}\n")
        );
        assert_eq!(
            strip_read_prefixes("     7\t\tindented\n     8\t").as_deref(),
            Some("\tindented\n")
        );
        assert_eq!(strip_read_prefixes("12\tx\n14\ty"), None, "not consecutive");
        assert_eq!(strip_read_prefixes("12\tx\nplain"), None, "not every line");
        assert_eq!(strip_read_prefixes("plain"), None);
        assert_eq!(strip_read_prefixes("12 x"), None, "no tab");
    }
}

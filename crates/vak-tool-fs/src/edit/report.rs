//! The text of a successful edit: what each edit matched, the changed lines, the diff, the new
//! hash.

use std::fmt::Write as _;
use std::fs;

use vak_tool_core::human;

use super::Request;
use super::apply::Applied;
use super::line_numbers::line_range;
use crate::hash::hash_line;

/// The result text: what each edit matched, the changed lines, the diff, the new hash.
pub(super) fn render(
    request: &Request,
    shown: &str,
    applied: &[Applied],
    changed: &[(usize, usize)],
    diff: &str,
    notes: &[String],
    hash: &str,
) -> String {
    let mut out = String::new();
    let count = applied.len();
    let link = match fs::symlink_metadata(&request.given) {
        Ok(meta) if meta.file_type().is_symlink() && request.given != request.path => format!(
            " (through the symbolic link {}, which stays a link)",
            request
                .given
                .file_name()
                .map_or_else(String::new, |name| name.to_string_lossy().into_owned())
        ),
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "Edited {shown}{link}: {} applied.",
        human::count(count as u64, "edit", "edits")
    );
    for (index, edit) in applied.iter().enumerate() {
        let places: Vec<String> = edit
            .places
            .iter()
            .take(20)
            .map(|&(first, last)| line_range(first, last))
            .collect();
        let more = if edit.places.len() > places.len() {
            format!(", … ({} places in all)", edit.places.len())
        } else if edit.places.len() > 1 {
            format!(" ({} places)", edit.places.len())
        } else {
            String::new()
        };
        let earlier = if index > 0 {
            " after the edits before it"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "edits[{index}]: matched line {}{more}{earlier} (match level: {}).",
            places.join(", "),
            edit.level.describe(),
        );
        for note in &edit.notes {
            let _ = writeln!(out, "  note: {note}");
        }
    }
    let lines: Vec<String> = changed
        .iter()
        .map(|&(first, last)| line_range(first, last))
        .collect();
    let _ = writeln!(out, "Changed lines in the new file: {}.", lines.join(", "));
    out.push_str(diff);
    for note in notes {
        let _ = writeln!(out, "[{note}]");
    }
    out.push_str(&hash_line(hash));
    out
}

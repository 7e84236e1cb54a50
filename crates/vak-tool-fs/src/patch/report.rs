//! The text of an applied patch: a line per file (what happened, lines added and removed, the
//! new hash), the notes, a unified diff per file, and the hashes again at the end, where a
//! windowed result still shows them.

use std::fmt::Write as _;

use vak_tool_core::human;

use super::plan::{FileReport, Kind};

/// The result text.
pub(crate) fn render(files: &[FileReport]) -> String {
    let mut tally: Vec<(&str, usize)> = Vec::new();
    for file in files {
        let word = match file.kind {
            Kind::Added => "added",
            Kind::Overwritten => "overwritten",
            Kind::Updated => "updated",
            Kind::MovedFrom(_) => "moved",
            Kind::Deleted => "deleted",
            Kind::MovedTo(_) => continue,
        };
        match tally.iter_mut().find(|(known, _)| *known == word) {
            Some(entry) => entry.1 += 1,
            None => tally.push((word, 1)),
        }
    }
    let shown_files = files
        .iter()
        .filter(|file| !matches!(file.kind, Kind::MovedTo(_)))
        .count();
    let mut out = format!(
        "Applied the patch to {}: {}.\n",
        human::count(shown_files as u64, "file", "files"),
        tally
            .iter()
            .map(|(word, count)| format!("{count} {word}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for file in files {
        let change = format!("+{} \u{2212}{}", file.added, file.removed);
        let line = match &file.kind {
            Kind::Added => format!("{}: added ({change})", file.shown),
            Kind::Overwritten => format!("{}: overwritten ({change})", file.shown),
            Kind::Updated => format!("{}: updated {change}", file.shown),
            Kind::MovedFrom(from) => format!("{from} \u{2192} {}: moved, {change}", file.shown),
            Kind::Deleted => format!("{}: deleted ({change})", file.shown),
            Kind::MovedTo(_) => continue,
        };
        let _ = writeln!(out, "- {line}");
        for note in &file.notes {
            let _ = writeln!(out, "  [{note}]");
        }
    }
    for file in files {
        if !file.diff.is_empty() {
            out.push('\n');
            out.push_str(&file.diff);
            if !file.diff.ends_with('\n') {
                out.push('\n');
            }
        }
    }
    let hashes: Vec<&FileReport> = files.iter().filter(|file| file.hash.is_some()).collect();
    if !hashes.is_empty() {
        out.push_str("\n[new hashes, for edit's expect_hash:");
        for file in hashes {
            if let Some(hash) = &file.hash {
                let _ = write!(out, " {} {hash};", file.shown);
            }
        }
        out.pop();
        out.push_str("]\n");
    }
    out
}

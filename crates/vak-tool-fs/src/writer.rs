//! [`TransactionWriter`]: the file tools' all-or-nothing write path offered to tools that are
//! not file tools (a language server's `rename`), through vak-tool-core's
//! [`FileWriter`] seam.
//!
//! Each edit's file must still hold the content the edit was computed from, and lie where the
//! context lets tools write; then every file is written in one [`Transaction`] journalled in
//! the scratch folder (recovered after a crash like `apply_patch`'s), or none is. The report is
//! each file's unified diff.

use std::path::PathBuf;

use vak_tool_core::{BoxFuture, FileEdit, FileWriter, ToolContext, human};

use crate::commit::{Expect, Stamp, Transaction};
use crate::edit::diff::unified_diff;
use crate::edit::regions::Region;
use crate::hash::content_hash;
use crate::seen::Seen;

/// Writes a set of files through one [`Transaction`]: every one or none. The facade installs
/// it on the registry ([`vak_tool_core::Registry::set_file_writer`]).
///
/// ```
/// use std::sync::Arc;
/// use vak_tool_core::{FileEdit, FileWriter, ToolContext};
///
/// let workspace = tempfile::tempdir().unwrap();
/// std::fs::write(workspace.path().join("a.py"), "x = 1\n").unwrap();
/// let ctx = ToolContext::new(workspace.path()).unwrap();
/// let edit = FileEdit {
///     path: ctx.workspace().join("a.py"),
///     before: b"x = 1\n".to_vec(),
///     after: b"y = 1\n".to_vec(),
/// };
/// let writer = vak_tool_fs::TransactionWriter;
/// let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
/// let report = rt.block_on(writer.write(vec![edit], &ctx)).unwrap();
/// assert!(report.contains("-x = 1\n+y = 1"));
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct TransactionWriter;

impl FileWriter for TransactionWriter {
    fn write<'a>(
        &'a self,
        edits: Vec<FileEdit>,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, Result<String, vak_tool_core::WriteRefused>> {
        Box::pin(async move {
            crate::recovering::recover_once(ctx).await;
            let work_ctx = ctx.clone();
            match tokio::task::spawn_blocking(move || write_all(edits, &work_ctx)).await {
                Ok(result) => result.map_err(vak_tool_core::WriteRefused::from),
                Err(error) => Err(vak_tool_core::WriteRefused::new(format!(
                    "the write stopped with an internal error ({error}); check the files with \
                     `read`. This is a bug in vak-tools."
                ))),
            }
        })
    }
}

/// Checks every edit, then commits them together.
fn write_all(edits: Vec<FileEdit>, ctx: &ToolContext) -> Result<String, String> {
    if edits.is_empty() {
        return Ok(String::new());
    }
    let journal = ctx.scratch_dir().map_err(|error| {
        format!("cannot make the scratch folder for the journal ({error}); nothing was written")
    })?;
    let mut transaction = Transaction::new(journal);
    let mut diffs = Vec::new();
    let mut written: Vec<(PathBuf, String, u64, u64)> = Vec::new();
    for edit in edits {
        let shown = ctx.display_path(&edit.path);
        let path = ctx
            .resolve_path(&edit.path)
            .map_err(|error| format!("{error}; nothing was written"))?;
        let meta = std::fs::metadata(&path)
            .map_err(|error| format!("cannot read `{shown}` ({error}); nothing was written"))?;
        let now = std::fs::read(&path)
            .map_err(|error| format!("cannot read `{shown}` ({error}); nothing was written"))?;
        if now != edit.before {
            return Err(format!(
                "`{shown}` changed after the edit was worked out; nothing was written. Call \
                 again to work it out from the file as it is now."
            ));
        }
        let before = String::from_utf8_lossy(&edit.before);
        let after = String::from_utf8_lossy(&edit.after);
        diffs.push(unified_diff(
            &before,
            &after,
            &[changed(&before, &after)],
            &shown,
        ));
        written.push((
            path.clone(),
            content_hash(&edit.after),
            edit.after.len() as u64,
            crate::line_count::count_lines(&edit.after),
        ));
        transaction.write(path, edit.after, Expect::Unchanged(Stamp::of(&meta)));
    }
    transaction
        .commit()
        .map_err(|error| format!("{error}; nothing was written: no file changed"))?;
    let seen = ctx.session().state::<Seen>();
    for (path, hash, bytes, lines) in &written {
        seen.remember_size(hash, *bytes, *lines);
        seen.remember_path(path, hash);
    }
    diffs.retain(|diff| !diff.is_empty());
    Ok(format!(
        "{} written together (all or nothing):\n{}",
        human::count(written.len() as u64, "file", "files"),
        diffs.join("")
    ))
}

/// The one region where `after` differs from `before`: between their common prefix and suffix
/// (on character boundaries).
fn changed(before: &str, after: &str) -> Region {
    let prefix = before
        .char_indices()
        .zip(after.chars())
        .find(|((_, a), b)| a != b)
        .map_or(before.len().min(after.len()), |((at, _), _)| at);
    let suffix = before[prefix..]
        .chars()
        .rev()
        .zip(after[prefix..].chars().rev())
        .take_while(|(a, b)| a == b)
        .map(|(a, _)| a.len_utf8())
        .sum::<usize>();
    Region {
        orig: (prefix, before.len() - suffix),
        now: (prefix, after.len() - suffix),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(ctx: &ToolContext, name: &str, before: &str, after: &str) -> FileEdit {
        FileEdit {
            path: ctx.workspace().join(name),
            before: before.as_bytes().to_vec(),
            after: after.as_bytes().to_vec(),
        }
    }

    #[tokio::test]
    async fn every_file_is_written_with_its_diff() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("lib.py"),
            "def double(x):\n    return 2 * x\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("main.py"), "from lib import double\n").unwrap();
        let ctx = ToolContext::new(dir.path()).unwrap();
        let edits = vec![
            edit(
                &ctx,
                "lib.py",
                "def double(x):\n    return 2 * x\n",
                "def twice(x):\n    return 2 * x\n",
            ),
            edit(
                &ctx,
                "main.py",
                "from lib import double\n",
                "from lib import twice\n",
            ),
        ];
        let report = TransactionWriter.write(edits, &ctx).await.unwrap();
        assert!(report.starts_with("2 files written together"), "{report}");
        assert!(report.contains("--- a/lib.py\n+++ b/lib.py\n"), "{report}");
        assert!(
            report.contains("-def double(x):\n+def twice(x):\n"),
            "{report}"
        );
        assert!(
            report.contains("-from lib import double\n+from lib import twice\n"),
            "{report}"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("main.py")).unwrap(),
            "from lib import twice\n"
        );
    }

    #[tokio::test]
    async fn a_file_that_changed_meanwhile_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.py"), "a = 1\n").unwrap();
        std::fs::write(dir.path().join("b.py"), "b = 2 # changed by someone\n").unwrap();
        let ctx = ToolContext::new(dir.path()).unwrap();
        let edits = vec![
            edit(&ctx, "a.py", "a = 1\n", "c = 1\n"),
            edit(&ctx, "b.py", "b = 2\n", "c = 2\n"),
        ];
        let why = TransactionWriter
            .write(edits, &ctx)
            .await
            .unwrap_err()
            .message;
        assert!(
            why.contains("`b.py` changed") && why.contains("nothing was written"),
            "{why}"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.py")).unwrap(),
            "a = 1\n"
        );
    }

    #[tokio::test]
    async fn a_file_outside_the_workspace_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.py"), "a = 1\n").unwrap();
        std::fs::write(outside.path().join("o.py"), "a = 1\n").unwrap();
        let ctx = ToolContext::new(dir.path()).unwrap();
        let edits = vec![
            edit(&ctx, "a.py", "a = 1\n", "b = 1\n"),
            FileEdit {
                path: outside.path().join("o.py"),
                before: b"a = 1\n".to_vec(),
                after: b"b = 1\n".to_vec(),
            },
        ];
        let why = TransactionWriter
            .write(edits, &ctx)
            .await
            .unwrap_err()
            .message;
        assert!(why.contains("nothing was written"), "{why}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.py")).unwrap(),
            "a = 1\n"
        );
        assert_eq!(
            std::fs::read_to_string(outside.path().join("o.py")).unwrap(),
            "a = 1\n"
        );
    }

    #[test]
    fn the_changed_region_lies_between_the_common_ends() {
        let region = changed("aé double é", "aé twin é");
        assert_eq!(region.orig, (4, 10));
        assert_eq!(region.now, (4, 8));
        assert_eq!(changed("same", "same").orig, (4, 4));
    }
}

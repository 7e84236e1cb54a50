//! The `apply_patch` tool: codex's patch format, applied to many files at once, all or nothing.
//!
//! Choices worth knowing:
//! - The patch is read ([`parse`]) as leniently as codex reads it: padded markers and headers,
//!   a heredoc wrapper, blank lines between chunks, a first chunk without `@@`.
//! - Every path is resolved (and refused when outside the workspace) before any file is read;
//!   then every file is read, checked (text, size, not changed since this session last saw
//!   it) and patched in memory ([`plan`]). Only when every file's new content is built does
//!   anything get written.
//! - A chunk's lines are found in four passes ([`seek`]), like codex: exact, trailing
//!   whitespace ignored, trimmed, Unicode look-alikes folded. Lines the chunk keeps keep the
//!   file's own bytes, and added lines take the file's line endings ([`text`]); the byte order
//!   mark, UTF-16 and a missing final newline stay.
//! - When a chunk matched only with leading whitespace ignored (its lines written less or more
//!   indented than the file's, or flat), its added lines are re-indented: shifted by the one
//!   amount every matched line is shifted by, or else, run by run, by the shift of the lines a
//!   run replaces (or, for a pure insertion, of the lines around it). Where that cannot be told
//!   (different shifts, tabs against spaces), the patch is refused and the file's region shown,
//!   rather than new lines written at the wrong depth. `edit` needs none of this: its levels
//!   never ignore leading whitespace (an `old_text` that starts inside a line keeps the
//!   indentation before it).
//! - The changes are committed as one [`crate::commit::Transaction`], journalled in the
//!   agent's scratch folder: a failure anywhere leaves every file as it was, and a crash is
//!   finished or undone by the next file tool that starts.
//! - A pure-addition chunk goes after its `@@` line, or at the end of the file without one.
//! - When a chunk's lines occur more than once, the first place after the previous chunk is
//!   used (as codex does), and the result says so.

mod parse;
mod plan;
mod report;
mod seek;
mod text;

use schemars::JsonSchema;
use serde::Deserialize;
use vak_tool_core::{Capability, Tool, ToolContext, ToolError, ToolOutput, human};

use crate::FsSettings;
use crate::seen::Seen;

/// The largest patch accepted, in bytes.
const PATCH_BYTES: usize = 64 * 1024 * 1024;
/// The most files one patch may change.
const MAX_FILES: usize = 10_000;

/// The description the model reads, with the limits in force.
fn description(settings: &FsSettings) -> String {
    format!(
        "Applies a patch in the apply_patch format to one or more files, all or nothing: \
         every file is checked and every new content built before anything is written, and if \
         anything fails no file changes. The patch is one string:\n\
         *** Begin Patch\n\
         *** Add File: path/new.txt\n\
         +each line of the new file, after a +\n\
         *** Delete File: path/old.txt\n\
         *** Update File: path/file.py\n\
         *** Move to: path/renamed.py   (optional)\n\
         @@ def some_function():   (optional: a line to find first)\n\
         \x20context line (a space, then the line as it is)\n\
         -line to remove\n\
         +line to add\n\
         *** End of File   (optional: the chunk is at the end of the file)\n\
         *** End Patch\n\
         Give about 3 lines of context above and below each change and do not number lines; \
         use several @@ chunks for changes far apart, in file order. Context is matched \
         exactly, then ignoring trailing whitespace, then trimmed, then with curly quotes, \
         dashes and special spaces as ASCII; when it matched only with its indentation \
         ignored, the + lines are indented as the file's lines they replace (shifted by the \
         same amount), or the patch is refused with the file's lines shown where that is \
         ambiguous. Add File overwrites an existing file; Move to \
         overwrites its destination and creates folders. Line endings (CRLF, LF, lone CR), the \
         byte order mark, UTF-16 encoding, the final newline, permissions and hard links are \
         kept. A file changed since you last read it, a binary file, a file over {limit}, or a \
         path outside the workspace is refused, naming the file. The result lists each file \
         (added, updated +N -M, moved, deleted) with a unified diff and the new hashes for \
         edit's expect_hash. At most {files} and {patch} per patch.",
        limit = human::size(settings.edit_file_bytes),
        files = human::count(MAX_FILES as u64, "file", "files"),
        patch = human::size(PATCH_BYTES as u64),
    )
}

/// Arguments of `apply_patch`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ApplyPatchArgs {
    /// The whole patch, from `*** Begin Patch` to `*** End Patch`.
    patch: String,
}

/// The `apply_patch` tool.
pub(crate) struct ApplyPatchTool {
    settings: FsSettings,
}

impl ApplyPatchTool {
    /// The tool with these limits.
    pub(crate) fn new(settings: &FsSettings) -> Self {
        Self {
            settings: settings.clone(),
        }
    }
}

impl Tool for ApplyPatchTool {
    type Args = ApplyPatchArgs;

    fn name(&self) -> &str {
        "apply_patch"
    }

    fn description(&self) -> String {
        description(&self.settings)
    }

    fn capabilities(&self) -> Vec<Capability> {
        vec![Capability::WriteFs]
    }

    fn claims(&self, args: &ApplyPatchArgs, ctx: &ToolContext) -> vak_tool_core::Claims {
        crate::claims::patch(ctx, &args.patch)
    }

    fn claims_rule(&self) -> String {
        "writes every file the patch adds, deletes, updates or moves to (the whole workspace when one does not resolve)".to_owned()
    }

    async fn run(&self, args: ApplyPatchArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        if args.patch.len() > PATCH_BYTES {
            return Err(ToolError::new(format!(
                "the patch is {}, over apply_patch's limit of {}; nothing was written. Split it \
                 into several patches.",
                human::size(args.patch.len() as u64),
                human::size(PATCH_BYTES as u64)
            )));
        }
        let ctx = ctx.clone();
        let limits = plan::Limits {
            file_bytes: self.settings.edit_file_bytes,
        };
        // Dropping this future cancels `token`, and the blocking work checks it before it
        // writes.
        let token = ctx.cancel().child_token();
        let _guard = token.clone().drop_guard();
        let seen = ctx.session().state::<Seen>();
        let work_ctx = ctx.clone();
        let work = move || -> Result<(String, Vec<std::path::PathBuf>), String> {
            let ctx = work_ctx;
            let ops = parse::parse(&args.patch)
                .map_err(|error| format!("{error}. Nothing was written."))?;
            if ops.len() > MAX_FILES {
                return Err(format!(
                    "the patch has {} file sections, over the limit of {MAX_FILES}; nothing was \
                     written. Split it into several patches.",
                    human::grouped(ops.len() as u64)
                ));
            }
            let journal = ctx.scratch_dir().map_err(|error| {
                format!(
                    "cannot make the scratch folder for the patch's journal ({error}); nothing \
                     was written."
                )
            })?;
            let plan = plan::plan(&ops, &ctx, &seen, &token, &limits, journal)
                .map_err(|error| format!("{error} Nothing was written: no file changed."))?;
            if token.is_cancelled() {
                return Err("the call was cancelled; nothing was written.".to_owned());
            }
            plan.transaction
                .commit()
                .map_err(|error| format!("{error}. Nothing was written: no file changed."))?;
            for (path, hash, bytes, lines) in &plan.written {
                seen.remember_size(hash, *bytes, *lines);
                seen.remember_path(path, hash);
            }
            let changed = plan.written.into_iter().map(|(path, ..)| path).collect();
            Ok((report::render(&plan.files), changed))
        };
        match tokio::task::spawn_blocking(work).await {
            Ok(Ok((mut text, changed))) => {
                // Diagnostics of a language server, where one watches (never an error).
                if let Some(diagnostics) = ctx.files_changed(&changed).await {
                    text.push_str("\n\n");
                    text.push_str(&diagnostics);
                }
                Ok(ToolOutput::text(text))
            }
            Ok(Err(text)) => Err(ToolError::new(text)),
            Err(error) => Err(ToolError::new(format!(
                "the patch stopped with an internal error ({error}); check the files with \
                 `read` before trying again. This is a bug in vak-tools, not in your call."
            ))),
        }
    }
}

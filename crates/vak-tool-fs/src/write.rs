//! The `write` tool: replace a file's whole content, atomically.
//!
//! Choices worth knowing:
//! - The write goes through [`crate::atomic_write`]: a temporary file in the same folder, fsync,
//!   rename. A crash or a failure leaves the old file or the new one, never half of one. The old
//!   file's owner, group and permission bits are kept; a file with several hard links (or an
//!   owner this process cannot give a new file) is written in place instead, and the result says
//!   so; a symbolic link is written through (its target changes).
//! - Over an existing file, its style is kept unless the content says otherwise ([`keep`]): its
//!   line endings (CRLF or a lone CR for content with LF only), its UTF-8 byte order mark, its
//!   encoding (UTF-16 in the same byte order and with its byte order mark if it had one, or a
//!   detected legacy single-byte encoding). The result says what was kept.
//! - A read-only file is refused rather than replaced (a rename would succeed over it, even
//!   though the file says "do not change me"), and the error says so.
//! - Writing the content a file already has writes nothing, so its modification time stays.
//! - The result says created or overwrote, bytes and lines, the old size, the folders created,
//!   and the new hash (which `edit` accepts as `expect_hash`, so no re-read is needed).

use std::fs;
use std::io::{self, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Deserialize;
use vak_tool_core::{Capability, PathError, Tool, ToolContext, ToolError, ToolOutput, human};

use crate::FsSettings;
use crate::atomic_write::{self, Previous};
use crate::file_kind;
use crate::hash::{content_hash, hash_line};
use crate::line_count::count_lines;

mod keep;

use self::keep::{Kept, keep};

/// The description the model reads, with the limit in force.
fn description(settings: &FsSettings) -> String {
    format!(
        "Writes a whole file: creates it (and any missing parent folders) or replaces all of its \
         content with `content`. The write is atomic (the file is never left half written) and \
         keeps the file's permissions, owner and hard links (a file with several links is \
         written in place, which the result says), and over an existing file its style unless \
         the content says otherwise: LF-only content over a CRLF (or lone-CR) file gets the \
         file's endings, a UTF-8 byte order mark stays, UTF-16 stays UTF-16 and a legacy \
         encoding such as Windows-1252 stays that encoding (content with characters it cannot \
         hold is refused); the result says what was kept. A symbolic link is written through. \
         Returns whether the \
         file was created or overwritten, its bytes and lines, the old size, and the new content \
         hash (for `edit`'s `expect_hash`). Refuses folders, read-only files, paths outside the \
         workspace and content over {limit}. To change part of an existing file, prefer `edit`; \
         read a file before you overwrite it.",
        limit = human::size(settings.write_bytes as u64),
    )
}

/// Arguments of `write`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WriteArgs {
    /// The file to write: a path relative to the working folder, or absolute. Missing parent
    /// folders are created.
    path: String,
    /// The complete new content of the file; it replaces everything the file held.
    content: String,
}

/// Why a write failed. Each message says what happened to the file and what to do instead.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WriteError {
    /// The path could not be resolved or lies outside the workspace.
    #[error("{0} Nothing was written.")]
    Path(#[from] PathError),
    /// The content is over the limit.
    #[error(
        "the content is {size}, over write's limit of {limit}; nothing was written. Write a \
         smaller file, or produce a large one with a script run by `bash`.",
        size = human::size(*bytes as u64),
        limit = human::size(*limit as u64)
    )]
    TooLarge {
        /// The content's size.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// The target is a folder.
    #[error(
        "`{path}` is a directory, so it cannot be written as a file; nothing was written. Give \
         a file path, for example `{path}/NAME`."
    )]
    Directory {
        /// The path as shown.
        path: String,
    },
    /// The target exists and is not a regular file (a FIFO, socket or device): opening it could
    /// block for ever, and renaming over it would silently replace something that is not a file.
    #[error(
        "`{path}` is not a regular file (a {kind}); write only creates or replaces files, so \
         nothing was written. Give another path, or use `bash` if you really mean to write to it."
    )]
    NotRegular {
        /// The path as shown.
        path: String,
        /// What it is.
        kind: &'static str,
    },
    /// Something on the way is a file, not a folder.
    #[error(
        "cannot create `{path}`: `{blocker}` is a file, not a folder, so nothing can be \
         created inside it; nothing was written. Choose another path."
    )]
    ParentIsFile {
        /// The path as shown.
        path: String,
        /// The file in the way.
        blocker: String,
    },
    /// The target's permissions forbid writing.
    #[error(
        "`{path}` is read-only (mode {mode:o}); nothing was written and the file is unchanged. \
         If it really should change, make it writable first (`chmod u+w` via `bash`) and \
         write again."
    )]
    ReadOnly {
        /// The path as shown.
        path: String,
        /// Its permission bits.
        mode: u32,
    },
    /// The content holds characters the file's legacy encoding cannot hold.
    #[error(
        "`{path}` is in {encoding} (a legacy single-byte encoding, which write keeps), and the \
         content holds characters that {encoding} cannot hold: {chars}; nothing was written. Use \
         characters that exist in {encoding}, or convert the file to UTF-8 first with `bash` \
         (iconv -f {encoding} -t UTF-8), then write again."
    )]
    Unencodable {
        /// The path as shown.
        path: String,
        /// The file's encoding.
        encoding: &'static str,
        /// The characters, listed.
        chars: String,
    },
    /// The operating system refused.
    #[error("cannot write `{path}`: {source}. Nothing was written: the file is as it was before.")]
    Io {
        /// The path as shown.
        path: String,
        /// The underlying error.
        source: io::Error,
    },
    /// The blocking task failed (a bug).
    #[error("the write failed inside vak-tools ({0}); this is a bug, not your call's fault.")]
    Internal(String),
}

/// A hook run after the temporary file is complete, before the rename (tests simulate a crash).
type BeforeRename = fn(&Path) -> io::Result<()>;

/// The `write` tool.
pub(crate) struct WriteTool {
    settings: FsSettings,
    before_rename: Option<BeforeRename>,
}

impl WriteTool {
    /// The tool with these limits.
    pub(crate) fn new(settings: &FsSettings) -> Self {
        Self {
            settings: settings.clone(),
            before_rename: None,
        }
    }

    /// The tool with a hook that runs before the rename.
    #[cfg(test)]
    fn with_before_rename(hook: BeforeRename) -> Self {
        Self {
            before_rename: Some(hook),
            ..Self::new(&FsSettings::default())
        }
    }
}

impl Tool for WriteTool {
    type Args = WriteArgs;

    fn name(&self) -> &str {
        "write"
    }

    fn description(&self) -> String {
        description(&self.settings)
    }

    fn capabilities(&self) -> Vec<Capability> {
        vec![Capability::WriteFs]
    }

    fn claims(&self, args: &WriteArgs, ctx: &ToolContext) -> vak_tool_core::Claims {
        crate::claims::write_file(ctx, &args.path)
    }

    fn claims_rule(&self) -> String {
        "writes the file at `path`".to_owned()
    }

    async fn run(&self, args: WriteArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        // The model knows what it wrote: no staleness check against an earlier read.
        let path = ctx.resolve_path(&args.path).ok();
        let changed = ctx.resolve_path(&args.path).ok();
        let mut text = run(args, ctx, self.settings.write_bytes, self.before_rename).await?;
        if let Some(path) = path {
            ctx.session()
                .state::<crate::seen::Seen>()
                .forget_path(&path);
        }
        // What observers say of the change (a language server's diagnostics): never an error,
        // the file was written.
        if let Some(section) = ctx.files_changed(changed.as_slice()).await {
            text.push_str("\n\n");
            text.push_str(&section);
        }
        Ok(ToolOutput::text(text))
    }
}

async fn run(
    args: WriteArgs,
    ctx: &ToolContext,
    limit: usize,
    before_rename: Option<BeforeRename>,
) -> Result<String, WriteError> {
    if args.content.len() > limit {
        return Err(WriteError::TooLarge {
            bytes: args.content.len(),
            limit,
        });
    }
    let path = ctx.resolve_path(&args.path)?;
    let given = ctx.cwd().join(&args.path);
    let through_link = fs::symlink_metadata(&given).is_ok_and(|meta| meta.is_symlink());
    let job = Job {
        shown: ctx.display_path(&path),
        link: through_link.then(|| args.path.clone()),
        cwd: ctx.cwd().to_path_buf(),
        path,
        content: args.content,
        before_rename,
        journal: crate::commit::journal_dir(ctx),
    };
    tokio::task::spawn_blocking(move || job.write())
        .await
        .map_err(|error| WriteError::Internal(error.to_string()))?
}

/// One write, done on a blocking thread.
struct Job {
    path: PathBuf,
    shown: String,
    /// The path as given, when it is a symbolic link.
    link: Option<String>,
    cwd: PathBuf,
    content: String,
    before_rename: Option<BeforeRename>,
    /// Where an in-place write is journalled (the agent's scratch folder).
    journal: PathBuf,
}

impl Job {
    fn write(self) -> Result<String, WriteError> {
        let io_error = |source| WriteError::Io {
            path: self.shown.clone(),
            source,
        };
        let old = match fs::metadata(&self.path) {
            Ok(meta) if meta.is_dir() => {
                return Err(WriteError::Directory {
                    path: self.shown.clone(),
                });
            }
            Ok(meta) if !meta.is_file() => {
                return Err(WriteError::NotRegular {
                    path: self.shown.clone(),
                    kind: crate::file_kind::special_kind(meta.file_type()),
                });
            }
            Ok(meta) => Some(meta),
            Err(error) if error.kind() == io::ErrorKind::NotFound => None,
            Err(error) if error.kind() == io::ErrorKind::NotADirectory => {
                return Err(self.parent_is_file());
            }
            Err(error) => return Err(io_error(error)),
        };
        if let Some(meta) = &old
            && meta.permissions().readonly()
        {
            return Err(WriteError::ReadOnly {
                path: self.shown.clone(),
                mode: meta.permissions().mode() & 0o7777,
            });
        }
        // The old content only feeds what is kept (line endings, BOM, encoding), the
        // "unchanged" check and the notes: a file that cannot be read (write-only, say) is
        // still replaced.
        let old_start = old
            .as_ref()
            .and_then(|meta| file_start(&self.path, meta.len(), None).ok());
        let Kept {
            bytes,
            notes: mut kept,
        } = keep(old_start.as_deref(), &self.content).map_err(|refused| {
            WriteError::Unencodable {
                path: self.shown.clone(),
                encoding: refused.encoding,
                chars: refused.chars,
            }
        })?;
        let bytes = bytes.as_slice();
        let counts = counts(bytes.len(), &self.content);
        if let Some(meta) = &old
            && meta.len() == bytes.len() as u64
            && file_start(&self.path, meta.len(), Some(bytes.len())).is_ok_and(|old| old == bytes)
        {
            return Ok(format!(
                "`{}` already has exactly this content ({counts}); nothing was written.\n{}",
                self.shown,
                hash_line(&content_hash(bytes))
            ));
        }
        let mut notes = Vec::new();
        notes.append(&mut kept);
        let new_folder = self.first_missing_folder();
        let written = match self.before_rename {
            Some(hook) => {
                atomic_write::write_atomic_with(&self.path, bytes, Some(&self.journal), hook)
            }
            None => atomic_write::write_atomic(&self.path, bytes, Some(&self.journal)),
        };
        let previous = match written {
            Ok(previous) => previous,
            Err(error) if error.kind() == io::ErrorKind::NotADirectory => {
                return Err(self.parent_is_file());
            }
            Err(error) if error.kind() == io::ErrorKind::IsADirectory => {
                return Err(WriteError::Directory {
                    path: self.shown.clone(),
                });
            }
            Err(error) => return Err(io_error(error)),
        };
        let mut text = match previous {
            Previous::Created => format!("Created `{}` ({counts})", self.shown),
            Previous::Replaced {
                bytes: old_bytes, ..
            } => format!(
                "Overwrote `{}` ({counts}; it had {} before)",
                self.shown,
                human::size(old_bytes)
            ),
        };
        if let Some(folder) = new_folder {
            text.push_str(&format!(", creating the folder `{folder}`"));
        }
        if let Some(link) = &self.link {
            text.push_str(&format!(
                ", through the symbolic link `{link}` (the link itself is unchanged)"
            ));
        }
        text.push_str(".\n");
        notes.extend(previous.note());
        for note in notes {
            text.push_str(&format!("[{note}]\n"));
        }
        text.push_str(&hash_line(&content_hash(bytes)));
        Ok(text)
    }

    /// The nearest existing ancestor that is not a folder.
    fn parent_is_file(&self) -> WriteError {
        let blocker = self
            .path
            .ancestors()
            .skip(1)
            .find(|ancestor| fs::metadata(ancestor).is_ok_and(|meta| !meta.is_dir()))
            .map(|ancestor| self.show(ancestor))
            .unwrap_or_else(|| "a part of the path".to_owned());
        WriteError::ParentIsFile {
            path: self.shown.clone(),
            blocker,
        }
    }

    /// The topmost parent folder that does not exist yet, as shown to the model.
    fn first_missing_folder(&self) -> Option<String> {
        let mut missing = None;
        for ancestor in self.path.ancestors().skip(1) {
            if ancestor.as_os_str().is_empty() || ancestor.exists() {
                break;
            }
            missing = Some(ancestor);
        }
        missing?;
        Some(self.show(self.path.parent()?))
    }

    fn show(&self, path: &Path) -> String {
        match path.strip_prefix(&self.cwd) {
            Ok(relative) if !relative.as_os_str().is_empty() => relative.display().to_string(),
            _ => path.display().to_string(),
        }
    }
}

/// `12 B, 2 lines`: the bytes written and the lines of the text.
fn counts(bytes: usize, text: &str) -> String {
    format!(
        "{}, {}",
        human::size(bytes as u64),
        human::count(count_lines(text.as_bytes()), "line", "lines")
    )
}

/// The first bytes of the old file: all of it when `whole` gives its expected length and the
/// file has that length (to spot a write that changes nothing), otherwise enough to see its
/// encoding, line endings and BOM.
fn file_start(path: &Path, old_len: u64, whole: Option<usize>) -> io::Result<Vec<u8>> {
    let want = match whole {
        Some(len) if old_len == len as u64 => old_len,
        _ => file_kind::SNIFF_BYTES as u64,
    };
    let mut start = Vec::new();
    fs::File::open(path)?.take(want).read_to_end(&mut start)?;
    Ok(start)
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use vak_tool_core::DynTool as _;

    use super::*;

    #[tokio::test]
    async fn a_failure_before_the_rename_leaves_the_original() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path()).unwrap();
        fs::write(dir.path().join("f.txt"), "original\n").unwrap();
        let tool = WriteTool::with_before_rename(|temp| {
            assert_eq!(fs::read(temp).unwrap(), b"replacement\n");
            Err(io::Error::other("simulated crash"))
        });
        let out = tool
            .call(json!({"path": "f.txt", "content": "replacement\n"}), &ctx)
            .await;
        assert!(out.is_error);
        let text = out.text_content();
        assert!(text.contains("simulated crash"), "{text}");
        assert!(text.contains("Nothing was written"), "{text}");
        assert_eq!(
            fs::read_to_string(dir.path().join("f.txt")).unwrap(),
            "original\n"
        );
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, ["f.txt"], "a temporary file was left behind");
    }
}

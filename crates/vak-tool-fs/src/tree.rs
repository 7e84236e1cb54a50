//! `tree`: a first look at a folder: its folders to a depth, each with the number of files
//! below it and their total size, and the files of the folders shown.
//!
//! The walk is the shared [`crate::walk::Walker`] (ignore files, `.git`, build folders and links
//! handled as in `glob` and `grep`, on several threads); it goes to the bottom of the tree, so
//! the counts of a folder cover everything below it, and only the first `depth` levels are kept
//! by name. Folders it did not walk are listed where they sit, marked with the rule that left
//! them out, and the last line counts everything left out.
//!
//! The text is bounded: each folder lists at most [`FOLDERS_SHOWN`] subfolders and
//! [`FILES_SHOWN`] files (the rest summed up on one line), and folders are opened level by
//! level, breadth first, while the listing stays under [`LINES_SHOWN`] lines, so a wide tree
//! still shows its top levels whole. Entries are sorted by name, folders first; the same tree
//! always gives the same text.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use schemars::JsonSchema;
use serde::Deserialize;
use vak_tool_core::{Capability, PathError, Tool, ToolContext, ToolError, ToolOutput, human};

use crate::walk::{self, Item, Outcome, Rule, Search, Walker};

/// The most subfolders listed in one folder.
pub(crate) const FOLDERS_SHOWN: usize = 30;
/// The most files listed in one folder.
pub(crate) const FILES_SHOWN: usize = 12;
/// About the most lines listed in all (a folder is opened only when its lines fit).
pub(crate) const LINES_SHOWN: usize = 250;
/// The default of `depth`.
const DEFAULT_DEPTH: usize = 3;
/// The largest `depth`.
const MAX_DEPTH: usize = 10;

fn description() -> String {
    format!(
        "Shows the layout of a folder, for a first look at a project or a part of it: its \
         folders to `depth` levels (default {DEFAULT_DEPTH}), each with the number of files \
         below it and their total size, and the files of each folder shown, with their sizes. \
         Like glob and grep it leaves out what .gitignore, .ignore and .git/info/exclude ignore, \
         .git folders and build or package folders (a Cargo or Maven `target`, a `node_modules` \
         next to a package.json): such folders are listed, marked as not walked, and the last \
         line counts everything skipped, by rule; `no_ignore: true` walks ignored files and \
         build folders too (never .git; at most {walk} files). Each folder lists at most \
         {FOLDERS_SHOWN} subfolders and {FILES_SHOWN} files, and the whole listing about \
         {LINES_SHOWN} lines, the rest summed up with counts and sizes; entries are sorted by \
         name, folders first. Use `glob` to find files by name and `grep` to search contents.",
        walk = human::grouped(walk::NO_IGNORE_FILES as u64),
    )
}

/// Arguments of `tree`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TreeArgs {
    /// The folder to show, relative to the working folder or absolute. Default: the working
    /// folder.
    path: Option<String>,
    /// How many levels below `path` are listed, 1 to 10 (1: its own entries only). Default: 3.
    #[schemars(range(min = 1, max = 10))]
    depth: Option<usize>,
    /// Also walk what .gitignore, .ignore or .git/info/exclude leave out, and build or package
    /// folders (`target`, `node_modules`); `.git` folders stay out, and the walk stops after
    /// 100,000 files. Default: false.
    #[serde(default)]
    no_ignore: bool,
}

/// Why a `tree` call cannot run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TreeError {
    /// The folder cannot be used.
    #[error("{0}")]
    Path(#[from] PathError),
    /// The folder does not exist.
    #[error(
        "`{path}` does not exist: give an existing folder (relative to the working folder) or \
         leave `path` out to show the working folder"
    )]
    Missing {
        /// The path as given.
        path: String,
    },
    /// The path names a file.
    #[error("`{path}` is a file, and tree shows a folder: `read` the file, or give its folder")]
    NotAFolder {
        /// The path as given.
        path: String,
    },
    /// `depth` is out of range.
    #[error("`depth` is {depth}, but it must be between 1 and {MAX_DEPTH}")]
    Depth {
        /// The value given.
        depth: usize,
    },
}

/// The `tree` tool.
pub(crate) struct TreeTool;

impl Tool for TreeTool {
    type Args = TreeArgs;

    fn name(&self) -> &str {
        "tree"
    }

    fn description(&self) -> String {
        description()
    }

    fn capabilities(&self) -> Vec<Capability> {
        vec![Capability::ReadFs]
    }

    fn claims(&self, args: &TreeArgs, ctx: &ToolContext) -> vak_tool_core::Claims {
        crate::claims::read_tree(ctx, args.path.as_deref())
    }

    fn claims_rule(&self) -> String {
        "reads everything below `path` (default: the working folder)".to_owned()
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(vak_tool_core::output_schema_of::<TreeData>())
    }

    fn floor(&self) -> bool {
        true
    }

    async fn run(&self, args: TreeArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(run(args, ctx).await?)
    }
}

async fn run(args: TreeArgs, ctx: &ToolContext) -> Result<ToolOutput, TreeError> {
    let depth = args.depth.unwrap_or(DEFAULT_DEPTH);
    if !(1..=MAX_DEPTH).contains(&depth) {
        return Err(TreeError::Depth { depth });
    }
    let given = args.path.as_deref().unwrap_or(".");
    let root = ctx.resolve_path(given)?;
    if root.is_file() {
        return Err(TreeError::NotAFolder {
            path: given.to_owned(),
        });
    }
    if !root.is_dir() {
        return Err(TreeError::Missing {
            path: given.to_owned(),
        });
    }
    let label = ctx.display_path(&root);
    let walker = Walker::new(root, ctx, args.no_ignore);
    let result = walk::run_blocking(ctx, "tree", move |stop| {
        let make_worker = || {
            |_: &Path, meta: Option<&std::fs::Metadata>| Outcome {
                results: 0,
                skipped: None,
                value: meta.map_or(0, std::fs::Metadata::len),
            }
        };
        let search = Search {
            threads: walk::thread_count(),
            max_results: usize::MAX,
            select: &|_: &Path| true,
            stat: true,
            make_worker: &make_worker,
        };
        let walked = walker.walk(search, stop);
        let accounting = format!(
            "{} in {} walked; {}",
            files_phrase(walked.files_seen as u64),
            human::count(count_folders(&walked.items), "folder", "folders"),
            walked.tally().sentence(walker.no_ignore())
        );
        Layout::build(walker.root(), depth, &walked.items).render(&label, &accounting)
    })
    .await;
    Ok(match result {
        Ok((text, data)) => {
            ToolOutput::text(text).with_structured(serde_json::to_value(data).unwrap_or_default())
        }
        Err(interrupted) => ToolOutput::error(interrupted.to_string()),
    })
}

/// The data of a successful `tree` call (MCP's `structuredContent`), beside the same text: the
/// entries the text lists, flat, in its order (a folder before what it holds), each with its
/// path below the folder shown.
#[derive(Debug, Default, serde::Serialize, JsonSchema)]
struct TreeData {
    /// The folder shown, as the text's first line names it.
    path: String,
    /// Files anywhere below it that were walked.
    files: u64,
    /// Their total size in bytes.
    bytes: u64,
    /// The entries listed, in the text's order; those summed up on a `… N more` line are left
    /// out (`complete` is then false).
    entries: Vec<TreeEntry>,
    /// False when the text left entries out: folders not opened (`…`) or entries summed up.
    complete: bool,
}

/// One listed entry of a `tree` result.
#[derive(Debug, serde::Serialize, JsonSchema)]
struct TreeEntry {
    /// The path below the folder shown, `/`-separated; a folder's ends with `/`.
    path: String,
    /// `folder`, `file` or `not_walked` (a folder left out by a rule, see `reason`).
    kind: EntryKind,
    /// For a folder: the files anywhere below it; for a file: 1.
    files: u64,
    /// The size in bytes of a file, or of everything below a folder.
    bytes: u64,
    /// Why a `not_walked` folder was left out, in a few words; null for the others.
    reason: Option<String>,
}

/// What a `tree` entry is.
#[derive(Debug, Clone, Copy, serde::Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum EntryKind {
    // Plain comments: doc comments would make the schema a `oneOf` instead of an `enum`.
    // A folder that was walked.
    Folder,
    // A file.
    File,
    // A folder a rule left out.
    NotWalked,
}

/// `1 file`, `12,345 files`.
fn files_phrase(count: u64) -> String {
    if count == 1 {
        "1 file".to_owned()
    } else {
        format!("{} files", human::grouped(count))
    }
}

fn count_folders<T>(items: &[Item<T>]) -> u64 {
    items
        .iter()
        .filter(|item| matches!(item, Item::Folder(_)))
        .count() as u64
}

/// One folder of the layout.
#[derive(Debug, Default)]
struct Node {
    name: String,
    /// The folder above (the root is its own parent).
    parent: usize,
    /// Folders below, as indexes into the layout's nodes.
    folders: Vec<usize>,
    /// Files directly in it (kept for folders whose entries are listed).
    files: Vec<(String, u64)>,
    /// Folders in it that were not walked, and why.
    skipped: Vec<(String, Rule)>,
    /// Files and bytes anywhere below it.
    total_files: u64,
    total_bytes: u64,
}

/// The folders of a walk down to a depth, with their totals.
struct Layout {
    nodes: Vec<Node>,
    depth: usize,
}

impl Layout {
    /// The layout of `items` (a walk of `root`), keeping `depth` levels.
    fn build(root: &Path, depth: usize, items: &[Item<u64>]) -> Self {
        let mut nodes = vec![Node::default()];
        let mut index: HashMap<PathBuf, usize> = HashMap::new();
        index.insert(PathBuf::new(), 0);
        // Files below the kept levels are added to their ancestor at the last kept level.
        let kept = |relative: &Path, levels: usize| -> PathBuf {
            relative.components().take(levels).collect()
        };
        for item in items {
            let (path, size) = match item {
                Item::Folder(path) => {
                    let Ok(relative) = path.strip_prefix(root) else {
                        continue;
                    };
                    let levels = level(relative);
                    if levels == 0 || levels > depth {
                        continue;
                    }
                    let parent = relative.parent().map(Path::to_path_buf).unwrap_or_default();
                    let Some(&parent) = index.get(&parent) else {
                        continue;
                    };
                    let id = nodes.len();
                    nodes.push(Node {
                        name: file_name(relative),
                        parent,
                        ..Node::default()
                    });
                    nodes[parent].folders.push(id);
                    index.insert(relative.to_path_buf(), id);
                    continue;
                }
                Item::Skipped {
                    path,
                    folder: true,
                    rule,
                } => {
                    let Ok(relative) = path.strip_prefix(root) else {
                        continue;
                    };
                    if relative.as_os_str().is_empty() {
                        // The root itself could not be read: the last line says so.
                        continue;
                    }
                    let parent = relative.parent().map(Path::to_path_buf).unwrap_or_default();
                    if level(&parent) < depth
                        && let Some(&parent) = index.get(&parent)
                    {
                        nodes[parent].skipped.push((file_name(relative), *rule));
                    }
                    continue;
                }
                Item::Skipped { .. } => continue,
                Item::File(path, outcome) => (path, outcome.value),
            };
            let Ok(relative) = path.strip_prefix(root) else {
                continue;
            };
            let parent = relative.parent().unwrap_or(Path::new(""));
            let levels = level(parent);
            let owner = if levels < depth {
                parent.to_path_buf()
            } else {
                kept(parent, depth)
            };
            let Some(&owner) = index.get(&owner) else {
                continue;
            };
            let node = &mut nodes[owner];
            node.total_files += 1;
            node.total_bytes += size;
            if levels < depth {
                node.files.push((file_name(relative), size));
            }
        }
        // Children come after their parents: sum up from the end.
        for id in (1..nodes.len()).rev() {
            let (files, bytes, parent) = (
                nodes[id].total_files,
                nodes[id].total_bytes,
                nodes[id].parent,
            );
            nodes[parent].total_files += files;
            nodes[parent].total_bytes += bytes;
        }
        Self { nodes, depth }
    }

    /// Which folders are opened: level by level while the lines fit.
    fn opened(&self) -> Vec<bool> {
        let mut opened = vec![false; self.nodes.len()];
        let mut lines = 1;
        let mut level = vec![0];
        for _ in 0..self.depth {
            let mut next = Vec::new();
            for &id in &level {
                let needed = self.entry_lines(id);
                if lines + needed > LINES_SHOWN {
                    return opened;
                }
                lines += needed;
                opened[id] = true;
                next.extend(self.nodes[id].folders.iter().take(FOLDERS_SHOWN));
            }
            level = next;
        }
        opened
    }

    /// The lines a folder's entries take when it is opened.
    fn entry_lines(&self, id: usize) -> usize {
        let node = &self.nodes[id];
        let folders = node.folders.len() + node.skipped.len();
        let shown = |count: usize, cap: usize| count.min(cap) + usize::from(count > cap);
        shown(folders, FOLDERS_SHOWN) + shown(node.files.len(), FILES_SHOWN)
    }

    /// The text and, beside it, the same entries as data.
    fn render(&self, root_label: &str, accounting: &str) -> (String, TreeData) {
        let opened = self.opened();
        let root = &self.nodes[0];
        let mut text = format!("{root_label}/ ({})\n", totals(root));
        let mut closed = false;
        let mut data = TreeData {
            path: root_label.to_owned(),
            files: root.total_files,
            bytes: root.total_bytes,
            entries: Vec::new(),
            complete: true,
        };
        self.render_entries(0, 1, &opened, &mut text, &mut closed, &mut data);
        data.complete &= !closed;
        if closed {
            text.push_str(&format!(
                "[folders marked `…` were not opened to keep this under about {LINES_SHOWN} \
                 lines: call tree with one of them as `path` to look inside]\n"
            ));
        }
        text.push_str(&format!("[{accounting}]"));
        (text, data)
    }

    /// The path of folder `id` below the root, `/`-separated and ending with `/` (empty for
    /// the root).
    fn folder_path(&self, id: usize) -> String {
        let mut names = Vec::new();
        let mut at = id;
        while at != 0 {
            names.push(self.nodes[at].name.as_str());
            at = self.nodes[at].parent;
        }
        names.reverse();
        names.iter().map(|name| format!("{name}/")).collect()
    }

    fn render_entries(
        &self,
        id: usize,
        indent: usize,
        opened: &[bool],
        text: &mut String,
        closed: &mut bool,
        data: &mut TreeData,
    ) {
        let node = &self.nodes[id];
        let prefix = self.folder_path(id);
        let pad = "  ".repeat(indent);
        // Folders walked and not walked, together by name.
        let mut folders: Vec<(&str, Option<usize>, Option<Rule>)> = node
            .folders
            .iter()
            .map(|&child| (self.nodes[child].name.as_str(), Some(child), None))
            .chain(
                node.skipped
                    .iter()
                    .map(|(name, rule)| (name.as_str(), None, Some(*rule))),
            )
            .collect();
        folders.sort_by(|a, b| a.0.cmp(b.0));
        for (name, child, rule) in folders.iter().take(FOLDERS_SHOWN) {
            match (child, rule) {
                (Some(child), _) => {
                    let child_node = &self.nodes[*child];
                    let has_entries = !child_node.folders.is_empty()
                        || !child_node.files.is_empty()
                        || !child_node.skipped.is_empty();
                    let mark = if !opened[*child] && has_entries && indent < self.depth {
                        *closed = true;
                        " …"
                    } else {
                        ""
                    };
                    text.push_str(&format!("{pad}{name}/ ({}){mark}\n", totals(child_node)));
                    data.entries.push(TreeEntry {
                        path: format!("{prefix}{name}/"),
                        kind: EntryKind::Folder,
                        files: child_node.total_files,
                        bytes: child_node.total_bytes,
                        reason: None,
                    });
                    if opened[*child] {
                        self.render_entries(*child, indent + 1, opened, text, closed, data);
                    }
                }
                (None, Some(rule)) => {
                    text.push_str(&format!("{pad}{name}/ (not walked: {})\n", why(*rule)));
                    data.entries.push(TreeEntry {
                        path: format!("{prefix}{name}/"),
                        kind: EntryKind::NotWalked,
                        files: 0,
                        bytes: 0,
                        reason: Some(why(*rule).to_owned()),
                    });
                }
                (None, None) => {}
            }
        }
        if folders.len() > FOLDERS_SHOWN {
            data.complete = false;
            let rest = &folders[FOLDERS_SHOWN..];
            let (mut files, mut bytes) = (0, 0);
            for (_, child, _) in rest {
                if let Some(child) = child {
                    files += self.nodes[*child].total_files;
                    bytes += self.nodes[*child].total_bytes;
                }
            }
            text.push_str(&format!(
                "{pad}… {} more {} ({}, {})\n",
                human::grouped(rest.len() as u64),
                if rest.len() == 1 { "folder" } else { "folders" },
                files_phrase(files),
                human::size(bytes)
            ));
        }
        for (name, size) in node.files.iter().take(FILES_SHOWN) {
            text.push_str(&format!("{pad}{name} ({})\n", human::size(*size)));
            data.entries.push(TreeEntry {
                path: format!("{prefix}{name}"),
                kind: EntryKind::File,
                files: 1,
                bytes: *size,
                reason: None,
            });
        }
        if node.files.len() > FILES_SHOWN {
            data.complete = false;
            let rest = &node.files[FILES_SHOWN..];
            text.push_str(&format!(
                "{pad}… {} more {} ({})\n",
                human::grouped(rest.len() as u64),
                if rest.len() == 1 { "file" } else { "files" },
                human::size(rest.iter().map(|(_, size)| size).sum())
            ));
        }
    }
}

/// `12 files, 340 KiB`, or `empty`.
fn totals(node: &Node) -> String {
    if node.total_files == 0 {
        return if node.folders.is_empty() && node.skipped.is_empty() {
            "empty".to_owned()
        } else {
            "0 files".to_owned()
        };
    }
    format!(
        "{}, {}",
        files_phrase(node.total_files),
        human::size(node.total_bytes)
    )
}

/// Why a folder was not walked, in a few words.
fn why(rule: Rule) -> &'static str {
    match rule {
        Rule::GitIgnore => "ignored by .gitignore",
        Rule::DotIgnore => "ignored by .ignore",
        Rule::GitExclude => "ignored by .git/info/exclude",
        Rule::GlobalExclude => "ignored by your global git excludes",
        Rule::GitFolder => "git's own data",
        Rule::BuildFolder => "build output or installed packages",
        Rule::Link => "a link outside the workspace or into a loop",
        Rule::Unreadable | Rule::Binary => "could not be read",
    }
}

/// The number of folders in a relative path.
fn level(relative: &Path) -> usize {
    relative
        .components()
        .filter(|component| matches!(component, Component::Normal(_)))
        .count()
}

fn file_name(relative: &Path) -> String {
    relative
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default()
}

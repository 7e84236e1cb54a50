//! Asking the servers about files: send each file's content (`didOpen`, or `didChange` and
//! `didSave`), wait for diagnostics of that very version (debounced), and find the new errors
//! of the other open files, all before one deadline.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::json;
use tokio::time::Instant;
use vak_tool_core::{ToolContext, human};

use crate::client::{Published, settle};
use crate::launch::Launcher;
use crate::render::{FileReport, Key, Outcome, Report, is_error, key, render};
use crate::server::{Got, Running, Servers, Start, wait_for};
use crate::settings::{LspSettings, Server, language_id};
use crate::uri;

/// The crate's shared view: settings, servers in use, how they start.
#[derive(Debug)]
pub(crate) struct Lsp {
    pub(crate) settings: LspSettings,
    pub(crate) servers: Vec<Server>,
    pub(crate) launcher: Launcher,
}

/// One file sent to one server.
struct Sent {
    path: PathBuf,
    uri: String,
    server: String,
    running: Arc<Running>,
    version: i32,
    /// The server's publish counter before we sent.
    seq: u64,
    /// Whether we sent the content (otherwise the last diagnostics of this version do).
    resent: bool,
    role: Role,
}

/// Why a file was sent.
enum Role {
    /// It was asked about (changed, or given to `diagnostics`); `had` is what its last report
    /// said before a change, so that only what the change introduced is listed.
    Asked { had: Option<Vec<Key>> },
    /// It depends on a changed file: only its new errors are listed (all of them when it is
    /// checked for the first time).
    Dependent {
        had: HashSet<(u32, u32, String)>,
        first_check: bool,
    },
}

impl Sent {
    /// Whether `published` is for this version of the document.
    fn fresh(&self, published: &Option<Published>) -> bool {
        match published {
            Some(p) => match p.version {
                Some(version) => version == self.version,
                None => !self.resent || p.seq > self.seq,
            },
            None => false,
        }
    }

    /// An unversioned server that has published since the change (for another file) and had
    /// said something about this one before: it may have nothing new to say.
    fn maybe_unchanged(&self) -> bool {
        let client = &self.running.client;
        !client.versioned() && client.seq() > self.seq && client.published(&self.uri).is_some()
    }

    /// What the result says of it, given what the server reported.
    fn report(&self, outcome: Outcome) -> Option<FileReport> {
        match (&self.role, outcome) {
            (Role::Asked { had }, outcome) => Some(FileReport {
                path: self.path.clone(),
                server: self.server.clone(),
                outcome,
                broken: false,
                had: had.clone(),
                first_check: false,
            }),
            (Role::Dependent { had, first_check }, Outcome::Fresh(diagnostics, total)) => {
                let published = Published {
                    version: None,
                    diagnostics,
                    total,
                    seq: 0,
                };
                let new = new_errors(&published, Some(had));
                (!new.is_empty()).then(|| FileReport {
                    path: self.path.clone(),
                    server: self.server.clone(),
                    outcome: Outcome::Fresh(new.clone(), new.len()),
                    broken: true,
                    had: None,
                    first_check: *first_check,
                })
            }
            (Role::Dependent { .. }, Outcome::StillChecking { .. }) => None,
        }
    }
}

/// A server a change was sent to: its connection, its settings, its root, and the changed
/// paths.
type Used<'a> = (Arc<Running>, &'a Server, PathBuf, Vec<PathBuf>);

/// The error keys of every other document, per server, before the change.
type Before = HashMap<String, HashSet<(u32, u32, String)>>;

fn error_keys(published: &Published) -> HashSet<(u32, u32, String)> {
    published
        .diagnostics
        .iter()
        .filter(|d| is_error(d))
        .map(|d| {
            (
                d.range.start.line,
                d.range.start.character,
                d.message.clone(),
            )
        })
        .collect()
}

/// The errors of `published` that were not in `old`.
fn new_errors(
    published: &Published,
    old: Option<&HashSet<(u32, u32, String)>>,
) -> Vec<lsp_types::Diagnostic> {
    published
        .diagnostics
        .iter()
        .filter(|d| is_error(d))
        .filter(|d| {
            !old.is_some_and(|old| {
                old.contains(&(
                    d.range.start.line,
                    d.range.start.character,
                    d.message.clone(),
                ))
            })
        })
        .cloned()
        .collect()
}

/// What a report said, position aside (a problem that moved with an edit is not new).
fn had_keys(published: &Published) -> Vec<Key> {
    published.diagnostics.iter().map(key).collect()
}

/// The most files a change sends again because they depend on it.
const MAX_DEPENDENTS: usize = 16;
/// The most files looked at when searching the project for importers of a changed file.
const MAX_SCANNED: usize = 5000;
/// The largest file read when searching for importers.
const MAX_SCANNED_BYTES: u64 = 512 * 1024;
/// The most files kept for the session's next result.
const MAX_LATE: usize = 256;

/// Files still being checked when a result ended: the session's next result starts with what
/// their servers said since.
#[derive(Default)]
struct Late(Mutex<Vec<Sent>>);

/// The names under which a file is imported: its stem, and for a package's `__init__`,
/// `index` or `mod` file, its folder's name.
fn stems(paths: &[PathBuf]) -> Vec<String> {
    let mut stems = Vec::new();
    for path in paths {
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if matches!(stem, "__init__" | "index" | "mod" | "lib")
            && let Some(folder) = path
                .parent()
                .and_then(|p| p.file_name())
                .and_then(|n| n.to_str())
        {
            stems.push(folder.to_owned());
        }
        stems.push(stem.to_owned());
    }
    stems.sort();
    stems.dedup();
    stems
}

/// Whether `text` imports one of `stems`: a line naming it as a word, with an import keyword.
fn imports(text: &str, stems: &[String]) -> bool {
    const KEYWORDS: [&str; 6] = ["import", "include", "require", "from", "use ", "mod "];
    text.lines().any(|line| {
        KEYWORDS.iter().any(|k| line.contains(k))
            && stems.iter().any(|stem| {
                line.match_indices(stem.as_str()).any(|(at, _)| {
                    let before = line[..at].chars().next_back();
                    let after = line[at + stem.len()..].chars().next();
                    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
                    !word(before) && !word(after)
                })
            })
    })
}

/// The search for the files that depend on a change.
struct Scan {
    /// The other documents open in the server.
    open: HashMap<String, Arc<str>>,
    /// The documents of the change itself, already sent: never a dependent of it.
    changed: HashSet<String>,
    stems: Vec<String>,
    root: PathBuf,
    extensions: Vec<String>,
    workspace: PathBuf,
    limit: u64,
}

impl Scan {
    /// The open documents that import a changed file, then the project's files that do (at
    /// most [`MAX_DEPENDENTS`] in all), each with its text and whether it was open.
    fn dependents(self) -> Vec<(PathBuf, Arc<str>, bool)> {
        let mut found: Vec<(PathBuf, Arc<str>, bool)> = Vec::new();
        let mut open: Vec<(&String, &Arc<str>)> = self.open.iter().collect();
        open.sort();
        for (uri, text) in open {
            if found.len() >= MAX_DEPENDENTS {
                return found;
            }
            if imports(text, &self.stems)
                && let Some(path) = uri::to_path(uri)
            {
                found.push((path, Arc::clone(text), true));
            }
        }
        if !self.root.starts_with(&self.workspace) {
            return found;
        }
        let mut folders = vec![self.root.clone()];
        let mut looked = 0usize;
        while let Some(folder) = folders.pop() {
            let Ok(entries) = std::fs::read_dir(&folder) else {
                continue;
            };
            let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
            entries.sort_by_key(std::fs::DirEntry::file_name);
            for entry in entries {
                looked += 1;
                if looked > MAX_SCANNED || found.len() >= MAX_DEPENDENTS {
                    return found;
                }
                let name = entry.file_name();
                let name = name.to_string_lossy();
                let Ok(kind) = entry.file_type() else {
                    continue;
                };
                let path = entry.path();
                if kind.is_dir() {
                    let skipped = name.starts_with('.')
                        || matches!(
                            &*name,
                            "node_modules" | "target" | "__pycache__" | "venv" | "build" | "dist"
                        );
                    if !skipped {
                        folders.push(path);
                    }
                    continue;
                }
                let served = path
                    .extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| self.extensions.iter().any(|x| x == e));
                let file_uri = uri::of(&path);
                if !kind.is_file()
                    || !served
                    || self.open.contains_key(&file_uri)
                    || self.changed.contains(&file_uri)
                {
                    continue;
                }
                if entry.metadata().map_or(true, |m| m.len() > self.limit) {
                    continue;
                }
                let Ok(bytes) = std::fs::read(&path) else {
                    continue;
                };
                let Ok(text) = String::from_utf8(bytes) else {
                    continue;
                };
                if imports(&text, &self.stems) {
                    found.push((path, Arc::from(text), false));
                }
            }
        }
        found
    }
}

impl Lsp {
    /// The servers for a file, by its extension.
    pub(crate) fn servers_for(&self, path: &Path) -> Vec<&Server> {
        let Some(extension) = path.extension().and_then(|e| e.to_str()) else {
            return Vec::new();
        };
        self.servers
            .iter()
            .filter(|s| s.settings.extensions.iter().any(|e| e == extension))
            .collect()
    }

    /// Whether any file of this extension has a server.
    pub(crate) fn serves(&self, path: &Path) -> bool {
        !self.servers_for(path).is_empty()
    }

    /// The nearest folder above `path`, inside the workspace, holding a root marker of
    /// `server`; otherwise the workspace.
    fn root(&self, path: &Path, server: &Server, ctx: &ToolContext) -> PathBuf {
        let workspace = ctx.workspace();
        let mut dir = path.parent();
        while let Some(current) = dir {
            if !current.starts_with(workspace) {
                break;
            }
            if server
                .settings
                .roots
                .iter()
                .any(|marker| current.join(marker).exists())
            {
                return current.to_path_buf();
            }
            if current == workspace {
                break;
            }
            dir = current.parent();
        }
        workspace.to_path_buf()
    }

    /// A ready server for `path` (the first whose extensions name it), with the file's current
    /// content open in it: what a navigation request needs. `Err` says why there is none, in a
    /// sentence for the model.
    pub(crate) async fn ready_for(
        &self,
        path: &Path,
        ctx: &ToolContext,
        deadline: Instant,
    ) -> Result<(Arc<Running>, String), String> {
        let matching = self.servers_for(path);
        let Some(server) = matching.first() else {
            let names: Vec<String> = self
                .servers
                .iter()
                .map(|s| format!("{} ({})", s.name, s.settings.extensions.join(", ")))
                .collect();
            return Err(if names.is_empty() {
                "no language server is configured or found on PATH: use `grep` to find the \
                 symbol instead"
                    .into()
            } else {
                format!(
                    "no language server handles `{}`: the servers here are {}",
                    ctx.display_path(path),
                    names.join("; ")
                )
            });
        };
        let text = read_text(path, self.settings.max_file_bytes)
            .await
            .map_err(|why| {
                format!(
                    "`{}` cannot be sent to {}: {why}",
                    ctx.display_path(path),
                    server.name
                )
            })?;
        let grace = Duration::from_millis(self.settings.shutdown_ms);
        let root = self.root(path, server, ctx);
        let slot = ctx
            .session()
            .state::<Servers>()
            .slot(&root, &server.name, grace);
        let running = match slot
            .get(server, &root, ctx, &self.launcher, &self.settings)
            .await
        {
            Got::None(why) => return Err(format!("{}: {why}", server.name)),
            Got::Server(running, _) => running,
        };
        match running.ready(deadline).await {
            Start::Ready => {}
            Start::Starting => {
                return Err(format!(
                    "{} was still starting: try again in a moment",
                    server.name
                ));
            }
            Start::Failed(why) => return Err(format!("{}: stopped: it {why}", server.name)),
        }
        let uri = uri::of(path);
        let language = server.settings.language_id.clone().unwrap_or_else(|| {
            let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            language_id(extension).to_owned()
        });
        send(&running, &uri, &language, &Arc::from(text), false, deadline)
            .await
            .map_err(|why| format!("{}: stopped: it {why}", server.name))?;
        Ok((running, server.name.clone()))
    }

    /// Checks `paths`: sends their content (always when `changed`; otherwise only when the
    /// server has not seen this content, or its last report on it is older than the server's
    /// last change) and waits for their diagnostics until the deadline. With `changed`, the
    /// files that depend on the change (open in the server and importing it, or importing it
    /// from the project) are sent too and their new errors reported, and so are the new errors
    /// of every other open file the server reports on before the deadline. What is still
    /// pending at the deadline is kept for the session's next result ([`Lsp::since`]).
    pub(crate) async fn check(
        &self,
        paths: &[PathBuf],
        ctx: &ToolContext,
        changed: bool,
    ) -> Report {
        let wait = Duration::from_millis(self.settings.wait_ms);
        let deadline = Instant::now() + wait;
        let grace = Duration::from_millis(self.settings.shutdown_ms);
        let servers = ctx.session().state::<Servers>();
        let mut report = Report::default();
        let mut noted: HashSet<String> = HashSet::new();
        let mut note = |report: &mut Report, line: String| {
            if noted.insert(line.clone()) {
                report.notes.push(line);
            }
        };
        let mut sent: Vec<Sent> = Vec::new();
        let mut before: HashMap<usize, (Arc<Running>, u64, Before)> = HashMap::new();
        // Per server used: its settings, its root, and the changed paths sent to it.
        let mut used: HashMap<usize, Used<'_>> = HashMap::new();
        for path in paths {
            let matching = self.servers_for(path);
            if matching.is_empty() {
                continue;
            }
            let text = match read_text(path, self.settings.max_file_bytes).await {
                Ok(text) => Arc::<str>::from(text),
                Err(why) => {
                    note(
                        &mut report,
                        format!("{}: not checked ({why})", ctx.display_path(path)),
                    );
                    continue;
                }
            };
            for server in matching {
                let root = self.root(path, server, ctx);
                let slot = servers.slot(&root, &server.name, grace);
                let running = match slot
                    .get(server, &root, ctx, &self.launcher, &self.settings)
                    .await
                {
                    Got::None(why) => {
                        note(&mut report, format!("error: {}: {why}", server.name));
                        continue;
                    }
                    Got::Server(running, restarted) => {
                        if let Some(restarted) = restarted {
                            note(&mut report, format!("{}: {restarted}", server.name));
                        }
                        running
                    }
                };
                match running.ready(deadline).await {
                    Start::Ready => {}
                    Start::Starting => {
                        report.files.push(FileReport {
                            path: path.clone(),
                            server: server.name.clone(),
                            outcome: Outcome::StillChecking {
                                why: format!("was still starting after {}", human::duration(wait)),
                            },
                            broken: false,
                            had: None,
                            first_check: false,
                        });
                        continue;
                    }
                    Start::Failed(why) => {
                        let why = running.cause(why).await;
                        note(
                            &mut report,
                            format!("error: {}: stopped: it {why}", server.name),
                        );
                        continue;
                    }
                }
                let key = Arc::as_ptr(&running) as usize;
                if changed && !before.contains_key(&key) {
                    let seq = running.client.seq();
                    let keys = running
                        .client
                        .all_published()
                        .into_iter()
                        .map(|(uri, published)| (uri, error_keys(&published)))
                        .collect();
                    before.insert(key, (Arc::clone(&running), seq, keys));
                }
                if changed {
                    used.entry(key)
                        .or_insert_with(|| (Arc::clone(&running), server, root.clone(), Vec::new()))
                        .3
                        .push(path.clone());
                }
                let uri = uri::of(path);
                let language = self.language(server, path);
                let had = if changed {
                    running.client.published(&uri).map(|p| had_keys(&p))
                } else {
                    None
                };
                match send(&running, &uri, &language, &text, changed, deadline).await {
                    Ok((version, seq, resent)) => sent.push(Sent {
                        path: path.clone(),
                        uri,
                        server: server.name.clone(),
                        running,
                        version,
                        seq,
                        resent,
                        role: Role::Asked { had },
                    }),
                    Err(why) => {
                        let why = running.cause(why).await;
                        note(
                            &mut report,
                            format!("error: {}: stopped: it {why}", server.name),
                        );
                    }
                }
            }
        }
        // The files that depend on the change, sent again (or opened) so that the server
        // reports on them for this very version of the project.
        let ours: HashSet<String> = sent.iter().map(|s| s.uri.clone()).collect();
        for (key, (running, server, root, changed_paths)) in &used {
            let open: HashMap<String, Arc<str>> = running
                .open
                .lock()
                .await
                .iter()
                .filter(|(uri, _)| !ours.contains(*uri))
                .map(|(uri, (_, text))| (uri.clone(), Arc::clone(text)))
                .collect();
            let scan = Scan {
                open,
                changed: ours.clone(),
                stems: stems(changed_paths),
                root: root.clone(),
                extensions: server.settings.extensions.clone(),
                workspace: ctx.workspace().to_path_buf(),
                limit: self.settings.max_file_bytes.min(MAX_SCANNED_BYTES),
            };
            let found = tokio::task::spawn_blocking(move || scan.dependents())
                .await
                .unwrap_or_default();
            let known = before.get(key).map(|(_, _, keys)| keys);
            for (path, text, was_open) in found {
                let uri = uri::of(&path);
                let language = self.language(server, &path);
                let had = if was_open {
                    known.and_then(|keys| keys.get(&uri).cloned())
                } else {
                    None
                };
                if let Ok((version, seq, resent)) =
                    send(running, &uri, &language, &text, true, deadline).await
                {
                    sent.push(Sent {
                        path,
                        uri,
                        server: server.name.clone(),
                        running: Arc::clone(running),
                        version,
                        seq,
                        resent,
                        role: Role::Dependent {
                            had: had.unwrap_or_default(),
                            first_check: !was_open,
                        },
                    });
                }
            }
        }
        let mut late = Vec::new();
        for item in sent {
            self.settle(&item, deadline).await;
            match self.outcome(&item, wait) {
                Err(why) => {
                    let why = item.running.cause(why).await;
                    note(
                        &mut report,
                        format!("error: {}: stopped: it {why}", item.server),
                    );
                }
                Ok(Outcome::StillChecking { why }) => {
                    if matches!(item.role, Role::Asked { .. }) {
                        report.files.push(FileReport {
                            path: item.path.clone(),
                            server: item.server.clone(),
                            outcome: Outcome::StillChecking { why },
                            broken: false,
                            had: None,
                            first_check: false,
                        });
                    }
                    late.push(item);
                }
                Ok(outcome) => report.files.extend(item.report(outcome)),
            }
        }
        if changed {
            let sent: HashSet<PathBuf> = report
                .files
                .iter()
                .map(|f| f.path.clone())
                .chain(late.iter().map(|l| l.path.clone()))
                .collect();
            let mut names: HashMap<usize, &str> = HashMap::new();
            for (key, (_, server, _, _)) in &used {
                names.insert(*key, &server.name);
            }
            for (key, (running, seq, keys)) in &before {
                let server = names.get(key).copied().unwrap_or("server");
                let open = running.open.lock().await;
                let mut broken: Vec<FileReport> = Vec::new();
                for (uri, published) in running.client.all_published() {
                    if ours.contains(uri.as_str())
                        || published.seq <= *seq
                        || !open.contains_key(&uri)
                    {
                        continue;
                    }
                    let Some(path) = uri::to_path(&uri) else {
                        continue;
                    };
                    if sent.contains(&path) {
                        continue;
                    }
                    let new = new_errors(&published, keys.get(&uri));
                    if !new.is_empty() {
                        let total = new.len();
                        broken.push(FileReport {
                            path,
                            server: server.to_owned(),
                            outcome: Outcome::Fresh(new, total),
                            broken: true,
                            had: None,
                            first_check: false,
                        });
                    }
                }
                broken.sort_by(|a, b| a.path.cmp(&b.path));
                report.files.extend(broken);
            }
        }
        let state = ctx.session().state::<Late>();
        let mut pending = state.0.lock().unwrap_or_else(PoisonError::into_inner);
        let uris: HashSet<&str> = late.iter().map(|l| l.uri.as_str()).collect();
        pending.retain(|p| !uris.contains(p.uri.as_str()) && !ours.contains(&p.uri));
        pending.extend(late);
        let excess = pending.len().saturating_sub(MAX_LATE);
        pending.drain(..excess);
        report
    }

    /// The diagnostics that arrived since the last result for files that were still being
    /// checked then: the section that starts the session's next result, or `None`.
    pub(crate) fn since(&self, ctx: &ToolContext) -> Option<String> {
        let state = ctx.session().state::<Late>();
        let pending = std::mem::take(&mut *state.0.lock().unwrap_or_else(PoisonError::into_inner));
        if pending.is_empty() {
            return None;
        }
        let wait = Duration::from_millis(self.settings.wait_ms);
        let mut report = Report::default();
        let mut still = Vec::new();
        for item in pending {
            match self.outcome(&item, wait) {
                Ok(Outcome::StillChecking { .. }) => still.push(item),
                Ok(outcome) => report.files.extend(item.report(outcome)),
                Err(_) => {}
            }
        }
        state
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(still);
        if report.files.is_empty() {
            return None;
        }
        render(&report, ctx, self.settings.max_per_file)
            .map(|text| text.replacen("Diagnostics:", "Diagnostics since your last call:", 1))
    }

    fn language(&self, server: &Server, path: &Path) -> String {
        server.settings.language_id.clone().unwrap_or_else(|| {
            let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
            language_id(extension).to_owned()
        })
    }

    /// Waits, before the first project-wide request of `running` (references, calls,
    /// workspace symbols, rename), until it has loaded its project: no work-done progress of
    /// its own under way, and a report on `uri`, the file just sent. Any report on it counts,
    /// not only one for its latest version: typescript-language-server publishes only when a
    /// file's diagnostics change, so a clean file sent again gets no new report. pyright
    /// reports only once it has read its configuration and found the project's files;
    /// typescript-language-server shows its loading as progress. `Err` gives how long it
    /// waited, when `[lsp] project_load_ms` came first: the answer may then be partial.
    pub(crate) async fn project_loaded(
        &self,
        running: &Running,
        uri: &str,
    ) -> Result<(), Duration> {
        if running.project_loaded.load(Ordering::Relaxed) {
            return Ok(());
        }
        let bound = Duration::from_millis(self.settings.project_load_ms);
        let client = &running.client;
        let loaded = || !client.busy() && client.published(uri).is_some();
        wait_for(running, Instant::now() + bound, || {
            loaded() || client.dead().is_some()
        })
        .await;
        if loaded() {
            running.project_loaded.store(true, Ordering::Relaxed);
            Ok(())
        } else {
            Err(bound)
        }
    }

    /// Waits until the server has reported on `item`'s version (or stopped, or the deadline),
    /// then for its reports to settle.
    async fn settle(&self, item: &Sent, deadline: Instant) {
        let client = &item.running.client;
        let debounce = Duration::from_millis(self.settings.debounce_ms);
        let quiet = Duration::from_millis(self.settings.quiet_ms);
        wait_for(&item.running, deadline, || {
            item.fresh(&client.published(&item.uri))
                || client.dead().is_some()
                || item.maybe_unchanged()
        })
        .await;
        if client.dead().is_none() {
            let mut watch = client.watch();
            if item.fresh(&client.published(&item.uri)) {
                // A versioned report on the only document open in the server is its whole
                // answer for this change: nothing else is open for it to report on. With
                // other documents open, reports settle first (pyright reports an importing
                // file twice for one version, the first time empty).
                if client.versioned() && item.running.open.lock().await.len() <= 1 {
                    return;
                }
                let wait = if client.versioned() { debounce } else { quiet };
                settle(&mut watch, wait, deadline).await;
            } else if item.maybe_unchanged() {
                settle(&mut watch, quiet, deadline).await;
            }
        }
    }

    /// What is known of `item` now: its diagnostics, still checking, or `Err` why the server
    /// stopped.
    fn outcome(&self, item: &Sent, wait: Duration) -> Result<Outcome, String> {
        let client = &item.running.client;
        match client.published(&item.uri) {
            Some(p) if item.fresh(&Some(p.clone())) || item.maybe_unchanged() => {
                Ok(Outcome::Fresh(p.diagnostics, p.total))
            }
            _ => {
                if let Some(why) = client.dead() {
                    return Err(why);
                }
                Ok(Outcome::StillChecking {
                    why: if client.busy() {
                        format!("was still indexing after {}", human::duration(wait))
                    } else {
                        format!(
                            "had not reported on this version after {}",
                            human::duration(wait)
                        )
                    },
                })
            }
        }
    }

    /// The last diagnostics of every file open in this session's servers, none older than
    /// the last change sent to its server (a stale one is asked again, as `check` does).
    pub(crate) async fn open_files(&self, ctx: &ToolContext) -> Report {
        let servers = ctx.session().state::<Servers>();
        let mut report = Report::default();
        let mut paths: Vec<PathBuf> = Vec::new();
        for (_, name, slot) in servers.slots() {
            let Some(running) = slot.current().await else {
                continue;
            };
            if let Some(why) = running.dead() {
                let why = running.cause(why).await;
                report
                    .notes
                    .push(format!("error: {name}: stopped: it {why}"));
                continue;
            }
            let open = running.open.lock().await;
            paths.extend(open.keys().filter_map(|uri| uri::to_path(uri)));
        }
        paths.sort();
        paths.dedup();
        paths.retain(|path| path.is_file());
        if paths.is_empty() {
            return report;
        }
        let mut checked = self.check(&paths, ctx, false).await;
        checked.notes.extend(report.notes);
        checked
    }
}

/// Sends a document's content: `didOpen` the first time, otherwise `didChange` (whole
/// content) and `didSave`; when not `changed` and the server has this content already,
/// nothing. Returns the version, the publish counter before sending, and whether it sent.
pub(crate) async fn send(
    running: &Running,
    uri: &str,
    language: &str,
    text: &Arc<str>,
    changed: bool,
    deadline: Instant,
) -> Result<(i32, u64, bool), String> {
    let mut open = running.open.lock().await;
    let seq = running.client.seq();
    let client = &running.client;
    // A report older than the server's last change may be out of date even for this very
    // version: the change can break a file that imports it.
    let stale = client
        .published(uri)
        .is_some_and(|p| p.seq <= running.last_change.load(Ordering::Relaxed));
    match open.get(uri).cloned() {
        Some((version, old)) if !changed && old == *text && !stale => Ok((version, seq, false)),
        Some((version, old)) => {
            if changed || old != *text {
                running.last_change.store(seq, Ordering::Relaxed);
            }
            let version = version.saturating_add(1);
            open.insert(uri.to_owned(), (version, Arc::clone(text)));
            client
                .notify(
                    "textDocument/didChange",
                    json!({
                        "textDocument": {"uri": uri, "version": version},
                        "contentChanges": [{"text": &**text}]
                    }),
                    deadline,
                )
                .await?;
            client
                .notify(
                    "textDocument/didSave",
                    json!({"textDocument": {"uri": uri}, "text": &**text}),
                    deadline,
                )
                .await?;
            Ok((version, seq, true))
        }
        None => {
            if changed {
                running.last_change.store(seq, Ordering::Relaxed);
            }
            open.insert(uri.to_owned(), (1, Arc::clone(text)));
            client
                .notify(
                    "textDocument/didOpen",
                    json!({"textDocument": {
                        "uri": uri, "languageId": language, "version": 1, "text": &**text
                    }}),
                    deadline,
                )
                .await?;
            Ok((1, seq, true))
        }
    }
}

/// A file's text, if it is UTF-8 and not too large.
pub(crate) async fn read_text(path: &Path, limit: u64) -> Result<String, String> {
    let meta = tokio::fs::metadata(path)
        .await
        .map_err(|error| format!("cannot read it: {error}"))?;
    if meta.len() > limit {
        return Err(format!(
            "{} is over the {} sent to a language server",
            human::size(meta.len()),
            human::size(limit)
        ));
    }
    let bytes = tokio::fs::read(path)
        .await
        .map_err(|error| format!("cannot read it: {error}"))?;
    String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".into())
}

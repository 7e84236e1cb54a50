//! Asking the servers about files: send each file's content (`didOpen`, or `didChange` and
//! `didSave`), wait for diagnostics of that very version (debounced), and find the new errors
//! of the other open files, all before one deadline.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::time::Instant;
use vak_tool_core::{ToolContext, human};

use crate::client::{Published, settle};
use crate::launch::Launcher;
use crate::render::{FileReport, Outcome, Report, is_error};
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
}

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

impl Lsp {
    /// The servers for a file, by its extension.
    fn servers_for(&self, path: &Path) -> Vec<&Server> {
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
    /// server has not seen this content) and waits for their diagnostics until the deadline.
    /// With `changed`, other open files that gained errors are reported too.
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
                        note(&mut report, format!("{}: {why}", server.name));
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
                        });
                        continue;
                    }
                    Start::Failed(why) => {
                        note(&mut report, format!("{}: stopped: it {why}", server.name));
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
                let uri = uri::of(path);
                let language = server.settings.language_id.clone().unwrap_or_else(|| {
                    let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
                    language_id(extension).to_owned()
                });
                match send(&running, &uri, &language, &text, changed, deadline).await {
                    Ok((version, seq, resent)) => sent.push(Sent {
                        path: path.clone(),
                        uri,
                        server: server.name.clone(),
                        running,
                        version,
                        seq,
                        resent,
                    }),
                    Err(why) => note(&mut report, format!("{}: stopped: it {why}", server.name)),
                }
            }
        }
        let debounce = Duration::from_millis(self.settings.debounce_ms);
        let quiet = Duration::from_millis(self.settings.quiet_ms);
        for item in &sent {
            let client = &item.running.client;
            let fresh = |published: &Option<Published>| match published {
                Some(p) => match p.version {
                    Some(version) => version == item.version,
                    None => !item.resent || p.seq > item.seq,
                },
                None => false,
            };
            // An unversioned server that has published since the change (for another file)
            // and had said something about this one before: it may have nothing new to say.
            let maybe_unchanged = || {
                !client.versioned()
                    && client.seq() > item.seq
                    && client.published(&item.uri).is_some()
            };
            wait_for(&item.running, deadline, || {
                fresh(&client.published(&item.uri)) || client.dead().is_some() || maybe_unchanged()
            })
            .await;
            let mut outcome = None;
            if client.dead().is_none() {
                let mut watch = client.watch();
                if fresh(&client.published(&item.uri)) {
                    let wait = if client.versioned() { debounce } else { quiet };
                    settle(&mut watch, wait, deadline).await;
                } else if maybe_unchanged() {
                    settle(&mut watch, quiet, deadline).await;
                    if Instant::now() < deadline
                        && let Some(p) = client.published(&item.uri)
                    {
                        outcome = Some(Outcome::Fresh(p.diagnostics, p.total));
                    }
                }
            }
            let outcome = match (outcome, client.published(&item.uri)) {
                (Some(outcome), _) => outcome,
                (None, Some(p)) if fresh(&Some(p.clone())) => {
                    Outcome::Fresh(p.diagnostics, p.total)
                }
                _ => {
                    if let Some(why) = client.dead() {
                        note(&mut report, format!("{}: stopped: it {why}", item.server));
                        continue;
                    }
                    Outcome::StillChecking {
                        why: if client.busy() {
                            format!("was still indexing after {}", human::duration(wait))
                        } else {
                            format!(
                                "had not reported on this version after {}",
                                human::duration(wait)
                            )
                        },
                    }
                }
            };
            report.files.push(FileReport {
                path: item.path.clone(),
                server: item.server.clone(),
                outcome,
                broken: false,
            });
        }
        if changed {
            let ours: HashSet<&str> = sent.iter().map(|s| s.uri.as_str()).collect();
            let mut names: HashMap<usize, &str> = HashMap::new();
            for item in &sent {
                names.insert(Arc::as_ptr(&item.running) as usize, &item.server);
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
                    let old = keys.get(&uri);
                    let new: Vec<_> = published
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
                        .collect();
                    let Some(path) = uri::to_path(&uri) else {
                        continue;
                    };
                    if !new.is_empty() {
                        let total = new.len();
                        broken.push(FileReport {
                            path,
                            server: server.to_owned(),
                            outcome: Outcome::Fresh(new, total),
                            broken: true,
                        });
                    }
                }
                broken.sort_by(|a, b| a.path.cmp(&b.path));
                report.files.extend(broken);
            }
        }
        report
    }

    /// The last diagnostics of every file open in this session's servers.
    pub(crate) async fn open_files(&self, ctx: &ToolContext) -> Report {
        let servers = ctx.session().state::<Servers>();
        let mut report = Report::default();
        for (_, name, slot) in servers.slots() {
            let Some(running) = slot.current().await else {
                continue;
            };
            if let Some(why) = running.dead() {
                report.notes.push(format!("{name}: stopped: it {why}"));
                continue;
            }
            let open = running.open.lock().await;
            let mut files: Vec<(PathBuf, i32, String)> = open
                .iter()
                .filter_map(|(uri, (version, _))| {
                    uri::to_path(uri).map(|path| (path, *version, uri.clone()))
                })
                .collect();
            files.sort();
            for (path, version, uri) in files {
                let outcome = match running.client.published(&uri) {
                    Some(p) if p.version.is_none_or(|v| v == version) => {
                        Outcome::Fresh(p.diagnostics, p.total)
                    }
                    _ => Outcome::StillChecking {
                        why: "has not reported on its last version yet".into(),
                    },
                };
                report.files.push(FileReport {
                    path,
                    server: name.clone(),
                    outcome,
                    broken: false,
                });
            }
        }
        report
    }
}

/// Sends a document's content: `didOpen` the first time, otherwise `didChange` (whole
/// content) and `didSave`; when not `changed` and the server has this content already,
/// nothing. Returns the version, the publish counter before sending, and whether it sent.
async fn send(
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
    match open.get(uri).cloned() {
        Some((version, old)) if !changed && old == *text => Ok((version, seq, false)),
        Some((version, _)) => {
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
async fn read_text(path: &Path, limit: u64) -> Result<String, String> {
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

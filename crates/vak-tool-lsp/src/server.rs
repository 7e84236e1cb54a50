//! The servers of one session: started lazily per (root, server), kept warm, restarted once
//! after a crash and disabled after a second, shut down when the session ends.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::sync::watch;
use tokio::time::Instant;
use vak_tool_core::ToolContext;

use crate::client::{Client, wait_until};
use crate::launch::{Launcher, Process, launch};
use crate::settings::{LspSettings, Server};

/// Where a server is in its start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Start {
    /// `initialize` is on its way.
    Starting,
    /// Initialized: documents may be sent.
    Ready,
    /// It failed to start or stopped; why.
    Failed(String),
}

/// A running server process and its connection.
pub(crate) struct Running {
    pub(crate) client: Client,
    process: Mutex<Option<Process>>,
    ready: watch::Receiver<Start>,
    /// Documents open in it: uri to (version, content).
    pub(crate) open: tokio::sync::Mutex<HashMap<String, (i32, Arc<str>)>>,
    /// The publish counter when a change was last sent: a report that arrived before it may
    /// be out of date (the change can break a file that did not change).
    pub(crate) last_change: AtomicU64,
    /// Whether it has shown that it loaded the project (see [`crate::check::Lsp::project_loaded`]):
    /// project-wide answers before that may be partial.
    pub(crate) project_loaded: std::sync::atomic::AtomicBool,
    /// Why it stopped, with its cause, once worked out.
    cause: Mutex<Option<String>>,
}

impl Running {
    fn start(
        server: &Server,
        root: &Path,
        ctx: &ToolContext,
        launcher: &Launcher,
        settings: &LspSettings,
    ) -> Result<Arc<Self>, String> {
        let launched = launch(&server.settings.command, root, ctx, launcher)?;
        let client = Client::new(launched.stdout, launched.stdin, settings.max_message_bytes);
        let (ready_tx, ready) = watch::channel(Start::Starting);
        let running = Arc::new(Self {
            client,
            process: Mutex::new(Some(launched.process)),
            ready,
            open: tokio::sync::Mutex::new(HashMap::new()),
            last_change: AtomicU64::new(0),
            project_loaded: std::sync::atomic::AtomicBool::new(false),
            cause: Mutex::new(None),
        });
        let init = Arc::clone(&running);
        let root_uri = crate::uri::of(root);
        let name = root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "root".into());
        let timeout = Duration::from_millis(settings.start_timeout_ms);
        // A confined server lives in a PID namespace of its own, where the tool's pid names
        // nobody: a server that watches its parent's pid would take the tool for gone.
        let process_id = (!launcher.confined()).then(std::process::id);
        tokio::spawn(async move {
            let deadline = Instant::now() + timeout;
            let params = initialize_params(&root_uri, &name, process_id);
            let outcome = match init.client.request("initialize", params, deadline).await {
                Ok(_) => init
                    .client
                    .notify("initialized", json!({}), deadline)
                    .await
                    .map(|()| Start::Ready),
                Err(why) if why.contains("in time") => Err(format!(
                    "did not answer `initialize` within {}",
                    vak_tool_core::human::duration(timeout)
                )),
                Err(why) => Err(why),
            };
            let state = match outcome {
                Ok(state) => state,
                Err(why) => {
                    let why = init.cause(why).await;
                    init.client.give_up(why.clone());
                    init.kill();
                    Start::Failed(why)
                }
            };
            let _ = ready_tx.send(state);
        });
        Ok(running)
    }

    /// Waits until the server is initialized, has failed, or `deadline` passes.
    pub(crate) async fn ready(&self, deadline: Instant) -> Start {
        // The start's own task always ends with a verdict (with the cause of a failure), also
        // when the connection dies: wait for it rather than for the connection.
        let mut ready = self.ready.clone();
        loop {
            let now = ready.borrow_and_update().clone();
            if now != Start::Starting {
                return now;
            }
            tokio::select! {
                changed = ready.changed() => if changed.is_err() { return Start::Failed("stopped".into()) },
                () = tokio::time::sleep_until(deadline) => {
                    return match self.client.dead() {
                        Some(why) => Start::Failed(why),
                        None => Start::Starting,
                    };
                }
            }
        }
    }

    /// `why` it stopped, with its cause, worked out once and kept (a later look at a reaped
    /// process would find nothing).
    pub(crate) async fn cause(&self, why: String) -> String {
        if let Some(known) = self
            .cause
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
        {
            return known;
        }
        let explained = self.explain(why).await;
        *self.cause.lock().unwrap_or_else(PoisonError::into_inner) = Some(explained.clone());
        explained
    }

    /// Whether it has stopped, and why.
    pub(crate) fn dead(&self) -> Option<String> {
        if let Some(why) = self.client.dead() {
            return Some(why);
        }
        match &*self.ready.borrow() {
            Start::Failed(why) => Some(why.clone()),
            _ => None,
        }
    }

    /// `why` it failed to start or stopped, with its cause: what the sandbox said, or how the
    /// process ended (its exit status) and the last lines of its standard error. The process
    /// is given a moment to end and report.
    pub(crate) async fn explain(&self, why: String) -> String {
        let process = self
            .process
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(mut process) = process else {
            return why;
        };
        let status = process.exit_status(Duration::from_millis(500)).await;
        let why = match process.refusal() {
            Some(refusal) => format!(
                "could not be sandboxed ({refusal}); nothing ran unconfined, and `vak-tools \
                 doctor` shows what this machine supports"
            ),
            None => {
                let mut causes = Vec::new();
                if let Some(status) = status {
                    causes.push(ended(status));
                }
                // (`exit_status` has waited for the reader of its standard error to finish.)
                if let Some(lines) = process.last_error_lines(3) {
                    causes.push(format!("its last error output: {lines}"));
                }
                if causes.is_empty() {
                    why
                } else {
                    format!("{why}: {}", causes.join("; "))
                }
            }
        };
        *self.process.lock().unwrap_or_else(PoisonError::into_inner) = Some(process);
        why
    }

    fn kill(&self) {
        if let Some(mut child) = self
            .process
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            child.start_kill();
            // Reap it without holding anyone up.
            if let Ok(handle) = tokio::runtime::Handle::try_current() {
                handle.spawn(async move {
                    let _ = child.wait().await;
                });
            }
        }
    }

    /// Stops the server: `shutdown`, `exit`, then a kill at `grace` at the latest. Never
    /// blocks: without a runtime it is killed at once.
    pub(crate) fn stop(self: Arc<Self>, grace: Duration) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            self.kill();
            return;
        };
        handle.spawn(async move {
            let deadline = Instant::now() + grace;
            if self.client.dead().is_none() && *self.ready.borrow() == Start::Ready {
                if self
                    .client
                    .request("shutdown", Value::Null, deadline)
                    .await
                    .is_ok()
                {
                    let _ = self.client.notify("exit", Value::Null, deadline).await;
                }
                let child = self
                    .process
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take();
                if let Some(mut child) = child {
                    let _ = tokio::time::timeout_at(deadline, child.wait()).await;
                    // Whatever it left behind (in its group, or its namespace) goes too.
                    child.start_kill();
                    child.wait().await;
                }
            }
            self.client.give_up("stopped with the session".into());
            self.kill();
        });
    }
}

/// How a process ended, in words.
fn ended(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("it exited with status {code}"),
        (None, Some(signal)) => format!("it was killed by signal {signal}"),
        (None, None) => format!("it ended ({status})"),
    }
}

fn initialize_params(root_uri: &str, name: &str, process_id: Option<u32>) -> Value {
    json!({
        "processId": process_id,
        "clientInfo": {"name": "vak-tools", "version": env!("CARGO_PKG_VERSION")},
        "rootUri": root_uri,
        "rootPath": Value::Null,
        "workspaceFolders": [{"uri": root_uri, "name": name}],
        "capabilities": {
            "textDocument": {
                "synchronization": {"didSave": true, "dynamicRegistration": false},
                "definition": {"linkSupport": true},
                "typeDefinition": {"linkSupport": true},
                "implementation": {"linkSupport": true},
                "references": {},
                "hover": {"contentFormat": ["markdown", "plaintext"]},
                "documentSymbol": {"hierarchicalDocumentSymbolSupport": true},
                "callHierarchy": {},
                "rename": {"prepareSupport": false},
                "publishDiagnostics": {
                    "relatedInformation": false,
                    "versionSupport": true,
                    "codeDescriptionSupport": false,
                    "dataSupport": false
                }
            },
            "workspace": {
                "configuration": true,
                "workspaceFolders": true,
                "symbol": {},
                "workspaceEdit": {"documentChanges": true}
            },
            "window": {"workDoneProgress": true}
        },
        "initializationOptions": Value::Null,
    })
}

/// A (root, server) pair's state for the session.
#[derive(Default)]
pub(crate) struct Slot {
    state: tokio::sync::Mutex<SlotState>,
}

#[derive(Default)]
struct SlotState {
    running: Option<Arc<Running>>,
    crashes: u32,
    disabled: Option<String>,
}

/// What [`Slot::get`] found.
pub(crate) enum Got {
    /// A server to talk to, and what happened on the way (a restart).
    Server(Arc<Running>, Option<String>),
    /// No server: why (disabled, or could not start).
    None(String),
}

impl Slot {
    /// The running server, started (or restarted once) if need be.
    pub(crate) async fn get(
        &self,
        server: &Server,
        root: &Path,
        ctx: &ToolContext,
        launcher: &Launcher,
        settings: &LspSettings,
    ) -> Got {
        let mut state = self.state.lock().await;
        if let Some(why) = &state.disabled {
            return Got::None(why.clone());
        }
        let mut note = None;
        if let Some(running) = &state.running {
            match running.dead() {
                None => return Got::Server(Arc::clone(running), None),
                Some(why) => {
                    let why = running.cause(why).await;
                    state.crashes += 1;
                    let old = state.running.take();
                    if let Some(old) = old {
                        old.kill();
                    }
                    if state.crashes >= 2 {
                        let why =
                            format!("disabled for this session: it stopped twice (last: it {why})");
                        state.disabled = Some(why.clone());
                        return Got::None(why);
                    }
                    note = Some(format!("restarted: it {why}"));
                }
            }
        }
        match Running::start(server, root, ctx, launcher, settings) {
            Ok(running) => {
                state.running = Some(Arc::clone(&running));
                Got::Server(running, note)
            }
            Err(why) => {
                // A server that cannot start will not start on the next call either.
                state.disabled = Some(why.clone());
                Got::None(why)
            }
        }
    }

    /// The running server, if any, without starting one.
    pub(crate) async fn current(&self) -> Option<Arc<Running>> {
        self.state.lock().await.running.clone()
    }
}

/// The session's servers: what the crate keeps in [`vak_tool_core::Session`].
#[derive(Default)]
pub(crate) struct Servers {
    slots: Mutex<HashMap<(PathBuf, String), Arc<Slot>>>,
    /// How long a server gets to stop when the session ends.
    grace: Mutex<Option<Duration>>,
}

impl Servers {
    /// The slot of (root, server name).
    pub(crate) fn slot(&self, root: &Path, name: &str, grace: Duration) -> Arc<Slot> {
        *self.grace.lock().unwrap_or_else(PoisonError::into_inner) = Some(grace);
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(
            slots
                .entry((root.to_path_buf(), name.to_owned()))
                .or_default(),
        )
    }

    /// Every slot, with its root and server name, sorted.
    pub(crate) fn slots(&self) -> Vec<(PathBuf, String, Arc<Slot>)> {
        let slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        let mut all: Vec<_> = slots
            .iter()
            .map(|((root, name), slot)| (root.clone(), name.clone(), Arc::clone(slot)))
            .collect();
        all.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        all
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        let grace = self
            .grace
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .unwrap_or(Duration::from_secs(2));
        let slots = std::mem::take(self.slots.get_mut().unwrap_or_else(PoisonError::into_inner));
        for slot in slots.into_values() {
            let running = match slot.state.try_lock() {
                Ok(mut state) => state.running.take(),
                Err(_) => None,
            };
            if let Some(running) = running {
                running.stop(grace);
            }
        }
    }
}

/// Waits for `done` on a running server's ticks until `deadline`.
pub(crate) async fn wait_for(
    running: &Running,
    deadline: Instant,
    done: impl FnMut() -> bool,
) -> bool {
    let mut watch = running.client.watch();
    wait_until(&mut watch, deadline, done).await
}

//! Background jobs of requests without a session (MCP 2026-07-28 over HTTP).
//!
//! Such a request has no session to own a job, so the server keeps one table of them for all
//! such requests. A `bash` with `run_in_background` runs in a [`Session`] of its own that the
//! table holds; the job is named to the client by an id no one can guess (`j` and 32 hex
//! digits, like `recall`'s `r…` ids), which later `jobs` calls pass as their `job_id` (a string
//! here; a session's jobs keep their numbers). `jobs` with `list` shows the jobs of the call's
//! credential (its bearer token; every caller of a `--no-auth` server shares one).
//!
//! Bounds: at most `[mcp] sessionless_jobs_max` jobs on the server and
//! `[mcp] sessionless_jobs_per_credential` for one credential; a start past either is refused
//! with an error result that names the setting. A job no `jobs` call named for
//! `[mcp] session_idle_ms` (the time an idle session is kept) is stopped and forgotten, its
//! process tree killed, as is a job stopped with `jobs stop`. A job of another credential is
//! answered as unknown, as an id that was never issued is.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use serde_json::Value;
use vak_tool_core::{Session, ToolOutput};

use crate::McpSettings;

/// The tool that starts jobs and the one that reaches them.
pub(crate) const BASH: &str = "bash";
/// See [`BASH`].
pub(crate) const JOBS: &str = "jobs";

/// The number a job has in the session of its own: the first and only job there.
const NUMBER: u64 = 1;

/// The jobs the requests without a session hold on one HTTP server.
#[derive(Debug)]
pub(crate) struct Jobs {
    held: Mutex<HashMap<String, Held>>,
    max: usize,
    per_credential: usize,
    idle: Duration,
}

/// One job: the session it runs in, whose it is, when a call last named it.
#[derive(Debug)]
struct Held {
    session: Session,
    credential: String,
    /// When the last call naming it ended (or began, while [`Held::calls`] is not zero).
    used: Instant,
    /// The calls on it running now: a job is idle only when none is.
    calls: usize,
}

/// Where a `bash` or `jobs` call without a session runs.
#[derive(Debug)]
pub(crate) enum Route {
    /// Not a job's call: as any other call without a session.
    Plain,
    /// A background start: run it in `session`, then [`Jobs::started`] with `handle`.
    Start {
        /// The job's id for the client.
        handle: String,
        /// The session the job runs in.
        session: Session,
    },
    /// A call on one job: run `args` (its `job_id` the job's number) in `session`, then
    /// [`Jobs::named`].
    On {
        /// The job's id for the client.
        handle: String,
        /// The session the job runs in.
        session: Session,
        /// The call's arguments, for that session.
        args: Value,
        /// Whether the call stops the job (its entry goes after it).
        stop: bool,
    },
    /// `jobs list`: the credential's jobs, by id.
    List(Vec<(String, Session)>),
    /// Answer with this; nothing runs.
    Refused(ToolOutput),
}

impl Jobs {
    /// The table, with a task that stops idle jobs (when a runtime is there to run it).
    pub(crate) fn new(settings: &McpSettings) -> Arc<Self> {
        let jobs = Arc::new(Self {
            held: Mutex::default(),
            max: settings.sessionless_jobs_max,
            per_credential: settings.sessionless_jobs_per_credential,
            idle: settings.session_idle(),
        });
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let weak = Arc::downgrade(&jobs);
            let every = (jobs.idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(30));
            runtime.spawn(reap_every(weak, every));
        }
        jobs
    }

    /// Whether this server lets requests without a session start background jobs at all.
    pub(crate) fn enabled(&self) -> bool {
        self.max > 0 && self.per_credential > 0
    }

    /// Where the call of `tool` with `args` by `credential` runs (see [`Route`]).
    pub(crate) fn route(&self, tool: &str, args: &Value, credential: &str) -> Route {
        self.reap();
        if tool == BASH {
            let background = args
                .get("run_in_background")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            if !background {
                return Route::Plain;
            }
            return self.reserve(credential);
        }
        if tool != JOBS {
            return Route::Plain;
        }
        let action = args.get("action").and_then(Value::as_str).unwrap_or("");
        if action == "list" {
            let held = self.lock();
            let mut mine: Vec<(String, Session, Instant)> = held
                .iter()
                .filter(|(_, held)| held.credential == credential)
                .map(|(handle, held)| (handle.clone(), held.session.clone(), held.used))
                .collect();
            mine.sort_by_key(|(_, _, used)| *used);
            return Route::List(
                mine.into_iter()
                    .map(|(handle, session, _)| (handle, session))
                    .collect(),
            );
        }
        let handle = match args.get("job_id") {
            // The tool says what is missing.
            None | Some(Value::Null) => return Route::Plain,
            Some(Value::String(handle)) => handle.clone(),
            Some(other) => {
                return Route::Refused(ToolOutput::error(format!(
                    "`job_id` {other} names no job here: without a session (MCP 2026-07-28 \
                     over HTTP) a job's id is the string `bash` returned when it started it \
                     (`j` and 32 hex digits), not a number; jobs {{\"action\": \"list\"}} \
                     shows them"
                )));
            }
        };
        let mut held = self.lock();
        let Some(entry) = held
            .get_mut(&handle)
            .filter(|entry| entry.credential == credential)
        else {
            return Route::Refused(ToolOutput::error(format!(
                "`job_id` \"{handle}\" names no background job of this server: it was stopped, \
                 ended after {} without a `jobs` call naming it, or was started by another \
                 server or credential. jobs {{\"action\": \"list\"}} shows the jobs there are",
                idle_words(self.idle)
            )));
        };
        entry.used = Instant::now();
        entry.calls += 1;
        let session = entry.session.clone();
        let mut args = args.clone();
        args["job_id"] = Value::from(NUMBER);
        Route::On {
            handle,
            session,
            args,
            stop: action == "stop",
        }
    }

    /// Takes a place for a new job of `credential`, unless a bound is reached.
    fn reserve(&self, credential: &str) -> Route {
        let mut held = self.lock();
        if held.len() >= self.max {
            return Route::Refused(ToolOutput::error(format!(
                "`bash` was not started in the background: this server already holds {} \
                 background jobs of requests without a session, its bound (`[mcp] \
                 sessionless_jobs_max`). Stop one (jobs {{\"action\": \"stop\", \"job_id\": \
                 …}}), wait for idle ones to end, run the command in the foreground, or open a \
                 session for it (protocol 2025-11-25: an `initialize` gives an Mcp-Session-Id)",
                self.max
            )));
        }
        let mine = held
            .values()
            .filter(|held| held.credential == credential)
            .count();
        if mine >= self.per_credential {
            return Route::Refused(ToolOutput::error(format!(
                "`bash` was not started in the background: this credential already holds {mine} \
                 background jobs without a session, its bound (`[mcp] \
                 sessionless_jobs_per_credential`). Stop one (jobs {{\"action\": \"stop\", \
                 \"job_id\": …}}; jobs {{\"action\": \"list\"}} shows them) or wait for idle \
                 ones to end"
            )));
        }
        let handle = format!("j{}", uuid::Uuid::new_v4().simple());
        let session = Session::new();
        held.insert(
            handle.clone(),
            Held {
                session: session.clone(),
                credential: credential.to_owned(),
                used: Instant::now(),
                calls: 1,
            },
        );
        Route::Start { handle, session }
    }

    /// After the start of job `handle`: keeps it if it runs on, forgets it if it ended at once
    /// or was never started; the result as the client sees it.
    pub(crate) fn started(&self, handle: &str, mut output: ToolOutput) -> ToolOutput {
        let runs =
            !output.is_error && text_of(&output).contains("(started in the background: jobs");
        if !runs {
            self.forget(handle);
            return output;
        }
        self.done(handle);
        let number = format!("job_id {NUMBER};");
        let named = format!("job_id \"{handle}\";");
        let ending = format!(
            "with no session, it is stopped after {} without a `jobs` call naming it",
            idle_words(self.idle)
        );
        rewrite(&mut output, |text| {
            text.replace(&number, &named)
                .replace("it is stopped when this session ends", &ending)
                .replace(&format!("job {NUMBER} "), &format!("job \"{handle}\" "))
        });
        name_in_data(&mut output, handle);
        output
    }

    /// After a call on job `handle`: the result as the client sees it; a stopped job is
    /// forgotten.
    pub(crate) fn named(&self, handle: &str, stop: bool, mut output: ToolOutput) -> ToolOutput {
        if stop {
            self.forget(handle);
        } else {
            self.done(handle);
        }
        rewrite(&mut output, |text| {
            text.replace(&format!("job {NUMBER} "), &format!("job \"{handle}\" "))
        });
        name_in_data(&mut output, handle);
        output
    }

    /// `jobs list`'s answer from what each job's session listed.
    pub(crate) fn listed(&self, listed: &[(String, ToolOutput)]) -> ToolOutput {
        if listed.is_empty() {
            return ToolOutput::text(
                "no background jobs of requests without a session for this credential; start \
                 one with bash {\"command\": …, \"run_in_background\": true}",
            )
            .with_structured(serde_json::json!({
                "jobs": [],
                "running": 0,
                "max_running": self.per_credential,
            }));
        }
        let mut text = format!(
            "{} without a session (at most {} for this credential, {} on this server; one \
             idle for {} is stopped):",
            vak_tool_core::human::count(listed.len() as u64, "job", "jobs"),
            self.per_credential,
            self.max,
            idle_words(self.idle)
        );
        let prefix = format!("job {NUMBER}:");
        let mut jobs = Vec::new();
        for (handle, output) in listed {
            let mut output = output.clone();
            name_in_data(&mut output, handle);
            if let Some(serde_json::Value::Array(each)) = output
                .structured
                .as_mut()
                .and_then(|data| data.get_mut("jobs"))
                .map(serde_json::Value::take)
            {
                jobs.extend(each);
            }
            let said = text_of(&output);
            let line = said
                .lines()
                .find_map(|line| line.trim_start().strip_prefix(&prefix))
                .unwrap_or(" ended");
            text.push_str(&format!("\n  job \"{handle}\":{line}"));
        }
        let running = jobs
            .iter()
            .filter(|job| job.get("state").and_then(serde_json::Value::as_str) == Some("running"))
            .count();
        // The same data as a session's `jobs list`, each job named by its `job_id` handle.
        ToolOutput::text(text).with_structured(serde_json::json!({
            "jobs": jobs,
            "running": running,
            "max_running": self.per_credential,
        }))
    }

    /// A call on job `handle` ended: its idle time starts now.
    fn done(&self, handle: &str) {
        if let Some(entry) = self.lock().get_mut(handle) {
            entry.calls = entry.calls.saturating_sub(1);
            entry.used = Instant::now();
        }
    }

    /// Stops and forgets job `handle`.
    fn forget(&self, handle: &str) {
        let gone = self.lock().remove(handle);
        if let Some(gone) = gone {
            // Cleared outside the lock: the job table's `Drop` kills the job's processes.
            gone.session.clear();
        }
    }

    /// Stops and forgets the jobs no call named for the idle time.
    fn reap(&self) {
        let idle: Vec<Held> = {
            let mut held = self.lock();
            let old: Vec<String> = held
                .iter()
                .filter(|(_, held)| held.calls == 0 && held.used.elapsed() > self.idle)
                .map(|(handle, _)| handle.clone())
                .collect();
            old.iter()
                .filter_map(|handle| held.remove(handle))
                .collect()
        };
        for gone in idle {
            gone.session.clear();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Held>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The jobs held now (for tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }
}

impl Drop for Jobs {
    fn drop(&mut self) {
        let held = std::mem::take(&mut *self.lock());
        for (_, gone) in held {
            gone.session.clear();
        }
    }
}

/// Reaps `jobs` every `every` for as long as the table lives.
async fn reap_every(jobs: Weak<Jobs>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(jobs) = jobs.upgrade() else { return };
        jobs.reap();
    }
}

/// Names job `handle` in the data of `output` (a `jobs` result's `jobs` records): each record
/// gains `job_id`, the handle a request without a session passes, beside its number in its own
/// session (`id`), which names nothing there.
fn name_in_data(output: &mut ToolOutput, handle: &str) {
    let records = output
        .structured
        .as_mut()
        .and_then(|data| data.get_mut("jobs"))
        .and_then(serde_json::Value::as_array_mut);
    for record in records.into_iter().flatten() {
        if let Some(record) = record.as_object_mut() {
            record.insert("job_id".into(), serde_json::Value::from(handle));
        }
    }
}

/// The text of a result, its blocks joined.
fn text_of(output: &ToolOutput) -> String {
    output
        .content
        .iter()
        .filter_map(|block| block.as_text().map(str::to_owned))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Rewrites every text block of `output` with `change`.
fn rewrite(output: &mut ToolOutput, change: impl Fn(&str) -> String) {
    for block in &mut output.content {
        if let Some(text) = block.as_text() {
            let changed = change(text);
            *block = vak_tool_core::Content::text(changed);
        }
    }
}

/// The idle time in words: `30 min`, `2 s`.
fn idle_words(idle: Duration) -> String {
    vak_tool_core::human::duration(idle)
}

/// The credential of a request: its `Authorization` header (every caller of a server without
/// a token shares the empty one).
pub(crate) fn credential_of(context: &rmcp::service::RequestContext<rmcp::RoleServer>) -> String {
    #[cfg(feature = "http")]
    {
        if let Some(parts) = context.extensions.get::<http::request::Parts>() {
            return parts
                .headers
                .get(http::header::AUTHORIZATION)
                .and_then(|value| value.to_str().ok())
                .unwrap_or("")
                .to_owned();
        }
    }
    let _ = context;
    String::new()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(max: usize, per_credential: usize, idle_ms: u64) -> Arc<Jobs> {
        Jobs::new(&McpSettings {
            sessionless_jobs_max: max,
            sessionless_jobs_per_credential: per_credential,
            session_idle_ms: idle_ms,
            ..McpSettings::default()
        })
    }

    fn start() -> Value {
        serde_json::json!({"command": "sleep 60", "run_in_background": true})
    }

    fn handle_of(route: Route) -> String {
        match route {
            Route::Start { handle, .. } => handle,
            other => panic!("not a start: {other:?}"),
        }
    }

    fn refusal(route: Route) -> String {
        match route {
            Route::Refused(output) => text_of(&output),
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn job_ids_are_unguessable_and_bounded_per_credential_and_per_server() {
        let jobs = table(3, 2, 60_000);
        let first = handle_of(jobs.route(BASH, &start(), "Bearer a"));
        let second = handle_of(jobs.route(BASH, &start(), "Bearer a"));
        assert_eq!(first.len(), 33, "{first}");
        assert!(first.starts_with('j') && first[1..].chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(first, second);
        let past = refusal(jobs.route(BASH, &start(), "Bearer a"));
        assert!(past.contains("sessionless_jobs_per_credential"), "{past}");
        handle_of(jobs.route(BASH, &start(), "Bearer b"));
        let full = refusal(jobs.route(BASH, &start(), "Bearer c"));
        assert!(full.contains("sessionless_jobs_max"), "{full}");
        // Another credential's job is unknown to it; its own is reached.
        let read = serde_json::json!({"action": "read", "job_id": first});
        assert!(refusal(jobs.route(JOBS, &read, "Bearer b")).contains("names no background job"));
        match jobs.route(JOBS, &read, "Bearer a") {
            Route::On { args, stop, .. } => {
                assert_eq!(args["job_id"], 1);
                assert!(!stop);
            }
            other => panic!("not routed to the job: {other:?}"),
        }
        // A number is not an id here.
        let numbered = serde_json::json!({"action": "read", "job_id": 1});
        assert!(refusal(jobs.route(JOBS, &numbered, "Bearer a")).contains("not a number"));
        // A start that did not run on gives its place back.
        jobs.started(&second, ToolOutput::error("failed"));
        assert_eq!(jobs.len(), 2);
        handle_of(jobs.route(BASH, &start(), "Bearer a"));
    }

    #[test]
    fn a_job_no_call_names_for_the_idle_time_is_forgotten() {
        let jobs = table(4, 4, 1);
        let handle = handle_of(jobs.route(BASH, &start(), "Bearer a"));
        // Not while its start runs.
        std::thread::sleep(Duration::from_millis(5));
        jobs.reap();
        assert_eq!(jobs.len(), 1);
        jobs.done(&handle);
        std::thread::sleep(Duration::from_millis(5));
        match jobs.route(JOBS, &serde_json::json!({"action": "list"}), "Bearer a") {
            Route::List(listed) => assert!(listed.is_empty(), "{listed:?}"),
            other => panic!("not a list: {other:?}"),
        }
        assert_eq!(jobs.len(), 0);
    }
}

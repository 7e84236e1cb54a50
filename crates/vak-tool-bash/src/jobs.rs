//! Background jobs: `bash` with `run_in_background` starts one, the `jobs` tool lists them,
//! reads their new output, types into them and stops them.
//!
//! A job is a `bash` command that outlives its call: a dev server, a watcher, a long build, a
//! REPL. It runs exactly as a foreground command does (the same shell, environment and sandbox;
//! its processes found and stopped the same way), except that its standard input is a pipe the
//! model writes to, or with `tty` a pseudo-terminal (see `pty`), and that its output goes to a
//! bounded ring per stream (see `ring`) that each read empties, counting what had to be dropped
//! unread. A start returns as soon as the job has printed its first words (once its output has
//! been quiet for 100 ms) or has ended, and at the latest after [`BashSettings::job_settle_ms`]:
//! a server that prints its banner returns at once with it, one that fails at once says so in
//! the start's result, and a job that prints nothing returns after `job_settle_ms`.
//!
//! Jobs live in the [`Session`](vak_tool_core::Session) of the calls (an MCP connection, a CLI
//! call, a library's owner value), within its limits ([`BashSettings::jobs_max`] running jobs,
//! [`BashSettings::jobs_buffer_bytes`] of room for unread output), and end with it: when the
//! session's last handle goes, every job's process tree is killed at once.

mod driver;
mod job;
mod ring;
mod table;

use std::sync::Arc;
use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use tokio::time::Instant;
use vak_tool_core::{
    CancellationToken, Capability, Tool, ToolContext, ToolError, ToolOutput, human,
};

use self::job::{Job, JobData, JobSink, shorten};
use self::table::JobTable;
use crate::run::Streams;
use crate::settings::BashSettings;
use crate::spawn::Input;
use crate::start::{Request, Started, start};
use vak_sandbox::Policy;

/// The longest `wait_ms`: ten minutes.
pub const MAX_WAIT_MS: u64 = 600_000;
/// How long `write` waits for the job's answer when `wait_ms` is not given.
const WRITE_WAIT_MS: u64 = 2000;
/// How long a background start waits, once the job has printed something, for output to stop
/// coming before it returns (never past `job_settle_ms`): the first lines of a banner come
/// whole, and a command that prints its error and exits says how it ended.
const SETTLE_QUIET: Duration = Duration::from_millis(100);
/// Ctrl-C, as the model types it.
const CTRL_C: &str = "\u{3}";

/// Starts `request` as a background job of the session and returns once it has settled: its
/// number, its first output, or its end if it ended at once.
pub(crate) async fn start_job(
    request: Request,
    timeout: Option<Duration>,
    tty: bool,
    settings: &BashSettings,
    policy: &Policy,
    ctx: &ToolContext,
) -> ToolOutput {
    if ctx.cancel().is_cancelled() {
        return ToolOutput::error("cancelled before the command started; nothing was run");
    }
    let table = ctx.session().state::<JobTable>();
    let reservation = match table.reserve(settings, tty) {
        Ok(reservation) => reservation,
        Err(text) => return ToolOutput::error(text),
    };
    let input = if tty { Input::Tty } else { Input::Pipe };
    let Started {
        mut tree,
        stdin,
        stdout,
        stderr,
        plan,
        env_note,
        limited,
    } = match start(&request, input, settings, policy, ctx).await {
        Ok(started) => started,
        Err(text) => return ToolOutput::error(text),
    };
    let job = Arc::new(Job::new(
        reservation.id,
        request.command.clone(),
        tty,
        settings.job_stream_bytes,
        tree.publish(),
        stdin,
    ));
    let streams = Streams::new(stdout, stderr, JobSink(Arc::clone(&job)));
    let task = tokio::spawn(driver::drive(
        Arc::clone(&job),
        tree,
        streams,
        settings.clone(),
        timeout,
        plan,
        limited,
    ));
    table.insert(reservation, Arc::clone(&job), task);
    job.wait_settled(
        Instant::now() + settings.job_settle(),
        SETTLE_QUIET,
        ctx.cancel(),
    )
    .await;
    if ctx.cancel().is_cancelled() && !job.ended() {
        // The start itself was cancelled: the job goes with it.
        job.stop.cancel();
        job.wait_end(
            Instant::now() + stop_bound(settings),
            &CancellationToken::new(),
        )
        .await;
    }
    let report = job.report();
    let mut text = report.text;
    if !job.ended() {
        text.push_str(&format!(
            "\n(started in the background: jobs \"read\", \"write\" or \"stop\" it with job_id \
             {}; it is stopped when this session ends)",
            job.id
        ));
    }
    if let Some(note) = env_note {
        text.push_str(&format!("\nnote: {note}"));
    }
    output(text, report.is_error)
}

/// How long stopping a job may take: a grace, two drains, and some slack for the scans.
fn stop_bound(settings: &BashSettings) -> Duration {
    settings.kill_grace() + settings.drain_cap() * 2 + Duration::from_secs(5)
}

fn output(text: String, is_error: bool) -> ToolOutput {
    if is_error {
        ToolOutput::error(text)
    } else {
        ToolOutput::text(text)
    }
}

/// The data of a successful `jobs` call (MCP's `structuredContent`), beside the same text:
/// for `list` every job of the session, for `read`, `write` and `stop` the job named, as it is
/// after the call.
#[derive(Debug, serde::Serialize, JsonSchema)]
struct JobsData {
    /// The jobs, oldest first.
    jobs: Vec<JobData>,
    /// How many jobs of the session run now.
    running: usize,
    /// How many may run at once.
    max_running: usize,
}

impl JobsData {
    fn value(jobs: &[Arc<Job>], table: &JobTable, settings: &BashSettings) -> serde_json::Value {
        let data = JobsData {
            jobs: jobs.iter().map(|job| job.data()).collect(),
            running: table.list().iter().filter(|job| !job.ended()).count(),
            max_running: settings.jobs_max,
        };
        serde_json::to_value(data).unwrap_or_default()
    }
}

/// `output` for job `job`, with its data beside a successful result.
fn job_output(
    text: String,
    is_error: bool,
    job: &Arc<Job>,
    table: &JobTable,
    settings: &BashSettings,
) -> ToolOutput {
    let result = output(text, is_error);
    if is_error {
        return result;
    }
    result.with_structured(JobsData::value(std::slice::from_ref(job), table, settings))
}

/// What to do with the session's jobs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
enum Action {
    // Plain comments: doc comments would make the schema a `oneOf` instead of an `enum`.
    // Every job of the session with its state.
    List,
    // A job's new output since the last read, and its end once it came.
    Read,
    // Type `input` into a job, then read its answer.
    Write,
    // Stop a job and everything it started: SIGTERM, a grace, SIGKILL.
    Stop,
}

/// Arguments of `jobs`. Its fields are private: the tool is called through a
/// [`Registry`](vak_tool_core::Registry).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JobsArgs {
    /// `list` the session's jobs; `read` a job's new output; `write` input to a job (then
    /// read); `stop` a job.
    action: Action,
    /// The job's number, as `bash` returned it (for `read`, `write`, `stop`).
    job_id: Option<u32>,
    /// For `write`: the text to type, sent as is; end a line with "\n". "\u0003" is Ctrl-C
    /// (SIGINT), "\u0004" Ctrl-D.
    input: Option<String>,
    /// For `write`: close the job's standard input after `input` (end of file; Ctrl-D on a
    /// terminal).
    eof: Option<bool>,
    /// For `read` and `write`: milliseconds to wait for new output, returning once it has
    /// been quiet for a moment or the job ended (default 0 for `read`, 2000 for `write`; at
    /// most 600000).
    #[schemars(range(max = 600_000))]
    wait_ms: Option<u64>,
}

/// The `jobs` tool: the background jobs of the session.
#[derive(Debug, Clone)]
pub struct Jobs {
    settings: BashSettings,
}

impl Jobs {
    /// The tool, reading, waiting and stopping as `settings` say.
    pub fn new(settings: BashSettings) -> Self {
        Self { settings }
    }
}

impl Default for Jobs {
    fn default() -> Self {
        Self::new(BashSettings::default())
    }
}

impl Tool for Jobs {
    type Args = JobsArgs;

    fn name(&self) -> &str {
        "jobs"
    }

    fn description(&self) -> String {
        let settings = &self.settings;
        format!(
            "Lists, reads, types into and stops the background jobs of this session: commands \
             started with bash `run_in_background: true` (dev servers, watchers, long builds, \
             REPLs). `read` returns a job's new output since the last read, stdout and stderr \
             labelled (one `terminal` stream for a job started with `tty: true`), cleaned of \
             terminal escapes, and the job's state: running for how long, or how it ended \
             (exit code, signal). Each stream keeps the newest {} unread; older unread output \
             is dropped and counted, so read often enough. `wait_ms` waits for output instead \
             of sleeping in bash. `write` types `input` (\"\\n\" ends a line; \"\\u0003\" is \
             Ctrl-C, sent as SIGINT to a job without a terminal) and returns what the job \
             answered within `wait_ms`. `stop` ends a job and everything it started (SIGTERM, \
             then SIGKILL after {}) and says which signal did it. At most {} jobs run at once; \
             all of them are stopped when the session ends.",
            human::size(settings.job_stream_bytes as u64),
            human::duration(settings.kill_grace()),
            settings.jobs_max,
        )
    }

    fn capabilities(&self) -> Vec<Capability> {
        vec![Capability::Execute]
    }

    fn output_schema(&self) -> Option<serde_json::Value> {
        Some(vak_tool_core::output_schema_of::<JobsData>())
    }

    fn claims(&self, args: &JobsArgs, ctx: &ToolContext) -> vak_tool_core::Claims {
        let _ = (args, ctx);
        vak_tool_core::Claims::none()
            .state(vak_tool_core::StateKey::JOBS, vak_tool_core::Access::Write)
            .process()
    }

    fn claims_rule(&self) -> String {
        "changes the session's jobs (reading output consumes it)".to_owned()
    }

    async fn run(&self, args: JobsArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        if let Some(wait_ms) = args.wait_ms
            && wait_ms > MAX_WAIT_MS
        {
            return Err(ToolError::new(format!(
                "`wait_ms` is {wait_ms}, but it must be at most {MAX_WAIT_MS} (10 minutes): \
                 call again with a shorter wait, and read again if the job is still quiet"
            )));
        }
        let table = ctx.session().state::<JobTable>();
        if args.action == Action::List {
            return Ok(list(&table, &self.settings));
        }
        let Some(id) = args.job_id else {
            return Err(ToolError::new(format!(
                "`job_id` is needed to {} a job: pass the number `bash` returned (jobs \
                 {{\"action\": \"list\"}} shows them)",
                match args.action {
                    Action::Read => "read",
                    Action::Write => "write to",
                    _ => "stop",
                }
            )));
        };
        let job = table.get(id).map_err(ToolError::new)?;
        let wait =
            |default: u64| Duration::from_millis(args.wait_ms.unwrap_or(default).min(MAX_WAIT_MS));
        Ok(match args.action {
            Action::Read => {
                let wait = wait(0);
                if !wait.is_zero() {
                    job.wait_output(
                        Instant::now() + wait,
                        self.settings.drain_idle(),
                        ctx.cancel(),
                    )
                    .await;
                }
                let report = job.report();
                job_output(report.text, report.is_error, &job, &table, &self.settings)
            }
            Action::Write => {
                let input = args.input.unwrap_or_default();
                let eof = args.eof.unwrap_or(false);
                if input.is_empty() && !eof {
                    return Err(ToolError::new(
                        "`write` needs `input` (the text to type; end a line with \"\\n\") or \
                         `eof: true`",
                    ));
                }
                let mut said = String::new();
                if !job.tty && input == CTRL_C {
                    if job.tree.signal_group(rustix::process::Signal::INT) {
                        said = "(sent SIGINT: a job without a terminal has no Ctrl-C key)\n"
                            .to_owned();
                    }
                } else if let Err(why) = job.write(input.as_bytes(), eof).await {
                    return Err(ToolError::new(format!("{why}\n{}", job.report().text)));
                }
                job.wait_output(
                    Instant::now() + wait(WRITE_WAIT_MS),
                    self.settings.drain_idle(),
                    ctx.cancel(),
                )
                .await;
                let report = job.report();
                job_output(
                    format!("{said}{}", report.text),
                    report.is_error,
                    &job,
                    &table,
                    &self.settings,
                )
            }
            Action::Stop | Action::List => {
                let already = job.ended();
                if !already {
                    job.stop.cancel();
                    job.wait_end(Instant::now() + stop_bound(&self.settings), ctx.cancel())
                        .await;
                }
                let report = job.report();
                let note = if already {
                    "(it had already ended)\n"
                } else if !job.ended() {
                    "(it is being stopped; read it again to see its end)\n"
                } else {
                    ""
                };
                job_output(
                    format!("{note}{}", report.text),
                    report.is_error && already,
                    &job,
                    &table,
                    &self.settings,
                )
            }
        })
    }
}

/// The session's jobs, one line each.
fn list(table: &JobTable, settings: &BashSettings) -> ToolOutput {
    let jobs = table.list();
    let data = JobsData::value(&jobs, table, settings);
    if jobs.is_empty() {
        return ToolOutput::text(
            "no background jobs in this session; start one with bash {\"command\": …, \
             \"run_in_background\": true}",
        )
        .with_structured(data);
    }
    let running = jobs.iter().filter(|job| !job.ended()).count();
    let mut text = format!(
        "{} ({} running, at most {}):",
        human::count(jobs.len() as u64, "job", "jobs"),
        running,
        settings.jobs_max
    );
    for job in &jobs {
        let unread = job.unread();
        let unread = if unread > 0 {
            format!(", {} unread", human::size(unread as u64))
        } else {
            String::new()
        };
        let tty = if job.tty { ", terminal" } else { "" };
        text.push_str(&format!(
            "\n  job {}: {}{tty}{unread}: `{}`",
            job.id,
            job.status_line(),
            shorten(&job.command, 80)
        ));
    }
    ToolOutput::text(text).with_structured(data)
}

#[cfg(test)]
mod tests {
    use vak_tool_core::DynTool as _;

    use super::*;

    #[test]
    fn the_schema_is_flat() {
        let spec = Jobs::default().spec();
        let properties = spec.input_schema["properties"].as_object().unwrap();
        let mut names: Vec<&str> = properties.keys().map(String::as_str).collect();
        names.sort_unstable();
        assert_eq!(names, ["action", "eof", "input", "job_id", "wait_ms"]);
        assert_eq!(spec.input_schema["required"], serde_json::json!(["action"]));
        assert!(spec.input_schema.get("$defs").is_none(), "no references");
        assert_eq!(
            spec.input_schema["properties"]["action"]["enum"],
            serde_json::json!(["list", "read", "write", "stop"])
        );
        assert_eq!(spec.name, "jobs");
    }

    #[test]
    fn the_description_follows_the_settings() {
        let text = Jobs::default().description();
        assert!(text.contains("newest 256 KiB unread"), "{text}");
        assert!(text.contains("SIGKILL after 2 s"), "{text}");
        assert!(text.contains("At most 32 jobs"), "{text}");
        let settings = BashSettings {
            job_stream_bytes: 4096,
            kill_grace_ms: 500,
            jobs_max: 3,
            ..BashSettings::default()
        };
        let text = Jobs::new(settings).description();
        assert!(text.contains("newest 4 KiB unread"), "{text}");
        assert!(text.contains("SIGKILL after 500 ms"), "{text}");
        assert!(text.contains("At most 3 jobs"), "{text}");
    }
}

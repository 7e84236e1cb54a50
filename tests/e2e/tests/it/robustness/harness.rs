//! One call and its verdict: every call runs on a worker thread under a generous timeout (a hang
//! is a bug too), and [`judge`] checks the rules every result must keep: no panic text, an error
//! result with something to say, nothing outside the workspace changed.

use std::time::Duration;

use serde_json::{Value, json};
use vak_tools::{Capability, Config, Registry, Tool, ToolContext, ToolError, ToolOutput};

use super::fixture::Fixture;

/// What the registry says when a tool panicked (`crates/vak-tool-core/src/registry.rs`).
const PANIC_TEXT: &str = "failed with an internal error";
/// Generous: the machine is shared and slow; no tool here should need more than a second or two.
pub(super) const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// A runtime with a few worker threads, so that a call that blocks its thread blocks only one.
pub(super) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(3)
        .enable_all()
        .build()
        .unwrap()
}

/// One call, on a worker thread, so that even a tool that blocks its thread cannot stop the
/// timeout from firing.
pub(super) fn call(
    rt: &tokio::runtime::Runtime,
    tools: &Registry,
    tool: &str,
    args: &Value,
    ctx: &ToolContext,
) -> Result<ToolOutput, String> {
    call_within(CALL_TIMEOUT, rt, tools, tool, args, ctx)
}

pub(super) fn call_within(
    timeout: Duration,
    rt: &tokio::runtime::Runtime,
    tools: &Registry,
    tool: &str,
    args: &Value,
    ctx: &ToolContext,
) -> Result<ToolOutput, String> {
    let tools = tools.clone();
    let ctx = ctx.clone();
    let name = tool.to_owned();
    let owned = args.clone();
    let task = rt.spawn(async move { tools.call(&name, owned, &ctx).await });
    let abort = task.abort_handle();
    let outcome = rt.block_on(async { tokio::time::timeout(timeout, task).await });
    match outcome {
        Ok(Ok(output)) => Ok(output),
        Ok(Err(join)) => Err(format!("the call task failed outside the registry: {join}")),
        Err(_) => {
            abort.abort();
            Err(format!("no result within {timeout:?} (a hang)"))
        }
    }
}

/// The checks every call must pass.
pub(super) fn judge(
    fixture: &Fixture,
    output: Result<ToolOutput, String>,
) -> Result<ToolOutput, String> {
    let output = output?;
    let text = output.text_content();
    if text.contains(PANIC_TEXT) {
        return Err(format!("the tool panicked: {text}"));
    }
    if output.is_error && text.trim().is_empty() {
        return Err("an error result with no text".into());
    }
    fixture.outside_unchanged()?;
    Ok(output)
}

/// Arguments, shortened when shown: some strings run to thousands of characters.
#[derive(Clone)]
pub(super) struct Shown(pub(super) Value);

impl std::fmt::Debug for Shown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&shorten(&self.0))
    }
}

pub(super) fn shorten(args: &Value) -> String {
    const END: usize = 200;
    let text = args.to_string();
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= 3 * END {
        return text;
    }
    let head: String = chars[..END].iter().collect();
    let tail: String = chars[chars.len() - END..].iter().collect();
    format!("{head} …({} characters)… {tail}", chars.len() - 2 * END)
}

/// Several calls at once from one context: all spawned, then all awaited within the timeout.
pub(super) fn call_many(
    rt: &tokio::runtime::Runtime,
    tools: &Registry,
    calls: &[(&'static str, Shown)],
    ctx: &ToolContext,
) -> Vec<Result<ToolOutput, String>> {
    let tasks: Vec<_> = calls
        .iter()
        .map(|(name, Shown(args))| {
            let name = *name;
            let tools = tools.clone();
            let ctx = ctx.clone();
            let args = args.clone();
            rt.spawn(async move { tools.call(name, args, &ctx).await })
        })
        .collect();
    rt.block_on(async {
        let deadline = tokio::time::Instant::now() + CALL_TIMEOUT;
        let mut outputs = Vec::new();
        for task in tasks {
            let abort = task.abort_handle();
            outputs.push(match tokio::time::timeout_at(deadline, task).await {
                Ok(Ok(output)) => Ok(output),
                Ok(Err(join)) => Err(format!("the call task failed outside the registry: {join}")),
                Err(_) => {
                    abort.abort();
                    Err(format!("no result within {CALL_TIMEOUT:?} (a hang)"))
                }
            });
        }
        outputs
    })
}

/// A tool that breaks each rule on request, to show that the checks catch it.
struct Saboteur;

impl Tool for Saboteur {
    type Args = Value;

    fn name(&self) -> &str {
        "saboteur"
    }

    fn description(&self) -> String {
        "Breaks rules.".into()
    }

    fn capabilities(&self) -> Vec<Capability> {
        vec![Capability::ReadFs]
    }

    async fn run(&self, args: Value, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        match args["do"].as_str() {
            Some("panic") => panic!("saboteur"),
            Some("hang") => std::future::pending().await,
            Some("silent") => Err(ToolError::new(" \n")),
            Some("escape") => {
                let path = args["path"].as_str().unwrap_or_default();
                let _ = std::fs::write(path, "changed");
                Ok(ToolOutput::text("wrote"))
            }
            _ => Ok(ToolOutput::text("fine")),
        }
    }
}

#[test]
fn the_checks_catch_a_panic_a_hang_a_silent_error_and_an_escape() {
    let fixture = Fixture::new(&Config::default());
    let mut tools = Registry::new();
    tools.register(Saboteur);
    let rt = runtime();
    let run = |args: Value| {
        let output = call_within(
            Duration::from_secs(1),
            &rt,
            &tools,
            "saboteur",
            &args,
            &fixture.ctx,
        );
        judge(&fixture, output)
    };
    assert!(run(json!({})).is_ok());
    for (args, why) in [
        (json!({"do": "panic"}), "panicked"),
        (json!({"do": "hang"}), "a hang"),
        (json!({"do": "silent"}), "no text"),
    ] {
        let error = run(args.clone()).unwrap_err();
        assert!(error.contains(why), "{args}: {error}");
    }
    let sentinel = fixture.outside.join("sentinel.txt");
    let error = run(json!({"do": "escape", "path": sentinel})).unwrap_err();
    assert!(error.contains("outside the workspace changed"), "{error}");
    rt.shutdown_timeout(Duration::from_secs(5));
}

//! The set of tools an agent can call, and the one place every call goes through.

use std::any::Any;
use std::collections::BTreeMap;
use std::future::poll_fn;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::task::Poll;
use std::time::Instant;

use tracing::Instrument;

use crate::{
    ChangeObserver, Claims, DynTool, FileWriter, Posture, ToolContext, ToolOutput, ToolSpec,
};

/// Tools by name. Cloning is cheap: tools are shared behind `Arc`.
///
/// A registry holds no per-session state: the state a tool keeps between calls lives in the
/// [`Session`](crate::Session) of the call's context, so one registry may serve many agents.
#[derive(Clone, Default)]
pub struct Registry {
    tools: BTreeMap<String, Entry>,
    observers: Vec<Arc<dyn ChangeObserver>>,
    writer: Option<Arc<dyn FileWriter>>,
    /// Tools this registry does not hold, by name, with why and what would bring them (a
    /// feature not compiled in, a setting that is off): said when one is called.
    absent: BTreeMap<String, String>,
    /// The person's rules by tool name (`[permissions] allow` and `ask`), over the mode's
    /// posture: see [`Registry::posture`].
    rules: BTreeMap<String, Posture>,
}

/// A tool refused by [`Registry::try_register`]: the registry already holds a tool of that
/// name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "a tool named `{name}` is already registered; the first one stays (tool names are unique: \
     rename one of them, or leave one out)"
)]
#[non_exhaustive]
pub struct DuplicateTool {
    /// The name both tools gave.
    pub name: String,
}

/// A tool and the spec it gave when it was registered.
#[derive(Clone)]
struct Entry {
    spec: Arc<ToolSpec>,
    tool: Arc<dyn DynTool>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("tools", &self.names())
            .field("observers", &self.observers.len())
            .field("file_writer", &self.writer.is_some())
            .finish()
    }
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool: any [`Tool`](crate::Tool), or a hand-written [`DynTool`]. A name already
    /// present is refused: the first tool of that name stays, the new one is dropped and a
    /// `tracing` error names it. Use [`Registry::try_register`] to get the refusal as a value.
    ///
    /// Two ways to register, no more: this one chains, for a crate's `register` function whose
    /// tools' names are fixed (a duplicate there is a bug the log names); `try_register` hands
    /// the refusal back, for a runtime that adds tools it did not write.
    pub fn register(&mut self, tool: impl DynTool + 'static) -> &mut Self {
        if let Err(refused) = self.insert(Arc::new(tool)) {
            tracing::error!(tool = %refused.name, "{refused}");
        }
        self
    }

    /// Adds a tool, or refuses it with [`DuplicateTool`] when the registry already holds a
    /// tool of that name (the first one stays; two tools of one name would leave the model
    /// unable to say which it calls).
    ///
    /// ```
    /// # use vak_tool_core::{Registry, ToolSpec, ToolOutput, ToolContext, DynTool, BoxFuture};
    /// # struct Named(&'static str);
    /// # #[derive(schemars::JsonSchema)] struct NoArgs {}
    /// # impl DynTool for Named {
    /// #     fn spec(&self) -> ToolSpec { ToolSpec::new::<NoArgs>(self.0, "A tool.") }
    /// #     fn call<'a>(&'a self, _: serde_json::Value, _: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
    /// #         Box::pin(async { ToolOutput::text("ok") })
    /// #     }
    /// # }
    /// let mut registry = Registry::new();
    /// assert!(registry.try_register(Named("notes")).is_ok());
    /// let refused = registry.try_register(Named("notes")).unwrap_err();
    /// assert_eq!(refused.name, "notes");
    /// assert_eq!(registry.len(), 1);
    /// ```
    pub fn try_register(
        &mut self,
        tool: impl DynTool + 'static,
    ) -> Result<&mut Self, DuplicateTool> {
        self.insert(Arc::new(tool))
    }

    /// The one place a tool enters the registry.
    fn insert(&mut self, tool: Arc<dyn DynTool>) -> Result<&mut Self, DuplicateTool> {
        let spec = Arc::new(tool.spec());
        match self.tools.entry(spec.name.clone()) {
            std::collections::btree_map::Entry::Occupied(_) => Err(DuplicateTool {
                name: spec.name.clone(),
            }),
            std::collections::btree_map::Entry::Vacant(slot) => {
                slot.insert(Entry { spec, tool });
                Ok(self)
            }
        }
    }

    /// Installs an observer of changed files: every call through this registry (and its
    /// slices) gets it in its context, so a tool's
    /// [`ToolContext::files_changed`] reaches it. What the facade uses to put a language
    /// server's diagnostics in `edit`'s result.
    pub fn add_change_observer(&mut self, observer: Arc<dyn ChangeObserver>) -> &mut Self {
        self.observers.push(observer);
        self
    }

    /// Installs the writer through which a tool that is not a file tool writes files all or
    /// nothing: every call through this registry (and its slices) gets it in its context
    /// ([`ToolContext::file_writer`]), unless the caller's context already has one. What the
    /// facade uses to write a language server's `rename` through the file tools' transaction.
    pub fn set_file_writer(&mut self, writer: Arc<dyn FileWriter>) -> &mut Self {
        self.writer = Some(writer);
        self
    }

    /// The tool of that name.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn DynTool>> {
        self.tools.get(name).map(|entry| &entry.tool)
    }

    /// The spec of the tool of that name.
    pub fn spec(&self, name: &str) -> Option<&ToolSpec> {
        self.tools.get(name).map(|entry| entry.spec.as_ref())
    }

    /// Records that tool `name` is not in this registry and `why` (what brings it: "this build
    /// has no `commitment` feature", "set `[commitment] enabled = true`"): a call of it then
    /// says so instead of only "unknown tool". A tool registered under that name wins.
    pub fn note_absent(&mut self, name: impl Into<String>, why: impl Into<String>) {
        self.absent.insert(name.into(), why.into());
    }

    /// The error a call of a tool this registry does not hold reads: the name, why it is
    /// absent when that is known ([`Registry::note_absent`]), and the tools there are.
    pub fn unknown_tool(&self, name: &str) -> String {
        let why = self
            .absent
            .get(name)
            .map(|why| format!(" It is not available here: {why}."))
            .unwrap_or_default();
        format!(
            "unknown tool `{name}`.{why} The tools are: {}.",
            self.names().join(", ")
        )
    }

    /// Takes tool `name` out (it is then neither listed nor run) and says `why` when it is
    /// called: what `[permissions] deny` does. Whether it was there.
    pub fn withdraw(&mut self, name: &str, why: impl Into<String>) -> bool {
        let held = self.tools.remove(name).is_some();
        self.absent.insert(name.to_owned(), why.into());
        held
    }

    /// Sets the person's rule for tool `name`: [`Posture::Allow`] runs it without asking
    /// (`[permissions] allow`; it never widens what the call may do, a command keeps its mode's
    /// sandbox), [`Posture::Ask`] asks before every call even where the mode would not
    /// (`[permissions] ask`).
    pub fn set_rule(&mut self, name: impl Into<String>, posture: Posture) -> &mut Self {
        self.rules.insert(name.into(), posture);
        self
    }

    /// The posture of a call of `spec` in `mode`: the person's rule for the tool where there is
    /// one ([`Registry::set_rule`]), else the mode's ([`posture`](crate::posture)).
    pub fn posture(&self, spec: &ToolSpec, mode: crate::PermissionMode) -> Posture {
        self.rules
            .get(&spec.name)
            .copied()
            .unwrap_or_else(|| crate::posture(spec, mode))
    }

    /// The names of all tools, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.tools.keys().map(String::as_str).collect()
    }

    /// The specs of all tools, sorted by name: the same order on every call.
    pub fn specs(&self) -> Vec<&ToolSpec> {
        self.tools
            .values()
            .map(|entry| entry.spec.as_ref())
            .collect()
    }

    /// How many tools there are.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// A registry of the named tools that exist here, plus every tool of the orientation floor.
    pub fn slice(&self, names: &[&str]) -> Registry {
        let tools = self
            .tools
            .iter()
            .filter(|(name, entry)| entry.spec.floor || names.contains(&name.as_str()))
            .map(|(name, entry)| (name.clone(), entry.clone()))
            .collect();
        Registry {
            tools,
            observers: self.observers.clone(),
            writer: self.writer.clone(),
            absent: self.absent.clone(),
            rules: self.rules.clone(),
        }
    }

    /// What a call of `name` with `args` touches ([`DynTool::claims`]), to compute when the
    /// call arrives and hand to a [`Scheduler`](crate::Scheduler). An unknown tool touches
    /// nothing (the call fails at once); a tool whose claims panic is ordered against
    /// everything.
    pub fn claims(&self, name: &str, args: &serde_json::Value, ctx: &ToolContext) -> Claims {
        let Some(entry) = self.tools.get(name) else {
            return Claims::none();
        };
        catch_unwind(AssertUnwindSafe(|| entry.tool.claims(args, ctx)))
            .unwrap_or_else(|_| Claims::everything())
    }

    /// The rule a tool's claims follow, in one sentence ([`DynTool::claims_rule`]).
    pub fn claims_rule(&self, name: &str) -> Option<String> {
        self.tools.get(name).map(|entry| entry.tool.claims_rule())
    }

    /// Checks a call before the person is asked about it ([`DynTool::check`]): `Err` is the
    /// result of a call that would fail at once (arguments that do not parse, a URL the tool
    /// refuses), to return instead of asking. An unknown tool is `Err` too; a check that
    /// panics lets the call through to `run`, which reports it.
    pub fn check(
        &self,
        name: &str,
        args: &serde_json::Value,
        ctx: &ToolContext,
    ) -> Result<(), ToolOutput> {
        let Some(entry) = self.tools.get(name) else {
            return Err(ToolOutput::error(format!(
                "unknown tool `{name}`. The tools are: {}.",
                self.names().join(", ")
            )));
        };
        catch_unwind(AssertUnwindSafe(|| entry.tool.check(args, ctx))).unwrap_or(Ok(()))
    }

    /// Calls a tool by name with JSON arguments.
    ///
    /// The tool gets [`ToolContext::child`] of `ctx`. An unknown name, and a panic inside the
    /// tool, come back as error results; nothing here returns `Err` or unwinds. Each call is one
    /// `tracing` span named `tool_call` with the tool name, the duration and `is_error`.
    pub async fn call(&self, name: &str, args: serde_json::Value, ctx: &ToolContext) -> ToolOutput {
        let Some(entry) = self.tools.get(name) else {
            return ToolOutput::error(self.unknown_tool(name));
        };
        let span = tracing::info_span!(
            "tool_call",
            tool = name,
            duration_ms = tracing::field::Empty,
            is_error = tracing::field::Empty
        );
        let started = Instant::now();
        let ctx = self.observers.iter().fold(ctx.child(), |ctx, observer| {
            ctx.with_change_observer(Arc::clone(observer))
        });
        let ctx = match &self.writer {
            Some(writer) if ctx.file_writer().is_none() => ctx.with_file_writer(Arc::clone(writer)),
            _ => ctx,
        };
        let output = call_catching_panics(entry.tool.as_ref(), args, &ctx)
            .instrument(span.clone())
            .await;
        let output = output.unwrap_or_else(|payload| {
            let reason = panic_message(payload.as_ref());
            tracing::error!(parent: &span, tool = name, %reason, "tool panicked");
            ToolOutput::error(format!(
                "the tool `{name}` failed with an internal error ({reason}). This is a bug in \
                 vak-tools, not in your call; try another way to reach the same goal."
            ))
        });
        span.record("duration_ms", started.elapsed().as_millis() as u64);
        span.record("is_error", output.is_error);
        output
    }
}

async fn call_catching_panics(
    tool: &dyn DynTool,
    args: serde_json::Value,
    ctx: &ToolContext,
) -> Result<ToolOutput, Box<dyn Any + Send>> {
    let mut future = catch_unwind(AssertUnwindSafe(|| tool.call(args, ctx)))?;
    poll_fn(
        |cx| match catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(payload)),
        },
    )
    .await
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(text) = payload.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text.clone()
    } else {
        "a panic without a message".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::json;

    use super::*;
    use crate::{BoxFuture, Capability, Tool, ToolError, parse_args};

    /// Arguments of the test tools.
    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code, reason = "only parsed")]
    struct EchoArgs {
        /// What to echo back.
        text: String,
        /// How many times.
        times: Option<u32>,
    }

    /// A typed tool, the way a tool author writes one.
    struct Echo {
        name: &'static str,
        floor: bool,
    }

    impl Tool for Echo {
        type Args = EchoArgs;
        fn name(&self) -> &str {
            self.name
        }
        fn description(&self) -> String {
            "Echoes text.".into()
        }
        fn capabilities(&self) -> Vec<Capability> {
            vec![Capability::ReadFs]
        }
        fn floor(&self) -> bool {
            self.floor
        }
        fn check(&self, args: &EchoArgs, _ctx: &ToolContext) -> Result<(), ToolError> {
            if args.text == "unrunnable" {
                return Err(ToolError::new("`text` is unrunnable"));
            }
            Ok(())
        }
        async fn run(&self, args: EchoArgs, _ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
            tokio::task::yield_now().await;
            if args.text.is_empty() {
                return Err(ToolError::new("`text` is empty"));
            }
            Ok(ToolOutput::text(args.text))
        }
    }

    /// A hand-written object-safe tool that panics, before or inside its future.
    struct Panicky {
        name: &'static str,
        now: bool,
    }

    impl DynTool for Panicky {
        fn spec(&self) -> ToolSpec {
            ToolSpec::new::<EchoArgs>(self.name, "Panics.")
        }
        fn call<'a>(
            &'a self,
            args: serde_json::Value,
            _ctx: &'a ToolContext,
        ) -> BoxFuture<'a, ToolOutput> {
            if self.now {
                panic!("boom before the future");
            }
            Box::pin(async move {
                tokio::task::yield_now().await;
                let _ = parse_args::<EchoArgs>(args);
                panic!("boom inside the future");
            })
        }
    }

    const NAMES: [&str; 5] = ["zeta", "alpha", "floor", "panic_now", "panic_later"];

    fn add(registry: &mut Registry, name: &'static str) {
        match name {
            "panic_now" => registry.register(Panicky { name, now: true }),
            "panic_later" => registry.register(Panicky { name, now: false }),
            _ => registry.register(Echo {
                name,
                floor: name == "floor",
            }),
        };
    }

    fn registry_in_order(order: &[&'static str]) -> Registry {
        let mut registry = Registry::new();
        for name in order {
            add(&mut registry, name);
        }
        registry
    }

    fn registry() -> Registry {
        registry_in_order(&NAMES)
    }

    async fn call(name: &str, args: serde_json::Value) -> ToolOutput {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path()).unwrap();
        registry().call(name, args, &ctx).await
    }

    #[tokio::test]
    async fn an_absent_tool_says_why_and_what_brings_it() {
        let mut tools = registry();
        tools.note_absent("commitments", "set `[commitment] enabled = true`");
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path()).unwrap();
        let text = tools
            .call("commitments", json!({}), &ctx)
            .await
            .text_content();
        assert!(
            text.starts_with(
                "unknown tool `commitments`. It is not available here: set \
                 `[commitment] enabled = true`. The tools are: alpha,"
            ),
            "{text}"
        );
        let other = tools.call("nope", json!({}), &ctx).await.text_content();
        assert!(!other.contains("not available here"), "{other}");
    }

    /// A rule by name wins over the mode's posture, in every mode; a withdrawn tool is gone
    /// from the listing and its call says why; a slice keeps both.
    #[tokio::test]
    async fn rules_by_name_over_the_mode_and_withdrawn_tools() {
        use crate::{Capability, PermissionMode};
        let mut tools = registry();
        let mut writes = tools.spec("alpha").unwrap().clone();
        writes.capabilities = vec![Capability::Network];
        let reads = tools.spec("zeta").unwrap().clone();
        tools
            .set_rule("alpha", Posture::Allow)
            .set_rule("zeta", Posture::Ask);
        for mode in [
            PermissionMode::ReadOnly,
            PermissionMode::WorkspaceWrite,
            PermissionMode::FullAccess,
        ] {
            assert_eq!(tools.posture(&writes, mode), Posture::Allow, "{mode:?}");
            assert_eq!(tools.posture(&reads, mode), Posture::Ask, "{mode:?}");
        }
        let mut other = writes.clone();
        other.name = "floor".into();
        assert_eq!(
            tools.posture(&other, PermissionMode::ReadOnly),
            Posture::Ask,
            "no rule: the mode decides"
        );
        assert!(tools.withdraw("panic_now", "denied here"));
        assert!(!tools.names().contains(&"panic_now"));
        let sliced = tools.slice(&["alpha"]);
        assert_eq!(
            sliced.posture(&writes, PermissionMode::ReadOnly),
            Posture::Allow
        );
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path()).unwrap();
        let out = tools.call("panic_now", json!({}), &ctx).await;
        assert!(
            out.is_error && out.text_content().contains("denied here"),
            "{out:?}"
        );
    }

    #[tokio::test]
    async fn unknown_tool_lists_the_known_ones() {
        let out = call("nope", json!({})).await;
        assert!(out.is_error);
        let text = out.text_content();
        assert!(text.contains("unknown tool `nope`"), "{text}");
        assert!(
            text.contains("alpha, floor, panic_later, panic_now, zeta"),
            "{text}"
        );
    }

    #[tokio::test]
    async fn panics_become_error_results() {
        for name in ["panic_now", "panic_later"] {
            let out = call(name, json!({"text": "x"})).await;
            assert!(out.is_error, "{name}");
            assert!(
                out.text_content().contains("internal error (boom"),
                "{name}: {out:?}"
            );
        }
    }

    #[tokio::test]
    async fn typed_calls_parse_run_and_report_errors() {
        let out = call("alpha", json!({"text": "hello"})).await;
        assert_eq!(out, ToolOutput::text("hello"));
        let out = call("alpha", json!({"text": 1})).await;
        assert!(out.is_error && out.text_content().contains("`text`"));
        let out = call("alpha", json!({"text": ""})).await;
        assert_eq!(out, ToolOutput::error("`text` is empty"));
    }

    #[test]
    fn check_refuses_before_running_what_would_fail_at_once() {
        let registry = registry();
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path()).unwrap();
        assert!(
            registry
                .check("alpha", &json!({"text": "hi"}), &ctx)
                .is_ok()
        );
        let bad = registry
            .check("alpha", &json!({"text": 1}), &ctx)
            .unwrap_err();
        assert!(
            bad.is_error && bad.text_content().contains("`text`"),
            "{bad:?}"
        );
        let refused = registry
            .check("alpha", &json!({"text": "unrunnable"}), &ctx)
            .unwrap_err();
        assert_eq!(refused, ToolOutput::error("`text` is unrunnable"));
        let unknown = registry.check("nope", &json!({}), &ctx).unwrap_err();
        assert!(unknown.text_content().contains("unknown tool `nope`"));
        // A hand-written tool checks nothing by default.
        assert!(
            registry
                .check("panic_later", &json!({"text": 1}), &ctx)
                .is_ok()
        );
    }

    #[test]
    fn the_spec_comes_from_the_typed_tool() {
        let registry = registry();
        let spec = registry.spec("floor").unwrap();
        assert_eq!(spec.description, "Echoes text.");
        assert_eq!(spec.capabilities, [Capability::ReadFs]);
        assert!(spec.floor);
        assert_eq!(spec.input_schema["required"], json!(["text"]));
        assert!(!registry.spec("alpha").unwrap().floor);
    }

    #[test]
    fn specs_are_sorted_whatever_the_order_of_registration() {
        let mut reversed = NAMES;
        reversed.reverse();
        let mut rotated = NAMES;
        rotated.rotate_left(2);
        for order in [NAMES, reversed, rotated] {
            let registry = registry_in_order(&order);
            let names: Vec<_> = registry.specs().iter().map(|s| s.name.clone()).collect();
            assert_eq!(
                names,
                ["alpha", "floor", "panic_later", "panic_now", "zeta"],
                "registered as {order:?}"
            );
            assert_eq!(registry.names(), names, "registered as {order:?}");
        }
    }

    #[test]
    fn a_duplicate_name_is_refused_and_the_first_tool_stays() {
        let mut registry = Registry::new();
        registry.register(Echo {
            name: "alpha",
            floor: true,
        });
        let refused = registry
            .try_register(Echo {
                name: "alpha",
                floor: false,
            })
            .err();
        assert_eq!(
            refused,
            Some(DuplicateTool {
                name: "alpha".into()
            })
        );
        let refused = registry.try_register(Panicky {
            name: "alpha",
            now: true,
        });
        assert!(refused.is_err());
        // `register` refuses too: the first tool (on the floor) is the one kept.
        registry.register(Echo {
            name: "alpha",
            floor: false,
        });
        assert_eq!(registry.len(), 1);
        assert!(registry.spec("alpha").unwrap().floor);
        assert!(
            registry
                .try_register(Echo {
                    name: "beta",
                    floor: false
                })
                .is_ok()
        );
        assert!(
            DuplicateTool { name: "x".into() }
                .to_string()
                .contains("`x` is already registered")
        );
    }

    #[test]
    fn slice_keeps_the_floor() {
        let all = registry();
        assert_eq!(all.slice(&["zeta"]).names(), ["floor", "zeta"]);
        assert_eq!(all.slice(&[]).names(), ["floor"]);
        assert_eq!(all.slice(&["missing", "alpha"]).names(), ["alpha", "floor"]);
    }

    #[test]
    fn schemas_are_closed_objects_with_described_fields() {
        for spec in registry().specs() {
            let schema = &spec.input_schema;
            assert_eq!(schema["type"], "object", "{}", spec.name);
            assert_eq!(schema["additionalProperties"], false, "{}", spec.name);
            assert_eq!(
                schema["$schema"],
                "https://json-schema.org/draft/2020-12/schema"
            );
            for (field, property) in schema["properties"].as_object().unwrap() {
                assert!(property["description"].is_string(), "{}.{field}", spec.name);
            }
        }
    }

    #[test]
    fn output_serialises_like_mcp() {
        let out = ToolOutput::from_content(
            vec![
                crate::Content::text("t"),
                crate::Content::image("image/png", "AA=="),
            ],
            true,
        );
        assert_eq!(
            serde_json::to_value(&out).unwrap(),
            json!({"content": [
                {"type": "text", "text": "t"},
                {"type": "image", "mimeType": "image/png", "data": "AA=="}
            ], "isError": true})
        );
    }

    /// An observer that names the files it was told about.
    struct Names;

    impl ChangeObserver for Names {
        fn changed<'a>(
            &'a self,
            paths: &'a [std::path::PathBuf],
            ctx: &'a ToolContext,
        ) -> BoxFuture<'a, Option<String>> {
            Box::pin(async move {
                let names: Vec<String> = paths.iter().map(|p| ctx.display_path(p)).collect();
                Some(format!("changed: {}\n", names.join(", ")))
            })
        }
    }

    /// A tool that "changes" the file named by `text` and appends what the observers say.
    struct Toucher;

    impl Tool for Toucher {
        type Args = EchoArgs;
        fn name(&self) -> &str {
            "touch"
        }
        fn description(&self) -> String {
            "Touches.".into()
        }
        fn capabilities(&self) -> Vec<Capability> {
            vec![Capability::WriteFs]
        }
        async fn run(&self, args: EchoArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
            let path = ctx.resolve_path(&args.text)?;
            let said = ctx.files_changed(&[path]).await;
            Ok(ToolOutput::text(said.unwrap_or_else(|| "silence".into())))
        }
    }

    #[tokio::test]
    async fn change_observers_reach_the_calls_of_the_registry_and_its_slices() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path()).unwrap();
        let mut registry = Registry::new();
        registry.register(Toucher);
        let args = json!({"text": "a.txt"});
        let out = registry.call("touch", args.clone(), &ctx).await;
        assert_eq!(out.text_content(), "silence");
        let observer: Arc<dyn ChangeObserver> = Arc::new(Names);
        registry.add_change_observer(Arc::clone(&observer));
        let out = registry.call("touch", args.clone(), &ctx).await;
        assert_eq!(out.text_content(), "changed: a.txt");
        let out = registry
            .slice(&["touch"])
            .call("touch", args.clone(), &ctx)
            .await;
        assert_eq!(out.text_content(), "changed: a.txt");
        // Installed on the context too: still told once.
        let ctx = ctx.with_change_observer(observer);
        let out = registry.call("touch", args, &ctx).await;
        assert_eq!(out.text_content(), "changed: a.txt");
    }

    /// A writer that says who it is.
    struct Named(&'static str);

    impl crate::FileWriter for Named {
        fn write<'a>(
            &'a self,
            edits: Vec<crate::FileEdit>,
            _ctx: &'a ToolContext,
        ) -> BoxFuture<'a, Result<String, crate::WriteRefused>> {
            Box::pin(async move { Ok(format!("{}: {}", self.0, edits.len())) })
        }
    }

    /// A tool that hands one edit to the context's writer.
    struct Writes;

    impl Tool for Writes {
        type Args = EchoArgs;
        fn name(&self) -> &str {
            "writes"
        }
        fn description(&self) -> String {
            "Writes.".into()
        }
        fn capabilities(&self) -> Vec<Capability> {
            vec![Capability::WriteFs]
        }
        async fn run(&self, args: EchoArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
            let Some(writer) = ctx.file_writer() else {
                return Ok(ToolOutput::text("no writer"));
            };
            let edit = crate::FileEdit {
                path: ctx.resolve_path(&args.text)?,
                before: Vec::new(),
                after: Vec::new(),
            };
            let said = writer
                .write(vec![edit], ctx)
                .await
                .map_err(ToolError::from)?;
            Ok(ToolOutput::text(said))
        }
    }

    #[tokio::test]
    async fn the_file_writer_reaches_the_calls_of_the_registry_and_its_slices() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path()).unwrap();
        let mut registry = Registry::new();
        registry.register(Writes);
        let args = json!({"text": "a.txt"});
        let out = registry.call("writes", args.clone(), &ctx).await;
        assert_eq!(out.text_content(), "no writer");
        registry.set_file_writer(Arc::new(Named("registry")));
        let out = registry.call("writes", args.clone(), &ctx).await;
        assert_eq!(out.text_content(), "registry: 1");
        let out = registry
            .slice(&["writes"])
            .call("writes", args.clone(), &ctx)
            .await;
        assert_eq!(out.text_content(), "registry: 1");
        // The caller's own writer wins.
        let ctx = ctx.with_file_writer(Arc::new(Named("context")));
        let out = registry.call("writes", args, &ctx).await;
        assert_eq!(out.text_content(), "context: 1");
    }

    /// Callers hold these across threads and `.await`s.
    #[allow(dead_code, reason = "compile-time assertions")]
    fn auto_traits() {
        fn send_sync<T: Send + Sync>() {}
        fn send<T: Send>(_: &T) {}
        send_sync::<Registry>();
        send_sync::<ToolContext>();
        send_sync::<ToolOutput>();
        send_sync::<ToolSpec>();
        send_sync::<Arc<dyn DynTool>>();
        send_sync::<crate::PathError>();
        send_sync::<crate::Session>();
        let registry = Registry::new();
        let ctx = ToolContext::new(".").unwrap();
        send(&registry.call("x", json!({}), &ctx));
    }
}

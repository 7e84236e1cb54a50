//! The set of tools an agent can call, and the one place every call goes through.

use std::any::Any;
use std::collections::BTreeMap;
use std::future::poll_fn;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::task::Poll;
use std::time::Instant;

use tracing::Instrument;

use crate::{Tool, ToolContext, ToolOutput, ToolSpec};

/// Tools by name. Cloning is cheap: tools are shared behind `Arc`.
#[derive(Clone, Default)]
pub struct Registry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("tools", &self.names())
            .finish()
    }
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool. A tool registered under a name already present replaces the earlier one.
    pub fn register(&mut self, tool: impl Tool + 'static) -> &mut Self {
        self.register_arc(Arc::new(tool))
    }

    /// Adds a shared tool. A tool registered under a name already present replaces it.
    pub fn register_arc(&mut self, tool: Arc<dyn Tool>) -> &mut Self {
        self.tools.insert(tool.spec().name.clone(), tool);
        self
    }

    /// The tool of that name.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    /// The names of all tools, sorted.
    pub fn names(&self) -> Vec<&str> {
        self.tools.keys().map(String::as_str).collect()
    }

    /// The specs of all tools, sorted by name: the same order on every call.
    pub fn specs(&self) -> Vec<&ToolSpec> {
        self.tools.values().map(|tool| tool.spec()).collect()
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
            .filter(|(name, tool)| tool.spec().floor || names.contains(&name.as_str()))
            .map(|(name, tool)| (name.clone(), Arc::clone(tool)))
            .collect();
        Registry { tools }
    }

    /// Calls a tool by name with JSON arguments.
    ///
    /// The tool gets [`ToolContext::child`] of `ctx`. An unknown name, and a panic inside the
    /// tool, come back as error results; nothing here returns `Err` or unwinds. Each call is one
    /// `tracing` span named `tool_call` with the tool name, the duration and `is_error`.
    pub async fn call(&self, name: &str, args: serde_json::Value, ctx: &ToolContext) -> ToolOutput {
        let Some(tool) = self.tools.get(name) else {
            return ToolOutput::error(format!(
                "unknown tool `{name}`. The tools are: {}.",
                self.names().join(", ")
            ));
        };
        let span = tracing::info_span!(
            "tool_call",
            tool = name,
            duration_ms = tracing::field::Empty,
            is_error = tracing::field::Empty
        );
        let started = Instant::now();
        let ctx = ctx.child();
        let output = call_catching_panics(tool.as_ref(), args, &ctx)
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
    tool: &dyn Tool,
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
    use crate::{BoxFuture, Capability, parse_args};

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

    enum Behaviour {
        Echo,
        PanicNow,
        PanicLater,
    }

    struct TestTool {
        spec: ToolSpec,
        behaviour: Behaviour,
    }

    fn tool(name: &str, floor: bool, behaviour: Behaviour) -> TestTool {
        let spec = ToolSpec::new::<EchoArgs>(name, "Echoes text.")
            .with_capabilities([Capability::ReadFs])
            .with_floor(floor);
        TestTool { spec, behaviour }
    }

    impl Tool for TestTool {
        fn spec(&self) -> &ToolSpec {
            &self.spec
        }
        fn call<'a>(
            &'a self,
            args: serde_json::Value,
            _ctx: &'a ToolContext,
        ) -> BoxFuture<'a, ToolOutput> {
            if matches!(self.behaviour, Behaviour::PanicNow) {
                panic!("boom before the future");
            }
            Box::pin(async move {
                tokio::task::yield_now().await;
                if matches!(self.behaviour, Behaviour::PanicLater) {
                    panic!("boom inside the future");
                }
                match parse_args::<EchoArgs>(args) {
                    Ok(args) => ToolOutput::text(args.text),
                    Err(error) => error,
                }
            })
        }
    }

    fn registry() -> Registry {
        let mut registry = Registry::new();
        registry
            .register(tool("zeta", false, Behaviour::Echo))
            .register(tool("alpha", false, Behaviour::Echo))
            .register(tool("floor", true, Behaviour::Echo))
            .register(tool("panic_now", false, Behaviour::PanicNow))
            .register(tool("panic_later", false, Behaviour::PanicLater));
        registry
    }

    async fn call(name: &str, args: serde_json::Value) -> ToolOutput {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path()).unwrap();
        registry().call(name, args, &ctx).await
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
    async fn calls_reach_the_tool() {
        let out = call("alpha", json!({"text": "hello"})).await;
        assert_eq!(out, ToolOutput::text("hello"));
        let out = call("alpha", json!({"text": 1})).await;
        assert!(out.is_error && out.text_content().contains("`text`"));
    }

    #[test]
    fn specs_are_sorted_and_stable() {
        let names: Vec<_> = registry()
            .specs()
            .iter()
            .map(|spec| spec.name.clone())
            .collect();
        assert_eq!(
            names,
            ["alpha", "floor", "panic_later", "panic_now", "zeta"]
        );
        let again: Vec<_> = registry()
            .specs()
            .iter()
            .map(|spec| spec.name.clone())
            .collect();
        assert_eq!(names, again);
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
                crate::Content::Text { text: "t".into() },
                crate::Content::Image {
                    media_type: "image/png".into(),
                    data: "AA==".into(),
                },
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

    /// Callers hold these across threads and `.await`s.
    #[allow(dead_code, reason = "compile-time assertions")]
    fn auto_traits() {
        fn send_sync<T: Send + Sync>() {}
        fn send<T: Send>(_: &T) {}
        send_sync::<Registry>();
        send_sync::<ToolContext>();
        send_sync::<ToolOutput>();
        send_sync::<ToolSpec>();
        send_sync::<Arc<dyn Tool>>();
        send_sync::<crate::PathError>();
        let registry = Registry::new();
        let ctx = ToolContext::new(".").unwrap();
        send(&registry.call("x", json!({}), &ctx));
    }
}

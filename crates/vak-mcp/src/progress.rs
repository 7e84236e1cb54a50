//! Relaying a tool's progress reports to the client as `notifications/progress`.

use std::sync::Arc;
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::service::RequestContext;
use vak_tool_core::{Progress, ToolContext};

/// How long a finished call waits for its last progress notifications to go out.
pub(crate) const PROGRESS_FLUSH: Duration = Duration::from_secs(2);

/// Where a call's progress goes instead of `notifications/progress` when its request's context
/// carries one (a task's call: its status message).
#[derive(Clone)]
pub(crate) struct ProgressSink(pub(crate) Arc<dyn Fn(Progress) + Send + Sync>);

/// Gives `ctx` a progress listener when the client asked for progress (a `progressToken`): the
/// listener queues each report and one task sends them in order as `notifications/progress`.
/// The task ends once the call's contexts, which hold the listener, are gone. A call whose
/// context carries a [`ProgressSink`] reports to it instead.
pub(crate) fn forward_progress(
    ctx: ToolContext,
    context: &RequestContext<RoleServer>,
) -> (ToolContext, Option<tokio::task::JoinHandle<()>>) {
    if let Some(ProgressSink(sink)) = context.extensions.get::<ProgressSink>().cloned() {
        return (ctx.with_progress(move |report| sink(report)), None);
    }
    let Some((sender, task)) = to_client(context) else {
        return (ctx, None);
    };
    let ctx = ctx.with_progress(move |report| {
        // The receiver is gone only once the client is.
        let _ = sender.send(report);
    });
    (ctx, Some(task))
}

/// When the client asked for progress (a `progressToken`): a sender whose reports one task
/// sends in order as `notifications/progress`, and that task (it ends once the sender is gone).
pub(crate) fn to_client(
    context: &RequestContext<RoleServer>,
) -> Option<(
    tokio::sync::mpsc::UnboundedSender<Progress>,
    tokio::task::JoinHandle<()>,
)> {
    let token = context.meta.get_progress_token()?;
    let (sender, mut reports) = tokio::sync::mpsc::unbounded_channel::<Progress>();
    let peer = context.peer.clone();
    let task = tokio::spawn(async move {
        while let Some(report) = reports.recv().await {
            let mut param = rmcp::model::ProgressNotificationParam::new(token.clone(), report.done);
            if let Some(total) = report.total {
                param = param.with_total(total);
            }
            if let Some(message) = report.message {
                param = param.with_message(message);
            }
            if peer.notify_progress(param).await.is_err() {
                return;
            }
        }
    });
    Some((sender, task))
}

//! The `commitments` tool: its arguments, its description for the model, and the edge where
//! store errors become text a model can act on.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use vak_tool_core::{Capability, Tool, ToolContext, ToolError, ToolOutput, human};

use crate::schema::BUSY_TIMEOUT;

use crate::{
    Clock, CommitmentId, CommitmentRead, CommitmentSettings, CommitmentView, StatusFilter,
    StoreError, render_commitment, render_overview,
};

/// Where the store lives when the configuration does not say: relative to the workspace.
pub const DEFAULT_DB: &str = ".vak/commitments.db";

/// How many closed commitments `status: "closed"` lists, most recent first.
pub const CLOSED_LIMIT: usize = 20;

/// Which commitments to list.
#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Status {
    #[default]
    Open,
    Blocked,
    Waiting,
    Closed,
    All,
}

impl From<Status> for StatusFilter {
    fn from(status: Status) -> Self {
        match status {
            Status::Open => StatusFilter::Open,
            Status::Blocked => StatusFilter::Blocked,
            Status::Waiting => StatusFilter::Waiting,
            Status::Closed => StatusFilter::Closed,
            Status::All => StatusFilter::All,
        }
    }
}

/// A commitment's number, as a number or as shown (`"#12"`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
enum IdArg {
    Number(i64),
    Text(String),
}

/// Arguments of `commitments`, parsed from the model's JSON (the input schema is generated
/// from this type). Its fields are private: the tool is called through a
/// [`Registry`](vak_tool_core::Registry).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommitmentsArgs {
    /// Which commitments to list: `open` (the default: every commitment not yet closed,
    /// blocked and waiting ones included), `blocked`, `waiting`, `closed` (the most recent
    /// first) or `all`. Ignored when `id` is given.
    #[serde(default)]
    status: Option<Status>,
    /// Show this one commitment whole (criteria, evidence, history): its number as listed,
    /// `12` or `"#12"`.
    #[serde(default)]
    id: Option<IdArg>,
}

fn parse_id(id: IdArg) -> Result<CommitmentId, ToolError> {
    let number = match &id {
        IdArg::Number(number) => Some(*number),
        IdArg::Text(text) => text.trim().trim_start_matches('#').trim().parse().ok(),
    };
    match number {
        Some(number) if number > 0 => Ok(CommitmentId(number)),
        _ => {
            let given = match id {
                IdArg::Number(number) => number.to_string(),
                IdArg::Text(text) => format!("{text:?}"),
            };
            Err(ToolError::new(format!(
                "invalid arguments: field `id`: expected a commitment number such as 12 or \
                 \"#12\", got {given}. Call `commitments` without `id` to see the numbers."
            )))
        }
    }
}

/// What a call reads.
#[derive(Debug, Clone, Copy)]
enum Request {
    List(StatusFilter),
    One(CommitmentId),
}

#[derive(Clone)]
enum Source {
    /// The SQLite file at this path, relative to the workspace unless absolute.
    Database(PathBuf),
    /// A reader the embedder supplied.
    Reader(Arc<dyn CommitmentRead>),
}

/// The `commitments` tool: lists the agent's commitments, or shows one whole. It holds only a
/// read-only source: a path it opens as a [`CommitmentView`] on each call, or a
/// [`CommitmentRead`] trait object.
#[derive(Clone)]
pub struct CommitmentsTool {
    source: Source,
    clock: Clock,
    closed_limit: usize,
}

impl std::fmt::Debug for CommitmentsTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let source = match &self.source {
            Source::Database(path) => path.display().to_string(),
            Source::Reader(_) => "a CommitmentRead".to_owned(),
        };
        f.debug_struct("CommitmentsTool")
            .field("source", &source)
            .field("closed_limit", &self.closed_limit)
            .finish_non_exhaustive()
    }
}

impl CommitmentsTool {
    /// The tool over the SQLite store that `settings` name ([`CommitmentSettings::db`],
    /// relative to the workspace of each call; [`DEFAULT_DB`] when `None`). The path comes from
    /// the configuration, not from the model, so an absolute one is used as it is.
    pub fn new(settings: CommitmentSettings) -> Self {
        Self::with_source(Source::Database(
            settings.db.unwrap_or_else(|| PathBuf::from(DEFAULT_DB)),
        ))
    }

    /// The tool over a reader the embedder supplies (an
    /// [`InMemoryCommitments`](crate::InMemoryCommitments), a shared [`CommitmentView`], or
    /// its own implementation).
    pub fn with_reader(reader: Arc<dyn CommitmentRead>) -> Self {
        Self::with_source(Source::Reader(reader))
    }

    fn with_source(source: Source) -> Self {
        Self {
            source,
            clock: Clock::system(),
            closed_limit: CLOSED_LIMIT,
        }
    }

    /// The same tool, taking ages against `clock` (a fixed clock gives stable text).
    #[must_use]
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// The same tool, listing at most `limit` closed commitments for `status: "closed"`.
    #[must_use]
    pub fn with_closed_limit(mut self, limit: usize) -> Self {
        self.closed_limit = limit;
        self
    }

    async fn respond(&self, args: CommitmentsArgs, ctx: &ToolContext) -> ToolOutput {
        let request = match args.id.map(parse_id).transpose() {
            Ok(Some(id)) => Request::One(id),
            Ok(None) => Request::List(args.status.unwrap_or_default().into()),
            Err(error) => return error.into(),
        };
        let (source, shown) = match &self.source {
            Source::Reader(reader) => (
                Source::Reader(Arc::clone(reader)),
                "the commitments store".to_owned(),
            ),
            Source::Database(db) => {
                let path = ctx.workspace().join(db);
                let shown = ctx.display_path(&path);
                (Source::Database(path), shown)
            }
        };
        let closed_limit = self.closed_limit;
        let now = self.clock.now();
        // SQLite is synchronous: open, read and render off the async workers.
        let work = tokio::task::spawn_blocking(move || match source {
            Source::Reader(reader) => answer(reader.as_ref(), request, closed_limit, now),
            Source::Database(path) => {
                let view = CommitmentView::open(path)?;
                answer(&view, request, closed_limit, now)
            }
        });
        tokio::select! {
            // Cancellation first: a cancelled call says so, even when the read ends at the same
            // moment.
            biased;
            () = ctx.cancel().cancelled() => ToolOutput::error(
                "the call was cancelled before the commitments were read; call it again if you \
                 still need them",
            ),
            joined = work => match joined {
                Ok(Ok(text)) => ToolOutput::text(text),
                Ok(Err(failure)) => ToolOutput::error(failure.message(&shown)),
                Err(error) => ToolOutput::error(format!(
                    "reading the commitments failed with an internal error ({error}). This is a \
                     bug in vak-tools, not in your call; try again once, then carry on without \
                     the list."
                )),
            },
        }
    }
}

/// Why a call could not answer.
#[derive(Debug)]
enum Failure {
    Store(StoreError),
    UnknownId(CommitmentId),
}

impl From<StoreError> for Failure {
    fn from(error: StoreError) -> Self {
        Failure::Store(error)
    }
}

fn answer(
    reader: &dyn CommitmentRead,
    request: Request,
    closed_limit: usize,
    now: crate::Timestamp,
) -> Result<String, Failure> {
    match request {
        Request::List(filter) => {
            let limit = (filter == StatusFilter::Closed).then_some(closed_limit);
            let overview = reader.overview(filter, limit)?;
            Ok(render_overview(&overview, filter, now))
        }
        Request::One(id) => match reader.commitment(id)? {
            Some(history) => Ok(render_commitment(&history, now)),
            None => Err(Failure::UnknownId(id)),
        },
    }
}

/// The session state `commitments` reads: the ledger of commitments.
const COMMITMENTS: vak_tool_core::StateKey = vak_tool_core::StateKey::new("commitments");

const LEFT_AS_IS: &str = "The file was left exactly as it is: nothing was repaired or \
                          overwritten. Do not delete, replace or edit it yourself; tell the \
                          person, and carry on with your task meanwhile.";

impl Failure {
    /// The model-facing text: what went wrong, and what to do instead.
    fn message(&self, shown: &str) -> String {
        let error = match self {
            Failure::UnknownId(id) => {
                return format!(
                    "no commitment {id}. Call `commitments` with status \"all\" to see every \
                     commitment's number, then ask for one of those."
                );
            }
            Failure::Store(error) => error,
        };
        match error {
            StoreError::Missing { .. } => format!(
                "there is no commitments store at {shown}: the runtime creates it when it \
                 records the first commitment, so none exist yet. Do not create the file \
                 yourself; carry on with your task."
            ),
            StoreError::Corrupt { source, .. } => format!(
                "the commitments store at {shown} is corrupt or not a SQLite database \
                 ({source}). {LEFT_AS_IS}"
            ),
            StoreError::Foreign { reason, .. } => {
                format!("{shown} is not a commitments store ({reason}). {LEFT_AS_IS}")
            }
            StoreError::NewerSchema {
                found, supported, ..
            } => format!(
                "the commitments store at {shown} has schema version {found}, newer than the \
                 version {supported} this build of vak-tools reads: vak-tools needs updating. \
                 {LEFT_AS_IS}"
            ),
            StoreError::OlderSchema {
                found, supported, ..
            } => format!(
                "the commitments store at {shown} has schema version {found}, older than the \
                 version {supported} this build reads; the runtime upgrades it the next time it \
                 opens the store for writing. {LEFT_AS_IS}"
            ),
            StoreError::Busy { .. } => format!(
                "the commitments store at {shown} stayed locked by a writer for more than {}. \
                 Try again in a moment.",
                human::duration(BUSY_TIMEOUT)
            ),
            other => format!(
                "the commitments could not be read: {}. {LEFT_AS_IS}",
                strip_path(other, shown)
            ),
        }
    }
}

/// The error's text with its absolute path replaced by the path as the model sees it.
fn strip_path(error: &StoreError, shown: &str) -> String {
    let text = error.to_string();
    let path: Option<&Path> = match error {
        StoreError::BadRow { path, .. }
        | StoreError::Sqlite { path, .. }
        | StoreError::Io { path, .. } => Some(path),
        _ => None,
    };
    match path {
        Some(path) => text.replace(&path.display().to_string(), shown),
        None => text,
    }
}

impl Tool for CommitmentsTool {
    type Args = CommitmentsArgs;

    fn name(&self) -> &str {
        "commitments"
    }

    fn description(&self) -> String {
        format!(
            "Shows the commitments you hold, durable across sessions: what is open, what is \
             blocked (and why) or waiting on a person (whom, since when), what evidence each \
             still needs before it can close, and how the closed ones closed. Check it when you \
             start or resume work and before you promise anything, so that you do not re-open \
             an obligation you already hold. It is read-only: it cannot open, change or close a \
             commitment. The runtime records evidence and decides when a commitment is \
             satisfied; never claim one is met yourself, produce the evidence it names instead. \
             With no arguments it lists every commitment not yet closed (id, title, state, age, \
             each criterion met [x] or not [ ] with the evidence it still needs) and the count \
             of closed ones; `status` narrows the list to `blocked`, `waiting`, `closed` (how \
             each closed, the {} most recent) or `all`; `id` shows one commitment whole: \
             criteria, evidence and history.",
            self.closed_limit
        )
    }

    fn capabilities(&self) -> Vec<Capability> {
        vec![Capability::ReadFs]
    }

    fn claims(&self, args: &CommitmentsArgs, ctx: &ToolContext) -> vak_tool_core::Claims {
        let _ = (args, ctx);
        vak_tool_core::Claims::none().state(COMMITMENTS, vak_tool_core::Access::Read)
    }

    fn claims_rule(&self) -> String {
        "reads the commitments store".to_owned()
    }

    fn floor(&self) -> bool {
        true
    }

    async fn run(&self, args: CommitmentsArgs, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        Ok(self.respond(args, ctx).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_description_follows_the_closed_limit() {
        let tool = CommitmentsTool::new(CommitmentSettings::default());
        assert!(
            tool.description().contains("the 20 most recent"),
            "{}",
            tool.description()
        );
        let text = tool.with_closed_limit(5).description();
        assert!(text.contains("the 5 most recent"), "{text}");
        assert!(!text.contains("20"), "{text}");
    }

    #[test]
    fn a_busy_store_says_how_long_the_read_waited() {
        let busy = Failure::Store(StoreError::Busy {
            path: PathBuf::from("/w/.vak/commitments.db"),
        });
        assert_eq!(
            busy.message(".vak/commitments.db"),
            "the commitments store at .vak/commitments.db stayed locked by a writer for more \
             than 5 s. Try again in a moment."
        );
    }
}

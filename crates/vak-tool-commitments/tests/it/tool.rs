//! The tool as a model sees it: every `status` and `id` output as a snapshot, and the errors.

use std::future::Future;
use std::pin::Pin;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use serde_json::json;
use vak_tool_commitments::{
    Clock, CommitmentHistory, CommitmentId, CommitmentLedger, CommitmentRead, CommitmentSettings,
    CommitmentsTool, InMemoryCommitments, Overview, SCHEMA_VERSION, StatusFilter, StoreError,
    Timestamp,
};
use vak_tool_core::{Capability, DynTool, Registry, ToolOutput};

use crate::fixture::{NOW, Workspace, err, ok, populate, tool};

fn populated() -> Workspace {
    let workspace = Workspace::new();
    populate(&workspace.db());
    workspace
}

#[test]
fn every_status_as_a_snapshot() {
    let workspace = populated();
    let tool = tool();
    assert_eq!(
        ok(&tool, &workspace.ctx, json!({})),
        ok(&tool, &workspace.ctx, json!({"status": "open"})),
        "open is the default"
    );
    for status in ["open", "blocked", "waiting", "closed", "all"] {
        let text = ok(&tool, &workspace.ctx, json!({"status": status}));
        insta::assert_snapshot!(format!("status_{status}"), text);
    }
    let capped = tool.clone().with_closed_limit(2);
    insta::assert_snapshot!(
        "status_closed_capped",
        ok(&capped, &workspace.ctx, json!({"status": "closed"}))
    );
}

#[test]
fn every_kind_of_commitment_by_id_as_a_snapshot() {
    let workspace = populated();
    let tool = tool();
    for (id, name) in [
        (1, "open"),
        (2, "blocked"),
        (3, "waiting"),
        (4, "satisfied"),
        (5, "withdrawn"),
        (6, "superseded"),
        (7, "no_criteria"),
        (8, "expired"),
    ] {
        let text = ok(&tool, &workspace.ctx, json!({"id": id}));
        insta::assert_snapshot!(format!("id_{id}_{name}"), text);
    }
    assert_eq!(
        ok(&tool, &workspace.ctx, json!({"id": "#3"})),
        ok(&tool, &workspace.ctx, json!({"id": 3, "status": "closed"})),
        "\"#3\" is 3, and `id` wins over `status`"
    );
    assert_eq!(
        ok(&tool, &workspace.ctx, json!({"id": " 3 "})),
        ok(&tool, &workspace.ctx, json!({"id": 3}))
    );
}

#[test]
fn an_unknown_id_says_how_to_find_the_real_ones() {
    let workspace = populated();
    let text = err(&tool(), &workspace.ctx, json!({"id": 42}));
    assert!(text.contains("no commitment #42"), "{text}");
    assert!(text.contains("status \"all\""), "{text}");
}

#[test]
fn bad_arguments_name_the_field() {
    let workspace = populated();
    let tool = tool();
    for (args, needle) in [
        (json!({"status": "done"}), "status"),
        (json!({"id": "abc"}), "field `id`"),
        (json!({"id": 0}), "field `id`"),
        (json!({"id": -3}), "field `id`"),
        (json!({"id": true}), "id"),
        (json!({"state": "open"}), "`state`"),
        (json!([]), "JSON object"),
    ] {
        let text = err(&tool, &workspace.ctx, args.clone());
        assert!(text.contains(needle), "{args}: {text}");
    }
}

#[test]
fn an_empty_store_is_a_plain_sentence_for_every_status() {
    let workspace = Workspace::new();
    drop(CommitmentLedger::open(workspace.db()).unwrap());
    let tool = tool();
    for status in ["open", "blocked", "waiting", "closed", "all"] {
        let text = ok(&tool, &workspace.ctx, json!({"status": status}));
        assert_eq!(
            text, "No commitments: nothing is open, blocked, waiting or closed.\n",
            "{status}"
        );
    }
}

#[test]
fn nothing_left_in_a_state_is_said_plainly() {
    let workspace = Workspace::new();
    let ledger = CommitmentLedger::open(workspace.db()).unwrap();
    let id = ledger.open_commitment("Done already").unwrap();
    ledger
        .close(id, vak_tool_commitments::Closure::Withdrawn, None)
        .unwrap();
    let tool = tool();
    let text = ok(&tool, &workspace.ctx, json!({}));
    assert!(
        text.contains("Nothing is open, blocked or waiting."),
        "{text}"
    );
    assert!(text.contains("1 closed: status \"closed\""), "{text}");
    let text = ok(&tool, &workspace.ctx, json!({"status": "blocked"}));
    assert!(text.contains("None is blocked."), "{text}");
    let text = ok(&tool, &workspace.ctx, json!({"status": "waiting"}));
    assert!(text.contains("None is waiting on a person."), "{text}");
    ledger.open_commitment("Still open").unwrap();
    let text = ok(&tool, &workspace.ctx, json!({"status": "closed"}));
    assert!(
        text.contains("#1 Done already · closed as withdrawn"),
        "{text}"
    );
    assert!(!text.contains("Still open"), "{text}");
}

#[test]
fn a_missing_store_is_an_error_that_says_not_to_create_it() {
    let workspace = Workspace::new();
    let text = err(&tool(), &workspace.ctx, json!({}));
    assert!(text.contains(".vak/commitments.db"), "{text}");
    assert!(text.contains("Do not create the file"), "{text}");
    assert!(!workspace.db().exists());
    assert!(!workspace.db().parent().unwrap().exists());
}

#[test]
fn the_configured_path_is_taken_from_the_workspace() {
    let workspace = Workspace::new();
    let db = workspace.ctx.workspace().join("state/mine.db");
    populate(&db);
    let sub = workspace.ctx.workspace().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let ctx = workspace.ctx.clone().with_cwd("sub").unwrap();
    let mut settings = CommitmentSettings::default();
    settings.db = Some("state/mine.db".into());
    let tool =
        CommitmentsTool::new(settings).with_clock(Clock::fixed(Timestamp::from_unix_seconds(NOW)));
    let text = ok(&tool, &ctx, json!({}));
    assert!(text.starts_with("Commitments: 2 open, 1 blocked"), "{text}");
}

#[test]
fn bad_files_are_errors_that_leave_the_file_alone() {
    type Make = fn(&std::path::Path);
    let cases: [(&str, Make, &str); 3] = [
        (
            "garbage",
            |path| std::fs::write(path, "not sqlite at all\n".repeat(300)).unwrap(),
            "corrupt or not a SQLite database",
        ),
        (
            "newer",
            |path| {
                drop(CommitmentLedger::open(path).unwrap());
                let raw = rusqlite::Connection::open(path).unwrap();
                raw.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
                    .unwrap();
            },
            "newer than the version 1 this build of vak-tools reads",
        ),
        (
            "foreign",
            |path| {
                let raw = rusqlite::Connection::open(path).unwrap();
                raw.execute_batch("CREATE TABLE t (x)").unwrap();
            },
            "is not a commitments store",
        ),
    ];
    for (case, make, needle) in cases {
        let workspace = Workspace::new();
        std::fs::create_dir_all(workspace.db().parent().unwrap()).unwrap();
        make(&workspace.db());
        let before = std::fs::read(workspace.db()).unwrap();
        for args in [json!({}), json!({"id": 1})] {
            let text = err(&tool(), &workspace.ctx, args);
            assert!(text.contains(needle), "{case}: {text}");
            assert!(text.contains("nothing was repaired"), "{case}: {text}");
            assert!(text.contains(".vak/commitments.db"), "{case}: {text}");
        }
        assert_eq!(std::fs::read(workspace.db()).unwrap(), before, "{case}");
    }
}

#[test]
fn an_in_memory_reader_lists_exactly_what_the_store_lists() {
    let workspace = populated();
    let ledger = CommitmentLedger::open(workspace.db()).unwrap();
    let records = (1..=8)
        .map(|id| {
            ledger
                .commitment(vak_tool_commitments::CommitmentId(id))
                .unwrap()
                .unwrap()
        })
        .rev();
    let memory = InMemoryCommitments::new(records);
    for filter in [
        StatusFilter::Open,
        StatusFilter::Blocked,
        StatusFilter::Waiting,
        StatusFilter::Closed,
        StatusFilter::All,
    ] {
        for limit in [None, Some(2)] {
            assert_eq!(
                memory.overview(filter, limit).unwrap(),
                ledger.overview(filter, limit).unwrap(),
                "{filter:?} {limit:?}"
            );
        }
    }
    let from_memory = CommitmentsTool::with_reader(Arc::new(memory))
        .with_clock(Clock::fixed(Timestamp::from_unix_seconds(NOW)));
    for args in [json!({}), json!({"status": "all"}), json!({"id": 3})] {
        assert_eq!(
            ok(&from_memory, &workspace.ctx, args.clone()),
            ok(&tool(), &workspace.ctx, args)
        );
    }
    let text = err(&from_memory, &workspace.ctx, json!({"id": 9}));
    assert!(text.contains("no commitment #9"), "{text}");
}

#[test]
fn the_spec_is_a_read_only_floor_tool() {
    let tool = tool();
    let spec = tool.spec();
    assert_eq!(spec.name, "commitments");
    assert_eq!(spec.capabilities, [Capability::ReadFs]);
    assert!(spec.floor);
    let properties = spec.input_schema["properties"].as_object().unwrap();
    assert_eq!(
        properties.keys().collect::<Vec<_>>(),
        ["id", "status"],
        "{}",
        spec.input_schema
    );
    for (name, property) in properties {
        assert!(property["description"].is_string(), "{name}");
    }
    assert_eq!(spec.input_schema["additionalProperties"], false);
    let text = spec.input_schema.to_string();
    for status in ["open", "blocked", "waiting", "closed", "all"] {
        assert!(text.contains(&format!("\"{status}\"")), "{status}: {text}");
    }

    let mut registry = Registry::new();
    vak_tool_commitments::register(&mut registry, &CommitmentSettings::default());
    assert_eq!(registry.slice(&[]).names(), ["commitments"]);
}

/// A reader whose reads block until the test lets them go, and which says when one began.
struct Gate {
    inner: InMemoryCommitments,
    entered: Mutex<Sender<()>>,
    release: Mutex<Receiver<()>>,
}

impl Gate {
    /// The gate, the receiver told when a read begins, and the sender that lets reads go (or
    /// dropping it).
    fn new() -> (Self, Receiver<()>, Sender<()>) {
        let (entered_tx, entered_rx) = channel();
        let (release_tx, release_rx) = channel();
        let gate = Self {
            inner: InMemoryCommitments::new([]),
            entered: Mutex::new(entered_tx),
            release: Mutex::new(release_rx),
        };
        (gate, entered_rx, release_tx)
    }

    fn hold(&self) {
        let _ = self.entered.lock().unwrap().send(());
        // Returns when the test sends, or drops the sender (also when it fails).
        let _ = self.release.lock().unwrap().recv();
    }
}

impl CommitmentRead for Gate {
    fn overview(
        &self,
        filter: StatusFilter,
        closed_limit: Option<usize>,
    ) -> Result<Overview, StoreError> {
        self.hold();
        self.inner.overview(filter, closed_limit)
    }

    fn commitment(&self, id: CommitmentId) -> Result<Option<CommitmentHistory>, StoreError> {
        self.hold();
        self.inner.commitment(id)
    }
}

/// Polls `future` once: its output if it is ready, `None` if it would wait.
fn poll_once<F: Future + ?Sized>(future: Pin<&mut F>) -> Option<F::Output> {
    match future.poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => Some(output),
        Poll::Pending => None,
    }
}

fn assert_cancelled(out: &ToolOutput) {
    assert!(out.is_error, "{out:?}");
    assert!(
        out.text_content()
            .contains("was cancelled before the commitments were read"),
        "{out:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_call_returns_promptly() {
    // The read is held by the gate for the whole test: an answer can come only from the
    // cancellation, and it must come on the first poll after the token is cancelled.
    let workspace = Workspace::new();
    let (gate, entered, release) = Gate::new();
    let tool = CommitmentsTool::with_reader(Arc::new(gate));
    let ctx = workspace.ctx.child();
    let mut call = DynTool::call(&tool, json!({}), &ctx);
    assert!(poll_once(call.as_mut()).is_none(), "the read is held");
    tokio::task::spawn_blocking(move || entered.recv())
        .await
        .unwrap()
        .unwrap();
    ctx.cancel().cancel();
    let out = poll_once(call.as_mut()).expect("a cancelled call answers at once");
    assert_cancelled(&out);
    release.send(()).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_cancelled_before_it_starts_answers_on_its_first_poll() {
    let workspace = Workspace::new();
    let (gate, _entered, _release) = Gate::new();
    let tool = CommitmentsTool::with_reader(Arc::new(gate));
    let ctx = workspace.ctx.child();
    ctx.cancel().cancel();
    let mut call = DynTool::call(&tool, json!({"id": 1}), &ctx);
    let out = poll_once(call.as_mut()).expect("a cancelled call answers at once");
    assert_cancelled(&out);
}

/// Callers hold the tool and its futures across threads.
#[allow(dead_code, reason = "compile-time assertions")]
fn auto_traits() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<CommitmentsTool>();
    send_sync::<vak_tool_commitments::CommitmentView>();
    send_sync::<CommitmentLedger>();
    send_sync::<InMemoryCommitments>();
    send_sync::<Arc<dyn CommitmentRead>>();
}

#[test]
fn error_texts_as_snapshots() {
    let workspace = Workspace::new();
    let tool = tool();
    insta::assert_snapshot!("error_missing", err(&tool, &workspace.ctx, json!({})));
    populate(&workspace.db());
    insta::assert_snapshot!(
        "error_unknown_id",
        err(&tool, &workspace.ctx, json!({"id": "#42"}))
    );
    insta::assert_snapshot!(
        "error_bad_id",
        err(&tool, &workspace.ctx, json!({"id": "forty-two"}))
    );
    let raw = rusqlite::Connection::open(workspace.db()).unwrap();
    raw.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    drop(raw);
    insta::assert_snapshot!("error_newer_schema", err(&tool, &workspace.ctx, json!({})));
    std::fs::write(workspace.db(), "garbage\n".repeat(1000)).unwrap();
    insta::assert_snapshot!("error_corrupt", err(&tool, &workspace.ctx, json!({})));
}

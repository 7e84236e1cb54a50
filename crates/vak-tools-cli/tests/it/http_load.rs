//! Load on one `vak-tools mcp --http` server (the soak test; the figures are the benchmark's,
//! `benches/mcp_load.rs`), and what a session is bound to when several servers run side by
//! side (docs/mcp.md, "Beyond one machine").

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::BIN;
use crate::load::{
    HttpServer, Target, descendants, healthz, http_call, http_session_known, populate, rss_kib,
    run_sessions, session, start_http, stateless_call,
};
use crate::procs::shells_tagged;

/// Sessions in the soak, and how many are open at once.
const SOAK_SESSIONS: usize = 200;
const SOAK_AT_ONCE: usize = 50;

fn served(workspace: &Path) -> HttpServer {
    start_http(Path::new(BIN), workspace, &[]).unwrap()
}

/// Waits (up to a minute: the debug build is slow on a loaded machine) for `done` to hold.
async fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    done()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_sessions_fifty_at_once_every_result_exact_and_nothing_left() {
    let dir = tempfile::tempdir().unwrap();
    populate(dir.path()).unwrap();
    let server = served(dir.path());
    let pid = server.child.id();
    let rss_start = rss_kib(pid).unwrap();
    let target = Target::Http { port: server.port };

    let outcomes = run_sessions(&target, SOAK_SESSIONS, SOAK_AT_ONCE, "s", None).await;

    let failures: Vec<&String> = outcomes.iter().filter_map(|o| o.as_ref().err()).collect();
    assert!(
        failures.is_empty(),
        "{} of {SOAK_SESSIONS} sessions failed; the first: {}",
        failures.len(),
        failures[0]
    );
    let mut ids = Vec::new();
    for outcome in outcomes.iter().flatten() {
        assert_eq!(outcome.calls.len(), 10);
        ids.push(outcome.session_id.clone().unwrap());
    }
    ids.sort();
    ids.dedup();
    assert_eq!(
        ids.len(),
        SOAK_SESSIONS,
        "every session has an id of its own"
    );
    // Every file a session wrote holds what its edit made of it.
    for index in 0..SOAK_SESSIONS {
        let text = std::fs::read_to_string(dir.path().join(format!("sess/s{index}.txt"))).unwrap();
        assert_eq!(text, format!("session s{index}\nvalue = s{index}\n"));
    }

    // Each closed session is gone: a request on it is 404, as for an id never given.
    for id in &ids {
        assert!(
            !http_session_known(server.port, id).await.unwrap(),
            "session {id} still answers after its DELETE"
        );
    }
    // The server's own count says the same.
    let health = healthz(server.port)
        .await
        .unwrap()
        .expect("GET /healthz is served");
    assert_eq!(health["sessions"], 0, "{health}");
    assert_eq!(health["calls_running"], 0, "{health}");
    // Nothing the sessions started is left: no sandbox, shell or job below the server.
    assert!(
        eventually(|| descendants(pid).is_empty()).await,
        "processes left below the server: {:?}",
        descendants(pid)
    );
    // The figure, not a verdict: the debug build's memory says little (docs/benchmarks.md has
    // the release build's, measured by the benchmark).
    eprintln!(
        "server RSS: {rss_start} KiB at start, {} KiB after {SOAK_SESSIONS} sessions",
        rss_kib(pid).unwrap_or(0)
    );
    drop(server);
    assert!(!crate::procs::process_alive(pid));
}

/// A session lives in the server that opened it: its id sent to another server (behind a
/// load balancer without affinity, or after its server restarted) is 404, so the client knows
/// to initialize again, and the new session works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_id_from_one_server_is_404_on_another() {
    let dir = tempfile::tempdir().unwrap();
    populate(dir.path()).unwrap();
    let a = served(dir.path());
    let b = served(dir.path());

    let on_a = session(&Target::Http { port: a.port }, "a", None)
        .await
        .unwrap();
    assert_eq!(on_a.calls.len(), 10);
    // The session closed itself; open one on A and keep it to hand its id to B.
    let held = crate::load::open_http_session(a.port).await.unwrap();
    assert!(http_session_known(a.port, &held).await.unwrap());
    assert!(
        !http_session_known(b.port, &held).await.unwrap(),
        "B answered a session only A knows"
    );
    // A client that got 404 from B initializes again there; A's session is untouched.
    let on_b = session(&Target::Http { port: b.port }, "b", None)
        .await
        .unwrap();
    assert_eq!(on_b.calls.len(), 10);
    assert!(http_session_known(a.port, &held).await.unwrap());

    // The session on A runs a background job.
    let tag = format!("vak-load-job-{}", std::process::id());
    let job = http_call(
        a.port,
        &held,
        "bash",
        json!({"command": format!("sh -c 'sleep 1000; :' {tag}"), "run_in_background": true}),
    )
    .await
    .unwrap();
    assert_eq!(job["result"]["isError"], false, "{job}");
    assert!(eventually(|| !shells_tagged(&tag).is_empty()).await);

    // A's server dies (SIGKILL: no time to clean up): its session is gone with it, its job
    // too, and a server started in its place (the same workspace, a new process) answers the
    // old id with 404.
    drop(a);
    assert!(
        eventually(|| shells_tagged(&tag).is_empty()).await,
        "the job outlived its server"
    );
    let a2 = served(dir.path());
    assert!(!http_session_known(a2.port, &held).await.unwrap());
    let again = session(&Target::Http { port: a2.port }, "a2", None)
        .await
        .unwrap();
    assert_eq!(again.calls.len(), 10);
}

/// Protocol 2026-07-28 needs no session, so no affinity: the same request is served alike by
/// any server of the workspace. What such requests share stays in the server that ran them:
/// `recall` of a windowed result reaches it on that server only, and says so elsewhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_without_a_session_is_served_by_either_server() {
    let dir = tempfile::tempdir().unwrap();
    populate(dir.path()).unwrap();
    let long: String = (1..=5000)
        .map(|n| format!("line {n} of a long file\n"))
        .collect();
    std::fs::write(dir.path().join("long.txt"), long).unwrap();
    let a = served(dir.path());
    let b = served(dir.path());

    let expected = (0..10)
        .map(|k| format!("src/m{k}.rs:3:let needle = {k};\n"))
        .collect::<String>()
        + "[10 files searched; 0 skipped]";
    for port in [a.port, b.port] {
        let (status, reply) =
            stateless_call(port, "grep", json!({"pattern": "needle", "path": "src"}))
                .await
                .unwrap();
        assert_eq!(status, 200, "{reply}");
        assert_eq!(reply["result"]["isError"], false, "{reply}");
        assert_eq!(reply["result"]["content"][0]["text"], expected.as_str());
    }

    // A windowed result on A names the `recall` that returns the rest (a search: `read` pages
    // itself to fit the window, so it needs none).
    let (_, reply) = stateless_call(
        a.port,
        "grep",
        json!({"pattern": "of a long file", "path": "long.txt", "max_matches": 5000}),
    )
    .await
    .unwrap();
    let text = reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    let call_id = text
        .split("\"call_id\": \"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap_or_else(|| panic!("no recall named in {text:?}"))
        .to_owned();
    let recall = json!({"call_id": call_id, "from_line": 1000, "to_line": 1001});
    let (_, on_a) = stateless_call(a.port, "recall", recall.clone())
        .await
        .unwrap();
    assert_eq!(on_a["result"]["isError"], false, "{on_a}");
    assert_eq!(
        on_a["result"]["content"][0]["text"],
        "long.txt:1000:line 1000 of a long file\nlong.txt:1001:line 1001 of a long file\n",
        "{on_a}"
    );
    let (_, on_b) = stateless_call(b.port, "recall", recall).await.unwrap();
    assert_eq!(on_b["result"]["isError"], true, "{on_b}");
}

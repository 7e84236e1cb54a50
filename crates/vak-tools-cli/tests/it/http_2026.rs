//! `vak-tools mcp --http` and protocol 2026-07-28: requests without a session (the version and
//! the client's capabilities in each request's `_meta`), the header checks, `recall` through the
//! ledger such requests share, approvals as an input-required round trip, and the older versions
//! with their sessions unchanged.

use serde_json::{Value, json};

use crate::http::{Reply, Served, post, serve, workspace};

const V2026: &str = "2026-07-28";

/// A request's `_meta` for 2026-07-28, with these client capabilities.
fn meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": V2026,
        "io.modelcontextprotocol/clientInfo": {"name": "http-2026-test", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    })
}

/// A 2026-07-28 request (no session): `_meta` in the params, `MCP-Protocol-Version` and
/// `Mcp-Method` headers (and `Mcp-Name` for a tool call).
fn ask(served: &Served, id: u64, method: &str, mut params: Value, capabilities: Value) -> Reply {
    params["_meta"] = meta(capabilities);
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let mut request = post(&body)
        .with("MCP-Protocol-Version", V2026)
        .with("Mcp-Method", method);
    if let Some(name) = params.get("name").and_then(Value::as_str) {
        request = request.with("Mcp-Name", name);
    }
    request.send(served.port)
}

fn call(served: &Served, id: u64, tool: &str, arguments: Value) -> Value {
    let reply = ask(
        served,
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
        json!({}),
    );
    assert_eq!(reply.status, 200, "{reply:?}");
    reply.message()["result"].clone()
}

fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_request_without_a_session_is_served_with_2026_07_28() {
    let dir = workspace("");
    let served = serve(dir.path(), &["--no-auth"], None);
    let reply = ask(&served, 1, "server/discover", json!({}), json!({}));
    assert_eq!(reply.status, 200, "{reply:?}");
    let discovered = reply.message();
    let versions = discovered["result"]["supportedVersions"].to_string();
    assert!(
        versions.contains(V2026) && versions.contains("2025-11-25"),
        "{discovered}"
    );
    assert_eq!(
        discovered["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "vak-tools"
    );
    let reply = ask(&served, 2, "tools/list", json!({}), json!({}));
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(
        reply.header("mcp-session-id"),
        None,
        "no session: {reply:?}"
    );
    let listed = reply.message()["result"].clone();
    assert!(
        listed["tools"].to_string().contains("\"recall\""),
        "{listed}"
    );
    // Caching hints, as 2026-07-28 requires of a list.
    assert!(listed["ttlMs"].is_u64(), "{listed}");
    assert!(listed["cacheScope"].is_string(), "{listed}");
    std::fs::write(dir.path().join("note.txt"), "hello\n").unwrap();
    let read = call(&served, 3, "read", json!({"path": "note.txt"}));
    assert_eq!(read["isError"], false, "{read}");
    assert!(text(&read).contains("hello"), "{read}");
}

#[test]
fn recall_reaches_a_result_from_another_request_by_an_id_no_one_can_guess() {
    let dir = workspace("");
    let served = serve(dir.path(), &["--no-auth"], None);
    let result = call(&served, 1, "bash", json!({"command": "seq 1 20000"}));
    let window = text(&result);
    let marker = window
        .lines()
        .find(|line| line.contains("recall {"))
        .unwrap_or_else(|| panic!("no recall marker in a long result: {window}"));
    let named = &marker[marker.find("recall {").unwrap() + "recall ".len()..];
    let args: Value = serde_json::from_str(&named[..=named.find('}').unwrap()]).unwrap();
    let id = args["call_id"].as_str().unwrap().to_owned();
    assert!(
        id.len() == 33 && id.starts_with('r'),
        "an unguessable id, not a count: {id}"
    );
    // A later request, another connection: the result is still there.
    let recalled = call(&served, 2, "recall", args.clone());
    assert_eq!(recalled["isError"], false, "{recalled}");
    assert!(!text(&recalled).is_empty());
    // A guess is refused with what to do.
    let mut guess = args.clone();
    guess["call_id"] = json!("c1");
    let refused = call(&served, 3, "recall", guess);
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(text(&refused).contains("another server"), "{refused}");
    // A session has a ledger of its own: it cannot reach results of requests without one.
    let session = crate::http::open_session(served.port, "");
    let body = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                      "params": {"name": "recall", "arguments": args}});
    let reply = post(&body)
        .with("Mcp-Session-Id", session)
        .with("MCP-Protocol-Version", "2025-06-18")
        .send(served.port);
    assert_eq!(reply.message()["result"]["isError"], true, "{reply:?}");
}

#[test]
fn bad_or_missing_protocol_headers_are_refused_as_the_spec_says() {
    let dir = workspace("");
    let served = serve(dir.path(), &["--no-auth"], None);
    let list = |meta: Value| json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {"_meta": meta}});
    // `_meta` names 2026-07-28 but the header is missing: a header mismatch.
    let reply = post(&list(meta(json!({}))))
        .with("Mcp-Method", "tools/list")
        .send(served.port);
    assert_eq!(reply.status, 400, "{reply:?}");
    assert_eq!(reply.message()["error"]["code"], -32020, "{reply:?}");
    // The header and `_meta` disagree.
    let reply = post(&list(meta(json!({}))))
        .with("MCP-Protocol-Version", "2025-11-25")
        .with("Mcp-Method", "tools/list")
        .send(served.port);
    assert_eq!(reply.status, 400, "{reply:?}");
    assert_eq!(reply.message()["error"]["code"], -32020, "{reply:?}");
    // `Mcp-Method` does not match the body.
    let reply = post(&list(meta(json!({}))))
        .with("MCP-Protocol-Version", V2026)
        .with("Mcp-Method", "prompts/list")
        .send(served.port);
    assert_eq!(reply.status, 400, "{reply:?}");
    assert_eq!(reply.message()["error"]["code"], -32020, "{reply:?}");
    // The header names 2026-07-28, `_meta` lacks what it requires.
    let reply = post(&list(
        json!({"io.modelcontextprotocol/protocolVersion": V2026}),
    ))
    .with("MCP-Protocol-Version", V2026)
    .with("Mcp-Method", "tools/list")
    .send(served.port);
    assert_eq!(reply.status, 400, "{reply:?}");
    assert_eq!(reply.message()["error"]["code"], -32602, "{reply:?}");
    // A version the server does not speak: 400, with the versions it does.
    let mut unknown = meta(json!({}));
    unknown["io.modelcontextprotocol/protocolVersion"] = json!("2099-01-01");
    let reply = post(&list(unknown))
        .with("MCP-Protocol-Version", "2099-01-01")
        .with("Mcp-Method", "tools/list")
        .send(served.port);
    assert_eq!(reply.status, 400, "{reply:?}");
    let error = reply.message()["error"].clone();
    assert_eq!(error["code"], -32022, "{error}");
    assert_eq!(error["data"]["requested"], "2099-01-01", "{error}");
    assert!(
        error["data"]["supported"].to_string().contains(V2026),
        "{error}"
    );
    // The methods 2026-07-28 removed: 404 and -32601, never a session.
    for (id, method) in [(10, "initialize"), (11, "logging/setLevel"), (12, "ping")] {
        let reply = ask(&served, id, method, json!({}), json!({}));
        assert_eq!(reply.status, 404, "{method}: {reply:?}");
        assert_eq!(
            reply.message()["error"]["code"],
            -32601,
            "{method}: {reply:?}"
        );
        assert_eq!(reply.message()["id"], id, "{method}: {reply:?}");
        assert_eq!(reply.header("mcp-session-id"), None, "{method}: {reply:?}");
    }
    // `inputResponses` that are not results.
    let reply = ask(
        &served,
        13,
        "tools/call",
        json!({"name": "read", "arguments": {"path": "x"}, "inputResponses": {"approval": 5}}),
        json!({}),
    );
    assert_eq!(reply.status, 400, "{reply:?}");
    assert_eq!(reply.message()["error"]["code"], -32602, "{reply:?}");
}

#[test]
fn older_versions_keep_their_sessions() {
    let dir = workspace("");
    let served = serve(dir.path(), &["--no-auth"], None);
    for (asked, agreed) in [
        ("2025-11-25", "2025-11-25"),
        ("2025-03-26", "2025-03-26"),
        // A client that offers 2026-07-28 in a handshake gets the newest version that has one.
        (V2026, "2025-11-25"),
    ] {
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": asked, "capabilities": {},
            "clientInfo": {"name": "http-2026-test", "version": "0"}}});
        let reply = post(&initialize).send(served.port);
        assert_eq!(reply.status, 200, "{asked}: {reply:?}");
        assert_eq!(
            reply.message()["result"]["protocolVersion"],
            agreed,
            "{reply:?}"
        );
        assert!(
            reply.header("mcp-session-id").is_some(),
            "{asked}: {reply:?}"
        );
    }
    // In a session, results keep their counted ids.
    let session = crate::http::open_session(served.port, "");
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                      "params": {"name": "recall", "arguments": {"call_id": "c99", "from_line": 1, "to_line": 2}}});
    let reply = post(&body)
        .with("Mcp-Session-Id", session)
        .with("MCP-Protocol-Version", "2025-06-18")
        .send(served.port);
    let said = reply.message()["result"]["content"][0]["text"].to_string();
    assert!(said.contains("the oldest kept is"), "{said}");
}

#[test]
fn a_call_that_keeps_session_state_is_refused_without_a_session() {
    // With no room for jobs of requests without a session (see the tests below for the room).
    let dir = workspace("[mcp]\nsessionless_jobs_max = 0\n");
    let served = serve(dir.path(), &["--no-auth"], None);
    let started = call(
        &served,
        1,
        "bash",
        json!({"command": "sleep 30", "run_in_background": true}),
    );
    assert_eq!(started["isError"], true, "{started}");
    let said = text(&started);
    assert!(said.contains("session") && said.contains("jobs"), "{said}");
    let jobs = call(&served, 2, "jobs", json!({"action": "list"}));
    assert_eq!(jobs["isError"], true, "{jobs}");
    // In the foreground it runs.
    let ran = call(&served, 3, "bash", json!({"command": "echo ran"}));
    assert!(text(&ran).contains("ran"), "{ran}");
}

#[test]
fn an_approval_without_a_session_is_an_input_required_round_trip() {
    let dir = workspace("[permissions]\nmode = \"read-only\"\n");
    let served = serve(dir.path(), &["--no-auth"], None);
    let elicits = json!({"elicitation": {}});
    let write = json!({"name": "write", "arguments": {"path": "out.txt", "content": "approved\n"}});
    // A client that cannot ask the person is refused, as over a session.
    let reply = ask(&served, 1, "tools/call", write.clone(), json!({}));
    let refused = reply.message()["result"].clone();
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(
        text(&refused).contains("cannot ask the person"),
        "{refused}"
    );
    // A client that can: the question comes back as an input-required result.
    let asked =
        ask(&served, 2, "tools/call", write.clone(), elicits.clone()).message()["result"].clone();
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let question = &asked["inputRequests"]["approval"];
    assert_eq!(question["method"], "elicitation/create", "{asked}");
    assert!(
        question["params"]["message"]
            .as_str()
            .unwrap()
            .contains("Allow write"),
        "{asked}"
    );
    let state = asked["requestState"].as_str().unwrap().to_owned();
    assert!(
        !dir.path().join("out.txt").exists(),
        "nothing ran before the answer"
    );
    // The answer for other arguments does not count.
    let mut other = write.clone();
    other["arguments"]["path"] = json!("elsewhere.txt");
    other["requestState"] = json!(state);
    other["inputResponses"] = json!({"approval": {"action": "accept", "content": {"allow": true}}});
    let reply = ask(&served, 3, "tools/call", other, elicits.clone());
    let refused = reply.message()["result"].clone();
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(!dir.path().join("elsewhere.txt").exists());
    // The state was used up by that try: ask again, answer, and the call runs.
    let asked =
        ask(&served, 4, "tools/call", write.clone(), elicits.clone()).message()["result"].clone();
    let state = asked["requestState"].as_str().unwrap().to_owned();
    let mut answered = write.clone();
    answered["requestState"] = json!(state);
    answered["inputResponses"] =
        json!({"approval": {"action": "accept", "content": {"allow": true}}});
    let done = ask(&served, 5, "tools/call", answered.clone(), elicits.clone()).message()["result"]
        .clone();
    assert_eq!(done["isError"], false, "{done}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("out.txt")).unwrap(),
        "approved\n"
    );
    // An approval is used once.
    let again =
        ask(&served, 6, "tools/call", answered, elicits.clone()).message()["result"].clone();
    assert_eq!(again["isError"], true, "{again}");
    assert!(text(&again).contains("requestState"), "{again}");
    // Declined: not run.
    let asked =
        ask(&served, 7, "tools/call", write.clone(), elicits.clone()).message()["result"].clone();
    let mut declined = write;
    declined["arguments"]["path"] = json!("out.txt");
    declined["requestState"] = asked["requestState"].clone();
    declined["inputResponses"] = json!({"approval": {"action": "decline"}});
    let refused = ask(&served, 8, "tools/call", declined, elicits).message()["result"].clone();
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(text(&refused).contains("declined"), "{refused}");
}

/// The job id a background start without a session names: `j` and 32 hex digits.
fn job_id_of(started: &Value) -> String {
    let said = text(started);
    let at = said
        .find("job_id \"j")
        .unwrap_or_else(|| panic!("no job id in {said}"));
    let id: String = said[at + "job_id \"".len()..]
        .chars()
        .take_while(char::is_ascii_alphanumeric)
        .collect();
    assert!(
        id.len() == 33 && id[1..].chars().all(|c| c.is_ascii_hexdigit()),
        "an unguessable id, not a count: {id} in {said}"
    );
    id
}

#[test]
fn a_background_job_without_a_session_is_reached_by_its_unguessable_id() {
    let dir = workspace("");
    let served = serve(dir.path(), &["--no-auth"], None);
    let started = call(
        &served,
        1,
        "bash",
        json!({"command": "echo ready; read line; echo got-$line; sleep 600",
               "run_in_background": true}),
    );
    assert_eq!(started["isError"], false, "{started}");
    let id = job_id_of(&started);
    assert!(
        text(&started).contains("without a `jobs` call"),
        "{started}"
    );
    // Other requests, other connections, reach it by its id.
    let wrote = call(
        &served,
        2,
        "jobs",
        json!({"action": "write", "job_id": id, "input": "hello\n"}),
    );
    assert_eq!(wrote["isError"], false, "{wrote}");
    let mut seen = text(&wrote);
    for n in 0..60 {
        if seen.contains("got-hello") {
            break;
        }
        let read = call(
            &served,
            3 + n,
            "jobs",
            json!({"action": "read", "job_id": id, "wait_ms": 1000}),
        );
        assert_eq!(read["isError"], false, "{read}");
        seen.push_str(&text(&read));
    }
    assert!(seen.contains("got-hello"), "{seen}");
    let listed = call(&served, 70, "jobs", json!({"action": "list"}));
    assert!(text(&listed).contains(&format!("job \"{id}\"")), "{listed}");
    assert!(text(&listed).contains("running"), "{listed}");
    // A number, as a session's jobs have, names nothing here; a guess is unknown.
    let numbered = call(&served, 71, "jobs", json!({"action": "read", "job_id": 1}));
    assert_eq!(numbered["isError"], true, "{numbered}");
    assert!(text(&numbered).contains("not a number"), "{numbered}");
    let guessed = call(
        &served,
        72,
        "jobs",
        json!({"action": "read", "job_id": format!("j{}", "0".repeat(32))}),
    );
    assert_eq!(guessed["isError"], true, "{guessed}");
    let stopped = call(&served, 73, "jobs", json!({"action": "stop", "job_id": id}));
    assert_eq!(stopped["isError"], false, "{stopped}");
    let gone = call(&served, 74, "jobs", json!({"action": "read", "job_id": id}));
    assert_eq!(gone["isError"], true, "{gone}");
    assert!(text(&gone).contains("names no background job"), "{gone}");
}

#[test]
fn jobs_without_a_session_are_bounded_and_an_idle_one_is_stopped() {
    let dir = workspace("[mcp]\nsessionless_jobs_max = 1\nsession_idle_ms = 3000\n");
    let served = serve(dir.path(), &["--no-auth"], None);
    let tag = |name: &str| format!("vak-sessionless-job-{name}-{}", std::process::id());
    let start = |id: u64, name: &str| {
        call(
            &served,
            id,
            "bash",
            json!({"command": format!("sh -c 'sleep 600; :' {}", tag(name)),
                   "run_in_background": true}),
        )
    };
    let first = start(1, "first");
    assert_eq!(first["isError"], false, "{first}");
    let id = job_id_of(&first);
    crate::http::eventually("the job runs", || {
        !crate::procs::running_with(&tag("first")).is_empty()
    });
    let refused = start(2, "second");
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(text(&refused).contains("sessionless_jobs_max"), "{refused}");
    // No call names the job: once idle it is stopped, its process killed, its place free.
    crate::http::eventually("the idle job's process is killed", || {
        crate::procs::running_with(&tag("first")).is_empty()
    });
    let gone = call(&served, 3, "jobs", json!({"action": "read", "job_id": id}));
    assert!(text(&gone).contains("names no background job"), "{gone}");
    let again = start(4, "third");
    assert_eq!(again["isError"], false, "{again}");
    assert!(
        !crate::procs::running_with(&tag("third")).is_empty(),
        "{again}"
    );
}

#[test]
fn a_call_that_cannot_run_is_refused_without_a_question() {
    let dir = workspace("");
    let served = serve(dir.path(), &["--no-auth"], None);
    let elicits = json!({"elicitation": {}});
    let fetch = json!({"name": "webfetch", "arguments": {"url": "not a url"}});
    let reply = ask(&served, 1, "tools/call", fetch, elicits).message()["result"].clone();
    assert_ne!(reply["resultType"], "input_required", "{reply}");
    assert_eq!(reply["isError"], true, "{reply}");
    assert!(text(&reply).contains("does not parse"), "{reply}");
}

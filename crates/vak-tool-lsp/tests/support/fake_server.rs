//! A fake language server for the tests: `vak-fake-lsp MODE [--pid-file PATH]`.
//!
//! It answers `initialize`, keeps the open documents, and on every `didOpen`/`didChange`
//! publishes (with the version) for every open document: an error on each line holding
//! `ERROR`, a warning on each line holding `WARN`, and an error `X is missing` when a document
//! says `needs:X` and no open document says `provides:X`. MODE makes it misbehave:
//! `normal`, `silent-init` (never answers `initialize`), `flood` (100,000 log notifications
//! before each publish), `malformed` (a broken frame instead of a publish), `huge` (announces
//! a 100 MB message), `crash` (exits on the first document), `slow` (never publishes),
//! `hang-shutdown` (ignores `shutdown`, `exit` and the end of its input), `noversion` (publishes without versions),
//! `chatty` (from the first document on, publishes for a document nobody opened every 20 ms,
//! so that it is never quiet), `loading` (shows a progress and publishes nothing for 300 ms after the first document, and
//! until then answers navigation from the document asked about alone; then it knows every
//! `.fk` file of its root folder too), `loading-forever` (the
//! same, never done), `changes-only` (without versions, and only the documents whose diagnostics changed, as
//! typescript-language-server does), `own-only` (only the document just sent, so that another
//! open document's report goes stale), `late` (publishes 300 ms after each document, then counts the publications in
//! `PID-FILE.published`, so that a test can wait for them instead of guessing a time), `hostile` (on each document, tries what a sandbox must
//! stop and reports each attempt as a warning `probe NAME: RESULT`: writing `--outside PATH`,
//! writing `probe.txt` in its folder and in `$XDG_CACHE_HOME`, reading the environment of the
//! process `--peek PID` (the tool's, holding its secrets), connecting to `127.0.0.1:--port N`,
//! and what it sees of its own `PROBE_*` variables).
//!
//! In every mode it answers the navigation requests over the open documents (`def NAME`
//! defines a function, indented a method; each whole-word `NAME` refers to it; `NAME(` calls
//! it), and `textDocument/rename` with a `WorkspaceEdit` (`changes`) that
//! replaces the word at the position wherever it stands in an open document, plus an insertion
//! at the start of PATH for each open document's line `rename-also:PATH` (a file the test puts
//! outside the workspace).
#![allow(clippy::print_stdout, reason = "stdout is the protocol")]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};

use serde_json::{Value, json};

fn read_message(input: &mut impl BufRead) -> Option<Value> {
    let mut length = None;
    loop {
        let mut line = String::new();
        if input.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(value) = line.strip_prefix("Content-Length:") {
            length = value.trim().parse::<usize>().ok();
        }
    }
    let mut body = vec![0; length?];
    input.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

/// Writes one framed message in one write: the `loading` mode's thread writes beside the main
/// loop, and standard output locks for each write.
fn write_message(out: &mut impl Write, message: &Value) {
    let body = message.to_string();
    let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
    let _ = out.write_all(frame.as_bytes());
    let _ = out.flush();
}

fn progress(kind: &str) -> Value {
    let mut value = json!({"kind": kind});
    if kind == "begin" {
        value["title"] = json!("Loading the project");
    }
    json!({"jsonrpc": "2.0", "method": "$/progress", "params": {"token": "load", "value": value}})
}

fn diagnostics(text: &str, docs: &BTreeMap<String, (i64, String)>) -> Vec<Value> {
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let at = |severity: u8, message: String| {
            json!({
                "range": {"start": {"line": n, "character": 0}, "end": {"line": n, "character": 1}},
                "severity": severity, "source": "fake", "code": "F1", "message": message
            })
        };
        if line.contains("ERROR") {
            out.push(at(1, format!("error here: {}", line.trim())));
        }
        if line.contains("WARN") {
            out.push(at(2, "warning here".into()));
        }
        if let Some(name) = line.split("needs:").nth(1) {
            let name = name.split_whitespace().next().unwrap_or("");
            let wanted = format!("provides:{name}");
            if !docs.values().any(|(_, text)| text.contains(&wanted)) {
                out.push(at(1, format!("{name} is missing")));
            }
        }
    }
    out
}

/// Whether `c` belongs to a word.
fn word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The word at a request's position, in its document (ASCII text: columns are bytes).
fn word_at(params: &Value, docs: &BTreeMap<String, (i64, String)>) -> String {
    let uri = params["textDocument"]["uri"].as_str().unwrap_or("");
    let line = params["position"]["line"].as_u64().unwrap_or(0) as usize;
    let at = params["position"]["character"].as_u64().unwrap_or(0) as usize;
    let text = docs.get(uri).map(|(_, text)| text.as_str()).unwrap_or("");
    let line_text = text.lines().nth(line).unwrap_or("");
    let at = at.min(line_text.len());
    let start = line_text[..at]
        .rfind(|c: char| !word_char(c))
        .map_or(0, |i| i + 1);
    let end = line_text[start..]
        .find(|c: char| !word_char(c))
        .map_or(line_text.len(), |i| start + i);
    line_text[start..end].to_owned()
}

/// The whole-word places of `word` in every open document: (uri, line, column).
fn places(word: &str, docs: &BTreeMap<String, (i64, String)>) -> Vec<(String, usize, usize)> {
    let mut found = Vec::new();
    if word.is_empty() {
        return found;
    }
    for (doc, (_, text)) in docs {
        for (n, line) in text.lines().enumerate() {
            for (i, _) in line.match_indices(word) {
                let before = line[..i].chars().next_back();
                let after = line[i + word.len()..].chars().next();
                if !before.is_some_and(word_char) && !after.is_some_and(word_char) {
                    found.push((doc.clone(), n, i));
                }
            }
        }
    }
    found
}

fn range(line: usize, column: usize, len: usize) -> Value {
    json!({"start": {"line": line, "character": column}, "end": {"line": line, "character": column + len}})
}

/// Where `word` is defined: the first `def WORD` of an open document.
fn definition_of(
    word: &str,
    docs: &BTreeMap<String, (i64, String)>,
) -> Option<(String, usize, usize)> {
    places(word, docs).into_iter().find(|(doc, line, column)| {
        let text = &docs[doc].1;
        let line = text.lines().nth(*line).unwrap_or("");
        line[..*column].trim_end().ends_with("def")
    })
}

/// A call hierarchy item of the function defined at a place.
fn item(name: &str, (uri, line, column): &(String, usize, usize)) -> Value {
    json!({"name": name, "kind": 12, "uri": uri, "range": range(*line, 0, column + name.len()),
           "selectionRange": range(*line, *column, name.len())})
}

/// The function a line defines (`def NAME`, indented for a method): its name's column, the
/// name, and whether it is indented.
fn defined(line: &str) -> Option<(usize, String, bool)> {
    let rest = line.trim_start().strip_prefix("def ")?;
    let name: String = rest.chars().take_while(|c| word_char(*c)).collect();
    Some((line.len() - rest.len(), name, line.starts_with(' ')))
}

/// The function whose `def` holds a line (the nearest `def` above it at indentation 0).
fn enclosing(text: &str, line: usize) -> Option<(usize, usize, String)> {
    text.lines()
        .enumerate()
        .take(line + 1)
        .filter_map(|(n, l)| match defined(l)? {
            (column, name, false) => Some((n, column, name)),
            _ => None,
        })
        .last()
}

/// The answer to a navigation request, over the open documents: `def NAME` defines a
/// function (indented: a method of the `def` above), every whole-word `NAME` refers to it,
/// and `NAME(` calls it. `None` for a method that is not navigation.
fn navigate(method: &str, params: &Value, docs: &BTreeMap<String, (i64, String)>) -> Option<Value> {
    let word = word_at(params, docs);
    let location = |(uri, line, column): &(String, usize, usize), len: usize| json!({"uri": uri, "range": range(*line, *column, len)});
    Some(match method {
        "textDocument/definition" | "textDocument/typeDefinition" => {
            definition_of(&word, docs).map_or(Value::Null, |place| location(&place, word.len()))
        }
        "textDocument/implementation" => match definition_of(&word, docs) {
            // As a LocationLink, the other shape of the answer.
            Some((uri, line, column)) => json!([{"targetUri": uri,
                "targetRange": range(line, 0, column + word.len()),
                "targetSelectionRange": range(line, column, word.len())}]),
            None => Value::Null,
        },
        "textDocument/references" => Value::Array(
            places(&word, docs)
                .iter()
                .map(|place| location(place, word.len()))
                .collect(),
        ),
        "textDocument/hover" if word.is_empty() => Value::Null,
        "textDocument/hover" => {
            json!({"contents": {"kind": "markdown", "value": format!("```\ndef {word}()\n```\nThe function {word}.")}})
        }
        "textDocument/documentSymbol" => {
            let uri = params["textDocument"]["uri"].as_str().unwrap_or("");
            let text = docs.get(uri).map(|(_, text)| text.as_str()).unwrap_or("");
            let mut top: Vec<Value> = Vec::new();
            for (n, line) in text.lines().enumerate() {
                let Some((column, name, indented)) = defined(line) else {
                    continue;
                };
                let symbol = json!({"name": name, "kind": if indented { 6 } else { 12 },
                    "range": range(n, 0, line.len()), "selectionRange": range(n, column, name.len()),
                    "children": []});
                match top.last_mut() {
                    Some(parent) if indented => {
                        if let Some(children) = parent["children"].as_array_mut() {
                            children.push(symbol);
                        }
                    }
                    _ => top.push(symbol),
                }
            }
            Value::Array(top)
        }
        "workspace/symbol" => {
            let query = params["query"].as_str().unwrap_or("");
            let mut found = Vec::new();
            for (uri, (_, text)) in docs {
                for (n, line) in text.lines().enumerate() {
                    let Some((column, name, _)) = defined(line) else {
                        continue;
                    };
                    if name.contains(query) {
                        found.push(json!({"name": name, "kind": 12, "containerName": "fakemod",
                            "location": {"uri": uri, "range": range(n, column, name.len())}}));
                    }
                }
            }
            Value::Array(found)
        }
        "textDocument/prepareCallHierarchy" => match definition_of(&word, docs) {
            Some(place) => json!([item(&word, &place)]),
            None => Value::Null,
        },
        "callHierarchy/incomingCalls" => {
            let name = params["item"]["name"].as_str().unwrap_or("");
            let mut calls = Vec::new();
            for (uri, line, column) in places(name, docs) {
                let text = &docs[&uri].1;
                let after = text.lines().nth(line).unwrap_or("")[column + name.len()..].to_owned();
                if !after.starts_with('(') {
                    continue;
                }
                let Some((def_line, def_column, caller)) = enclosing(text, line) else {
                    continue;
                };
                let from = item(&caller, &(uri.clone(), def_line, def_column));
                calls.push(json!({"from": from, "fromRanges": [range(line, column, name.len())]}));
            }
            Value::Array(calls)
        }
        "callHierarchy/outgoingCalls" => {
            let name = params["item"]["name"].as_str().unwrap_or("");
            let mut calls = Vec::new();
            if let Some((uri, def_line, _)) = definition_of(name, docs) {
                let text = &docs[&uri].1;
                for (n, line) in text.lines().enumerate().skip(def_line + 1) {
                    if line.starts_with("def ") {
                        break;
                    }
                    for (callee, (c_uri, c_line, c_column)) in docs
                        .values()
                        .flat_map(|(_, t)| t.lines())
                        .filter_map(|l| Some(defined(l)?.1))
                        .filter_map(|callee| Some((callee.clone(), definition_of(&callee, docs)?)))
                    {
                        if let Some(i) = line.find(&format!("{callee}(")) {
                            calls.push(json!({"to": item(&callee, &(c_uri, c_line, c_column)),
                                "fromRanges": [range(n, i, callee.len())]}));
                        }
                    }
                }
            }
            Value::Array(calls)
        }
        _ => return None,
    })
}

/// The `WorkspaceEdit` renaming the word at the position wherever it stands in an open
/// document (ASCII text: columns are bytes), plus an insertion at the start of PATH for each
/// open document's line `rename-also:PATH`.
fn rename(params: &Value, docs: &BTreeMap<String, (i64, String)>) -> Value {
    let word = word_at(params, docs);
    if word.is_empty() {
        return Value::Null;
    }
    let new_name = params["newName"].as_str().unwrap_or("");
    let mut changes: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for (doc, line, column) in places(&word, docs) {
        changes
            .entry(doc)
            .or_default()
            .push(json!({"range": range(line, column, word.len()), "newText": new_name}));
    }
    for (_, text) in docs.values() {
        for path in text
            .lines()
            .filter_map(|line| line.strip_prefix("rename-also:"))
        {
            changes.insert(
                format!("file://{}", path.trim()),
                vec![json!({"range": range(0, 0, 0), "newText": "x"})],
            );
        }
    }
    json!({ "changes": changes })
}

/// The value after `flag` on the command line.
fn arg<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    let at = args.iter().position(|a| a == flag)?;
    args.get(at + 1).map(String::as_str)
}

/// What `hostile` tries, one line each.
fn probes(args: &[String]) -> Vec<String> {
    let said = |done: std::io::Result<String>| match done {
        Ok(what) => what,
        Err(error) => format!("refused ({error})"),
    };
    let mut out = Vec::new();
    if let Some(outside) = arg(args, "--outside") {
        let done = std::fs::write(outside, "escaped").map(|()| "wrote".to_owned());
        out.push(format!("probe write-outside: {}", said(done)));
    }
    let done = std::fs::write("probe.txt", "written").map(|()| "wrote".to_owned());
    out.push(format!("probe write-workspace: {}", said(done)));
    if let Some(cache) = std::env::var_os("XDG_CACHE_HOME") {
        let file = std::path::Path::new(&cache).join("probe.txt");
        let done = std::fs::write(file, "cached").map(|()| "wrote".to_owned());
        out.push(format!("probe write-cache: {}", said(done)));
    }
    if let Some(pid) = arg(args, "--peek") {
        let done = std::fs::read(format!("/proc/{pid}/environ"))
            .map(|bytes| format!("read {} bytes", bytes.len()));
        out.push(format!("probe peek: {}", said(done)));
    }
    if let Some(port) = arg(args, "--port").and_then(|p| p.parse::<u16>().ok()) {
        let address = std::net::SocketAddr::from(([127, 0, 0, 1], port));
        #[allow(
            clippy::disallowed_methods,
            reason = "a hostile server of the tests tries the host's loopback, which the sandbox must stop"
        )]
        let done =
            std::net::TcpStream::connect_timeout(&address, std::time::Duration::from_secs(2))
                .map(|_| "connected".to_owned());
        out.push(format!("probe connect: {}", said(done)));
    }
    let mut seen: Vec<String> = std::env::vars_os()
        .filter(|(key, _)| key.to_string_lossy().starts_with("PROBE_"))
        .map(|(key, value)| format!("{}={}", key.to_string_lossy(), value.to_string_lossy()))
        .collect();
    seen.sort();
    out.push(format!("probe env: {}", seen.join(" ")));
    out
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = args.first().cloned().unwrap_or_else(|| "normal".into());
    if let Some(i) = args.iter().position(|a| a == "--pid-file")
        && let Some(file) = args.get(i + 1)
    {
        let _ = std::fs::write(file, std::process::id().to_string());
    }
    let stdin = std::io::stdin();
    let mut input = BufReader::new(stdin.lock());
    let mut out = std::io::stdout();
    // `loading` and `loading-forever`: whether the project has loaded (until then, answers
    // come from the open documents alone, as a real server's do while it loads).
    let loaded = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(
        !mode.starts_with("loading"),
    ));
    let mut load_started = false;
    // What loading the project found: every `.fk` file of the root folder.
    let project: std::sync::Arc<std::sync::Mutex<BTreeMap<String, (i64, String)>>> =
        std::sync::Arc::default();
    let mut root = String::new();
    let mut docs: BTreeMap<String, (i64, String)> = BTreeMap::new();
    let mut last: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let published_file = args
        .iter()
        .position(|a| a == "--pid-file")
        .and_then(|i| args.get(i + 1))
        .map(|file| format!("{file}.published"));
    let mut published = 0usize;
    while let Some(message) = read_message(&mut input) {
        let method = message["method"].as_str().unwrap_or("");
        let id = message.get("id").cloned();
        let known = if loaded.load(std::sync::atomic::Ordering::SeqCst) {
            let mut known = project.lock().map(|p| p.clone()).unwrap_or_default();
            known.extend(docs.iter().map(|(doc, state)| (doc.clone(), state.clone())));
            known
        } else {
            // Before the project has loaded: only the document asked about.
            let uri = message["params"]["textDocument"]["uri"]
                .as_str()
                .unwrap_or("");
            docs.iter()
                .filter(|(doc, _)| *doc == uri)
                .map(|(doc, state)| (doc.clone(), state.clone()))
                .collect()
        };
        if id.is_some()
            && let Some(result) = navigate(method, &message["params"], &known)
        {
            write_message(
                &mut out,
                &json!({"jsonrpc": "2.0", "id": id, "result": result}),
            );
            continue;
        }
        match method {
            "initialize" if mode != "silent-init" => {
                root = message["params"]["rootUri"]
                    .as_str()
                    .and_then(|uri| uri.strip_prefix("file://"))
                    .unwrap_or("")
                    .to_owned();
                write_message(
                    &mut out,
                    &json!({"jsonrpc": "2.0", "id": id, "result": {"capabilities": {"textDocumentSync": 1}}}),
                );
            }
            "shutdown" if mode != "hang-shutdown" => {
                write_message(
                    &mut out,
                    &json!({"jsonrpc": "2.0", "id": id, "result": null}),
                );
            }
            "exit" if mode != "hang-shutdown" => std::process::exit(0),
            "textDocument/rename" => {
                let result = rename(&message["params"], &docs);
                write_message(
                    &mut out,
                    &json!({"jsonrpc": "2.0", "id": id, "result": result}),
                );
            }
            "textDocument/didOpen" | "textDocument/didChange" => {
                let doc = &message["params"]["textDocument"];
                let uri = doc["uri"].as_str().unwrap_or("").to_owned();
                let version = doc["version"].as_i64().unwrap_or(0);
                let text = if method == "textDocument/didOpen" {
                    doc["text"].as_str().unwrap_or("").to_owned()
                } else {
                    message["params"]["contentChanges"][0]["text"]
                        .as_str()
                        .unwrap_or("")
                        .to_owned()
                };
                docs.insert(uri.clone(), (version, text));
                if mode == "chatty" && !load_started {
                    load_started = true;
                    // Never quiet: a report on a document nobody opened every 20 ms.
                    std::thread::spawn(|| {
                        let mut out = std::io::stdout();
                        loop {
                            write_message(
                                &mut out,
                                &json!({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
                                        "params": {"uri": "file:///chatter.fk", "diagnostics": []}}),
                            );
                            std::thread::sleep(std::time::Duration::from_millis(20));
                        }
                    });
                }
                if mode.starts_with("loading") {
                    if !load_started {
                        load_started = true;
                        write_message(&mut out, &progress("begin"));
                        if mode == "loading" {
                            // The project loads for 300 ms, reads the main loop never waits for.
                            let loaded = std::sync::Arc::clone(&loaded);
                            let project = std::sync::Arc::clone(&project);
                            let uri = uri.clone();
                            let root = root.clone();
                            std::thread::spawn(move || {
                                std::thread::sleep(std::time::Duration::from_millis(300));
                                let mut found = BTreeMap::new();
                                for entry in
                                    std::fs::read_dir(&root).into_iter().flatten().flatten()
                                {
                                    let path = entry.path();
                                    if path.extension().is_some_and(|e| e == "fk")
                                        && let Ok(text) = std::fs::read_to_string(&path)
                                    {
                                        found.insert(
                                            format!("file://{}", path.display()),
                                            (0, text),
                                        );
                                    }
                                }
                                if let Ok(mut project) = project.lock() {
                                    *project = found;
                                }
                                loaded.store(true, std::sync::atomic::Ordering::SeqCst);
                                let mut out = std::io::stdout();
                                write_message(&mut out, &progress("end"));
                                write_message(
                                    &mut out,
                                    &json!({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics",
                                            "params": {"uri": uri, "diagnostics": []}}),
                                );
                            });
                        }
                    }
                    if !loaded.load(std::sync::atomic::Ordering::SeqCst) {
                        continue;
                    }
                }
                match mode.as_str() {
                    "late" => std::thread::sleep(std::time::Duration::from_millis(300)),
                    "crash" => {
                        eprintln!(
                            "fake: loading the project\nfake: cannot go on: crashing on purpose"
                        );
                        std::process::exit(3)
                    }
                    "slow" => continue,
                    "malformed" => {
                        let _ = write!(out, "Content-Lenght 12\r\n\r\n{{}}");
                        let _ = out.flush();
                        continue;
                    }
                    "huge" => {
                        let _ = write!(out, "Content-Length: 104857600\r\n\r\n");
                        let chunk = vec![b' '; 1 << 20];
                        for _ in 0..100 {
                            if out.write_all(&chunk).is_err() {
                                break;
                            }
                        }
                        let _ = out.flush();
                        continue;
                    }
                    "flood" => {
                        for n in 0..100_000 {
                            write_message(
                                &mut out,
                                &json!({"jsonrpc": "2.0", "method": "window/logMessage", "params": {"type": 4, "message": format!("noise {n}")}}),
                            );
                        }
                    }
                    _ => {}
                }
                let probed = if mode == "hostile" {
                    probes(&args)
                } else {
                    Vec::new()
                };
                for (other, (version, text)) in &docs {
                    if mode == "own-only" && *other != uri {
                        continue;
                    }
                    let uri = other;
                    let mut found = diagnostics(text, &docs);
                    for (n, line) in probed.iter().enumerate() {
                        found.push(json!({
                            "range": {"start": {"line": n, "character": 0}, "end": {"line": n, "character": 1}},
                            "severity": 2, "source": "fake", "code": "P", "message": line
                        }));
                    }
                    if mode == "changes-only" && last.get(uri) == Some(&found) {
                        continue;
                    }
                    last.insert(uri.clone(), found.clone());
                    let mut params = json!({"uri": uri, "diagnostics": found});
                    if mode != "noversion" && mode != "changes-only" {
                        params["version"] = json!(version);
                    }
                    write_message(
                        &mut out,
                        &json!({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": params}),
                    );
                }
                if mode == "late"
                    && let Some(file) = &published_file
                {
                    published += 1;
                    let _ = std::fs::write(file, published.to_string());
                }
            }
            _ => {}
        }
    }
    if mode == "hang-shutdown" {
        // Deaf to its input closing too: only a kill ends it.
        loop {
            std::thread::sleep(std::time::Duration::from_secs(60));
        }
    }
}

"""pyright alone: a bare LSP client doing what the `lsp` bench's `big` case does through
vak-tools (the same 5,000-line file, the same 20 alternate changes adding and removing a type
error), timing each change from `didChange` to pyright's report for that version. Run beside
`cargo bench -p vak-tool-lsp --bench lsp --profile dev -- big` to compare: what vak-tools adds
to a change is the difference.

Usage: python3 crates/vak-tool-lsp/benches/pyright_alone.py [RUNS]
"""

import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time


def frame(message: dict) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read(stream) -> dict:
    length = 0
    while True:
        line = stream.readline()
        if not line:
            raise EOFError("pyright closed its output")
        line = line.strip()
        if not line:
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(stream.read(length))


def main(runs: int) -> None:
    folder = pathlib.Path(tempfile.mkdtemp())
    path = folder / "bench.py"
    body = "".join(f"def f{i}(x: int) -> int:\n    return x + {i}\n\n" for i in range(1666))
    good, bad = body + "y: int = f1(2)\n", body + "y: str = f1(2)\n"
    path.write_text(good)
    uri = path.as_uri()
    server = subprocess.Popen(
        ["pyright-langserver", "--stdio"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=folder,
    )
    send = lambda message: (server.stdin.write(frame(message)), server.stdin.flush())

    def until(done) -> dict:
        while True:
            message = read(server.stdout)
            if "id" in message and "method" in message:
                # A request of the server (configuration, capabilities): answer it plainly.
                send({"jsonrpc": "2.0", "id": message["id"], "result": None})
                continue
            if done(message):
                return message

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "processId": os.getpid(), "rootUri": folder.as_uri(), "capabilities": {
            "textDocument": {"publishDiagnostics": {"versionSupport": True}}}}})
    until(lambda m: m.get("id") == 1)
    send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uri, "languageId": "python", "version": 1, "text": good}}})
    is_report = lambda version: lambda m: (
        m.get("method") == "textDocument/publishDiagnostics"
        and m["params"]["uri"] == uri
        and m["params"].get("version") == version)
    started = time.perf_counter()
    until(is_report(1))
    print(f"cold start (first report): {time.perf_counter() - started:.3f} s")
    times = []
    for run in range(runs):
        version = run + 2
        text = bad if run % 2 == 0 else good
        path.write_text(text)
        started = time.perf_counter()
        send({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"text": text}]}})
        send({"jsonrpc": "2.0", "method": "textDocument/didSave", "params": {
            "textDocument": {"uri": uri}, "text": text}})
        until(is_report(version))
        times.append(time.perf_counter() - started)
    times.sort()
    print(
        f"pyright alone, {runs} changes of a {len(good.splitlines())}-line file: "
        f"median {statistics.median(times):.3f} s, p90 {times[int(runs * 0.9)]:.3f} s, "
        f"min {times[0]:.3f} s, max {times[-1]:.3f} s"
    )
    send({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
    send({"jsonrpc": "2.0", "method": "exit"})
    server.wait(timeout=10)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)

"""What two attacks on `vak-tools mcp --http` cost the server (docs/benchmarks.md).

1. A maximal batch: one 2025-03-26 session posts a batch of N pings (90,000 by default, about
   3.9 MiB, under `max_body_bytes`); printed: the answer's status, the members answered, the
   wall time and the server's peak resident memory (VmHWM) before and after.
2. Half-open connections: the server runs under `prlimit --nofile=1024`; this opens N
   connections (1,200 by default) that each send half a request head and stop; printed: the
   connections the server holds, the CPU time it burns in the next 3 s, and whether a normal
   `initialize` from another address (127.0.0.2) is answered within 10 s.

Usage: python3 crates/vak-tools-cli/benches/mcp_attacks.py VAK_TOOLS [PINGS] [HALF_OPEN]
(0 skips an attack).
"""

import json
import os
import re
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time

TOKEN = "bench-token-0123456789abcdef"


def serve(binary, workspace, nofile=None):
    command = [binary, "mcp", "--http", "127.0.0.1:0", "--workspace", workspace]
    if nofile:
        command = ["prlimit", f"--nofile={nofile}:{nofile}", "--"] + command
    env = dict(os.environ, VAK_MCP_TOKEN=TOKEN, NO_COLOR="1")
    child = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in child.stderr:
        found = re.search(r"serving MCP at http://127\.0\.0\.1:(\d+)/", line)
        if found:
            # Keep draining standard error so the server never blocks on it.
            threading.Thread(target=lambda: [None for _ in child.stderr], daemon=True).start()
            return child, int(found.group(1))
    raise SystemExit("the server ended before it served")


def post(port, body, session=None, timeout=600, source=None):
    data = body.encode()
    head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n"
            f"Authorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nContent-Length: {len(data)}\r\n")
    if session:
        head += f"Mcp-Session-Id: {session}\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                  source_address=source) as stream:
        stream.sendall(head.encode() + b"\r\n" + data)
        answer = b""
        while chunk := stream.recv(1 << 20):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    status = int(head.split()[1])
    sid = re.search(rb"(?i)mcp-session-id: *([^\r\n]+)", head)
    return status, body.decode(errors="replace"), sid and sid.group(1).decode()


def peak_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def sockets_of(pid):
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            count += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
        except OSError:
            pass
    return max(count - 1, 0)


INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-03-26", "capabilities": {},
    "clientInfo": {"name": "bench", "version": "0"}}}


def batch(binary, pings):
    with tempfile.TemporaryDirectory() as workspace:
        child, port = serve(binary, workspace)
        try:
            _, _, session = post(port, json.dumps(INITIALIZE))
            post(port, json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                 session)
            before = peak_kib(child.pid)
            body = json.dumps([{"jsonrpc": "2.0", "id": i, "method": "ping"}
                               for i in range(pings)], separators=(",", ":"))
            started = time.monotonic()
            try:
                status, answer, _ = post(port, body, session)
            except OSError:
                # No answer within post's timeout (600 s by default).
                status, answer = None, ""
            took = time.monotonic() - started
            try:
                answered = len(json.loads(answer)) if status == 200 else 0
            except ValueError:
                answered = 0
            print(json.dumps({"attack": "batch", "pings": pings, "body_bytes": len(body),
                              "status": status, "answered": answered,
                              "seconds": round(took, 2), "peak_mib_before": before // 1024,
                              "peak_mib_after": peak_kib(child.pid) // 1024}))
        finally:
            child.kill()
            child.wait()


def half_open(binary, count):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, count + 512)), hard))
    with tempfile.TemporaryDirectory() as workspace:
        child, port = serve(binary, workspace, nofile=1024)
        held = []
        try:
            for _ in range(count):
                try:
                    stream = socket.create_connection(("127.0.0.1", port), timeout=5)
                    stream.sendall(f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                                   "X-Slow: ".encode())
                except OSError:
                    # The backlog is full: the server accepts no more.
                    break
                held.append(stream)
            time.sleep(2)
            cpu = cpu_seconds(child.pid)
            time.sleep(3)
            burnt = cpu_seconds(child.pid) - cpu
            holding = sockets_of(child.pid)
            try:
                # From another address (127.0.0.2): the attacker's is at its per-peer bound.
                status, _, _ = post(port, json.dumps(INITIALIZE), timeout=10,
                                    source=("127.0.0.2", 0))
            except OSError:
                status = None
            print(json.dumps({"attack": "half-open", "connections": count,
                              "connected": len(held),
                              "held_by_server": holding, "cpu_seconds_in_3s": round(burnt, 2),
                              "normal_initialize_status": status}))
        finally:
            for stream in held:
                stream.close()
            child.kill()
            child.wait()


if __name__ == "__main__":
    binary = sys.argv[1]
    pings = int(sys.argv[2]) if len(sys.argv) > 2 else 90_000
    connections = int(sys.argv[3]) if len(sys.argv) > 3 else 1200
    if pings:
        batch(binary, pings)
    if connections:
        half_open(binary, connections)

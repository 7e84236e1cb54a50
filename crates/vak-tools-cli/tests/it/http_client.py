"""The Python MCP SDK (`mcp` 2.x) drives `vak-tools mcp --http` with a bearer token.

Ten sessions start at once. Each first runs `echo session-N` (its result is `c1` in that
session's ledger), then 10 `bash` calls at once: 100 calls in all. The calls of one session
write the same workspace, so they run one after another (their claims conflict): the server's limit is
reached across sessions. Each call takes a slot (a
folder under `slots/`), notes how many slots it saw, and waits for a `release` file. The script
waits until the server's limit of calls is reached, checks that no more have started a second
later, then releases them. Last, each session recalls its own `c1`: sessions do not share a
ledger. The client is pinned to the initialize handshake (`mode="legacy"`): that is what
gives it a session. It prints one JSON object for the Rust test (`http.rs`) to check.

Usage: python3 http_client.py URL TOKEN WORKSPACE MAX_CALLS
"""

import json
import pathlib
import sys

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

SESSIONS = 10
CALLS_PER_SESSION = 10
GATED = (
    'd=$(mktemp -d slots/s.XXXXXX) && ls slots | wc -l >> counts && '
    "while [ ! -e release ]; do sleep 0.05; done; rmdir \"$d\"; echo done"
)


def text_of(result) -> str:
    return "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")


def is_error(result) -> bool:
    return bool(getattr(result, "is_error", getattr(result, "isError", False)))


async def main(url: str, token: str, workspace: str, max_calls: str) -> None:
    limit = int(max_calls)
    root = pathlib.Path(workspace)
    (root / "slots").mkdir()
    summary = {"calls": 0, "errors": [], "plateau": None, "after_wait": None, "own_c1": []}

    async def session(index: int, started: anyio.Event) -> None:
        headers = {"Authorization": f"Bearer {token}"}
        async with create_mcp_http_client(headers=headers) as http:
            # The initialize handshake (a session): left to itself, the SDK 2.3 picks 2026-07-28,
            # where requests have no session and so no ledger of their own to compare.
            async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
                first = await client.call_tool("bash", {"command": f"echo session-{index}"})
                if is_error(first):
                    summary["errors"].append(text_of(first))
                started.set()

                async def one() -> None:
                    result = await client.call_tool("bash", {"command": GATED})
                    summary["calls"] += 1
                    if is_error(result) or "done" not in text_of(result):
                        summary["errors"].append(text_of(result))

                async with anyio.create_task_group() as calls:
                    for _ in range(CALLS_PER_SESSION):
                        calls.start_soon(one)
                recalled = await client.call_tool(
                    "recall", {"call_id": "c1", "from_line": 1, "to_line": 3}
                )
                summary["own_c1"].append(f"session-{index}" in text_of(recalled))

    async def release() -> None:
        slots = root / "slots"
        with anyio.fail_after(120):
            while len(list(slots.iterdir())) < limit:
                await anyio.sleep(0.05)
        summary["plateau"] = len(list(slots.iterdir()))
        # If the limit did not hold, more calls would start meanwhile.
        await anyio.sleep(1)
        summary["after_wait"] = len(list(slots.iterdir()))
        (root / "release").write_text("go\n")

    async with anyio.create_task_group() as group:
        for index in range(SESSIONS):
            group.start_soon(session, index, anyio.Event())
        group.start_soon(release)
    counts = [int(line) for line in (root / "counts").read_text().split()]
    summary["max_seen"] = max(counts)
    print(json.dumps(summary))


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:5])

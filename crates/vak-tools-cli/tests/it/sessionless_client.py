"""The Python MCP SDK (`mcp` 2.x) with its defaults, which over Streamable HTTP speak 2026-07-28
without a session, runs a background job and reaches it again, and recalls a long result.

It starts `bash` in the background, types a line into it with `jobs write`, reads its answer
with `jobs read`, lists and stops it, then asks `bash` for a long output and `recall`s the
part its window left out. It prints one JSON object for the Rust test (`sdk_defaults.rs`).

Usage: python3 sessionless_client.py URL
"""

import json
import re
import sys

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


def text_of(result) -> str:
    return "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")


def failed(result) -> bool:
    return bool(getattr(result, "is_error", getattr(result, "isError", False)))


async def main(url: str) -> None:
    got = {}
    async with Client(streamable_http_client(url)) as client:
        started = await client.call_tool(
            "bash",
            {"command": "echo ready; read line; echo got-$line; sleep 600", "run_in_background": True},
        )
        got["started"] = text_of(started)
        got["started_failed"] = failed(started)
        found = re.search(r'job_id "(j[0-9a-f]{32})"', got["started"])
        if found:
            job = found.group(1)
            got["job_id"] = job
            wrote = await client.call_tool("jobs", {"action": "write", "job_id": job, "input": "hello\n"})
            seen = text_of(wrote)
            for _ in range(60):
                if "got-hello" in seen:
                    break
                read = await client.call_tool("jobs", {"action": "read", "job_id": job, "wait_ms": 1000})
                seen += text_of(read)
            got["answered"] = "got-hello" in seen
            got["listed"] = text_of(await client.call_tool("jobs", {"action": "list"}))
            stopped = await client.call_tool("jobs", {"action": "stop", "job_id": job})
            got["stopped_failed"] = failed(stopped)
        long = text_of(await client.call_tool("bash", {"command": "seq 1 20000"}))
        marker = re.search(r'recall (\{[^}]*\})', long)
        if marker:
            args = json.loads(marker.group(1))
            got["recall_id"] = args["call_id"]
            recalled = await client.call_tool("recall", args)
            got["recalled_failed"] = failed(recalled)
            got["recalled_chars"] = len(text_of(recalled))
    print(json.dumps(got))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])

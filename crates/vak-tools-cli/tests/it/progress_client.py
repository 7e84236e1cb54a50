"""A real MCP client, the Python SDK (`mcp` 2.x), drives `vak-tools mcp` over stdio.

It calls `bash` with a progress callback on a command that waits until the client has heard
two progress notifications (the callback creates a file the command waits for: no clock), then
prints what it heard as one JSON object for the Rust test (`jobs.rs`) to check.

Usage: python3 progress_client.py VAK_TOOLS WORKSPACE
"""

import json
import pathlib
import sys

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client


async def main(binary: str, workspace: str) -> None:
    heard: list[dict] = []
    flag = pathlib.Path(workspace) / "heard-two"

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        heard.append({"progress": progress, "total": total, "message": message})
        if len(heard) == 2:
            flag.write_text("yes\n")

    params = StdioServerParameters(command=binary, args=["mcp", "--workspace", workspace])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool(
                "bash",
                {
                    "command": "echo waiting; while [ ! -e heard-two ]; do sleep 0.05; done; "
                    "echo heard",
                    "timeout_ms": 120000,
                },
                progress_callback=on_progress,
            )
    text = "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")
    is_error = getattr(result, "is_error", getattr(result, "isError", None))
    print(json.dumps({"heard": heard, "text": text, "is_error": is_error}))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])

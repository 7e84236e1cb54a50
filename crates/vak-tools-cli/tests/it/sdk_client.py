"""The Python MCP SDK's high-level `Client` (`mcp` 2.x), with its defaults, against
`vak-tools mcp` over Streamable HTTP and over stdio: what a person using the SDK sees.

`bash` shows its output, `exit 3` is an error result, a call that runs past `[mcp]
task_after_ms` still comes back as its result (the client does not poll tasks), and the tools
whose results are data return `structuredContent` (the SDK checks it against the tool's
`outputSchema` and raises when it does not validate). It prints one JSON object for the Rust
test (`sdk_client.rs`) to check.

Usage: python3 sdk_client.py WORKSPACE http URL
       python3 sdk_client.py WORKSPACE stdio VAK_TOOLS
"""

import json
import pathlib
import sys

import anyio
from mcp import Client, StdioServerParameters


def summary_of(result) -> dict:
    text = "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")
    return {
        "text": text,
        "is_error": result.is_error,
        "structured": result.structured_content,
    }


async def calls(client) -> dict:
    tools = await client.list_tools()
    schemas = sorted(tool.name for tool in tools.tools if tool.output_schema is not None)
    got = {"with_output_schema": schemas}
    got["echo"] = summary_of(await client.call_tool("bash", {"command": "echo out; echo err >&2"}))
    got["exit3"] = summary_of(await client.call_tool("bash", {"command": "echo failing; exit 3"}))
    got["long"] = summary_of(await client.call_tool("bash", {"command": "sleep 2; echo late"}))
    got["glob"] = summary_of(await client.call_tool("glob", {"pattern": "**/*.txt"}))
    got["grep"] = summary_of(await client.call_tool("grep", {"pattern": "needle", "output": "files"}))
    got["tree"] = summary_of(await client.call_tool("tree", {}))
    got["jobs"] = summary_of(await client.call_tool("jobs", {"action": "list"}))
    got["changes_none"] = summary_of(await client.call_tool("changes", {}))
    wrote = await client.call_tool("write", {"path": "made.txt", "content": "made\n"})
    got["write"] = summary_of(wrote)
    got["changes"] = summary_of(await client.call_tool("changes", {}))
    listed = (got["changes"]["structured"] or {}).get("calls") or [{}]
    call_id = listed[0].get("call_id") or ""
    got["changes_one"] = summary_of(await client.call_tool("changes", {"call_id": call_id}))
    return got


async def main(workspace: str, transport: str, target: str) -> None:
    (pathlib.Path(workspace) / "notes.txt").write_text("a needle here\n")
    if transport == "http":
        server = target
    else:
        server = StdioServerParameters(command=target, args=["mcp", "--workspace", workspace])
    async with Client(server) as client:
        got = await calls(client)
    print(json.dumps(got))


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:4])

"""The Python MCP SDK (`mcp` 2.x), with its default settings, reads large results from
`vak-tools mcp` over Streamable HTTP and over stdio.

It writes a PNG of random pixels whose base64 is just under 4 MiB (`read` sends images up to
4 MiB of base64), reads it with `read`, and also asks `bash` for a long output. The SDK's SSE
reader refuses any event over 1 MiB by default: a result sent as one event fails there. It
prints one JSON object for the Rust test (`sdk_defaults.rs`) to check.

Usage: python3 sdk_defaults_client.py WORKSPACE http URL
       python3 sdk_defaults_client.py WORKSPACE stdio VAK_TOOLS
"""

import base64
import json
import os
import pathlib
import struct
import sys
import zlib

import anyio
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

SIDE = 1000


def noise_png(path: pathlib.Path) -> int:
    """Writes a SIDE x SIDE RGB PNG of random pixels; returns its base64 length."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + os.urandom(SIDE * 3) for _ in range(SIDE))
    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", SIDE, SIDE, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(rows, 1))
        + chunk(b"IEND", b"")
    )
    path.write_bytes(png)
    return len(base64.b64encode(png))


def summary_of(result) -> dict:
    images = [block.data for block in result.content if getattr(block, "type", "") == "image"]
    text = "\n".join(block.text for block in result.content if getattr(block, "type", "") == "text")
    is_error = getattr(result, "is_error", getattr(result, "isError", None))
    return {"image_lengths": [len(data) for data in images], "text_chars": len(text), "is_error": is_error}


async def calls(client) -> dict:
    image = await client.call_tool("read", {"path": "noise.png"})
    long = await client.call_tool("bash", {"command": "seq 1 200000"})
    return {"image": summary_of(image), "long": summary_of(long)}


async def main(workspace: str, transport: str, target: str) -> None:
    expected = noise_png(pathlib.Path(workspace) / "noise.png")
    if transport == "http":
        async with Client(streamable_http_client(target)) as client:
            got = await calls(client)
    else:
        params = StdioServerParameters(command=target, args=["mcp", "--workspace", workspace])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                got = await calls(session)
    got["expected_image_length"] = expected
    print(json.dumps(got))


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:4])

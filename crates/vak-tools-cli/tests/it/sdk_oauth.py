"""The Python MCP SDK's OAuth client (`OAuthClientProvider`) end to end against
`vak-tools mcp --http` with `[mcp.oauth]` and a real oidc-provider (oauth.rs starts both): a
401 names the resource metadata, the SDK finds the issuer's metadata, registers itself,
authorizes with PKCE and `resource` (the "browser" here follows the issuer's redirects, its
pages approving), reads, gets 403 insufficient_scope on a write, steps up to vak:write and
writes. Prints one JSON object for the Rust test.

Usage: python3 sdk_oauth.py MCP_URL
"""
import json, sys, urllib.parse
import anyio, httpx2
from mcp import Client
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientMetadata, AuthorizationCodeResult

REDIRECT = "http://127.0.0.1:1/callback"

class Memory(TokenStorage):
    def __init__(self): self.tokens = None; self.client = None
    async def get_tokens(self): return self.tokens
    async def set_tokens(self, tokens): self.tokens = tokens
    async def get_client_info(self): return self.client
    async def set_client_info(self, info): self.client = info

async def main(url):
    log = []
    got = {}
    async with httpx2.AsyncClient(follow_redirects=False) as browser:
        async def redirect_handler(auth_url):
            log.append(auth_url)
            location = auth_url
            for _ in range(20):
                reply = await browser.get(location)
                location = reply.headers.get("location")
                if location is None:
                    raise RuntimeError(f"the issuer stopped at {reply.status_code}: {reply.text[:300]}")
                location = urllib.parse.urljoin(str(reply.url), location)
                if location.startswith(REDIRECT):
                    query = urllib.parse.parse_qs(urllib.parse.urlparse(location).query)
                    got["code"] = query.get("code", [None])[0]
                    got["state"] = query.get("state", [None])[0]
                    got["iss"] = query.get("iss", [None])[0]
                    if got["code"] is None:
                        raise RuntimeError(f"no code: {location}")
                    return
            raise RuntimeError("too many redirects")
        async def callback_handler():
            return AuthorizationCodeResult(code=got["code"], state=got["state"], iss=got.get("iss"))
        auth = OAuthClientProvider(
            server_url=url,
            client_metadata=OAuthClientMetadata(client_name="sdk-test", redirect_uris=[REDIRECT],
                grant_types=["authorization_code", "refresh_token"], response_types=["code"]),
            storage=Memory(), redirect_handler=redirect_handler, callback_handler=callback_handler)
        async with httpx2.AsyncClient(auth=auth, timeout=30) as http:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                tools = await client.list_tools()
                out = {"tools": len(tools.tools)}
                read = await client.call_tool("glob", {"pattern": "*"})
                out["glob_error"] = read.is_error
                wrote = await client.call_tool("write", {"path": "by-sdk.txt", "content": "made\n"})
                out["write_error"] = wrote.is_error
                out["write_text"] = "\n".join(b.text for b in wrote.content if getattr(b, "type", "") == "text")[:300]
    out["authorizations"] = len(log)
    out["scopes"] = [urllib.parse.parse_qs(urllib.parse.urlparse(u).query).get("scope", [""])[0] for u in log]
    print(json.dumps(out))

anyio.run(main, sys.argv[1])

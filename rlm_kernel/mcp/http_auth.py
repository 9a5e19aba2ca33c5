"""Bearer-token check in front of the streamable HTTP app: every HTTP request must carry
`Authorization: Bearer <token>` (compared in constant time); anything else gets 401 before MCP sees it."""

from __future__ import annotations

import hmac
import secrets
from typing import Any

__all__ = ["BearerToken", "new_token"]

Scope = dict[str, Any]


def new_token() -> str:
    return secrets.token_urlsafe(32)


class BearerToken:
    """ASGI middleware: HTTP requests without the token are refused; lifespan events pass through."""

    def __init__(self, app: Any, token: str) -> None:
        if len(token) < 16:
            raise ValueError("the bearer token must be at least 16 characters")
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not self._authorised(scope):
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")],
                }
            )
            await send({"type": "http.response.body", "body": b"missing or wrong bearer token\n"})
            return
        await self.app(scope, receive, send)

    def _authorised(self, scope: Scope) -> bool:
        given = [v for k, v in scope.get("headers", []) if k.lower() == b"authorization"]
        return len(given) == 1 and hmac.compare_digest(given[0], self._expected)

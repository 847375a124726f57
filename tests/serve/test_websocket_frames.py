"""WebSocket sessions are sent uncompressed: a client that offers permessage-deflate (as the
websockets library, and so openenv-core's client, does by default) gets plain frames, and
the server keeps no zlib stream per session."""

from __future__ import annotations

import json

from websockets.sync.client import connect

from .envs import served


def test_a_client_offering_compression_plays_over_plain_frames(serve) -> None:  # type: ignore[no-untyped-def]
    with serve([served("plain")]) as (url, _), connect(url.replace("http", "ws", 1) + "/envs/plain-v1/ws") as ws:
        offered = ws.request.headers.get("Sec-WebSocket-Extensions", "") if ws.request is not None else ""
        assert "permessage-deflate" in offered
        assert ws.response is not None and "Sec-WebSocket-Extensions" not in ws.response.headers
        assert ws.protocol.extensions == []
        ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
        reply = json.loads(ws.recv(timeout=30))
        assert reply["type"] == "observation", reply

"""A player's inbox: live notices to every page the player has open, on any process.

A notice (a private message, an invitation, "your turn", a quick-play match, a rematch, a
friend's presence) is a msgpack map with a string ``t``, published on the Redis channel
``inbox:<player id>`` (server.store.inbox_channel); the player's websocket ``/ws/me`` (on
whichever process holds it) relays it as it is. Publishing is fire and forget: a notice
nobody is listening for is lost, so everything a notice says can also be read over HTTP.

Must not import the engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgpack
import redis.asyncio

from server.store import inbox_channel


async def publish(redis: redis.asyncio.Redis, player_id: int,
                  notice: Mapping[str, Any]) -> None:
    """Send ``notice`` (a map with a string ``t``) to every open page of the player."""
    if not isinstance(notice.get("t"), str):
        raise ValueError("a notice is a map with a string 't'")
    await redis.publish(inbox_channel(player_id), bytes(msgpack.packb(dict(notice))))

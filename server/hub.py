"""The per-process fan-out, under its historical name: see server.fanout (`Hub` composes the
registry of local tables, the pub/sub reader, delivery, presence and chat)."""

from __future__ import annotations

from server.fanout import Hub, LocalTable

__all__ = ["Hub", "LocalTable"]

"""What a finished game's reader downloads, rendered once: its transcript and its replay views
as gzip-compressed JSON (a replay repeats most of the table in every view: it compresses about
fifteen times, so serving it costs the event loop little). Runs in a worker process of its own
(spawned by TableService), so that a long game's replay never holds up the event loop. Imports
only the engine.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping
from typing import Any

import engine


def render(kind: str, transcript: Mapping[str, Any]) -> bytes:
    """``kind`` "transcript": the transcript itself; "replay": ``{"views": [...]}``; as
    gzip-compressed JSON."""
    if kind == "transcript":
        body: Any = transcript
    elif kind == "replay":
        body = {"views": engine.replay_views(dict(transcript))}
    else:
        raise ValueError(f"nothing to render as {kind!r}")
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    return gzip.compress(text, compresslevel=6, mtime=0)

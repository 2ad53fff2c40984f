"""Reading transcript files' bytes: JSON, or msgpack when the first non-blank byte is not `{`.

`msgpack` is imported lazily, only when handed msgpack data; everything else here is
standard library. Imports only `engine.errors`.
"""

from __future__ import annotations

import json
from typing import Any

from engine.errors import InvalidTranscript


def load_transcript(data: bytes) -> dict[str, Any]:
    """Decode a transcript file's contents (raises `InvalidTranscript` bad_format)."""
    stripped = data.lstrip()
    if not stripped:
        raise InvalidTranscript("bad_format", "the file is empty")
    if stripped[:1] == b"{":
        try:
            decoded = json.loads(stripped.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise InvalidTranscript("bad_format", f"not valid JSON: {exc}") from exc
    else:
        try:
            import msgpack
        except ImportError as exc:  # pragma: no cover - msgpack is a declared dependency
            raise InvalidTranscript("bad_format", "msgpack is not installed") from exc
        try:
            decoded = msgpack.unpackb(stripped, raw=False, strict_map_key=False)
        except Exception as exc:  # msgpack raises several unrelated types on bad data
            raise InvalidTranscript("bad_format", f"neither JSON nor msgpack: {exc}") from exc
    if not isinstance(decoded, dict):
        raise InvalidTranscript("bad_format", "a transcript is an object")
    return decoded

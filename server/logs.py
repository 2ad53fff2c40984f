"""Structured logging: one JSON object per line, with the table id on every line that has one.

Owns: the log format. Callers pass fields as `extra={"fields": {...}}` through `event()`.
Never log a hand or any tile of one. Must not import the rest of the server.
"""

from __future__ import annotations

import json
import logging
import sys
import time

LOGGER_NAME = "dominoes"


class JsonLines(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "msg": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            line.update(fields)
        if record.exc_info:
            line["exc"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str, separators=(",", ":"))


def configure(level: str) -> logging.Logger:
    logger = logging.getLogger(LOGGER_NAME)
    if not any(isinstance(h.formatter, JsonLines) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(JsonLines())
        logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    return logger


def event(msg: str, *, level: int = logging.INFO, exc: bool = False, **fields: object) -> None:
    """Log `msg` with fields (table=..., seat=..., conn=...)."""
    logger = logging.getLogger(LOGGER_NAME)
    if logger.isEnabledFor(level):
        logger.log(level, msg, extra={"fields": fields}, exc_info=exc)


def now_ms() -> int:
    return int(time.time() * 1000)

"""The engine's error tree: every refusal carries a stable machine word (`code`).

Imports nothing from the rest of the engine; standard library only.
"""

from __future__ import annotations


def shown(value: object, limit: int = 40) -> str:
    """How a message shows a value it was given: the repr of a string, number, boolean or
    None, cut to `limit` characters; only the kind of anything else ("a list"), since a
    client's value may be nested too deep to print, or large."""
    if value is None or isinstance(value, bool | int | float | str):
        text = repr(value)
        return text if len(text) <= limit else text[: limit - 1] + "\u2026"
    return f"a {type(value).__name__}"


class EngineError(Exception):
    """Base of every error the engine raises on bad input.

    `code` is a stable machine-readable word, `message` plain words. `round` and
    `move` locate the problem when it was found while replaying a transcript.
    """

    code: str
    message: str
    round: int | None
    move: int | None

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.round = None
        self.move = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r})"


class InvalidNotation(EngineError):
    """A tile or move written in a form the notation does not allow."""


class InvalidRules(EngineError):
    """A rules spec that names an unknown preset or a bad option; `option` names it."""

    option: str | None

    def __init__(self, code: str, message: str, option: str | None = None) -> None:
        super().__init__(code, message)
        self.option = option


class IllegalMove(EngineError):
    """A well-formed move the rules do not allow in this position."""


class InvalidTranscript(EngineError):
    """A transcript (or stored state) that cannot be replayed."""

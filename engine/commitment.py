"""The commitment to a game's seed (notation.md "Fair deals"), shown before the game starts.

The commitment is the SHA-256 of the ASCII text ``dominoes-deal/1:<seed>:<salt>`` (the seed in
decimal, the salt as 32 lowercase hex digits), written as 64 lowercase hex digits. The salt
makes the seed impossible to find from the commitment by trying seeds. Transcripts write the
seed as that decimal text (a string: JSON readers such as JavaScript's lose integers above
2**53). Imports only `engine.errors` and the standard library (`hashlib`, `re`).
"""

from __future__ import annotations

import hashlib
import re

from engine.errors import InvalidTranscript

SCHEME = "dominoes-deal/1"
SALT_HEX_DIGITS = 32
SEED_DIGITS = 40  # the server's seeds have 19 at most; longer text is refused before int()
_HEX = frozenset("0123456789abcdef")
_DECIMAL = re.compile(r"0|[1-9][0-9]*")


def _is_hex(text: object, digits: int) -> bool:
    return isinstance(text, str) and len(text) == digits and set(text) <= _HEX


def check_seed(seed: object) -> int:
    """`seed` if it is a non-negative integer, else `InvalidTranscript` bad_seed."""
    if type(seed) is not int or seed < 0:
        raise InvalidTranscript("bad_seed", "seed must be a non-negative integer")
    return seed


def seed_text(seed: int) -> str:
    """The seed as transcripts write it and the commitment hashes it: decimal digits."""
    return str(check_seed(seed))


def parse_seed(text: object) -> int:
    """The seed a transcript's `seed` string names; `InvalidTranscript` bad_seed unless it is
    decimal digits without sign or leading zero (at most 40 of them)."""
    if not isinstance(text, str) or len(text) > SEED_DIGITS or not _DECIMAL.fullmatch(text):
        raise InvalidTranscript(
            "bad_seed", "seed must be a string of decimal digits (no sign, no leading zero)")
    return int(text)


def check_salt(salt: object) -> str:
    """`salt` if it is 32 lowercase hex digits, else `InvalidTranscript` bad_salt."""
    if not _is_hex(salt, SALT_HEX_DIGITS):
        raise InvalidTranscript("bad_salt", f"salt must be {SALT_HEX_DIGITS} lowercase hex digits")
    assert isinstance(salt, str)
    return salt


def check_commitment(commitment: object) -> str:
    """`commitment` if it is 64 lowercase hex digits, else `InvalidTranscript` bad_commitment."""
    if not _is_hex(commitment, 64):
        raise InvalidTranscript("bad_commitment", "a commitment is 64 lowercase hex digits")
    assert isinstance(commitment, str)
    return commitment


def commitment_text(seed: int, salt: str) -> bytes:
    """The bytes the commitment hashes: ``dominoes-deal/1:<seed>:<salt>`` in ASCII."""
    return f"{SCHEME}:{seed_text(seed)}:{check_salt(salt)}".encode("ascii")


def commitment(seed: int, salt: str) -> str:
    """The commitment to a game's `seed` with `salt`: SHA-256 in 64 lowercase hex digits."""
    return hashlib.sha256(commitment_text(seed, salt)).hexdigest()

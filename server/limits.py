"""Rate limits: a token bucket per connection and a bad-token budget per client address.

Owns: the arithmetic of limits. Must not import the rest of the server.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(slots=True)
class TokenBucket:
    """`rate` tokens per second up to `burst`. Each message takes one token, even refused ones,
    so a client that keeps flooding falls to `-burst` and is cut off."""

    rate: float
    burst: int
    clock: Callable[[], float] = time.monotonic
    tokens: float = field(init=False)
    stamp: float = field(init=False)

    def __post_init__(self) -> None:
        self.tokens = float(self.burst)
        self.stamp = self.clock()

    def _refill(self) -> None:
        now = self.clock()
        self.tokens = min(float(self.burst), self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now

    def take(self) -> str:
        """'ok', 'limited' (refuse this message) or 'cut' (close the connection)."""
        self._refill()
        self.tokens -= 1.0
        if self.tokens >= 0:
            return "ok"
        if self.tokens <= -self.burst:
            return "cut"
        return "limited"

    def available(self) -> bool:
        """Whether a token is there to `spend` (nothing is taken)."""
        self._refill()
        return self.tokens >= 1.0

    def spend(self) -> None:
        """Take a token that `available` said is there: a budget that charges only what it
        lets through (chat's) is whole again `burst / rate` seconds after the last line it let
        through, however many it refused meanwhile."""
        self._refill()
        self.tokens -= 1.0


def charged_refusal(code: str, token: object) -> bool:
    """Whether a refusal (its ``code``) of a request that carried ``token`` is charged to the
    address's bad-token budget: a token that holds no seat (``bad_token``), and one answered
    ``unknown_table`` (a private table answers so a token that is not one of its seats', as if
    it did not exist; a table that really does not exist costs the same, so the budget tells
    nothing about which tables exist)."""
    return token is not None and code in ("bad_token", "unknown_table")


class AddressBudget:
    """At most `per_minute` failures per client address (a leaky bucket that drains in a
    minute). Only failures are counted, so whoever holds a valid token is never refused because
    of someone else's bad ones; the level never rises above the budget, so however many
    failures arrive at once, the budget is whole again a minute after they stop."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute = per_minute
        self.clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}

    def _level(self, address: str) -> float:
        now = self.clock()
        level, stamp = self._buckets.get(address, (0.0, now))
        level = max(0.0, level - (now - stamp) * self.per_minute / 60.0)
        self._buckets[address] = (level, now)
        if len(self._buckets) > 100_000:  # forget the quiet ones
            self._buckets = {a: v for a, v in self._buckets.items() if v[0] > 0}
        return level

    def charge(self, address: str) -> bool:
        """Count one failure from ``address``. False when its budget was already spent: the
        caller answers rate_limited instead of the failure itself."""
        level = self._level(address)
        if level + 1.0 > self.per_minute:
            return False
        self._buckets[address] = (level + 1.0, self.clock())
        return True

    def retry_after_s(self, address: str) -> int:
        """Seconds until ``address`` may fail once more."""
        missing = self._level(address) + 1.0 - self.per_minute
        return max(1, math.ceil(missing * 60.0 / max(1, self.per_minute)))

"""Rate limits: a token bucket per connection and a bad-token budget per client address.

Owns: the arithmetic of limits. Must not import the rest of the server.
"""

from __future__ import annotations

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

    def take(self) -> str:
        """'ok', 'limited' (refuse this message) or 'cut' (close the connection)."""
        now = self.clock()
        self.tokens = min(float(self.burst), self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        self.tokens -= 1.0
        if self.tokens >= 0:
            return "ok"
        if self.tokens <= -self.burst:
            return "cut"
        return "limited"


class AddressBudget:
    """At most `per_minute` failures per client address (a sliding budget)."""

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

    def exhausted(self, address: str) -> bool:
        return self._level(address) >= self.per_minute

    def fail(self, address: str) -> None:
        level = self._level(address)
        self._buckets[address] = (level + 1.0, self.clock())

"""Reading a table's history one bounded chunk at a time (a resume, a `sync`), and the pace
of history replays per client address.

Owns: the windowed read of one audience's frames: the version and at most `max_frames` stream
entries after `since` (`Store.history_window`), cut at `max_bytes` of that audience's frames.
The stream layout and the meaning of its entries are server.store's (this keeps the rules of
`Store.frames_since_many`, through `server.store.frames_of`). `ReplayPace`:
the versions of history replayed to one client address per second, in this process
(REPLAY_RATE).
Must not import the engine, tables or the hub.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from server.store import Frames, Store, as_bytes, frames_of


@dataclass(frozen=True, slots=True)
class Chunk:
    """Frames since+1 .. since+len(frames) of one audience, and the table's version when read."""

    since: int
    frames: Frames
    current: int

    @property
    def last(self) -> int:
        """The version the receiver holds once these frames are applied."""
        return self.frames[-1][0] if self.frames else self.since

    @property
    def done(self) -> bool:
        """Whether these frames reach the table's version (nothing older is left to send)."""
        return self.last >= self.current


async def read_chunk(store: Store, table_id: str, audience: str, since: int, *,
                     max_frames: int, max_bytes: int) -> Chunk | None:
    """The next chunk of `audience`'s history after `since`: at most `max_frames` frames and,
    beyond the first, at most `max_bytes` bytes. None when part of that history is gone or
    `since` is not a version of the table (a snapshot is needed)."""
    if since < 0:
        return None
    # Version first, then the stream (two single-key reads, as Store.frames_since_many).
    current, entries = await store.history_window(table_id, since, max_frames)
    wanted = audience.encode()
    kept, size = 0, 0
    for _, fields in entries:
        size += len(fields.get(wanted) or b"")
        if kept and size > max_bytes:
            break
        kept += 1
    entries = entries[:kept]
    versions = [int(as_bytes(entry_id).split(b"-", 1)[1]) for entry_id, _ in entries]
    # Up to the last entry read (or the table's version when none was): Store's rules then say
    # whether these are exactly the versions since+1.. in order, for this audience.
    upto = min(current, versions[-1]) if versions else current
    frames = frames_of(audience, since, upto, versions, entries)
    if frames is None:
        return None
    return Chunk(since, frames, max(current, frames[-1][0] if frames else since))


class ReplayPace:
    """A token bucket of versions per client address: `rate` a second, up to `burst`. A replay
    takes a chunk whenever its address's bucket is not in debt and pays for it after (the
    bucket may go below zero by one chunk), so an address replays at most `burst` versions at
    once and then `rate` a second, however many sockets it opens; the others are not slowed."""

    def __init__(self, rate: float, burst: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.rate, self.burst, self.clock = rate, burst, clock
        self._levels: dict[str, tuple[float, float]] = {}  # address -> (tokens, when)

    def _level(self, address: str, now: float) -> float:
        tokens, stamp = self._levels.get(address, (float(self.burst), now))
        return min(float(self.burst), tokens + (now - stamp) * self.rate)

    def wait_s(self, address: str) -> float:
        """How long `address` must wait before its next chunk (0: at once)."""
        tokens = self._level(address, self.clock())
        if tokens >= 0:
            return 0.0
        return -tokens / self.rate if self.rate > 0 else 3600.0

    def spend(self, address: str, versions: int) -> None:
        now = self.clock()
        self._levels[address] = (self._level(address, now) - versions, now)
        if len(self._levels) > 10_000:  # forget the addresses whose bucket is full again
            self._levels = {a: (t, w) for a, (t, w) in self._levels.items()
                            if t + (now - w) * self.rate < self.burst}

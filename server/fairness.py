"""Fair shares for the deadline scheduler: who owns a table, a round-robin queue over owners,
and a budget of CPU time; and the key every per-address limit counts a client by.

Owns: pure bookkeeping (no I/O). Must not import the rest of the server.
"""

from __future__ import annotations

import hashlib
import ipaddress
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


def owner_key(address: str | None) -> str | None:
    """The owner of a table created from client ``address``: the address itself for IPv4, its
    /64 network for IPv6 (one host usually holds a whole /64), hashed so that Redis never holds
    an address. None when the address is unknown."""
    if not address:
        return None
    text = address
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        pass
    else:
        if isinstance(ip, ipaddress.IPv6Address):
            mapped = ip.ipv4_mapped
            text = str(mapped) if mapped else str(ipaddress.ip_network(f"{ip}/64", strict=False))
        else:
            text = str(ip)
    return "a:" + hashlib.sha256(text.encode()).hexdigest()[:16]


def client_owner(client: object) -> str | None:
    """`owner_key` of a connection's or request's client (Starlette's ``Address``, or None):
    an IPv6 host is one client whichever address of its /64 it uses."""
    return owner_key(getattr(client, "host", None))


def client_key(client: object) -> str:
    """The key a per-address limit counts a client by: `client_owner`, "?" when unknown."""
    return client_owner(client) or "?"


class FairQueue(Generic[T]):
    """Items queued per key (an owner), served round-robin over the keys, in order within one
    key: an owner with a thousand items waiting gets one turn, like an owner with one."""

    def __init__(self) -> None:
        self._queues: OrderedDict[str, deque[T]] = OrderedDict()
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[T]:
        for queue in self._queues.values():
            yield from queue

    def push(self, key: str, item: T) -> None:
        self._queues.setdefault(key, deque()).append(item)
        self._size += 1

    def pop(self, skip: Callable[[str], bool] | None = None) -> tuple[str, T] | None:
        """The next item and its key: the first key in turn for which ``skip`` is not true
        (skipped keys keep their place); that key then goes to the back. None: nothing to
        serve."""
        for key, queue in self._queues.items():
            if skip is not None and skip(key):
                continue
            item = queue.popleft()
            self._size -= 1
            if queue:
                self._queues.move_to_end(key)
            else:
                del self._queues[key]
            return key, item
        return None


class CpuBudget:
    """A bucket of CPU seconds refilled at ``rate`` seconds per second of wall time, holding at
    most ``burst``. A job may start while the bucket is not empty: it takes its estimated cost
    when it starts and settles the difference with its real cost when it ends."""

    def __init__(self, rate: float, burst: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if rate <= 0 or burst <= 0:
            raise ValueError("a CPU budget needs a positive rate and burst")
        self.rate = rate
        self.burst = burst
        self.clock = clock
        self._tokens = burst
        self._stamp = clock()

    @property
    def tokens(self) -> float:
        now = self.clock()
        self._tokens = min(self.burst, self._tokens + (now - self._stamp) * self.rate)
        self._stamp = now
        return self._tokens

    def available(self) -> bool:
        return self.tokens > 0

    def take(self, estimate: float) -> None:
        self._tokens = self.tokens - estimate

    def settle(self, estimate: float, actual: float) -> None:
        self._tokens = min(self.burst, self.tokens + estimate - actual)

    def wait_s(self) -> float:
        """Seconds until the bucket is no longer empty (0 when it is not)."""
        tokens = self.tokens
        return 0.0 if tokens > 0 else -tokens / self.rate

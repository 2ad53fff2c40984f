"""Spectators and chat: how many spectator sockets a table and a client address may have, and
how much a table may chat.

Owns the policy and its atomic steps on the keys server.store names (``TableKeys.watchers``:
the table's spectator sockets over every process, member ``<process>:<connection>``, score =
the ms it expires at, renewed with presence so that the sockets of a vanished process stop
counting after RECONNECT_WINDOW_S; ``TableKeys.chat_budget``: token buckets (TABLE_CHAT_RATE)
of the players' lines and of the spectators' lines of the table, shared by every process).
In this process: the spectator sockets of each client address (MAX_SPECTATORS_PER_ADDRESS).
Must not import the engine, tables or the hub.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from server.connection import Connection
from server.logs import now_ms
from server.metrics import Metrics
from server.rejected import Rejected
from server.settings import Settings
from server.store import Store, TableKeys

_ADMIT_LUA = """
-- KEYS: 1 watchers; ARGV: 1 now ms, 2 cap, 3 member, 4 expiry ms
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[4], ARGV[3])
redis.call('PEXPIREAT', KEYS[1], ARGV[4])
return redis.call('ZCARD', KEYS[1])
"""
_CHAT_LUA = """
-- KEYS: 1 chat budget (hash tokens, stamp), 2 watchers; ARGV: 1 rate per s, 2 burst,
-- 3 spectator chat ('' for a seat, 'on', 'off', 'auto'), 4 crowd size, 5 now ms, 6 TTL ms
if ARGV[3] == 'off' then return 'off' end
if ARGV[3] == 'auto' and redis.call('ZCOUNT', KEYS[2], ARGV[5], '+inf') > tonumber(ARGV[4]) then
  return 'off'
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'stamp')
local tokens = tonumber(state[1]) or burst
local stamp = tonumber(state[2]) or now
if now > stamp then
  tokens = math.min(burst, tokens + (now - stamp) * rate / 1000)
  stamp = now
end
if tokens < 1 then return 'limited' end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens - 1), 'stamp', tostring(stamp))
redis.call('PEXPIRE', KEYS[1], ARGV[6])
return 'ok'
"""

CHAT_MODES = {True: "on", False: "off", None: "auto"}  # TableConfig.spectator_chat -> mode


def too_many(message: str) -> Rejected:
    return Rejected("too_many_spectators", message, status=429)


class Crowd:
    def __init__(self, store: Store, settings: Settings, metrics: Metrics,
                 process_id: str) -> None:
        self.store = store
        self.settings = settings
        self.metrics = metrics
        self.process_id = process_id
        self._admit = store.redis.register_script(_ADMIT_LUA)
        self._chat = store.redis.register_script(_CHAT_LUA)
        self.by_address: dict[str, int] = {}
        self.admitted: dict[int, tuple[str, str]] = {}  # connection id -> (address, table id)

    def member(self, conn: Connection) -> str:
        return f"{self.process_id}:{conn.id}"

    def expiry_ms(self) -> int:
        """Until when a slot renewed now counts (RECONNECT_WINDOW_S from now)."""
        return now_ms() + int(self.settings.reconnect_window_s * 1000)

    # ---- spectator slots -----------------------------------------------------------------

    async def admit(self, conn: Connection) -> int:
        """Count `conn` (a spectator) against its address and its table; Rejected
        `too_many_spectators` (nothing counted) when either is at its cap. Returns the
        table's spectators, this one included."""
        address = conn.address
        if self.by_address.get(address, 0) >= self.settings.max_spectators_per_address:
            self.metrics.spectators_refused.labels(cap="address").inc()
            raise too_many("too many spectators from your address; try again later")
        self.by_address[address] = self.by_address.get(address, 0) + 1
        self.admitted[conn.id] = (address, conn.table)
        try:
            now = now_ms()
            admitted = await self._admit(
                keys=[TableKeys(conn.table).watchers],
                args=[now, self.settings.max_spectators_per_table, self.member(conn),
                      self.expiry_ms()])
        except BaseException:
            self.forget(conn)
            raise
        if not admitted:
            self.forget(conn)
            self.metrics.spectators_refused.labels(cap="table").inc()
            raise too_many("this table has as many spectators as it takes; try again later")
        return int(admitted)

    def forget(self, conn: Connection) -> str | None:
        """Stop counting `conn` for its address; the table it was counted at (None: it was not
        counted). Its slot at the table is freed by `release`."""
        entry = self.admitted.pop(conn.id, None)
        if entry is None:
            return None
        address, table_id = entry
        left = self.by_address.get(address, 1) - 1
        if left > 0:
            self.by_address[address] = left
        else:
            self.by_address.pop(address, None)
        return table_id

    async def release(self, conn: Connection, table_id: str) -> int:
        """Uncount `conn`; returns the table's spectators left."""
        await self.store.release_watcher(table_id, self.member(conn))
        return await self.store.watcher_count(table_id, now_ms())

    def members(self, spectators: Iterable[Connection]) -> list[str]:
        """The slots to renew of this process's spectators of a table (those it counted;
        `Store.refresh_presence` renews them)."""
        return [self.member(c) for c in spectators if c.id in self.admitted]

    # ---- chat ----------------------------------------------------------------------------

    async def take_chat(self, table_id: str, mode: str) -> str:
        """One line of the table's chat budget: 'ok', 'limited' (budget spent) or 'off'
        (spectator chat is off). `mode`: '' for a seat's line, else the table's spectator chat
        mode ('on', 'off' or 'auto': on while at most SPECTATOR_CHAT_MAX spectators watch)."""
        s = self.settings
        ttl_ms = (math.ceil(s.table_chat_burst / s.table_chat_rate * 1000) + 1000
                  if s.table_chat_rate > 0 else 7 * 86400 * 1000)
        verdict = await self._chat(
            keys=[TableKeys(table_id).chat_budget(bool(mode)), TableKeys(table_id).watchers],
            args=[s.table_chat_rate, s.table_chat_burst, mode, s.spectator_chat_max, now_ms(),
                  ttl_ms])
        return verdict.decode() if isinstance(verdict, bytes) else str(verdict)

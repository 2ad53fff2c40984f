"""The tables this process serves and the sockets at each, and what one client address may
hold of them.

Owns: `LocalTable` (one table's audiences, its delivery lock and pump state, its `attaching`
counter) and `LocalTables` (table id -> LocalTable, MAX_TABLES_PER_PROCESS, the address limits
of server.admission). Pure bookkeeping: no I/O.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from server.admission import AddressLimits
from server.connection import Connection
from server.metrics import Metrics
from server.settings import Settings


@dataclass(eq=False)
class LocalTable:
    id: str
    players: int
    audiences: dict[str, set[Connection]] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    dirty: bool = False
    force: bool = False  # fetch even if no notice says there is something new (resubscribed)
    pumping: bool = False
    announced: int = -1  # highest version announced by a notice
    noticed_at: float = 0.0
    chat_mode: str = ""  # spectator chat: "on", "off", "auto" ("": not read yet)
    attaching: int = 0  # sockets on their way in: the table is not dropped under them

    def connections(self) -> list[Connection]:
        return [c for conns in self.audiences.values() for c in conns]

    @property
    def idle(self) -> bool:
        """No socket is at the table or on its way in: it may be dropped."""
        return not self.audiences and not self.attaching


class LocalTables:
    """The local tables by id, and the per-address limits on sockets and tables."""

    def __init__(self, metrics: Metrics, settings: Settings) -> None:
        self.metrics = metrics
        self.max_tables = settings.max_tables_per_process
        self.tables: dict[str, LocalTable] = {}
        self.limits = AddressLimits(
            settings.max_sockets_per_address,
            int(settings.max_tables_per_process * settings.tables_per_address_share))

    def get(self, table_id: str) -> LocalTable | None:
        return self.tables.get(table_id)

    def __contains__(self, table_id: object) -> bool:
        return table_id in self.tables

    def full(self) -> bool:
        return len(self.tables) >= self.max_tables

    def add(self, table_id: str, players: int) -> LocalTable:
        table = LocalTable(table_id, players)
        self.tables[table_id] = table
        self.metrics.tables.set(len(self.tables))
        return table

    def remove(self, table_id: str) -> None:
        self.tables.pop(table_id, None)
        self.metrics.tables.set(len(self.tables))

    def values(self) -> list[LocalTable]:
        return list(self.tables.values())

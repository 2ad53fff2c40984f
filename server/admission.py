"""What one client address may hold of this process: sockets (MAX_SOCKETS_PER_ADDRESS) and
attached tables (TABLES_PER_ADDRESS_SHARE of MAX_TABLES_PER_PROCESS), so that one client cannot
take the slots everyone else needs. Counted in this process only: each process keeps its own
last slots free. Pure bookkeeping: imports nothing from the project.
"""

from __future__ import annotations

from collections import Counter


class AddressLimits:
    def __init__(self, max_sockets: int, max_tables: int) -> None:
        self.max_sockets = max_sockets
        self.max_tables = max(1, max_tables)
        self.sockets: Counter[str] = Counter()
        self.tables: dict[str, Counter[str]] = {}  # address -> table id -> its sockets there

    def open_socket(self, address: str) -> bool:
        """Count a new socket of ``address``; False (nothing counted) when it has its cap."""
        if self.sockets[address] >= self.max_sockets:
            return False
        self.sockets[address] += 1
        return True

    def close_socket(self, address: str) -> None:
        self.sockets[address] -= 1
        if self.sockets[address] <= 0:
            del self.sockets[address]

    def attach(self, address: str, table_id: str) -> bool:
        """Count a socket of ``address`` at ``table_id``; False (nothing counted) when that is
        a table more than the address's share."""
        held = self.tables.setdefault(address, Counter())
        if table_id not in held and len(held) >= self.max_tables:
            if not held:
                del self.tables[address]
            return False
        held[table_id] += 1
        return True

    def detach(self, address: str, table_id: str) -> None:
        held = self.tables.get(address)
        if held is None or table_id not in held:
            return
        held[table_id] -= 1
        if held[table_id] <= 0:
            del held[table_id]
        if not held:
            del self.tables[address]

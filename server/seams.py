"""The seams between the server's parts: what each part needs of the table service, as
`typing.Protocol`s, and the typed application state the lifespan builds.

The fan-out (server.fanout), the socket layer (server.ws), the lobby (server.lobby) and the
deadline scheduler (server.scheduler) each name the protocol of what they call; the concrete
`server.tables.TableService` satisfies every one of them. Importing only types (under
TYPE_CHECKING) from the parts that import this module, so it creates no import circle.
Must not import the engine.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from server.store import Frames, Store

if TYPE_CHECKING:  # types only: none of these is imported at run time from here
    import redis.asyncio as aioredis
    from starlette.applications import Starlette

    from engine import Move
    from server.admission import AddressLimits
    from server.analysis import Analyst
    from server.archive import Archive
    from server.db import Postgres
    from server.fanout import Hub
    from server.limits import AddressBudget
    from server.metrics import Metrics
    from server.quotas import Quotas
    from server.record import TableRecord
    from server.settings import Settings
    from server.tables import Change, Loaded


class CommitListening(Protocol):
    """Whether this process's own subscription to a table's notices is in effect, for each
    commit (Store.commit ``subscribed``), and when such a commit has returned."""

    def begin_commit(self, table_id: str) -> bool | None: ...

    def end_commit(self, table_id: str) -> None: ...


class TableFeed(Protocol):
    """What the fan-out reads of the tables: snapshots and histories per audience, the notice
    channel of commits, whether a seat's token still holds it, the spectator chat option."""

    store: Store
    # Told of each commit this process makes, with its frames (server.tables.TableService).
    committed: Callable[[str, int, Mapping[str, bytes], str | None], None] | None
    # Asked by each commit whether this process's subscription to the table's notices is in
    # effect (server.fanout.pubsub `Subscriber`; None: not asked).
    listening: CommitListening | None

    async def snapshot(self, table_id: str, audience: str) -> tuple[int, dict[str, Any]]: ...

    async def frames_since_many(
        self, table_id: str, sinces: Mapping[str, int]
    ) -> dict[str, Frames | None]: ...

    def notice_channel(self, table_id: str) -> str: ...

    def noticed(self, table_id: str, version: int, state: bytes, move: bool = False) -> None: ...

    async def token_current(self, table_id: str, seat: int, hashed: str) -> bool: ...

    async def spectator_chat(self, table_id: str) -> bool | None: ...


class TablePlay(Protocol):
    """What a websocket session asks of the tables besides the fan-out's reads."""

    async def authenticate(self, table_id: str, token: str | None,
                           invite: str | None = None) -> tuple[int | None, int]: ...

    async def snapshot(self, table_id: str, audience: str) -> tuple[int, dict[str, Any]]: ...

    async def submit(self, table_id: str, seat: int, move: Mapping[str, object],
                     expected_version: int, client_id: str, *,
                     token: str | None = None) -> int: ...

    async def ready(self, table_id: str, seat: int, token: str | None) -> int: ...

    async def hint(self, table_id: str, seat: int) -> tuple[int, dict[str, object]]: ...


class TableLobby(Protocol):
    """What the HTTP lobby asks of the tables."""

    async def create(self, request: Mapping[str, object],
                     owner: str | None = None) -> dict[str, Any]: ...

    async def list_public(self) -> list[dict[str, Any]]: ...

    async def summary(self, table_id: str, invite: str | None = None,
                      token: str | None = None) -> dict[str, Any]: ...

    async def join(self, table_id: str, seat: int | None, name: str,
                   invite: str | None, *, owner: str | None = None,
                   player: Mapping[str, Any] | None = None) -> tuple[int, str]: ...

    async def seated(self, owner: str) -> list[dict[str, Any]]: ...

    async def resume(self, table_id: str, owner: str) -> tuple[int, str]: ...

    async def revoke_tokens(self, owner: str, also: Sequence[str] = ()) -> int: ...

    async def claim_seats(self, guest: str, owner: str, player: Mapping[str, Any]) -> int: ...

    async def leave(self, table_id: str, token: str) -> None: ...

    async def rematch(self, table_id: str, token: str, *, creator: str | None = None,
                      before_make: Callable[[], Awaitable[None]] | None = None,
                      ) -> dict[str, Any]: ...

    async def rematch_seat(self, table_id: str, token: str) -> dict[str, Any]: ...

    async def transcript(self, table_id: str, invite: str | None = None,
                         token: str | None = None) -> bytes: ...

    async def replay(self, table_id: str, invite: str | None = None,
                     token: str | None = None) -> bytes: ...


class DeadlineTables(Protocol):
    """What the deadline scheduler asks of the tables: read one, write through its one write
    path, play a move, the clock."""

    store: Store
    bot_delay_ms: int
    seat_connect_ms: int

    def now_ms(self) -> int: ...

    async def load(self, table_id: str) -> Loaded: ...

    async def write(self, table_id: str, change: Callable[[Loaded], Change], *,
                    expected: int | None = None, client: tuple[int, str] | None = None,
                    require: tuple[int, str] | None = None) -> int: ...

    def play(self, record: TableRecord, seat: int, move: Move,
             extra_event: dict[str, Any] | None) -> Change: ...

    def deal(self, record: TableRecord, events: list[dict[str, Any]] | None = None
             ) -> Change: ...


class TableServices(TableFeed, TablePlay, TableLobby, Protocol):
    """Every seam at once: what the application state holds."""


@dataclass(frozen=True, slots=True)
class AppState:
    """The shared resources of one running application, built once by the lifespan and read
    by the request and websocket handlers (`app_state`). The PostgreSQL pool, which comes and
    goes with the database, is ``postgres.pool`` (None while it is down)."""

    settings: Settings
    metrics: Metrics
    redis: aioredis.Redis
    service: TableServices
    hub: Hub
    quotas: Quotas
    bad_tokens: AddressBudget
    address_limits: AddressLimits
    archive: Archive
    analyst: Analyst
    postgres: Postgres


STATE_ATTRIBUTE = "shared"  # the attribute of Starlette's ``app.state`` that holds it


def app_state(app: Starlette) -> AppState:
    """The application's `AppState` (set by the lifespan before any request is served)."""
    state = getattr(app.state, STATE_ATTRIBUTE, None)
    if not isinstance(state, AppState):
        raise RuntimeError("the application state is not built (the lifespan has not run)")
    return state

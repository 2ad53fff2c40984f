"""`TableRecord`: everything stored about one table, and the documents each audience sees.

Pure data and functions (no I/O): the state blob codec, the per-audience document of the wire
protocol, the lobby summary, and when the table next needs the scheduler. Imports `engine`.

Fair deals: a table's deal seed, the salt of its commitment and its bots' secret are chosen
when it is created and stay in the state blob; the documents show only the commitment, and
only the transcript of the finished game reveals the seed and salt (never the bots' secret).
"""

from __future__ import annotations

import functools
import secrets
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal, cast

import msgpack

import engine
from engine.state import twin
from server import clock as clocks
from server.diff import Bodies, Op, diff_at, diff_cut_at, same
from server.table_config import TableConfig

SPECTATORS = "s"
WAITING, PLAYING, FINISHED = "waiting", "playing", "finished"
STANDIN_BOT = "greedy"  # plays for a seat whose player left a game in progress


@dataclass(frozen=True, slots=True)
class Seat:
    """A seat. ``owner``: the identity that took it (server.identity: ``p:<id>`` for an
    account, ``g:<hash>`` for a guest), never shown. ``player``: for an account's seat, what
    everyone sees of it -- {"name", "rating", "provisional"} in the table's rating family."""

    name: str | None = None
    bot: str | None = None
    taken: bool = False
    owner: str | None = None
    player: Mapping[str, Any] | None = None

    def to_data(self) -> dict[str, Any]:
        """The seat as documents and the lobby show it (no owner)."""
        return {"name": self.name, "bot": self.bot, "taken": self.taken,
                "player": None if self.player is None else dict(self.player)}

    def to_blob(self) -> dict[str, Any]:
        found: dict[str, Any] = {"name": self.name, "bot": self.bot, "taken": self.taken}
        if self.owner is not None:
            found["owner"] = self.owner
        if self.player is not None:
            found["player"] = dict(self.player)
        return found


def audience_viewer(audience: str, players: int) -> int | None:
    """The engine viewer of an audience key ("s" or a seat number); ValueError if invalid."""
    if audience == SPECTATORS:
        return None
    if audience.isdigit() and len(audience) == 1 and int(audience) < players:
        return int(audience)
    raise ValueError(f"no audience {audience!r} at a {players}-player table")


def _field_ops(field: tuple[Any, ...], bodies: Bodies | None) -> list[Op]:
    """The ops of one field of engine.view_changes: the documents' diff of that field."""
    kind = field[0]
    if kind == "+":
        return [["+", ["game", field[1]], field[2]]]
    if kind == "emptied":  # §3: `=` with [] is no longer than `~` to 0
        return [["=", ["game", field[1]], []]]
    if kind == "cut":
        return diff_cut_at(field[2], field[3], field[4], ("game", field[1]), bodies)
    was, now = field[2], field[3]
    leaf = type(was)  # `diff_at`, without its call for a value that is no map or list
    if was is now:
        return []
    if leaf is not type(now):
        return [["=", ["game", field[1]], now]]
    if leaf is dict or leaf is list:
        return diff_at(was, now, ("game", field[1]), bodies)
    return [["=", ["game", field[1]], now]] if was != now else []


def audiences(players: int) -> list[str]:
    return [str(seat) for seat in range(players)] + [SPECTATORS]


@functools.cache
def _audience_viewers(players: int) -> tuple[tuple[str, ...], tuple[int | None, ...]]:
    """(`audiences`, the engine viewer of each) of a table of ``players``."""
    names = audiences(players)
    return tuple(names), tuple(audience_viewer(name, players) for name in names)


@dataclass(frozen=True, slots=True)
class TableRecord:
    id: str
    config: TableConfig
    created_ms: int
    seed: int
    status: str
    seats: tuple[Seat, ...]
    game: engine.GameState
    clock: clocks.ClockState | None = None
    result: dict[str, Any] | None = None
    invite_hash: str | None = None
    salt: str | None = None  # None: a table stored before deals were committed to
    bot_secret: int | None = None  # seeds the bots' own chance; unrelated to the deal seed
    started_ms: int | None = None  # when every seat was taken and play began
    # A rated game's rating changes by seat ({"seat", "before", "after", "provisional"}),
    # set once the archive has rated it.
    ratings: tuple[Mapping[str, Any], ...] | None = None
    # Between two hands (the pause): {"deadline": ms, "ready": [seats]}; None otherwise.
    next_hand: Mapping[str, Any] | None = None
    # A finished game's rematch: {"accepted": [seats], "table": the new table's id or None}
    # (TableService.rematch); None until a seat asks for one.
    rematch: Mapping[str, Any] | None = None

    @classmethod
    def new(cls, table_id: str, config: TableConfig, created_ms: int, seed: int,
            invite_hash: str | None, salt: str | None = None,
            bot_secret: int | None = None) -> TableRecord:
        """A waiting table dealt from `seed`; `salt` and `bot_secret` are drawn at random
        unless given."""
        seats = tuple(
            Seat(name="Bot", bot=config.bots[s], taken=True) if s in config.bots else Seat()
            for s in range(config.players)
        )
        game = engine.new_game(config.rules, config.players, seed)
        clock = clocks.ClockState.initial(config.clock, config.players) if config.clock else None
        salt = secrets.token_hex(16) if salt is None else salt
        bot_secret = secrets.randbits(62) if bot_secret is None else bot_secret
        return cls(table_id, config, created_ms, seed, WAITING, seats, game, clock,
                   None, invite_hash, salt, bot_secret)

    # -- codec -----------------------------------------------------------------------------
    def to_blob(self) -> bytes:
        """One msgpack map (`from_blob`). What no move changes -- the table's identity and
        settings, and the round's deal, rules and finished rounds -- is encoded once and its
        bytes reused (`_encoded_once`); only the rest is encoded at every move."""
        fixed = (self.id, self.created_ms, self.seed, self.invite_hash, self.salt,
                 self.bot_secret)
        head = _encoded_once(self.config, fixed, lambda: {
            "id": self.id, "config": self.config.to_data(), "created": self.created_ms,
            "seed": self.seed, "invite": self.invite_hash, "salt": self.salt,
            "bot_secret": self.bot_secret})
        table = self.game.table
        deal = _encoded_once(table, (), lambda: {  # the finished rounds as one binary field
            **engine.table_to_data(table),
            "past": bytes(msgpack.packb(engine.past_to_data(table.past)))})
        play = engine.play_to_data(self.game)
        rest = {
            "status": self.status,
            "seats": [seat.to_blob() for seat in self.seats],
            "clock": self.clock.to_data() if self.clock else None,
            "result": self.result,
            "started": self.started_ms,
            "ratings": None if self.ratings is None else list(self.ratings),
            "next_hand": None if self.next_hand is None else dict(self.next_hand),
            "rematch": None if self.rematch is None else dict(self.rematch),
        }
        game = _map_header(deal[0] + len(play)) + deal[1] + _pairs(play)
        return b"".join([_map_header(head[0] + len(rest) + 1), head[1], _pairs(rest),
                         _GAME_KEY, game])

    @classmethod
    def from_blob(cls, blob: bytes) -> TableRecord:
        """The record a stored state holds: `to_blob`'s map, then the moves appended to it
        since (`move_entry`), played again."""
        return stored_state(blob)[0]

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> TableRecord:
        """The record of `to_blob`'s map, decoded."""
        past = data["game"].get("past")
        rounds = _finished_rounds(past) if isinstance(past, bytes) else None
        return cls(
            id=data["id"], config=TableConfig.from_data(data["config"]),
            created_ms=data["created"], seed=data["seed"], status=data["status"],
            seats=tuple(Seat(**seat) for seat in data["seats"]),
            game=engine.state_from_data(data["game"], rounds),
            clock=clocks.ClockState.from_data(data["clock"]) if data["clock"] else None,
            result=data["result"], invite_hash=data["invite"],
            salt=data.get("salt"), bot_secret=data.get("bot_secret"),
            started_ms=data.get("started"),
            ratings=None if data.get("ratings") is None else tuple(data["ratings"]),
            next_hand=data.get("next_hand"),
            rematch=data.get("rematch"),  # absent from blobs stored before rematches
        )

    def with_game(self, game: engine.GameState) -> TableRecord:
        """`replace(self, game=game)`, fast (every move): the slots are filled on a twin class
        and the class is then set, as engine.state builds its records (a dataclass `replace`
        costs about ten times as many instructions)."""
        record = _new(_RecordSlots)
        record.id = self.id
        record.config = self.config
        record.created_ms = self.created_ms
        record.seed = self.seed
        record.status = self.status
        record.seats = self.seats
        record.game = game
        record.clock = self.clock
        record.result = self.result
        record.invite_hash = self.invite_hash
        record.salt = self.salt
        record.bot_secret = self.bot_secret
        record.started_ms = self.started_ms
        record.ratings = self.ratings
        record.next_hand = self.next_hand
        record.rematch = self.rematch
        record.__class__ = TableRecord
        made: TableRecord = record
        return made

    def replayed(self, entry: object) -> TableRecord:
        """The record after an appended move (`move_entry`, decoded): the move played again
        through the engine and the clocks charged as `TableService.play` charges them. A move
        that would not keep its hand going is never appended: ValueError."""
        if not isinstance(entry, list | tuple) or len(entry) != 3:
            raise ValueError("an appended move is [seat, move, ms]")
        seat, data, now_ms = entry
        if not isinstance(seat, int) or not isinstance(now_ms, int):
            raise ValueError("an appended move is [seat, move, ms]")
        if self.status != PLAYING or self.next_hand is not None:
            raise ValueError("an appended move needs a hand in play")
        game, _events = engine.apply(self.game, seat, engine.move_from_data(data))
        if not keeps_hand(self.game, game):
            raise ValueError("an appended move must keep its hand going")
        return self.with_game(game).with_turn_clock(self.game.turn, self.game.round, now_ms)

    # -- what people see -------------------------------------------------------------------
    @property
    def commitment(self) -> str | None:
        """SHA-256 commitment to the deal seed (notation.md "Fair deals"), shown from creation."""
        if self.salt is None:
            return None
        value: str = engine.commitment(self.seed, self.salt)
        return value

    def table_document(self) -> dict[str, Any]:
        return {
            "id": self.id, "name": self.config.name, "status": self.status,
            "seats": [seat.to_data() for seat in self.seats],
            "clock": clocks.document(self.config.clock, self.clock),
            "private": self.config.private, "result": self.result,
            "commitment": self.commitment, "rated": self.config.rated,
            "hints": self.config.hints,
            "ratings": None if self.ratings is None else [dict(r) for r in self.ratings],
            "next_hand": None if self.next_hand is None else {
                "deadline": self.next_hand["deadline"], "ready": list(self.next_hand["ready"])},
            "rematch": None if self.rematch is None else {
                "accepted": list(self.rematch["accepted"]), "table": self.rematch["table"]},
        }

    def _same_table(self, earlier: TableRecord) -> bool:
        """Whether `table_document` shows the same as ``earlier``'s, known without building
        it: every field it reads is the very same object (a move changes none of them at a
        table without a clock)."""
        return (earlier.seats is self.seats and earlier.status == self.status
                and earlier.clock is self.clock and earlier.result is self.result
                and earlier.ratings is self.ratings and earlier.next_hand is self.next_hand
                and earlier.rematch is self.rematch and earlier.config is self.config
                and earlier.id == self.id and earlier.salt == self.salt
                and earlier.seed == self.seed)

    def transcript(self) -> dict[str, Any]:
        """The game's transcript; it reveals the seed and salt, so only once it is finished."""
        if self.status != FINISHED:
            raise ValueError("the seed is revealed only when the game is over")
        transcript: dict[str, Any] = engine.to_transcript(self.game, salt=self.salt)
        return transcript

    def document(self, audience: str, version: int,
                 table: dict[str, Any] | None = None) -> dict[str, Any]:
        """The protocol document of ``audience`` at ``version`` (game is None while waiting)."""
        viewer = audience_viewer(audience, self.config.players)
        game = None if self.status == WAITING else engine.view(self.game, viewer)
        return {"v": version, "game": game, "table": table or self.table_document()}

    def documents(self, version: int, previous: tuple[TableRecord, Mapping[str, Any]] | None
                  = None) -> dict[str, dict[str, Any]]:
        """Every audience's document; the parts they see alike are shared objects.
        ``previous``: an earlier record of this table and its spectators' document, whose
        unchanged parts are reused as they are (engine.views)."""
        if previous is not None and previous[1].get("table") is not None \
                and self._same_table(previous[0]):
            table = previous[1]["table"]  # nothing it shows changed: the very same object
        else:
            table = self.table_document()
            if previous is not None and previous[1].get("table") == table \
                    and same(previous[1]["table"], table):
                table = previous[1]["table"]  # unchanged: the very same object
        names = audiences(self.config.players)
        if self.status == WAITING:
            return {aud: {"v": version, "game": None, "table": table} for aud in names}
        earlier = None
        if previous is not None and previous[1].get("game") is not None:
            earlier = (previous[0].game, previous[1]["game"])
        games = engine.views(self.game, [audience_viewer(aud, self.config.players)
                                         for aud in names], earlier)
        return {aud: {"v": version, "game": game, "table": table}
                for aud, game in zip(names, games, strict=True)}

    def move_ops(self, before: TableRecord, version: int) -> dict[str, list[Op]] | None:
        """Every audience's diff from ``before`` (this table's previous version) to this
        version, built from what the move changed (engine.view_changes) instead of from the
        two versions' documents: the very ops `diff` gives for those documents. None unless
        the move kept a hand going and left the table's part of the document alone (then
        only the documents tell)."""
        groups = self.move_groups(before, version)
        if groups is None:
            return None
        return {audience: [op for group in found for op in group]
                for audience, found in groups.items()}

    def change_groups(self, before: TableRecord, version: int, bodies: Bodies | None = None
                      ) -> dict[str, list[list[Op]]] | None:
        """`move_groups` for any change of a table in play (``before`` playing, this version
        playing or finished): a move within a hand as there, anything else (a hand's last
        move, a deal, the game's end, a seat or the table's settings changed) from every
        field of the game that may differ (engine.game_change_blocks) and the diff of the
        table's part. The very ops the documents' diff gives; None when only the documents
        tell (a table waiting for players, or not one game)."""
        if before.status != PLAYING or self.status == WAITING:
            return None
        if self.status == PLAYING and self._same_table(before):
            moved = self.move_groups(before, version, bodies)
            if moved is not None:
                return moved
        names, viewers = _audience_viewers(self.config.players)
        changes = engine.game_change_blocks(before.game, self.game, viewers)
        if changes is None:
            return None
        table: list[Op] = [] if self._same_table(before) else diff_at(
            before.table_document(), self.table_document(), ("table",))
        return self._grouped(names, changes, version, table, bodies)

    def move_groups(self, before: TableRecord, version: int, bodies: Bodies | None = None
                    ) -> dict[str, list[list[Op]]] | None:
        """`move_ops`, each audience's ops as the groups they come in (the version's, then
        those of each block of fields engine.view_change_blocks gives), a group that audiences
        share being the very same list. ``bodies``: where a group is one field's list diff,
        the encoding the diff made of it (server.diff `diff_at`)."""
        if self.status != PLAYING or before.status != PLAYING or not self._same_table(before):
            return None
        names, viewers = _audience_viewers(self.config.players)
        changes = engine.view_change_blocks(before.game, self.game, viewers)
        if changes is None:
            return None
        return self._grouped(names, changes, version, [], bodies)

    @staticmethod
    def _grouped(names: tuple[str, ...], changes: list[list[list[tuple[Any, ...]]]],
                 version: int, table: list[Op], bodies: Bodies | None
                 ) -> dict[str, list[list[Op]]]:
        """Each audience's groups of ops: the version's, each block's (turned into ops once
        for every audience that shares it) and then ``table``'s (the table's part)."""
        out: dict[str, list[list[Op]]] = {}
        done: dict[int, list[Op]] = {}  # the blocks audiences share: each diffed once
        head: list[Op] = [["=", ["v"], version]]
        for audience, blocks in zip(names, changes, strict=True):
            groups = [head]
            for block in blocks:
                found = done.get(id(block))
                if found is None:
                    if len(block) == 1:
                        found = _field_ops(block[0], bodies)
                    else:
                        found = []
                        for field in block:
                            found += _field_ops(field, None)
                    done[id(block)] = found
                if found:
                    groups.append(found)
            if table:
                groups.append(table)
            out[audience] = groups
        return out

    def summary(self, version: int) -> dict[str, Any]:
        return {**self.listing(), "v": version}

    def listing(self) -> dict[str, Any]:
        """`summary` without the version: what the lobby's stored summary holds."""
        clock = self.config.clock
        return {
            "id": self.id, "name": self.config.name, "players": self.config.players,
            "rules": self.config.rules, "status": self.status,
            "seats": [seat.to_data() for seat in self.seats], "private": self.config.private,
            "clock": clock.to_request() if clock else None,
            "on_timeout": self.config.on_timeout, "created": self.created_ms,
            "rated": self.config.rated, "hints": self.config.hints,
            "family": self.config.family,
        }

    # -- turns and time --------------------------------------------------------------------
    @property
    def seat_to_move(self) -> int | None:
        if self.status != PLAYING:
            return None
        turn: int | None = self.game.turn
        return turn

    def bot_level(self, seat: int) -> str | None:
        return self.seats[seat].bot

    def due_ms(self, now_ms: int, bot_delay_ms: int) -> int | None:
        """When the scheduler must act next: a bot's move, the clock of the seat to move, or
        the end of the pause between two hands."""
        if self.status == PLAYING and self.next_hand is not None:
            deadline: int = self.next_hand["deadline"]
            return deadline
        seat = self.seat_to_move
        if seat is None:
            return None
        if self.seats[seat].bot is not None:
            return now_ms + bot_delay_ms
        if self.clock is not None:
            return self.clock.deadline_ms
        return None

    def with_turn_clock(self, previous_turn: int | None, previous_round: int,
                        now_ms: int) -> TableRecord:
        """Charge the time of the seat that just moved and start the next seat's clock.
        A seat that moves again in the same round (after drawing) keeps its turn running."""
        config = self.config.clock
        if config is None or self.clock is None:
            return self
        seat = self.seat_to_move
        if seat is not None and seat == previous_turn and self.game.round == previous_round \
                and self.clock.seat == seat:
            return self
        clock = clocks.stop(config, self.clock, now_ms)
        if seat is not None and self.seats[seat].bot is None:
            clock = clocks.start(config, clock, seat, now_ms)
        return replace(self, clock=clock)


_new = object.__new__
# TableRecord's slots on an unfrozen class: `with_game` fills one, then makes it a TableRecord.
_RecordSlots = twin(TableRecord)

_ENCODED: OrderedDict[int, tuple[object, tuple[object, ...], int, bytes]] = OrderedDict()
ENCODED_KEPT = 4096  # entries of `_encoded_once`: two per table a process writes
_GAME_KEY = bytes(msgpack.packb("game"))  # the state blob's last key, encoded once
PAST_CACHE = 1024  # entries of `_finished_rounds`: one per table and round read from a blob


@functools.lru_cache(maxsize=PAST_CACHE)
def _finished_rounds(encoded: bytes) -> tuple[engine.RoundRecord, ...]:
    """The finished rounds a state blob stores as one binary field (`to_blob`), rebuilt once
    for all the blobs of a round that carry the same bytes: a process that starts a move from
    a state another process committed (its notice) decodes only what the round changed."""
    return engine.past_from_data(msgpack.unpackb(encoded))


def keeps_hand(before: engine.GameState, after: engine.GameState) -> bool:
    """Whether a move from ``before`` to ``after`` left the same hand in play: the only moves
    a stored state is appended with (`move_entry`) instead of being written whole."""
    return after.turn is not None and after.round == before.round and not after.game_over


def move_entry(seat: int, move: engine.Move, now_ms: int) -> bytes:
    """A move that keeps its hand going as the commit appends it to the table's stored state
    (`TableRecord.replayed` plays it again): msgpack ``[seat, move (notation.md), ms]``."""
    return bytes(_ENTRY_PACKER.pack((seat, engine.move_to_data(move), now_ms)))


_ENTRY_PACKER = msgpack.Packer()  # `move_entry`'s: moves are played on the event loop's thread


def stored_state(blob: bytes) -> tuple[TableRecord, int]:
    """(the record, how many moves were appended) of a stored state: one `to_blob` map,
    followed by the `move_entry` of each move committed since it was written whole."""
    try:
        return TableRecord.from_data(msgpack.unpackb(blob)), 0
    except msgpack.ExtraData as more:  # (its stub lacks the two attributes it has)
        return with_moves(TableRecord.from_data(cast(Any, more).unpacked), cast(Any, more).extra)


def with_moves(record: TableRecord, moves: bytes) -> tuple[TableRecord, int]:
    """(``record`` with ``moves`` played again, how many): ``moves`` is `move_entry` after
    `move_entry`, as they follow a stored state or came with notices."""
    unpacker = msgpack.Unpacker()
    unpacker.feed(moves)
    played = 0
    for entry in unpacker:
        record = record.replayed(entry)
        played += 1
    return record, played


def _map_header(n: int) -> bytes:
    return bytes(msgpack.Packer().pack_map_header(n))


def _pairs(entries: Mapping[str, Any]) -> bytes:
    """The msgpack encoding of a map's entries, without the map's header."""
    pack = msgpack.Packer().pack
    return b"".join(pack(k) + pack(v) for k, v in entries.items())


def _encoded_once(owner: object, fixed: tuple[object, ...],
                  entries: Callable[[], Mapping[str, Any]]) -> tuple[int, bytes]:
    """(number of entries, their msgpack encoding as map pairs without a header) of
    ``entries()``, which depend only on ``owner`` (an immutable object, kept by identity) and
    the values of ``fixed``: encoded once while the same object is written again."""
    found = _ENCODED.get(id(owner))
    if found is not None and found[0] is owner and found[1] == fixed:
        _ENCODED.move_to_end(id(owner))
        return found[2], found[3]
    data = entries()
    encoded = _pairs(data)
    _ENCODED[id(owner)] = (owner, fixed, len(data), encoded)
    while len(_ENCODED) > ENCODED_KEPT:
        _ENCODED.popitem(last=False)
    return len(data), encoded


def game_result(record: TableRecord) -> dict[str, Any]:
    """The ``table.result`` of a game the engine finished."""
    return {"winner": record.game.winner, "reason": "game_end", "seat": None}


def forfeit(record: TableRecord, seat: int, cause: Literal["time", "leave"],
            now_ms: int) -> TableRecord:
    """The game ends with ``seat``'s side losing: the other side wins (with three or more
    sides, the best-scoring other side; nobody on a tie). ``cause``: its clock ran out
    ("time"), or it left a rated game ("leave")."""
    sides = [list(side) for side in record.game.sides]
    losing = next(i for i, side in enumerate(sides) if seat in side)
    scores = record.game.scores
    others = [i for i in range(len(sides)) if i != losing]
    best = max(scores[i] for i in others)
    leaders = [i for i in others if scores[i] == best]
    winner = leaders[0] if len(leaders) == 1 else None
    return stopped(record, {"winner": winner, "reason": "forfeit", "seat": seat,
                            "cause": cause}, now_ms)


def hand_limit(record: TableRecord, now_ms: int) -> TableRecord:
    """The game ends with its last hand, having lasted as many hands as a game may (the
    setting MAX_HANDS): the side with the most points wins (nobody on a tie for the lead)."""
    scores = record.game.scores
    leaders = [i for i, score in enumerate(scores) if score == max(scores)]
    winner = leaders[0] if len(leaders) == 1 else None
    return stopped(record, {"winner": winner, "reason": "hand_limit", "seat": None}, now_ms)


def stopped(record: TableRecord, result: dict[str, Any], now_ms: int) -> TableRecord:
    """The game ends before the rules end it (a forfeit, an abandoned table, the hand limit):
    the table finished with ``result``, nobody to move (the game's turn cleared, so that no
    view offers a move) and the running clock stopped."""
    game = replace(record.game, turn=None)
    record = replace(record, game=game, status=FINISHED, next_hand=None, result=result)
    return record.with_turn_clock(None, game.round, now_ms)

"""The archive: every finished game in PostgreSQL (table ``games``), exactly once.

Hand-off. A commit whose new status is finished (normal end, forfeit, abandoned) gives every key
of the table no expiry (TableService with ``archive=True``): a finished table kept without
expiry *is* the pending mark, written atomically with the game's end, in the table's own slot.
Right after that commit its process appends a job ``<id> <ended ms>`` to the Redis list
``archive:pending`` (a global key, so not in the commit); should that process die first, the
sweep finds the table anyway: every ``ARCHIVE_SWEEP_S`` (and at start-up) each process scans
``t:{*}:meta`` for finished tables without expiry that have no job and queues one.

Worker. `Archive.run` (one per process, in the app lifespan) takes the jobs in order and, for
each, writes the game in ONE transaction, ``INSERT ... ON CONFLICT (id) DO NOTHING``: a job done
twice (two processes, a retry, a duplicate job) writes one row. Only after that transaction
committed does the table get its ``RETENTION`` (so its keys never expire before the game is
archived) and the job leave the queue. With PostgreSQL down the jobs stay and the worker retries
with backoff (up to ``ARCHIVE_RETRY_MAX_S``); the tables waiting meanwhile stay in Redis.

Each game's row goes with a pending ``game_analysis`` row in the same transaction, the job of
the post-game analysis (server.analysis), and with its account seats counted in the players'
profile statistics (server.player_stats).

Reads. `Archive.rendered` answers a transcript or replay read once Redis no longer has the table
(a private game needs its invite: seat tokens are gone with the table); a replay is rendered from
the archived transcript in the render worker once and kept in the row. `Archive.game` answers
``GET /api/games/{id}``. Must not import the HTTP layer.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import gzip
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import asyncpg  # type: ignore[import-untyped]  # ships no type hints
from redis.exceptions import RedisError

from server import player_stats, ratings, seasons
from server.db import Pool, Postgres, Queries
from server.record import FINISHED, TableRecord
from server.rejected import Rejected
from server.stats import seat_stats
from server.store import ARCHIVE_QUEUE, TABLE_ID, as_bytes, player_of
from server.tables import TableService, invite_matches

log = logging.getLogger("server.archive")

BATCH = 50  # jobs read from the queue at a time
POLL_S = 1.0  # how often the queue is looked at when nothing woke the worker
SWEEP_PAGE = 500

_INSERT = """
INSERT INTO games (id, name, rules, preset, players, seat_names, seat_bots, seat_players, sides,
                   winner_side, end_reason, end_seat, scores, hands, private, invite_hash,
                   created_at, started_at, ended_at, transcript, rated, family)
VALUES ($1, $2, $3::jsonb, $4, $5, $6, $7, $8, $9::jsonb, $10, $11, $12, $13, $14, $15, $16,
        $17, $18, $19, $20, $21, $22)
ON CONFLICT (id) DO NOTHING
"""
_INSERT_SEAT = """
INSERT INTO game_players (game_id, seat, player_id, guest, account, bot, side, family, preset,
                          rated, outcome, ended_at, hands, hands_won, won_domino, won_block,
                          play_points, bonus_points, best_play, big_plays, private)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19,
        $20, $21)
"""
_COLUMNS = """id, name, rules, preset, players, seat_names, seat_bots, seat_players, sides,
winner_side, end_reason, end_seat, scores, hands, private, invite_hash, created_at, started_at,
ended_at, rated, family, rating_changes"""

DELETED_PLAYER = "deleted player"  # the name an archived seat of a deleted account shows
PG_ERRORS = (OSError, asyncpg.PostgresError, asyncpg.InterfaceError, TimeoutError)


class ArchiveUnavailable(Exception):
    """PostgreSQL is not reachable now: the job stays queued."""


def unknown_game(game_id: str) -> Rejected:
    """No archived game of that id -- and, word for word, a private one asked for without its
    invite."""
    return Rejected("unknown_game", f"no archived game {game_id!r}", status=404)


def unavailable() -> Rejected:
    return Rejected("unavailable", "the archive is unavailable; try again", status=503)


def _time(ms: int | None) -> datetime.datetime | None:
    if ms is None:
        return None
    return datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)


def _ms(value: datetime.datetime | None) -> int | None:
    return None if value is None else round(value.timestamp() * 1000)


def parse_job(job: str) -> tuple[str, int | None] | None:
    """(table id, ended ms or None) of a queued job; None for a malformed one."""
    table_id, _, ended = job.partition(" ")
    if not TABLE_ID.match(table_id) or (ended and not ended.isdigit()):
        return None
    return table_id, int(ended) if ended else None


def _preset(spec: Any) -> str:
    return spec if isinstance(spec, str) else str(spec.get("preset", ""))


def game_row(record: TableRecord, transcript: dict[str, Any], transcript_gz: bytes,
             ended_ms: int, accounts: Mapping[int, int]) -> list[Any]:
    """The ``games`` row of a finished table, in ``_INSERT``'s order; ``accounts``: the account
    of each seat an (existing) account held."""
    config = record.config
    spec = config.rules
    result = record.result or {}
    game = record.game
    return [
        record.id, config.name, json.dumps(spec), _preset(spec), config.players,
        [seat.name for seat in record.seats], [seat.bot for seat in record.seats],
        [accounts.get(seat) for seat in range(config.players)],
        json.dumps([list(side) for side in game.sides]),
        result.get("winner"), str(result.get("reason", "game_end")), result.get("seat"),
        [int(score) for score in game.scores], len(transcript.get("rounds", ())),
        config.private, record.invite_hash,
        _time(record.created_ms), _time(record.started_ms), _time(ended_ms), transcript_gz,
        config.rated, config.family,
    ]


def side_outcomes(sides: int, result: Mapping[str, Any]) -> list[str]:
    """``win``, ``loss`` or ``draw`` for each side from the winner alone: nobody winning is a
    draw for all (`seat_rows` then makes a forfeiting side's a loss)."""
    winner = result.get("winner")
    if winner is not None:
        return ["win" if side == winner else "loss" for side in range(sides)]
    return ["draw"] * sides


def seat_outcomes(record: TableRecord) -> list[str]:
    """``win``, ``loss`` or ``draw`` of each seat (a forfeiting seat's side loses)."""
    sides = [list(side) for side in record.game.sides]
    side_of = {seat: i for i, side in enumerate(sides) for seat in side}
    result = record.result or {}
    outcomes = side_outcomes(len(sides), result)
    if result.get("reason") == "forfeit" and result.get("seat") is not None:
        outcomes[side_of[int(result["seat"])]] = "loss"
    return [outcomes[side_of[seat]] for seat in range(record.config.players)]


async def score_season(conn: Queries, record: TableRecord, accounts: Mapping[int, int],
                       ended: datetime.datetime, months: int) -> None:
    """Add a rated game to its players' scores in the season of its end (server.seasons), in
    the caller's transaction."""
    outcomes = seat_outcomes(record)
    await seasons.score_game(conn, seasons.season_of(ended, months), record.config.family,
                             {player: outcomes[seat] for seat, player in accounts.items()},
                             ended)


def seat_rows(record: TableRecord, transcript: Mapping[str, Any], ended_ms: int,
              accounts: Mapping[int, int]) -> list[list[Any]]:
    """The ``game_players`` rows of a finished table, in ``_INSERT_SEAT``'s order."""
    config = record.config
    sides = [list(side) for side in record.game.sides]
    side_of = {seat: i for i, side in enumerate(sides) for seat in side}
    result = record.result or {}
    outcomes = side_outcomes(len(sides), result)
    if result.get("reason") == "forfeit" and result.get("seat") is not None:
        outcomes[side_of[int(result["seat"])]] = "loss"
    rows = []
    for seat, (held, numbers) in enumerate(zip(record.seats, seat_stats(transcript),
                                               strict=True)):
        owner = held.owner
        rows.append([
            record.id, seat, accounts.get(seat),
            owner if owner is not None and player_of(owner) is None else None,
            player_of(owner) is not None, held.bot, side_of[seat], config.family,
            _preset(config.rules), config.rated, outcomes[side_of[seat]], _time(ended_ms),
            numbers.hands, numbers.hands_won, numbers.won_domino, numbers.won_block,
            numbers.play_points, numbers.bonus_points, numbers.best_play, numbers.big_plays,
            config.private,
        ])
    return rows


def counted_seats(rows: list[list[Any]]) -> list[player_stats.Seat]:
    """The account seats of `seat_rows`, as server.player_stats counts them."""
    return [player_stats.Seat(row[2], row[0], row[1], row[7], row[8], row[10], row[11],
                              tuple(row[12:20]))
            for row in rows if row[2] is not None]


async def rate_game(conn: Queries, record: TableRecord, accounts: Mapping[int, int],
                    ended: datetime.datetime) -> list[dict[str, Any] | None]:
    """Update the ratings of a rated game's players (in the caller's transaction) and return
    the changes by seat ({"seat", "before", "after", "provisional"}; None for a seat whose
    account no longer exists)."""
    family = record.config.family
    players = sorted(set(accounts.values()))
    fresh = ratings.Skill.new()
    # Rows created first, then locked in id order: concurrent games of one player queue up.
    await conn.execute(
        "INSERT INTO ratings (player_id, family, mu, sigma, rating, games, last_game_at) "
        "SELECT id, $2, $3, $4, $5, 0, $6 FROM unnest($1::bigint[]) AS id "
        "ON CONFLICT (player_id, family) DO NOTHING",
        players, family, fresh.mu, fresh.sigma, ratings.display(fresh.mu), ended)
    rows = await conn.fetch(
        "SELECT player_id, mu, sigma, games FROM ratings WHERE family = $2 "
        "AND player_id = ANY($1::bigint[]) ORDER BY player_id FOR UPDATE", players, family)
    skills = {row["player_id"]: ratings.Skill(row["mu"], row["sigma"], row["games"])
              for row in rows}
    sides = [list(side) for side in record.game.sides]
    teams = [[skills.get(accounts.get(seat, -1), fresh) for seat in side] for side in sides]
    ranks = ratings.side_ranks(sides, list(record.game.scores), record.result or {})
    rated = ratings.rate(teams, ranks)
    changes: list[dict[str, Any] | None] = [None] * record.config.players
    for side, new_team in zip(sides, rated, strict=True):
        for seat, new in zip(side, new_team, strict=True):
            player = accounts.get(seat)
            if player is None:
                continue
            before, after = ratings.display(skills[player].mu), ratings.display(new.mu)
            await conn.execute(
                "UPDATE ratings SET mu = $3, sigma = $4, rating = $5, games = $6, "
                "last_game_at = $7 WHERE player_id = $1 AND family = $2",
                player, family, new.mu, new.sigma, after, new.games, ended)
            await conn.execute(
                "INSERT INTO rating_history (player_id, family, game_id, at, rating) "
                "VALUES ($1, $2, $3, $4, $5)", player, family, record.id, ended, after)
            changes[seat] = {"seat": seat, "before": before, "after": after,
                             "provisional": ratings.provisional(new.games)}
    return changes


@dataclass(frozen=True, slots=True)
class Job:
    raw: str | None  # the queued job (None: found by a sweep, not queued)
    table_id: str
    ended_ms: int | None


class Archive:
    """The archive worker and reader of one process."""

    def __init__(self, service: TableService, postgres: Postgres, *, sweep_s: float = 300.0,
                 retry_max_s: float = 30.0, poll_s: float = POLL_S,
                 season_months: int = 1) -> None:
        self.service = service
        self.store = service.store
        self.postgres = postgres
        self.sweep_s = sweep_s
        self.retry_max_s = retry_max_s
        self.poll_s = poll_s
        self.season_months = seasons.check_months(season_months)
        self.archived = 0  # games this process wrote (for tests and logs)
        self.analysis_wakeup = asyncio.Event()  # set for each game written (server.analysis)

    def _pool(self) -> Pool:
        pool = self.postgres.pool
        if pool is None:
            raise ArchiveUnavailable
        return pool

    # -- the worker ------------------------------------------------------------------------
    async def run(self, stop: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        next_sweep = 0.0
        delay = 0.0
        while not stop.is_set():
            failed = False
            self.service.archive_wakeup.clear()  # a game ending from here on wakes the next wait
            try:
                if loop.time() >= next_sweep:
                    await self.sweep()
                    next_sweep = loop.time() + self.sweep_s
                await self.drain()
            except ArchiveUnavailable:
                failed = True
            except (RedisError, *PG_ERRORS) as exc:
                log.warning("archive: %s: %s", type(exc).__name__, exc)
                failed = True
            except Exception:  # anything else (a broken render worker): retried the same way
                log.exception("archive job failed")
                failed = True
            delay = min(self.retry_max_s, max(0.25, delay * 2)) if failed else 0.0
            waiters = [asyncio.ensure_future(stop.wait()),
                       asyncio.ensure_future(self.service.archive_wakeup.wait())]
            if failed:
                waiters.pop()  # a failure waits out its backoff
            try:
                await asyncio.wait(waiters, timeout=delay if failed else self.poll_s,
                                   return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiter in waiters:
                    waiter.cancel()

    async def drain(self) -> int:
        """Archive every queued job (raises, keeping the rest queued, when PostgreSQL or Redis
        fails); returns how many jobs were done."""
        done = 0
        while True:
            jobs = await self.store.archive_jobs(BATCH)
            if not jobs:
                return done
            for raw in jobs:
                parsed = parse_job(raw)
                if parsed is None:
                    await self.store.redis.lrem(ARCHIVE_QUEUE, 0, raw)
                    continue
                await self.archive(Job(raw, *parsed))
                done += 1

    async def sweep(self) -> int:
        """Queue a job for each finished table kept without expiry that has none (its
        process stopped between the finishing commit and the job); returns how many."""
        redis = self.store.redis
        queued = {parsed[0] for job in await redis.lrange(ARCHIVE_QUEUE, 0, -1)
                  if (parsed := parse_job(as_bytes(job).decode())) is not None}
        found = 0
        async for table_id in self.store.tables_with_status(FINISHED, page=SWEEP_PAGE):
            if table_id in queued or not TABLE_ID.match(table_id):
                continue
            if await self.store.lifetime_ms(table_id) != -1:
                continue  # archived already (or the archive was off when it ended)
            await self.store.queue_archive(table_id)
            found += 1
        if found:
            log.info("archive sweep queued %d finished games", found)
        return found

    async def archive(self, job: Job) -> None:
        """Write the job's game (unless the archive has it), then give the table its
        retention and drop the job."""
        loaded = await self.store.load(job.table_id)
        if loaded is None:  # gone: nothing left to archive (or archived and expired)
            await self.store.archive_done(job.table_id, job.raw, self.service.retention_ms)
            return
        record = TableRecord.from_blob(loaded[1])
        if record.status == FINISHED:
            changes = await self._write_game(job, record)
            if record.config.rated and changes and record.ratings is None:
                await self.service.set_ratings(job.table_id, [c for c in changes if c])
        await self.store.archive_done(job.table_id, job.raw, self.service.retention_ms)

    async def _write_game(self, job: Job, record: TableRecord) -> list[Any] | None:
        """Write the finished game, its seats and (rated) its rating changes in one
        transaction, unless the archive has it; returns its rating changes by seat."""
        pool = self._pool()
        archived = await pool.fetchrow("SELECT rating_changes FROM games WHERE id = $1",
                                       job.table_id)
        if archived is not None:
            found = archived["rating_changes"]
            return None if found is None else list(json.loads(found))
        transcript_gz = await self.store.rendered(job.table_id, "transcript")
        if transcript_gz is None:
            transcript_gz = await self.service.render_and_keep(
                job.table_id, "transcript", record)
        transcript = json.loads(await asyncio.to_thread(gzip.decompress, transcript_gz))
        ended_ms = job.ended_ms if job.ended_ms is not None else self.service.now_ms()
        ended = _time(ended_ms)
        assert ended is not None
        held = {seat: player for seat, st in enumerate(record.seats)
                if (player := player_of(st.owner)) is not None}
        owner = (await self.store.owners([job.table_id]))[0] or ""  # for the analysis queue
        changes: list[Any] | None = None
        async with pool.acquire() as conn, conn.transaction():
            existing = {row["id"] for row in await conn.fetch(
                "SELECT id FROM players WHERE id = ANY($1::bigint[])", list(held.values()))}
            accounts = {seat: player for seat, player in held.items() if player in existing}
            status = await conn.execute(
                _INSERT, *game_row(record, transcript, transcript_gz, ended_ms, accounts))
            if not status.endswith(" 1"):
                return None  # another process archived it meanwhile
            seats = seat_rows(record, transcript, ended_ms, accounts)
            await conn.executemany(_INSERT_SEAT, seats)
            await player_stats.add_games(conn, counted_seats(seats))
            await conn.execute("INSERT INTO game_analysis (game_id, queued_at, owner) "
                               "VALUES ($1, $2, $3)", job.table_id, ended, owner)
            if record.config.rated:
                changes = await rate_game(conn, record, accounts, ended)
                await score_season(conn, record, accounts, ended, self.season_months)
                await conn.execute("UPDATE games SET rating_changes = $2::jsonb WHERE id = $1",
                                   job.table_id, json.dumps(changes))
        self.archived += 1
        self.analysis_wakeup.set()
        log.info("game archived: %s", job.table_id)
        return changes

    # -- reading ---------------------------------------------------------------------------
    async def rendered(self, table_id: str, kind: str, invite: str | None) -> bytes | None:
        """The archived game's transcript or replay (gzip-compressed JSON) for a reader with
        the invite of a private game; None when the archive has no such game for them."""
        if not TABLE_ID.match(table_id):
            return None
        try:
            pool = self._pool()
            row = await pool.fetchrow(
                "SELECT invite_hash, transcript, replay FROM games WHERE id = $1", table_id)
        except (ArchiveUnavailable, *PG_ERRORS) as exc:
            raise unavailable() from exc
        if row is None or not invite_matches(invite, row["invite_hash"]):
            return None
        if kind == "transcript":
            return bytes(row["transcript"])
        if row["replay"] is not None:
            return bytes(row["replay"])
        transcript = json.loads(await asyncio.to_thread(gzip.decompress, row["transcript"]))
        replay = await self.service.render("replay", transcript)
        with contextlib.suppress(*PG_ERRORS):
            await pool.execute("UPDATE games SET replay = $2 WHERE id = $1 AND replay IS NULL",
                               table_id, replay)
        return replay

    async def game(self, game_id: str, invite: str | None) -> dict[str, Any]:
        """``GET /api/games/{id}``: the archived game's summary and transcript."""
        if not isinstance(game_id, str) or not TABLE_ID.match(game_id):
            raise unknown_game(str(game_id))
        try:
            row = await self._pool().fetchrow(
                f"SELECT {_COLUMNS}, transcript FROM games WHERE id = $1", game_id)
        except (ArchiveUnavailable, *PG_ERRORS) as exc:
            raise unavailable() from exc
        if row is None or not invite_matches(invite, row["invite_hash"]):
            raise unknown_game(game_id)
        transcript = json.loads(await asyncio.to_thread(gzip.decompress, row["transcript"]))
        try:
            held = {r["seat"]: (r["account"], r["username"]) for r in await self._pool().fetch(
                "SELECT gp.seat, gp.account, p.username FROM game_players gp "
                "LEFT JOIN players p ON p.id = gp.player_id WHERE gp.game_id = $1", game_id)}
        except (ArchiveUnavailable, *PG_ERRORS) as exc:
            raise unavailable() from exc

        def seat(number: int, name: str, bot: str | None) -> dict[str, Any]:
            account, username = held.get(number, (False, None))
            if account and username is None:  # the account was deleted
                return {"name": DELETED_PLAYER, "bot": None, "player": None}
            return {"name": name, "bot": bot, "player": username}

        return {
            "id": row["id"], "name": row["name"], "rules": json.loads(row["rules"]),
            "preset": row["preset"], "players": row["players"],
            "seats": [seat(number, name, bot) for number, (name, bot) in enumerate(
                zip(row["seat_names"], row["seat_bots"], strict=True))],
            "sides": json.loads(row["sides"]),
            "result": {"winner": row["winner_side"], "reason": row["end_reason"],
                       "seat": row["end_seat"]},
            "scores": list(row["scores"]), "hands": row["hands"], "private": row["private"],
            "rated": row["rated"], "family": row["family"],
            "ratings": None if row["rating_changes"] is None
            else json.loads(row["rating_changes"]),
            "created": _ms(row["created_at"]), "started": _ms(row["started_at"]),
            "ended": _ms(row["ended_at"]), "transcript": transcript,
        }

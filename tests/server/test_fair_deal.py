"""Provably fair deals against the real service: the commitment shown from the table's creation,
the seed and salt revealed by the finished game's transcript, and nothing before the game's end
(no frame of any seat or spectator, no HTTP answer, no log line) that gives the seed, the salt,
the bots' secret or anything derived from them away."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import functools
import hashlib
import json
import random
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import msgpack
import pytest
import redis.asyncio

from server.record import TableRecord
from server.scheduler import bot_seed
from server.tables import TableService
from tests.server.conftest import running
from tests.support.servers import (
    REPO,
    GameClient,
    ServiceProcess,
    create_table,
    join,
    play_to_end,
)
from tests.support.tables import new_table

HEX = set("0123456789abcdef")


def documented_commitment(seed: int | str, salt: str) -> str:
    """SHA-256 of the encoding docs/notation.md gives, computed here from that text alone."""
    return hashlib.sha256(f"dominoes-deal/1:{seed}:{salt}".encode("ascii")).hexdigest()


def int_forms(value: int) -> list[bytes]:
    """The ways a program could put an integer on the wire or in a log line."""
    forms = [str(value).encode(), f"{value:x}".encode(), f"{value:X}".encode(),
             bytes(msgpack.packb(value))]
    for size in (8, 16):
        if value < 1 << (8 * size):
            forms += [value.to_bytes(size, "big"), value.to_bytes(size, "little")]
    return forms


def secret_forms(seed: int, salt: str, bot_secret: int) -> dict[str, bytes]:
    """Every needle that must not show before the game is over, with what it is."""
    raw_salt = bytes.fromhex(salt)
    needles: dict[str, bytes] = {}
    for i, form in enumerate(int_forms(seed)):
        needles[f"seed form {i}"] = form
    needles["seed as the deal's random seed"] = f"dominoes/{seed}/".encode()
    needles["sha256 of the seed alone"] = hashlib.sha256(str(seed).encode()).hexdigest().encode()
    needles["salt hex"] = salt.encode()
    needles["salt hex, upper case"] = salt.upper().encode()
    needles["salt bytes"] = raw_salt
    needles["salt base64"] = base64.b64encode(raw_salt).rstrip(b"=")
    needles["salt base64url"] = base64.urlsafe_b64encode(raw_salt).rstrip(b"=")
    for i, form in enumerate(int_forms(bot_secret)):
        needles[f"bot secret form {i}"] = form
    return needles


async def stored(client: redis.asyncio.Redis, table: str) -> dict[str, Any]:
    blob = await client.get(f"t:{{{table}}}:state")
    assert blob is not None
    data: dict[str, Any] = msgpack.unpackb(blob)
    return data


@pytest.fixture
async def chatty_service(redis_url: str) -> AsyncIterator[ServiceProcess]:
    """The service with every log line on (DEBUG), so that the test reads all it writes."""
    env = {"RATE": "1000/2000", "LOG_LEVEL": "DEBUG", "BAD_TOKEN_RATE": "100000"}
    async with running(ServiceProcess(redis_url, env=env)) as process:
        yield process


class Answers:
    """Every HTTP answer the test received: status line, headers and body bytes."""

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http
        self.seen: list[tuple[str, bytes]] = []

    async def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        response = await self.http.request(method, path, **kwargs)
        headers = "".join(f"{k}: {v}\n" for k, v in response.headers.items())
        self.seen.append((f"{method} {path} -> {response.status_code}",
                          headers.encode() + response.content))
        return response

    async def look_around(self, table: str, *, seated: bool) -> None:
        """The lobby list, the summary and every refusal a curious client can provoke
        (joins only once every seat is taken, so that they are refused)."""
        await self.call("GET", "/api/tables")
        await self.call("GET", f"/api/tables/{table}")
        await self.call("GET", f"/api/tables/{table}/transcript")
        await self.call("GET", f"/api/tables/{table}/replay")
        if seated:
            await self.call("POST", f"/api/tables/{table}/join", json={"seat": 0, "name": "x"})
            await self.call("POST", f"/api/tables/{table}/join", json={"seat": None, "name": "x"})
        await self.call("POST", f"/api/tables/{table}/join", json={"seat": 9, "name": "late"})
        await self.call("POST", f"/api/tables/{table}/join", content=b"not json")
        await self.call("POST", f"/api/tables/{table}/leave", json={"token": "guess"})
        await self.call("GET", "/api/tables/zzzzzzzz")
        await self.call("GET", "/metrics")
        await self.call("GET", "/healthz")


async def test_nothing_before_the_game_ends_gives_the_seed_salt_or_bot_secret_away(
    chatty_service: ServiceProcess, redis_client: redis.asyncio.Redis
) -> None:
    service = chatty_service
    async with httpx.AsyncClient(base_url=service.url, timeout=10) as http:
        answers = Answers(http)
        created = await answers.call("POST", "/api/tables", json={
            "rules": {"preset": "all-fives", "target": 40}, "players": 3,
            "bots": {"2": "random"}, "name": "Fair or not"})
        assert created.status_code == 201
        table = created.json()["id"]
        secret = await stored(redis_client, table)
        seed, salt, bot_secret = secret["seed"], secret["salt"], secret["bot_secret"]
        assert type(seed) is int and type(bot_secret) is int
        assert len(salt) == 32 and set(salt) <= HEX
        needles = secret_forms(seed, salt, bot_secret)

        await answers.look_around(table, seated=False)
        tokens = []
        for seat in (0, 1):
            joined = await answers.call("POST", f"/api/tables/{table}/join",
                                        json={"seat": seat, "name": f"p{seat}"})
            assert joined.status_code == 200
            tokens.append(joined.json()["token"])
        players = [await GameClient.connect(service.ws_url) for _ in tokens]
        for client, token in zip(players, tokens, strict=True):
            await client.hello(table, token)
        watcher = await GameClient.connect(service.ws_url)
        await watcher.hello(table)
        await watcher.send({"t": "chat", "text": "good luck"})
        first = watcher.doc
        assert first is not None
        commitment = first["table"]["commitment"]
        assert commitment == documented_commitment(seed, salt)

        movers = {0: players[0], 1: players[1]}
        for _ in range(200):
            await play_to_end(movers, [watcher], stop_after=4)
            if watcher.game.get("game_over"):
                break
            await answers.look_around(table, seated=True)
        assert watcher.game["game_over"]
        log_at_the_end = service.log_path.read_bytes()

        assert len(log_at_the_end) > 1000, "the service logged at DEBUG"
        frames = [(f"seat {c.seat} frame {i}", raw) for c in [*players, watcher]
                  for i, raw in enumerate(c.raw)]
        assert len(frames) > 30
        places = frames + answers.seen + [("server log", log_at_the_end)]
        leaks = [(where, what) for where, data in places
                 for what, needle in needles.items() if needle in data]
        assert leaks == []
        # the commitment itself was shown from the first document on, and never changed
        for client in [*players, watcher]:
            assert client.doc is not None
            assert client.doc["table"]["commitment"] == commitment

        transcript = (await answers.call("GET", f"/api/tables/{table}/transcript")).json()
        assert (transcript["seed"], transcript["salt"]) == (str(seed), salt)
        assert transcript["commitment"] == commitment
        assert "bot_secret" not in json.dumps(transcript)
        assert not any(needle in answers.seen[-1][1] for what, needle in needles.items()
                       if what.startswith("bot secret"))


async def test_the_commitment_is_fixed_at_creation_and_the_transcript_reveals_its_seed(
    service: ServiceProcess, http: httpx.AsyncClient, tmp_path: Path
) -> None:
    table = await create_table(http, rules={"preset": "all-fives", "target": 20}, players=2)
    spectator = await GameClient.connect(service.ws_url)
    await spectator.hello(table)
    assert spectator.doc is not None and spectator.doc["table"]["status"] == "waiting"
    shown = spectator.doc["table"]["commitment"]
    assert isinstance(shown, str) and len(shown) == 64 and set(shown) <= HEX

    early = await http.get(f"/api/tables/{table}/transcript")
    assert early.status_code == 409 and early.json()["error"]["code"] == "game_not_over"

    tokens = [await join(http, table, seat, f"p{seat}") for seat in (0, 1)]
    players = [await GameClient.connect(service.ws_url) for _ in tokens]
    for client, token in zip(players, tokens, strict=True):
        await client.hello(table, token)
        assert client.doc is not None and client.doc["table"]["commitment"] == shown
    await play_to_end({0: players[0], 1: players[1]}, [spectator])

    transcript = (await http.get(f"/api/tables/{table}/transcript")).json()
    assert transcript["commitment"] == shown
    assert documented_commitment(transcript["seed"], transcript["salt"]) == shown

    path = tmp_path / "game.json"
    path.write_text(json.dumps(transcript))
    verify = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "engine", "verify", str(path), "--commitment", shown],
        cwd=REPO, capture_output=True, text=True, timeout=60)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert json.loads(verify.stdout) == {
        "verified": True, "commitment": shown, "rounds": len(transcript["rounds"]),
        "mismatches": []}
    replay = await asyncio.to_thread(
        subprocess.run, [sys.executable, "-m", "engine", "replay", str(path)],
        cwd=REPO, capture_output=True, text=True, timeout=60)
    assert replay.returncode == 0, replay.stdout


async def test_a_bots_randomness_is_not_a_function_of_the_deal_seed(
    redis_client: redis.asyncio.Redis,
) -> None:
    tables = TableService(redis_client, bot_delay_ms=0)
    # Every table of this service is dealt from the same seed.
    tables.seed_source = functools.partial(int, random.Random(7).getrandbits(62))
    one, _ = await new_table(tables, 2, bots={"1": "random"})
    two, _ = await new_table(tables, 2, bots={"1": "random"})
    a, b = [(await tables.load(t)).record for t in (one, two)]
    assert a.seed == b.seed, "both tables were dealt from one seed"
    assert a.game.table.deal_hands == b.game.table.deal_hands
    seeds_a = [bot_seed(a, v) for v in range(1, 60)]
    seeds_b = [bot_seed(b, v) for v in range(1, 60)]
    assert len(set(seeds_a) & set(seeds_b)) == 0
    # and the bots' seeds of one table stay what they were after a store round trip
    again = TableRecord.from_blob(a.to_blob())
    assert [bot_seed(again, v) for v in range(1, 60)] == seeds_a


async def test_a_table_stored_before_commitments_still_loads_and_shows_none(
    redis_client: redis.asyncio.Redis,
) -> None:
    tables = TableService(redis_client, bot_delay_ms=0)
    table_id, _ = await new_table(tables, 2, bots={"1": "random"})
    record = (await tables.load(table_id)).record
    data = msgpack.unpackb(record.to_blob())
    del data["salt"], data["bot_secret"]
    legacy = TableRecord.from_blob(bytes(msgpack.packb(data)))
    assert legacy.table_document()["commitment"] is None
    finished = dataclasses.replace(legacy, status="finished")
    assert not {"seed", "salt", "commitment"} & set(finished.transcript())
    # its bots are not seeded from the deal either
    old_formula = [(legacy.seed * 1_000_003 + v) % (1 << 62) for v in range(1, 30)]
    assert not set(old_formula) & {bot_seed(legacy, v) for v in range(1, 30)}

"""Whole games over real websockets against the real service (uvicorn subprocess + Redis)."""

from __future__ import annotations

from typing import Any

import httpx
import msgpack

from tests.support.servers import GameClient, ServiceProcess, create_table, join, play_to_end

ALL_TILES = {f"{a}-{b}" for a in range(7) for b in range(a + 1)}


def tile_bytes(tile: str) -> list[bytes]:
    """A tile as msgpack writes the string, both ways round ("6-4" and "4-6")."""
    a, b = tile.split("-")
    return [bytes([0xA3]) + f"{x}-{y}".encode() for x, y in ((a, b), (b, a))]


def public_part(frame: bytes) -> bytes:
    """The frame without what finished rounds reveal on purpose (hand_end hands, `rounds`)."""
    message = msgpack.unpackb(frame, raw=False)
    if message["t"] == "snapshot":
        game = message["doc"].get("game")
        if game:
            game["rounds"] = []
    elif message["t"] == "diff":
        message["ev"] = [e for e in message["ev"] if e.get("type") != "hand_end"]
        kept = []
        for op in message["ops"]:
            path = op[1]
            if path[:2] == ["game", "rounds"]:
                continue
            if path in ([], ["game"]) and isinstance(op[2], dict):
                game = op[2].get("game", op[2]) if path == [] else op[2]
                if isinstance(game, dict):
                    game["rounds"] = []
            kept.append(op)
        message["ops"] = kept
    return bytes(msgpack.packb(message))


def layout_tiles(client: GameClient) -> set[str]:
    game = client.doc["game"] if client.doc else None
    if not game:
        return set()
    tiles = {node["tile"] for node in game["layout"]}
    return {"-".join(sorted(t.split("-"), reverse=True)) for t in tiles}


async def test_two_players_play_a_whole_game_and_a_spectator_never_sees_a_hidden_tile(
    service: ServiceProcess, http: httpx.AsyncClient
) -> None:
    table = await create_table(http, rules={"preset": "all-fives", "target": 20}, players=2)
    tokens = [await join(http, table, seat, f"p{seat}") for seat in (0, 1)]
    players = [await GameClient.connect(service.ws_url) for _ in tokens]
    for seat, (client, token) in enumerate(zip(players, tokens, strict=True)):
        welcome = await client.hello(table, token)
        assert welcome["seat"] == seat
    spectator = await GameClient.connect(service.ws_url)
    assert (await spectator.hello(table))["seat"] is None

    layouts: dict[int, set[str]] = {}
    hands: dict[int, set[str]] = {}

    def record(version: int) -> None:
        layouts[version] = layout_tiles(players[0])
        hands[version] = {t for p in players for t in (p.game.get("hand") or [])}

    moves = await play_to_end({0: players[0], 1: players[1]}, [spectator], on_version=record)
    assert moves > 0
    game = spectator.game
    assert game["game_over"] is True
    assert game["winner"] in (0, 1)
    assert max(game["scores"]) >= 20
    for client in players:
        assert client.doc is not None and spectator.doc is not None
        assert client.doc["table"] == spectator.doc["table"]
        assert client.game["layout"] == game["layout"]
        assert client.game["scores"] == game["scores"]

    # A fresh snapshot equals the document built from diffs.
    fresh = await GameClient.connect(service.ws_url)
    await fresh.hello(table)
    assert fresh.doc == spectator.doc

    # Every byte the spectator received: no tile outside the layout (hands and boneyard).
    checked = 0
    for raw in spectator.raw:
        message = msgpack.unpackb(raw, raw=False)
        if message["t"] not in ("snapshot", "diff"):
            continue
        version = message["v"]
        if version not in layouts:
            continue
        played = {
            "-".join(sorted(e["tile"].split("-"), reverse=True))
            for e in message.get("ev", [])
            if e.get("type") == "play"
        }
        allowed = layouts[version] | layouts.get(version - 1, set()) | played
        body = public_part(raw)
        for tile in ALL_TILES - allowed:
            for pattern in tile_bytes(tile):
                assert pattern not in body, f"tile {tile} leaked at version {version}"
        checked += 1
    assert checked >= moves

    # The check can fail: a seat's own frames do carry its hidden tiles.
    own = b"".join(players[0].raw)
    assert any(p in own for t in hands[min(hands)] for p in tile_bytes(t))
    for client in [*players, spectator, fresh]:
        await client.close()


async def test_four_players_in_partnerships_with_bots_play_to_the_end(
    service: ServiceProcess, http: httpx.AsyncClient
) -> None:
    table = await create_table(
        http,
        rules={"preset": "all-fives", "target": 25},
        players=4,
        bots={"1": "greedy", "3": "random"},
    )
    tokens = {seat: await join(http, table, seat, f"p{seat}") for seat in (0, 2)}
    clients: dict[int, GameClient] = {}
    for seat, token in tokens.items():
        clients[seat] = await GameClient.connect(service.ws_url)
        assert (await clients[seat].hello(table, token))["seat"] == seat
    spectator = await GameClient.connect(service.ws_url)
    await spectator.hello(table)
    await play_to_end(clients, [spectator])
    game: dict[str, Any] = spectator.game
    assert game["players"] == 4
    assert game["sides"] == [[0, 2], [1, 3]]
    assert game["game_over"] is True and game["winner"] in (0, 1)
    assert len(game["scores"]) == 2
    assert spectator.doc is not None
    seats = spectator.doc["table"]["seats"]
    assert [s["bot"] for s in seats] == [None, "greedy", None, "random"]
    for client in [*clients.values(), spectator]:
        await client.close()

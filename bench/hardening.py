"""CPU cost of the HTTP hardening checks, in process (no sockets, no Redis).

    python bench/hardening.py [--seconds 1.0]

1. The Guard middleware around a do-nothing ASGI app: one GET (Host check + the security
   headers added to the response) and one POST (plus the Origin check), against the bare app.
2. The text rules: a 32-character player name (with the bot-label check) and a 200-character
   chat line, plain ASCII and mixed scripts.
3. The body checks of the lobby: nesting depth and the surrogate check of a 4 KB body.
Rates use the process's CPU time; the best of three slices is reported. Prints figures only;
asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from server import text
from server.guard import Guard, host_rules
from server.lobby import _depth


def per_call_us(fn: Callable[[], object], seconds: float) -> float:
    best = float("inf")
    for _ in range(3):
        calls, start = 0, time.process_time()
        while time.process_time() - start < seconds / 3:
            for _ in range(100):
                fn()
            calls += 100
        best = min(best, (time.process_time() - start) / calls * 1e6)
    return best


async def bare(scope: Any, receive: Any, send: Any) -> None:
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": b"{}"})


def asgi_call(app: Any, method: str) -> Callable[[], object]:
    scope = {"type": "http", "method": method, "scheme": "http", "path": "/api/tables",
             "headers": [(b"host", b"dominoes.example:8000"),
                         (b"origin", b"http://dominoes.example:8000"),
                         (b"content-type", b"application/json")]}
    loop = asyncio.new_event_loop()

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        return None

    return lambda: loop.run_until_complete(app(scope, receive, send))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=1.0)
    seconds = parser.parse_args().seconds
    guard = Guard(bare, hosts=host_rules(("dominoes.example", ".games.example"), "0.0.0.0",
                                         8000), origins=())
    rows: list[tuple[str, float]] = []
    base_get = per_call_us(asgi_call(bare, "GET"), seconds)
    rows.append(("bare ASGI app, one request (event loop included)", base_get))
    rows.append(("Guard + app, GET", per_call_us(asgi_call(guard, "GET"), seconds)))
    rows.append(("Guard + app, POST (Origin checked)", per_call_us(asgi_call(guard, "POST"),
                                                                   seconds)))
    name = "Annabelle Montgomery-Fairweather"[:32]
    rows.append(("player name, 32 ASCII characters",
                 per_call_us(lambda: text.player_name(name, 32), seconds)))
    mixed = ("Zoë ग्रेस 李雷 مرحبا 👨\u200d👩\u200d👧 " * 8)[:32]
    rows.append(("player name, 32 mixed-script characters",
                 per_call_us(lambda: text.player_name(mixed, 32), seconds)))
    line = ("good game, well played! " * 9)[:200]
    rows.append(("chat line, 200 ASCII characters",
                 per_call_us(lambda: text.chat_text(line, 200), seconds)))
    mixed_line = ("Zoë ग्रेस 李雷 مرحبا 👍 " * 12)[:200]
    rows.append(("chat line, 200 mixed-script characters",
                 per_call_us(lambda: text.chat_text(mixed_line, 200), seconds)))
    body = {"rules": {"preset": "all-fives", "target": {"2": 250, "3": 200, "4": 200}},
            "players": 4, "bots": {"1": "greedy", "2": "strong"}, "name": "x" * 3800}
    rows.append(("body depth check (4 KB create request)", per_call_us(lambda: _depth(body),
                                                                       seconds)))
    rows.append(("body surrogate check (4 KB create request)",
                 per_call_us(lambda: json.dumps(body, ensure_ascii=False).encode(), seconds)))
    width = max(len(label) for label, _ in rows)
    print(f"{'what':<{width}}  CPU µs per call")
    for label, us in rows:
        print(f"{label:<{width}}  {us:8.2f}")
    print(f"Guard overhead per GET: {rows[1][1] - base_get:.2f} µs, per POST: "
          f"{rows[2][1] - base_get:.2f} µs")


if __name__ == "__main__":
    main()

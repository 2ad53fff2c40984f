"""`python -m engine play`: a game in the terminal, one person against bots.

The person sees only their own view (`engine.view`) and redacted events, exactly
what a bot or a network client would see. Each turn shows the scores, the layout
drawn arm by arm (a spinner's four sides named), the open ends and their count, the
hand, and the legal moves numbered with the points each would score now. Colours
are plain ANSI and only when standard output is a terminal. Imports engine modules
and the standard library only.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping
from typing import Any, TextIO

from engine.bots import BOT_LEVELS, choose_move
from engine.bots.knowledge import Knowledge, ModelError
from engine.bots.simple import move_points
from engine.errors import EngineError
from engine.game import apply, new_game
from engine.moves import Draw, Move, Pass, Play, move_from_data
from engine.tiles import Tile
from engine.views import redact_events, view

SIDE_NAMES = {"L": "left ", "R": "right", "U": "up   ", "D": "down ", "O": "on   "}


class Style:
    """ANSI colours when enabled, plain text otherwise."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def _wrap(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.enabled else text

    def bold(self, text: str) -> str:
        return self._wrap("1", text)

    def points(self, text: str) -> str:
        return self._wrap("1;32", text)

    def bot(self, text: str) -> str:
        return self._wrap("36", text)

    def warn(self, text: str) -> str:
        return self._wrap("33", text)

    def dim(self, text: str) -> str:
        return self._wrap("2", text)


def tile_text(name: str, inner: int | None = None) -> str:
    """`[3|1]` with `inner` (the half touching its parent) first; doubles as `[5:5]`."""
    t = Tile.parse(name)
    if t.is_double:
        return f"[{t.high}:{t.low}]"
    if inner is not None and inner == t.low:
        return f"[{t.low}|{t.high}]"
    return f"[{t.high}|{t.low}]"


def layout_lines(v: Mapping[str, Any]) -> list[str]:
    """The layout drawn as the first tile and one line per arm, the open value at each tip."""
    layout: list[Mapping[str, Any]] = v["layout"]
    if not layout:
        return ["(empty: the first tile is the lead)"]
    children: dict[int, list[tuple[str, int]]] = {}
    for i, node in enumerate(layout):
        if node["parent"] is not None:
            children.setdefault(int(node["parent"]), []).append((str(node["side"]), i))
    open_at: dict[int, list[Mapping[str, Any]]] = {}
    for end in v["ends"]:
        open_at.setdefault(int(end["node"]), []).append(end)

    def arm(start: int, depth: int) -> list[str]:
        parts: list[str] = []
        branches: list[str] = []
        node = start
        while True:
            info = layout[node]
            parts.append(tile_text(info["tile"], info["inner"]) + ("*" if info["spinner"] else ""))
            kids = children.get(node, [])
            for end in open_at.get(node, []):
                if end["side"] in ("U", "D"):
                    branches.append("  " * (depth + 1) + f"{SIDE_NAMES[end['side']]} → "
                                    f"{end['value']} (open)")
            if info["spinner"]:
                for side, kid in kids:
                    if side in ("U", "D"):
                        sub = arm(kid, depth + 1)
                        branches.append("  " * (depth + 1) + f"{SIDE_NAMES[side]} " + sub[0])
                        branches.extend(sub[1:])
                kids = [(s, k) for s, k in kids if s not in ("U", "D")]
            if not kids:
                tips = [e for e in open_at.get(node, []) if e["side"] not in ("U", "D")]
                if tips:
                    parts.append(f"→ {tips[0]['value']}")
                break
            node = kids[0][1]
        return [" ".join(parts), *branches]

    root = layout[0]
    kind = "spinner" if root["spinner"] else "lead"
    lines = [f"{kind} {tile_text(root['tile'])}" + ("*" if root["spinner"] else "")]
    by_side: dict[str, int] = {side: kid for side, kid in children.get(0, [])}
    sides = ["L", "R", "U", "D"] if root["spinner"] else ["L", "R"]
    tile = Tile.parse(root["tile"])
    for side in sides:
        if side in by_side:
            sub = arm(by_side[side], 1)
            lines.append(f"  {SIDE_NAMES[side]} " + sub[0])
            lines.extend(sub[1:])
        else:
            ends = [e for e in open_at.get(0, []) if e["side"] == side]
            if ends:
                lines.append(f"  {SIDE_NAMES[side]} → {ends[0]['value']} (open)")
            elif side in ("U", "D"):
                lines.append(f"  {SIDE_NAMES[side]} (opens once left and right are covered)")
    del tile
    return lines


class Session:
    """One terminal game: the person at `seat`, bots elsewhere."""

    def __init__(self, *, spec: Any, players: int, bots: list[str], seed: int, seat: int,
                 think_ms: int | None, out: TextIO, read: Callable[[str], str],
                 style: Style) -> None:
        self.state = new_game(spec, players, seed)
        self.players = players
        self.bots = bots
        self.seed = seed
        self.seat = seat
        self.think_ms = think_ms
        self.out = out
        self.read = read
        self.style = style
        self.moves = 0
        self.counts_ends = self.state.rules.scoring in ("fives", "threes", "fives_and_threes")

    def say(self, text: str = "") -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def level(self, seat: int) -> str:
        """The bot at `seat`: the levels given apply to the other seats in seat order."""
        others = [s for s in range(self.players) if s != self.seat]
        return self.bots[others.index(seat) % len(self.bots)]

    def name(self, seat: int) -> str:
        if seat == self.seat:
            return "You"
        level = self.level(seat)
        partner = any(seat in side and self.seat in side for side in self.state.sides)
        who = "Partner" if partner else "Seat"
        return self.style.bot(f"{who} {seat} ({level})")

    def side_name(self, side: int) -> str:
        seats = self.state.sides[side]
        if self.seat in seats:
            return "You" if len(seats) == 1 else "You & " + " & ".join(
                f"seat {s}" for s in seats if s != self.seat)
        return " & ".join(f"seat {s}" for s in seats)

    def show_table(self, v: Mapping[str, Any]) -> None:
        st = self.style
        target = v["rules"].get("target")
        scores = "  ·  ".join(f"{self.side_name(k)} {s}" for k, s in enumerate(v["scores"]))
        self.say(st.bold(f"── Round {v['round'] + 1} ── ") + f"Scores: {scores}  (target {target})")
        counts = ", ".join(f"seat {s}: {c}" for s, c in enumerate(v["hand_counts"])
                           if s != self.seat)
        self.say(f"Boneyard {v['boneyard']} tiles; tiles in hand: {counts}")
        self.say("Layout:")
        for line in layout_lines(v):
            self.say("  " + line)
        if v["layout"]:
            note = "   (* spinner)" if any(n["spinner"] for n in v["layout"]) else ""
            if self.counts_ends:
                self.say(f"Ends count {v['end_total']}{note}")
            else:
                shown = ", ".join(str(e["value"]) for e in v["ends"])
                self.say(f"Open ends: {shown}{note}")
        self.say("Your hand: " + " ".join(tile_text(t) for t in v["hand"]))

    def move_text(self, move: Move) -> str:
        if isinstance(move, Draw):
            return "draw a tile"
        if isinstance(move, Pass):
            return "pass"
        assert isinstance(move, Play)
        return f"play {move.tile}" + (f" on {move.on}" if move.on is not None else " (lead)")

    def ask(self, v: Mapping[str, Any]) -> Move | None:
        legal = [move_from_data(d) for d in v["legal"]]
        try:
            knowledge: Knowledge | None = Knowledge.from_view(v, infer=False)
        except ModelError:
            knowledge = None
        self.say("Your moves:")
        for i, move in enumerate(legal, 1):
            pts = move_points(knowledge, move) if knowledge is not None else 0
            extra = self.style.points(f"  scores {pts}") if pts else ""
            self.say(f"  {i}) {self.move_text(move)}{extra}")
        while True:
            try:
                answer = self.read(f"Your move [1-{len(legal)}], h for help, q to quit: ").strip()
            except EOFError:
                return None
            if answer.lower() in ("q", "quit", "exit"):
                return None
            if answer.lower() in ("h", "help", "?"):
                self.say("Type the number of a move and press Enter. Tiles are written "
                         "[3|1] with the half touching the layout first; [5:5] is a double. "
                         "'on 5-5' names the layout tile you attach to.")
                continue
            if answer.isdigit() and 1 <= int(answer) <= len(legal):
                return legal[int(answer) - 1]
            self.say(self.style.warn(
                f"'{answer}' is not a move here: type a number from 1 to {len(legal)}."))

    def report(self, events: list[dict[str, object]]) -> None:
        for event in redact_events(events, self.seat):
            e: dict[str, Any] = event
            kind = e["type"]
            if kind == "play":
                pts = int(e["points"])
                on = f" on {e['on']}" if e.get("on") else ""
                score = self.style.points(f"scores {pts}") if pts else ""
                count = f"ends count {e['end_total']}" if self.counts_ends else ""
                detail = ", ".join(x for x in (count, score) if x)
                self.say(f"{self.name(e['seat'])} played {e['tile']}{on}"
                         + (f" ({detail})" if detail else ""))
            elif kind == "draw":
                got = f" ({e['tile']})" if "tile" in e else ""
                why = ": nothing fits" if e["seat"] == self.seat else ""
                self.say(f"{self.name(e['seat'])} drew a tile{got}{why}")
            elif kind == "pass":
                why = ": nothing fits and nothing to draw" if e["seat"] == self.seat else ""
                self.say(f"{self.name(e['seat'])} passed{why}")
            elif kind == "hand_end":
                self.hand_end(e)
            elif kind == "deal":
                self.say(self.style.bold(f"New round {int(e['round']) + 1}: "
                                         f"{self.name(int(e['leader']))} to lead."))
            elif kind == "game_end":
                self.game_end(e)

    def hand_end(self, e: Mapping[str, Any]) -> None:
        winner = e.get("winner")
        who = self.side_name(int(winner)) if winner is not None else "nobody"
        self.say(self.style.bold(f"Hand over ({e['end']}): {who} won it, bonus {e['bonus']}."))
        for s, hand in enumerate(e["hands"]):
            shown = " ".join(tile_text(t) for t in hand) or "(empty)"
            self.say(f"  {self.name(s)}: {shown}  ({e['pips'][s]} pips)")
        totals = "  ·  ".join(f"{self.side_name(k)} {t}" for k, t in enumerate(e["totals"]))
        self.say(f"  Totals: {totals}")

    def game_end(self, e: Mapping[str, Any]) -> None:
        winner = e.get("winner")
        mine = winner is not None and self.seat in self.state.sides[int(winner)]
        verdict = "You win!" if mine else (
            "Nobody wins." if winner is None else f"{self.side_name(int(winner))} win.")
        self.say(self.style.bold(f"Game over. {verdict}"))

    def run(self) -> int:
        self.say(self.style.bold("Dominoes: ") + f"you are seat {self.seat}. "
                 f"Rules: {json.dumps(self.state.rules.spec)}, {self.players} players.")
        self.say(f"{self.name(self.state.leader)} to lead.")
        while not self.state.game_over:
            turn = self.state.turn
            assert turn is not None
            v = view(self.state, turn)
            legal: list[Any] = list(v["legal"])  # type: ignore[call-overload]
            forced: list[Move] = [move_from_data(d) for d in legal]
            move: Move
            if turn == self.seat and len(forced) == 1 and isinstance(forced[0], Draw | Pass):
                # Nothing fits: drawing (or passing) is the only move, so it is made for you.
                move = forced[0]
            elif turn == self.seat:
                self.say()
                self.show_table(v)
                chosen = self.ask(v)
                if chosen is None:
                    self.say("Bye.")
                    return 0
                move = chosen
            else:
                level = self.level(turn)
                move = choose_move(level, v, self.seed * 7919 + self.moves, self.think_ms)
            self.state, events = apply(self.state, turn, move)
            self.moves += 1
            self.report(events)
        return 0


def run_play_command(args: Any) -> int:
    """`python -m engine play`: exit 0 at the end of the game or on quit, 1 on bad options."""
    spec: Any = args.preset
    if args.rules is not None:
        try:
            spec = json.loads(args.rules)
        except ValueError as exc:
            sys.stdout.write(f"--rules is not JSON: {exc}\n")
            return 1
    bots = [b.strip() for b in args.bots.split(",")]
    unknown = [b for b in bots if b not in BOT_LEVELS]
    if unknown:
        sys.stdout.write(f"unknown bot {unknown[0]!r}; choose from {', '.join(BOT_LEVELS)}\n")
        return 1
    if not 0 <= args.seat < args.players:
        sys.stdout.write(f"--seat must be from 0 to {args.players - 1}\n")
        return 1
    style = Style(sys.stdout.isatty() and not args.no_color)
    try:
        session = Session(spec=spec, players=args.players, bots=bots, seed=args.seed,
                          seat=args.seat, think_ms=args.think_ms, out=sys.stdout, read=input,
                          style=style)
    except EngineError as exc:
        sys.stdout.write(f"{exc.message} ({exc.code})\n")
        return 1
    try:
        return session.run()
    except KeyboardInterrupt:
        sys.stdout.write("\nBye.\n")
        return 0
    except BrokenPipeError:
        # The reader went away (e.g. piped into `head`): stop quietly.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def register_play(sub: Any) -> None:
    """Add the `play` subcommand to the engine's command line."""
    p = sub.add_parser("play", help="play a game in the terminal against bots")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--preset", default="all-fives", help="preset name (default all-fives)")
    which.add_argument("--rules", help='rules spec as JSON, e.g. {"preset":"bergen"}')
    p.add_argument("--players", type=int, default=2, choices=(2, 3, 4))
    p.add_argument("--bots", default="strong",
                   help="bot level, or one per other seat in seat order, separated by commas "
                        f"({', '.join(BOT_LEVELS)})")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--seat", type=int, default=0, help="your seat (default 0)")
    p.add_argument("--think-ms", type=int, default=None, help="strong bots' time per move")
    p.add_argument("--no-color", action="store_true", help="never use colours")
    p.set_defaults(run=run_play_command)

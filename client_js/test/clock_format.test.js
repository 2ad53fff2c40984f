// Tests of the seat clock arithmetic and text (src/clock_format.js).
import { test } from "node:test";
import assert from "node:assert/strict";
import { clockText, clockTitle, formatClock, LOW_MS, seatClock } from "../src/clock_format.js";

test("times format as m:ss, and hours as 1h05", () => {
  assert.equal(formatClock(0), "0:00");
  assert.equal(formatClock(-500), "0:00");
  assert.equal(formatClock(4001), "0:05");
  assert.equal(formatClock(115_000), "1:55");
  assert.equal(formatClock(3_900_000), "1h05");
});

const realtime = (deadline, reserve) => ({ kind: "realtime", deadline, reserve });

test("the real-time seat to move shows its move time, then its reserve", () => {
  const now = 1_000_000;
  // 5 s of move time left and the whole 1:55 reserve
  const c = seatClock(realtime(now + 5_000 + 115_000, [115_000, 120_000]), 0, { turn: 0, now });
  assert.deepEqual(c, { running: true, move: 5_000, reserve: 115_000, left: 120_000, low: false });
  assert.equal(clockText(c), "0:05 + 1:55");
  assert.match(clockText(c), /\d+:\d\d \+ \d+:\d\d/);
  assert.equal(clockTitle(c), "move time 0:05, then reserve 1:55");
});

test("once the move time is used up the reserve runs down", () => {
  const now = 2_000_000;
  const c = seatClock(realtime(now + 40_000, [115_000, 0]), 0, { turn: 0, now });
  assert.equal(c.move, 0);
  assert.equal(c.reserve, 40_000);
  assert.equal(clockText(c), "0:00 + 0:40");
});

test("low: under ten seconds in all, for the seat to move only", () => {
  const now = 0;
  const clock = realtime(now + LOW_MS - 1, [0, 0]);
  assert.equal(seatClock(clock, 0, { turn: 0, now }).low, true);
  assert.equal(seatClock(clock, 1, { turn: 0, now }).low, false);
  assert.equal(seatClock(realtime(now + LOW_MS + 5_000, [5_000, 0]), 0, { turn: 0, now }).low, false);
});

test("a waiting seat shows its reserve; bots, no clock and a finished game show none", () => {
  const clock = realtime(10_000, [115_000, 90_000]);
  const waiting = seatClock(clock, 1, { turn: 0, now: 0 });
  assert.equal(clockText(waiting), "1:30");
  assert.equal(waiting.running, false);
  assert.equal(seatClock(clock, 1, { turn: 0, bot: true }), null);
  assert.equal(seatClock({ kind: null, deadline: null, reserve: null }, 0, { turn: 0 }), null);
  assert.equal(seatClock(undefined, 0, { turn: 0 }), null);
  assert.equal(seatClock(clock, 0, { turn: 0, over: true, now: 0 }).running, false);
  assert.equal(clockText(null), "");
});

test("a turn-based clock has one bank: the time left, low under an hour", () => {
  const now = 0;
  const clock = { kind: "turn", deadline: 26 * 3_600_000, reserve: null };
  const c = seatClock(clock, 0, { turn: 0, now });
  assert.equal(clockText(c), "26h00");
  assert.equal(c.low, false);
  assert.equal(seatClock({ ...clock, deadline: 1_800_000 }, 0, { turn: 0, now }).low, true);
  assert.equal(clockText(seatClock(clock, 1, { turn: 0, now })), "");
});

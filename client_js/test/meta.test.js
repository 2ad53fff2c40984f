// Unit tests of meta.js: the lobby's choices come from the server's GET /api/meta answer.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  botLevels, clockChoices, clockFields, defaultLevel, defaultPreset, nameLimits, playerCounts,
  presetChoices, presetLabel, timeoutChoices,
} from "../src/meta.js";

const META = {
  proto: 1,
  presets: [
    { name: "all-fives", label: "All Fives", family: "fives", default: true,
      targets: { 2: 150, 3: 150, 4: 150 }, rules: {} },
    { name: "bergen", label: "Bergen", family: "bergen", default: false,
      targets: { 2: 15, 3: 15, 4: 15 }, rules: {} },
    { name: "new-game", label: "", family: "block", default: false, targets: {}, rules: {} },
  ],
  bot_levels: ["random", "greedy", "strong", "strong-fast"],
  create: {
    rules: { default: "all-fives", target: { min: 1, max: 1000 } },
    players: { min: 2, max: 4, default: 2 },
    bots: { levels: ["random", "greedy", "strong", "strong-fast"], free_seats: 1 },
    clock: {
      kinds: [null, "realtime", "turn"], default: null,
      realtime: { move_s: { min: 1, max: 3600, default: 30 }, reserve_s: { min: 0, max: 86400, default: 120 } },
      turn: { move_h: { min: 1, max: 168, default: 24 }, max_h: { min: 1, max: 720, default: 72 } },
    },
    on_timeout: { choices: ["bot", "forfeit"], default: "bot" },
    private: { default: false },
    spectator_chat: { choices: [true, false, null], default: null },
    name: { max_length: 60 },
    player_name: { max_length: 32 },
  },
};

test("every preset the server lists is offered, with its label or its name", () => {
  assert.deepEqual(presetChoices(META),
    [["all-fives", "All Fives"], ["bergen", "Bergen"], ["new-game", "new-game"]]);
  assert.equal(defaultPreset(META), "all-fives");
  assert.equal(presetLabel(META, "bergen"), "Bergen");
  assert.equal(presetLabel(META, { preset: "bergen", target: 30 }), "Bergen");
  assert.equal(presetLabel(META, {}), "All Fives");
  assert.equal(presetLabel(META, "unheard-of"), "unheard-of");
  assert.equal(presetLabel(null, "bergen"), "bergen");
});

test("every bot level is offered, strong-fast included; greedy first when there is one", () => {
  assert.deepEqual(botLevels(META), ["random", "greedy", "strong", "strong-fast"]);
  assert.equal(defaultLevel(META), "greedy");
  const other = { create: { bots: { levels: ["strong-fast", "strong"] } } };
  assert.equal(defaultLevel(other), "strong-fast");
});

test("player counts and clock fields follow the server's bounds", () => {
  assert.deepEqual(playerCounts(META), { counts: [2, 3, 4], first: 2 });
  assert.deepEqual(clockChoices(META),
    [["none", "No clock"], ["realtime", "Real time"], ["turn", "Turn based (days)"]]);
  assert.deepEqual(clockFields(META, "none"), []);
  assert.deepEqual(clockFields(META, "realtime"), [
    { name: "move_s", label: "Seconds per move", min: 1, max: 3600, value: 30 },
    { name: "reserve_s", label: "Reserve (seconds)", min: 0, max: 86400, value: 120 },
  ]);
  assert.deepEqual(clockFields(META, "turn").map((f) => [f.name, f.max]),
    [["move_h", 168], ["max_h", 720]]);
  assert.deepEqual(timeoutChoices(META),
    [["bot", "a bot plays the turn"], ["forfeit", "the game is forfeited"]]);
  assert.deepEqual(nameLimits(META), { table: 60, player: 32 });
});

/**
 * The fair-deal page (#/fair or #/fair/<id>): how a player checks a game's deals
 * themselves (docs/notation.md "Fair deals"). With a table id it shows that game's
 * commitment, revealed seed and salt, and the SHA-256 this browser computes from them.
 */
import { api } from "./api.js";
import { commitmentText, sha256Hex } from "./fair.js";
import { el, fill } from "./view/dom.js";

export function showFairPage(root, id = null, invite = null) {
  const game = el("section", { class: "panel fair-game", "aria-live": "polite" });
  const file = id ? `${id}.json` : "game.json";
  const url = `${location.origin}/api/tables/${id ? encodeURIComponent(id) : "<table>"}/transcript${
    invite ? `?invite=${encodeURIComponent(invite)}` : ""}`;
  fill(root, el("article", { class: "fair-page" },
    el("h1", {}, "Fair deals: check them yourself"),
    el("p", {}, "When a table is created the server picks the game's secret seed, from which every ",
      "hand, the order of the boneyard and every leader chosen by chance follow, and a random salt. ",
      "From then on the table shows their ", el("strong", {}, "commitment"), ": the SHA-256 of the text ",
      el("code", {}, "dominoes-deal/1:<seed>:<salt>"),
      " (the seed in decimal, the salt as 32 lowercase hex digits). The seed stays secret until the ",
      "game is over; then the game's transcript reveals the seed and the salt."),
    el("p", {}, "A server that changed the deals during the game would have to reveal a seed whose ",
      "hash is not the commitment you saw. The game-over dialog checks that hash in your browser. ",
      "It does not replay the deals: for that, use the command line below."),
    game,
    el("h2", {}, "1. Check the commitment by hand"),
    el("pre", {}, el("code", {}, "printf 'dominoes-deal/1:%s:%s' SEED SALT | sha256sum")),
    el("p", {}, "The result must be the commitment the table showed when the game started."),
    el("h2", {}, "2. Check every deal"),
    el("p", {}, "From a checkout of this project's source (Python 3.11 or later, nothing to install):"),
    el("pre", {}, el("code", {}, `curl -s '${url}' > ${file}\npython3 -m engine verify ${file} --commitment COMMITMENT`)),
    el("p", {}, "It recomputes the commitment and every round's hands, boneyard and leader from the seed ",
      "and prints one line: ", el("code", {}, '"verified": true'), " when everything matches, else ",
      "each mismatch (exit status 1). The format is described in the project's docs/notation.md, ",
      "section \"Fair deals\"."),
    el("p", {}, el("a", { class: "button ghost", href: id ? `#/t/${encodeURIComponent(id)}${
      invite ? `?invite=${encodeURIComponent(invite)}` : ""}` : "#/" }, id ? "Back to the table" : "Lobby"))));
  if (!id) {
    game.hidden = true;
    return () => {};
  }
  let gone = false;
  fill(game, el("p", { class: "muted" }, "Reading this game's transcript…"));
  api.transcript(id, invite).then(async (t) => {
    if (gone) return;
    if (typeof t.seed !== "string") {
      fill(game, el("p", {}, "This game's transcript reveals no seed."));
      return;
    }
    const { hex } = await sha256Hex(commitmentText(t.seed, t.salt));
    if (gone) return;
    fill(game, el("h2", {}, "This game"),
      el("dl", {},
        el("dt", {}, "seed"), el("dd", {}, el("code", { class: "seed" }, t.seed)),
        el("dt", {}, "salt"), el("dd", {}, el("code", { class: "salt" }, t.salt)),
        el("dt", {}, "commitment"), el("dd", {}, el("code", { class: "commitment" }, t.commitment)),
        el("dt", {}, "SHA-256 here"), el("dd", {}, el("code", { class: "computed" }, hex))),
      el("p", {}, hex === t.commitment
        ? "The hash computed here equals the transcript's commitment; compare it with the one shown when the game started."
        : "The hash computed here is NOT the transcript's commitment."));
  }, (e) => {
    if (!gone) fill(game, el("p", {}, e.code === "game_not_over"
      ? "The game is not over yet: the seed is revealed when it ends." : `No transcript: ${e.message}`));
  });
  return () => {
    gone = true;
  };
}

/**
 * Entry point: routes by URL hash — #/ lobby, #/t/<id>[?invite=code] table,
 * #/replay/<id> replay, #/fair[/<id>] how to check a game's deals — and shows the
 * connection badge. Only glue.
 */
import { showFairPage } from "./fair_page.js";
import { showLobby } from "./lobby.js";
import { showReplay } from "./replay.js";
import { showTable } from "./table.js";
import { tileDefs } from "./view/tiles.js";

const app = document.getElementById("app");
const badge = document.getElementById("conn");
const BADGE_TEXT = {
  connecting: "Connecting…", online: "Online", reconnecting: "Reconnecting…", offline: "Offline",
};
let teardown = () => {};

function setBadge(status, detail) {
  if (!status) {
    badge.hidden = true;
    return;
  }
  badge.hidden = false;
  badge.dataset.state = status;
  badge.textContent = detail && status === "offline" ? `Offline: ${detail}` : BADGE_TEXT[status] ?? status;
}

function route() {
  teardown();
  setBadge(null);
  const [path, query = ""] = location.hash.replace(/^#/, "").split("?");
  const params = new URLSearchParams(query);
  const parts = path.split("/").filter(Boolean);
  if (parts[0] === "t" && parts[1]) {
    setBadge("connecting");
    teardown = showTable(app, decodeURIComponent(parts[1]), {
      invite: params.get("invite"), onConnection: setBadge,
    });
  } else if (parts[0] === "replay" && parts[1]) {
    teardown = showReplay(app, decodeURIComponent(parts[1]));
  } else if (parts[0] === "fair") {
    teardown = showFairPage(app, parts[1] ? decodeURIComponent(parts[1]) : null, params.get("invite"));
  } else {
    teardown = showLobby(app);
  }
  document.body.dataset.page = parts[0] ?? "lobby";
}

document.body.insertAdjacentHTML("afterbegin", tileDefs());
window.addEventListener("hashchange", route);
route();

/**
 * Entry point: routes by URL hash — #/ lobby, #/t/<id>[?invite=code] table,
 * #/replay/<id> replay, #/fair[/<id>] how to check a game's deals, #/login, #/register,
 * #/players/<name> profile, #/leaderboards[/<family>], #/seasons/<family>, #/me/tables,
 * #/friends, #/messages[/<name>] — and shows the
 * connection badge and the account links. Only glue.
 */
import { drawNav, loadUser, onUserChange, showLogin, showRegister } from "./account.js";
import { startCommunity } from "./community.js";
import { showFriends } from "./friends.js";
import { showMessages } from "./messages.js";
import { claimRematch } from "./rematch.js";
import { showSeason } from "./seasons.js";
import { mountTableInvite } from "./table_invite.js";
import { showFairPage } from "./fair_page.js";
import { showLeaderboard } from "./leaderboard.js";
import { showLobby } from "./lobby.js";
import { showMyTables } from "./mytables.js";
import { showProfile } from "./profile.js";
import { showReplay } from "./replay.js";
import { showTable } from "./table.js";
import { tileDefs } from "./view/tiles.js";

const app = document.getElementById("app");
const badge = document.getElementById("conn");
const nav = document.getElementById("nav");
const BADGE_TEXT = {
  connecting: "Connecting…", online: "Online", reconnecting: "Reconnecting…", offline: "Offline",
};
/** Pages drawn from who is logged in: drawn again when that changes. */
const BY_USER = new Set(["lobby", "me", "leaderboards", "players", "friends", "messages", "seasons"]);
let teardown = () => {};
let page = "lobby";
let current = location.hash || "#/";
let previous = "#/"; // the last page that is not a login or register form

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
  teardown = () => {};
  setBadge(null);
  const [path, query = ""] = location.hash.replace(/^#/, "").split("?");
  const params = new URLSearchParams(query);
  const parts = path.split("/").filter(Boolean);
  const arg = (i) => (parts[i] ? decodeURIComponent(parts[i]) : null);
  if (!/^#\/(login|register)\b/.test(current) && current !== location.hash) previous = current;
  current = location.hash || "#/";
  page = parts[0] ?? "lobby";
  if (parts[0] === "t" && parts[1]) {
    setBadge("connecting");
    const id = arg(1);
    const stopTable = showTable(app, id, {
      invite: params.get("invite"), onConnection: setBadge, onRematch: claimRematch,
    });
    const stopInvite = mountTableInvite(app, id, params.get("invite"));
    teardown = () => {
      stopInvite();
      stopTable();
    };
  } else if (parts[0] === "replay" && parts[1]) {
    teardown = showReplay(app, arg(1));
  } else if (parts[0] === "fair") {
    teardown = showFairPage(app, arg(1), params.get("invite"));
  } else if (parts[0] === "login") {
    teardown = showLogin(app, previous);
  } else if (parts[0] === "register") {
    teardown = showRegister(app, previous);
  } else if (parts[0] === "players" && parts[1]) {
    teardown = showProfile(app, arg(1));
  } else if (parts[0] === "leaderboards") {
    teardown = showLeaderboard(app, arg(1));
  } else if (parts[0] === "friends") {
    teardown = showFriends(app);
  } else if (parts[0] === "messages") {
    teardown = showMessages(app, arg(1));
  } else if (parts[0] === "seasons") {
    teardown = showSeason(app, arg(1), params.get("season"));
  } else if (parts[0] === "me" && parts[1] === "tables") {
    teardown = showMyTables(app);
  } else {
    page = "lobby";
    teardown = showLobby(app);
  }
  document.body.dataset.page = page;
  drawNav(nav, page);
}

onUserChange((user, before) => {
  drawNav(nav, page);
  const changed = before !== undefined && (user?.id ?? null) !== (before?.id ?? null);
  if (changed && BY_USER.has(page)) route();
});

document.body.insertAdjacentHTML("afterbegin", tileDefs());
window.addEventListener("hashchange", route);
startCommunity();
loadUser();
route();

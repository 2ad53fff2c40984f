/**
 * The visitor's account: who is logged in (GET /api/me, docs/players.md), logging in, out and
 * registering, the header's account links, and the #/login and #/register pages. Every other
 * page asks `currentUser()` / `loadUser()` and hears of a change through `onUserChange`.
 */
import { api, setPlayerName } from "./api.js";
import { el, fill } from "./view/dom.js";

let user; // undefined: not asked yet; null: nobody logged in; else {id, username, created_at}
let loading = null;
const listeners = new Set();

/** The logged-in account, or null (also while not known yet). */
export function currentUser() {
  return user ?? null;
}

function setUser(next) {
  const before = user;
  user = next ?? null;
  if (user) setPlayerName(user.username);
  for (const fn of listeners) fn(user, before);
}

/** Asks the server who is logged in (once, unless `force`); resolves to the account or null. */
export function loadUser(force = false) {
  if (!force && user !== undefined) return Promise.resolve(user);
  if (!force && loading) return loading;
  loading = api.me().then((me) => me, () => null).then((me) => {
    loading = null;
    setUser(me);
    return user;
  });
  return loading;
}

/** Calls `fn(user, before)` whenever the account changes; returns the unsubscribe. */
export function onUserChange(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

export async function logIn(username, password) {
  setUser(await api.login(username, password));
  return user;
}

export async function register(username, password) {
  setUser(await api.register(username, password));
  return user;
}

export async function logOut() {
  try {
    await api.logout();
  } catch (e) {
    // an expired session is logged out already
    if (e.status !== 401) throw e;
  }
  setUser(null);
}

/** The header's links: "Log in · Register", or "<name> · Profile · My tables · … · Log out". */
export function drawNav(nav, page = "") {
  const link = (href, text, key) => el("a", { href, class: "nav-link",
    "aria-current": page === key ? "page" : null, "data-nav": key }, text);
  const sep = () => el("span", { class: "nav-sep", "aria-hidden": "true" }, "·");
  const items = [];
  if (user) {
    items.push(el("span", { class: "nav-user", title: "logged in" }, user.username),
      link(`#/players/${encodeURIComponent(user.username)}`, "Profile", "players"),
      link("#/me/tables", "My tables", "me"),
      link("#/leaderboards", "Leaderboards", "leaderboards"),
      el("button", { type: "button", class: "nav-link linkish", "data-nav": "logout",
        onclick: async (e) => {
          e.target.disabled = true;
          try {
            await logOut();
          } catch (err) {
            e.target.disabled = false;
            e.target.title = err.message;
          }
        } }, "Log out"));
  } else if (user === null) {
    items.push(link("#/leaderboards", "Leaderboards", "leaderboards"),
      link("#/login", "Log in", "login"), link("#/register", "Register", "register"));
  }
  fill(nav, ...items.flatMap((item, i) => (i ? [sep(), item] : [item])));
}

/** The #/login page; `back` is the hash to return to once logged in. */
export function showLogin(root, back = "#/") {
  return accountForm(root, {
    mode: "login", title: "Log in", submit: "Log in", back,
    other: el("p", { class: "muted" }, "No account yet? ",
      el("a", { href: "#/register" }, "Register")),
    send: logIn,
  });
}

/** The #/register page; `back` is the hash to return to once registered. */
export function showRegister(root, back = "#/") {
  return accountForm(root, {
    mode: "register", title: "Create an account", submit: "Register", back,
    hint: el("p", { class: "muted hint-text" },
      "A name of 3 to 20 letters, digits, _ or -; a password of at least 8 characters. ",
      "Rated tables and your profile need an account; casual tables do not."),
    other: el("p", { class: "muted" }, "Have an account? ", el("a", { href: "#/login" }, "Log in")),
    send: register,
  });
}

function accountForm(root, { mode, title, submit, back, hint = null, other, send }) {
  const error = el("p", { class: "form-error", role: "alert" });
  const button = el("button", { type: "submit", class: "primary" }, submit);
  const form = el("form", { class: `account-form ${mode}-form`, "aria-label": title, novalidate: true },
    el("label", { class: "field" }, el("span", {}, "Username"),
      el("input", { name: "username", required: true, maxlength: 20, autocomplete: "username",
        autocapitalize: "none", spellcheck: "false" })),
    el("label", { class: "field" }, el("span", {}, "Password"),
      el("input", { name: "password", type: "password", required: true, maxlength: 1024,
        autocomplete: mode === "login" ? "current-password" : "new-password" })),
    error, button);
  let gone = false;
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const username = form.username.value.trim();
    const password = form.password.value;
    error.textContent = "";
    if (!username || !password) {
      error.textContent = "Enter a username and a password.";
      return;
    }
    button.disabled = true;
    try {
      await send(username, password);
      if (!gone) location.hash = back && !/^#\/(login|register)/.test(back) ? back : "#/";
    } catch (err) {
      if (gone) return;
      error.textContent = err.message || "That did not work.";
      form.password.select();
    } finally {
      button.disabled = false;
    }
  });
  const already = currentUser()
    ? el("p", { class: "muted logged-in-note" }, `You are logged in as ${currentUser().username}.`)
    : null;
  fill(root, el("section", { class: "panel account-page" }, el("h1", {}, title), already, hint, form,
    other));
  form.username.focus();
  return () => {
    gone = true;
  };
}

// fleetscope's dashboard: the shell (header, sign-in gate, routes). A share
// link's page (/s/TOKEN) opens without the gate: its token is its key.
import "./style.css";
import { apiKey, clearKey } from "./api";
import { h, replace } from "./dom";
import type { Page } from "./pages/page";
import { fleetPage } from "./pages/fleet";
import { profilePage } from "./pages/profile";
import { searchPage } from "./pages/search";
import { sharedPage } from "./pages/shared";
import { signInPage } from "./pages/signin";
import { emptyState, setUnauthenticatedHandler } from "./pages/states";
import { linkHandler, navigate, onNavigate, parseRoute } from "./router";

performance.mark("fleetscope:start"); // modules loaded and evaluated

const root = document.getElementById("app")!;
const main = h("main", { id: "main", tabindex: "-1" });
const account = h("div", { class: "account" });
const nav = h("nav", { class: "topnav", "aria-label": "Main" }, h("a", { href: "/" }, "Profiles"), h("a", { href: "/fleet" }, "Fleet"));
const shell = h(
  "div",
  { class: "shell" },
  h("a", { class: "skip", href: "#main" }, "Skip to content"),
  h(
    "header",
    { class: "topbar" },
    h("a", { href: "/", class: "brand" }, h("span", { class: "brand-mark", "aria-hidden": "true" }), "fleetscope"),
    nav,
    account,
  ),
  main,
);
replace(root, shell);
document.addEventListener("click", linkHandler);

let page: Page | null = null;

function show(p: Page) {
  page?.destroy();
  page = p;
  replace(main, p.el);
  document.title = `${p.title} · fleetscope`;
  p.focus?.();
}

function renderAccount(signedIn: boolean) {
  const key = apiKey();
  if (!signedIn || !key) {
    replace(account);
    return;
  }
  const remembered = localStorage.getItem("fleetscope.apiKey") === key;
  replace(
    account,
    h("span", { class: "key-chip", title: remembered ? "Key remembered on this device" : "Key kept for this tab" }, `${key.slice(0, 8)}…`),
    h(
      "button",
      {
        type: "button",
        class: "ghost small",
        "data-testid": "signout",
        onclick: () => {
          clearKey();
          navigate("/");
        },
      },
      "Sign out",
    ),
  );
}

function render(message?: string) {
  const route = parseRoute(location);
  nav.hidden = route.name === "shared"; // a shared view leads nowhere else
  if (route.name === "shared") {
    replace(account, h("span", { class: "key-chip", "data-testid": "shared-chip", title: "Opened through a share link: no API key is used" }, "shared link"));
    return show(sharedPage(route.token, route.params));
  }
  if (!apiKey()) {
    renderAccount(false);
    return show(signInPage(() => render(), message));
  }
  renderAccount(true);
  switch (route.name) {
    case "search":
      return show(searchPage(route.params));
    case "profile":
      return show(profilePage(route.id, route.params));
    case "fleet":
      return show(fleetPage(route.params));
    case "notfound":
      return show({ el: emptyState("Page not found", h("p", null, `Nothing at ${route.path}. `, h("a", { href: "/" }, "Search profiles")), "page-not-found"), title: "Not found", destroy() {} });
  }
}

setUnauthenticatedHandler((msg) => render(msg));
onNavigate(() => render());
render();

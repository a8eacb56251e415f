// fleetscope's dashboard: the shell (header, sign-in gate, routes). A share
// link's page (/s/TOKEN) opens without the gate: its token is its key.
//
// The profile page (/p/ID, what permalinks open) comes with the shell; the
// other pages, and the generated RPC code (src/rpc.ts), are loaded when
// first needed, so that a permalink's heatmap is drawn without waiting for
// them.
import "./style.css";
import { apiKey, clearKey, keyRemembered } from "./auth";
import { h, replace } from "./dom";
import type { Page } from "./pages/page";
import { profilePage } from "./pages/profile";
import { emptyState, setUnauthenticatedHandler } from "./pages/states";
import { arrived } from "./prefetch";
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
  const remembered = keyRemembered();
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

let rendering = 0; // counts renders: a page whose code arrives after a newer render is not shown

/** open shows the page make builds from a module loaded on demand, unless
 * another render began while it loaded. */
async function open<M>(n: number, load: () => Promise<M>, make: (m: M) => Page) {
  let m: M;
  try {
    m = await load();
  } catch {
    if (n === rendering) show({ el: emptyState("This page could not be loaded", h("p", null, "The dashboard's code did not arrive (a new version may have been deployed). ", h("a", { href: location.href }, "Reload")), "page-load-failed"), title: "Not loaded", destroy() {} });
    return;
  }
  if (n === rendering) show(make(m));
}

function render(message?: string) {
  const n = ++rendering;
  const route = parseRoute(location);
  nav.hidden = route.name === "shared"; // a shared view leads nowhere else
  if (route.name === "shared") {
    replace(account, h("span", { class: "key-chip", "data-testid": "shared-chip", title: "Opened through a share link: no API key is used" }, "shared link"));
    return open(n, () => import("./pages/shared"), (m) => m.sharedPage(route.token, route.params));
  }
  if (!apiKey()) {
    renderAccount(false);
    return open(n, () => import("./pages/signin"), (m) => m.signInPage(() => void render(), message));
  }
  renderAccount(true);
  switch (route.name) {
    case "search":
      return open(n, () => import("./pages/search"), (m) => m.searchPage(route.params));
    case "profile":
      return show(profilePage(route.id, route.params));
    case "fleet":
      return open(n, () => import("./pages/fleet"), (m) => m.fleetPage(route.params));
    case "notfound":
      return show({ el: emptyState("Page not found", h("p", null, `Nothing at ${route.path}. `, h("a", { href: "/" }, "Search profiles")), "page-not-found"), title: "Not found", destroy() {} });
  }
}

setUnauthenticatedHandler((msg) => void render(msg));
onNavigate(() => void render());
void arrived(300).then(() => {
  replace(root, shell);
  render();
});

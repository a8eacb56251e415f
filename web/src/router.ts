// Client-side routes. The server answers every non-file path with
// index.html, so these URLs can be opened directly (permalinks):
//   /                 search (and upload)
//   /p/<profile-id>   one profile: heatmap, range, flame graph
//   /fleet?app=...    an app's fleet in wall-clock time (fleetstate.ts)
//   /s/<token>        a share link's range, without an API key
export type Route =
  | { name: "search"; params: URLSearchParams }
  | { name: "profile"; id: string; params: URLSearchParams }
  | { name: "fleet"; params: URLSearchParams }
  | { name: "shared"; token: string; params: URLSearchParams }
  | { name: "notfound"; path: string };

export function parseRoute(loc: { pathname: string; search: string }): Route {
  const params = new URLSearchParams(loc.search);
  const path = loc.pathname.replace(/\/+$/, "") || "/";
  if (path === "/") return { name: "search", params };
  if (path === "/fleet") return { name: "fleet", params };
  const m = /^\/p\/([^/]+)$/.exec(path);
  if (m) return { name: "profile", id: decodeURIComponent(m[1]), params };
  const s = /^\/s\/([^/]+)$/.exec(path);
  if (s) return { name: "shared", token: decodeURIComponent(s[1]), params };
  return { name: "notfound", path };
}

type Listener = () => void;
let listener: Listener = () => {};

/** onNavigate sets the function that renders the current location. */
export function onNavigate(fn: Listener) {
  listener = fn;
  window.addEventListener("popstate", () => listener());
}

/** navigate goes to a URL of the app and renders it. */
export function navigate(url: string, replace = false) {
  if (replace) history.replaceState(null, "", url);
  else {
    history.pushState(null, "", url);
    window.scrollTo(0, 0); // a new page opens at its top, not where the last was scrolled
  }
  listener();
}

/** setQuery rewrites the current URL's query without rendering again (the
 * page already shows that state). */
export function setQuery(params: URLSearchParams, push = false) {
  const q = params.toString();
  const url = location.pathname + (q ? `?${q}` : "");
  if (url === location.pathname + location.search) return;
  if (push) history.pushState(null, "", url);
  else history.replaceState(null, "", url);
}

/** linkHandler makes an <a href> navigate inside the app on a plain click. */
export function linkHandler(e: MouseEvent) {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = (e.target as Element).closest("a");
  if (!a || a.target || a.origin !== location.origin || a.hasAttribute("download")) return;
  e.preventDefault();
  navigate(a.pathname + a.search);
}

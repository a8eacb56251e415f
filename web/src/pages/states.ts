// The empty, loading and error states every page shows the same way.

import { clearKey, type Problem } from "../api";
import { h } from "../dom";

let unauthenticatedHandler: (message: string) => void = () => {};

/** setUnauthenticatedHandler sets what happens when the server rejects the
 * key (the app shows the sign-in page, keeping the URL). */
export function setUnauthenticatedHandler(fn: (message: string) => void) {
  unauthenticatedHandler = fn;
}

export function onUnauthenticated() {
  clearKey();
  unauthenticatedHandler("The server did not accept your API key (it may have been revoked). Sign in again.");
}

/** failed reports a failed request: the sign-in page for a rejected key,
 * else show(p) in the panel that asked. */
export function failed(p: Problem, show: (p: Problem) => void) {
  if (p.kind === "unauthenticated") onUnauthenticated();
  else show(p);
}

const TITLES: Record<Problem["kind"], string> = {
  unauthenticated: "Not signed in",
  forbidden: "Not allowed",
  notfound: "Not found",
  invalid: "Cannot show this",
  toolarge: "Too large",
  busy: "Busy: retry shortly",
  down: "Server unreachable",
  other: "Something went wrong",
};

/** errorState is a panel for a failed request, with Retry when that can help. */
export function errorState(p: Problem, retry?: () => void, title?: string): HTMLElement {
  const canRetry = retry && (p.kind === "down" || p.kind === "busy" || p.kind === "other");
  return h(
    "div",
    { class: `state error-state kind-${p.kind}`, role: "alert", "data-testid": "error", "data-kind": p.kind },
    h("h2", null, title ?? TITLES[p.kind]),
    h("p", null, p.kind === "down" ? "fleetscope's server did not answer. Check that it is running and reachable, then retry." : p.message),
    p.kind === "down" && p.message ? h("p", { class: "muted small" }, p.message) : null,
    canRetry ? h("button", { type: "button", class: "primary", onclick: retry }, "Retry") : null,
  );
}

/** loadingState is a placeholder while something loads. */
export function loadingState(what: string, height?: number): HTMLElement {
  return h(
    "div",
    { class: "state loading-state", "data-testid": "loading", style: height ? `min-height:${height}px` : undefined, "aria-busy": "true" },
    h("span", { class: "spinner", "aria-hidden": "true" }),
    `Loading ${what}…`,
  );
}

/** emptyState says there is nothing to show, and why. */
export function emptyState(title: string, body: string | Node, testid = "empty"): HTMLElement {
  return h("div", { class: "state empty-state", "data-testid": testid }, h("h2", null, title), typeof body === "string" ? h("p", null, body) : body);
}

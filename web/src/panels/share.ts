// The share panel of the profile page: what a new share link would show
// (the range and event on screen), an expiry choice, the new link's URL
// with a copy button, and the profile's links with their state and a
// Revoke button. Links need a key with the admin scope; without one the
// panel says so instead of its form. It asks for nothing itself: create,
// revoke and close go to callbacks, and the owner hands back the results.

import type { Problem } from "../api";
import { h, replace } from "../dom";
import { timestampNanos } from "../fleetstate";
import { dateOf, formatDate, formatTimeRange, formatWallRange } from "../format";
import type { ShareLink } from "../gen/fleetscope/v1/admin_pb";
import { errorState } from "../pages/states";
import { linkRange, linkState } from "../viewstate";

/** The expiry choices (the server allows up to 30 days). */
export const SHARE_TTLS: { label: string; seconds: number }[] = [
  { label: "1 hour", seconds: 3600 },
  { label: "1 day", seconds: 86_400 },
  { label: "7 days", seconds: 7 * 86_400 },
  { label: "30 days", seconds: 30 * 86_400 },
];
const DEFAULT_TTL = 7 * 86_400;

export interface SharePanelOptions {
  /** Create a link living ttlSeconds (the owner then calls created() or error()). */
  onCreate: (ttlSeconds: number) => void;
  /** Revoke the link with this id (the owner then lists the links again). */
  onRevoke: (id: string) => void;
  onClose: () => void;
}

export class SharePanel {
  readonly el: HTMLElement;
  private subject = h("p", { class: "share-subject", "data-testid": "share-subject" });
  private ttl: HTMLSelectElement;
  private createBtn: HTMLButtonElement;
  private result = h("div", { class: "share-result", "aria-live": "polite" });
  private body: HTMLElement;
  private list = h("div", { class: "share-links" });
  private opts: SharePanelOptions;

  constructor(opts: SharePanelOptions) {
    this.opts = opts;
    this.ttl = h(
      "select",
      { "data-testid": "share-ttl", "aria-label": "Link expires after" },
      SHARE_TTLS.map((t) => h("option", { value: String(t.seconds), selected: t.seconds === DEFAULT_TTL }, t.label)),
    );
    this.createBtn = h("button", { type: "button", class: "primary", "data-testid": "share-create", onclick: () => opts.onCreate(Number(this.ttl.value)) }, "Create link");
    this.body = h(
      "div",
      null,
      this.subject,
      h("div", { class: "share-form" }, h("label", null, "Expires after ", this.ttl), this.createBtn),
      this.result,
      h("h3", null, "Links to this profile"),
      this.list,
    );
    this.el = h(
      "section",
      { class: "panel share-panel", "aria-labelledby": "share-title", "data-testid": "share-panel", hidden: true },
      h(
        "div",
        { class: "panel-head" },
        h("h2", { id: "share-title" }, "Share"),
        h("span", { class: "muted small" }, "a link anyone can open without an API key, until it expires or is revoked"),
        h("div", { class: "controls" }, h("button", { type: "button", class: "ghost small", "data-testid": "share-close", onclick: () => opts.onClose() }, "Close")),
      ),
      this.body,
    );
  }

  get isOpen(): boolean {
    return !this.el.hidden;
  }

  /** open shows the panel, with the links loading. */
  open() {
    this.el.hidden = false;
    replace(this.list, h("p", { class: "muted" }, "Loading links…"));
    this.el.scrollIntoView({ block: "nearest" });
  }

  close() {
    this.el.hidden = true;
  }

  /** setFleetSubject says what a new link to a fleet view would share. */
  setFleetSubject(app: string, window: string) {
    replace(
      this.subject,
      "A new link shares ",
      h("b", null, `${app}'s fleet, ${window}`),
      ": the fleet heatmap and merged flame graph of this selection (its hosts, labels and function filter choose the profiles), " +
        "and the app, window and event — not the hosts or labels themselves.",
    );
  }

  /** setSubject says what a new link would share: the range (null: the
   * whole profile) of an event. */
  setSubject(range: { start: number; end: number } | null, event: string) {
    replace(
      this.subject,
      "A new link shares ",
      h("b", null, range ? formatTimeRange(range) : "the whole profile"),
      ` of ${event || "the default event"}: its flame graph, the heatmap of the seconds it touches, and the profile's app, format and duration — not the host, labels or header facts. ` +
        "The zoom, search and orientation on screen travel in the link.",
    );
  }

  /** creating disables the form while a link is being made. */
  creating() {
    this.createBtn.disabled = true;
    replace(this.result);
  }

  /** created shows a new link's URL with a copy button. */
  created(url: string, expires: Date | null) {
    this.createBtn.disabled = false;
    const input = h("input", { type: "text", readonly: true, class: "share-url", "data-testid": "share-url", value: url, "aria-label": "Share link", onfocus: (e: Event) => (e.target as HTMLInputElement).select() });
    const copy = h("button", { type: "button", class: "primary", "data-testid": "share-copy" }, "Copy");
    copy.addEventListener("click", async () => {
      let ok = true;
      try {
        await navigator.clipboard.writeText(url);
      } catch {
        input.select();
        ok = document.execCommand("copy");
      }
      copy.textContent = ok ? "Copied ✓" : "Copy failed";
      setTimeout(() => (copy.textContent = "Copy"), 1800);
    });
    replace(
      this.result,
      h("div", { class: "share-created", "data-testid": "share-created" }, input, copy),
      h("p", { class: "muted small" }, `Shown only now: the link's secret is not kept. ${expires ? `It expires ${formatDate(expires)}.` : ""}`),
    );
    input.focus();
  }

  /** showLinks lists the profile's links, newest first, as of now. */
  showLinks(links: ShareLink[], now: Date) {
    if (links.length === 0) {
      replace(this.list, h("p", { class: "muted", "data-testid": "share-none" }, "No links to this profile yet."));
      return;
    }
    const date = (t: ShareLink["createdAt"]) => (t ? formatDate(dateOf(t)) : "—");
    const rows = links.map((l) => {
      const state = linkState(l, now);
      const r = linkRange(l);
      const what = l.fleet
        ? `fleet ${l.fleet.app}, ${l.fleet.from && l.fleet.to ? formatWallRange(timestampNanos(l.fleet.from), timestampNanos(l.fleet.to)) : ""}`
        : r
          ? formatTimeRange(r)
          : "whole profile";
      return h(
        "tr",
        { "data-link-id": l.id, "data-state": state },
        h("td", null, h("code", null, l.id)),
        h("td", null, what),
        h("td", null, l.event || "default"),
        h("td", null, date(l.createdAt), l.createdBy ? h("span", { class: "muted" }, ` by ${l.createdBy}`) : null),
        h("td", null, date(l.expiresAt)),
        h("td", { class: `link-state ${state}` }, state === "revoked" ? `revoked ${date(l.revokedAt)}` : state),
        h("td", null, state === "live" ? h("button", { type: "button", class: "ghost small", "data-testid": "share-revoke", onclick: () => this.opts.onRevoke(l.id) }, "Revoke") : null),
      );
    });
    replace(
      this.list,
      h(
        "table",
        { class: "data-table", "data-testid": "share-links" },
        h("thead", null, h("tr", null, ["link", "range", "event", "created", "expires", "state", ""].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", null, rows),
      ),
    );
  }

  /** forbidden says the key cannot share (no admin scope), in place of the form. */
  forbidden(keyPrefix: string) {
    replace(
      this.body,
      h(
        "div",
        { class: "state error-state", role: "alert", "data-testid": "share-forbidden" },
        h("h2", null, "Sharing needs an admin key"),
        h(
          "p",
          null,
          `The key you signed in with (${keyPrefix}…) lacks the admin scope, which creating, listing and revoking share links needs. ` +
            "Sign in with a key that has it, or ask an admin of your tenant to share this range. ",
          "An operator makes one with ",
          h("code", null, "fleetscope key create --tenant NAME --scope read,admin"),
          ".",
        ),
      ),
    );
  }

  /** error shows a failed request in the result area (the form stays). */
  error(p: Problem) {
    this.createBtn.disabled = false;
    replace(this.result, errorState(p));
  }

  /** listError shows that the links could not be listed. */
  listError(p: Problem) {
    replace(this.list, errorState(p));
  }
}

// The profile header panel: the way back to the list, the profile's app,
// host and labels, its facts (start, duration, samples, events, format,
// size, id) and the page's actions (Share). For a shared view it has no way
// back (the visitor has no list) and says it is read-only; what a link
// hides (host, labels) the server leaves out, and the stored size and the
// profile's id it does not show. Labels in name order. It shows a loading state
// until show() and an error state on error(); it asks for nothing itself.

import type { Problem } from "../api";
import { h, replace } from "../dom";
import { dateOf, formatBytes, formatCount, formatDate, profileDuration, sortedLabels } from "../format";
import type { Profile } from "../gen/fleetscope/v1/profile_pb";
import { errorState, loadingState } from "../pages/states";

export interface HeaderPanelOptions {
  /** A shared view's header: no way back to the list, a read-only badge. */
  shared?: boolean;
  /** The page's actions, at the end of the title row. */
  actions?: HTMLElement;
}

export class HeaderPanel {
  readonly el = h("header", { class: "profile-head" }, loadingState("profile"));
  private opts: HeaderPanelOptions;

  constructor(opts: HeaderPanelOptions = {}) {
    this.opts = opts;
  }

  /** show draws profile p's facts. */
  show(p: Profile) {
    const start = p.startTime ? dateOf(p.startTime) : null;
    const fact = (k: string, v: string | Node, title?: string) => h("div", { class: "fact", title }, h("dt", null, k), h("dd", null, v));
    replace(
      this.el,
      this.opts.shared ? null : h("a", { href: "/", class: "back" }, "← Profiles"),
      h(
        "div",
        { class: "title-row" },
        h("h1", null, p.app, p.host ? h("span", { class: "host" }, ` on ${p.host}`) : null),
        sortedLabels(p.labels).map(([k, v]) => h("span", { class: "chip" }, `${k}=${v}`)),
        this.opts.shared ? h("span", { class: "badge shared-badge", "data-testid": "shared-badge", title: "Opened through a share link: read-only" }, "shared link · read-only") : null,
        this.opts.actions ? h("div", { class: "page-actions" }, this.opts.actions) : null,
      ),
      h(
        "dl",
        { class: "facts" },
        fact("start", start ? formatDate(start) : "—", start ? `${start.toISOString()} (${p.timeSource})` : undefined),
        fact("duration", profileDuration(p) ?? "untimed", p.timed ? undefined : `no per-sample timestamps${p.durationNanos > 0n ? "; the span the profiler recorded" : ""}`),
        fact("samples", formatCount(p.samples)),
        fact("events", p.events.map((e) => `${e.name} (${formatCount(e.samples)})`).join(", ") || "—"),
        fact("format", p.format),
        p.samplesInRawFile ? fact("samples from", "raw file", "past the tenant's sample tier: the samples are read from the uploaded file, not the index (the same answers; the first is slower)") : null,
        // a shared view shows what the docs say a link shares: not the
        // stored file's size or the profile's id
        this.opts.shared ? null : fact("size", formatBytes(Number(p.sizeBytes)), `${formatCount(p.sizeBytes)} bytes`),
        this.opts.shared ? null : fact("id", h("code", null, p.id)),
      ),
    );
  }

  /** error replaces the header with a failed request's state. */
  error(p: Problem, retry: () => void) {
    replace(this.el, errorState(p, retry));
  }
}

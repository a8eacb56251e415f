// The fleet view's selection bar: app, hosts, label conditions (k=v,
// k!=v), the window (presets, or an absolute from/to to the second), the
// event and idle samples. Enter or Apply reports the whole selection
// (onApply); a preset, "zoom out" and the idle box apply at once. When the
// window was zoomed into, a trail names the windows zoomed in from (the
// zoom stack), each a button back out to it (onZoomBack). It shows
// what it is given (set) and keeps an exact window that the user did not
// edit (a permalink's may have a fraction of a second the pickers cannot
// show).

import { h, replace } from "../dom";
import { formatDuration, formatWallRange, parseLocalInput, toLocalInput } from "../format";
import {
  dateNanos,
  formatLabel,
  formatUnix,
  MAX_WINDOW_SECONDS,
  NS,
  parseHosts,
  parseLabels,
  presetWindow,
  SHIFTS,
  WINDOW_PRESETS,
  windowSeconds,
  type FleetState,
  type LabelCond,
} from "../fleetstate";

export interface FleetBarValues {
  app: string;
  hosts: string[];
  labels: LabelCond[];
  from: bigint;
  to: bigint;
  event: string;
  idle: boolean;
}

export interface FleetBarOptions {
  onApply: (v: FleetBarValues) => void;
  /** Doubles the window about its middle. */
  onZoomOut: () => void;
  /** Back out to the zoom stack's window i. */
  onZoomBack: (i: number) => void;
  /** Compare the window with the same window a SHIFTS id earlier ("": no
   * longer). */
  onShift: (id: string) => void;
}

/** localInput writes unix nanoseconds for a date field (local time, 24-hour, to the second). */
function localInput(ns: bigint): string {
  return toLocalInput(new Date(Number(ns / NS) * 1000), true);
}

/** fromLocalInput reads such a field (local time) as unix nanoseconds. */
function fromLocalInput(v: string): bigint | null {
  const d = parseLocalInput(v);
  return d ? dateNanos(d) : null;
}

export class FleetBar {
  readonly el: HTMLFormElement;
  private app = h("input", { type: "text", "data-testid": "fleet-app", "aria-label": "App", placeholder: "app", required: true, spellcheck: "false", autocomplete: "off" });
  private hosts = h("input", { type: "text", "data-testid": "fleet-hosts", "aria-label": "Hosts", placeholder: "all hosts", spellcheck: "false", autocomplete: "off" });
  private labels = h("input", { type: "text", "data-testid": "fleet-labels", "aria-label": "Labels", placeholder: "env=prod region!=eu", spellcheck: "false", autocomplete: "off" });
  private event = h("input", { type: "text", "data-testid": "fleet-event", "aria-label": "Event", placeholder: "auto (most samples)", title: "Empty: the event most samples of the selection have", spellcheck: "false", autocomplete: "off", list: "fleet-events" });
  private events = h("datalist", { id: "fleet-events" });
  private idle = h("input", { type: "checkbox", "data-testid": "fleet-idle" });
  private from = h("input", { type: "text", inputmode: "numeric", size: 19, placeholder: "YYYY-MM-DD HH:MM:SS", spellcheck: "false", autocomplete: "off", title: "Local time, 24-hour: YYYY-MM-DD HH:MM:SS", "data-testid": "fleet-from", "aria-label": "From" });
  private to = h("input", { type: "text", inputmode: "numeric", size: 19, placeholder: "YYYY-MM-DD HH:MM:SS", spellcheck: "false", autocomplete: "off", title: "Local time, 24-hour: YYYY-MM-DD HH:MM:SS", "data-testid": "fleet-to", "aria-label": "To" });
  private length = h("span", { class: "muted small", "data-testid": "window-length" });
  private presets: HTMLButtonElement[];
  private shifts: HTMLButtonElement[];
  private trail = h("nav", { class: "fleet-row zoom-trail", "data-testid": "zoom-trail", "aria-label": "Zoomed in from", hidden: true });
  private err = h("div", { class: "field-error", role: "alert", "data-testid": "fleet-error" });
  private exact: { from: bigint; to: bigint; fromText: string; toText: string } | null = null;
  private opts: FleetBarOptions;

  constructor(opts: FleetBarOptions) {
    this.opts = opts;
    this.presets = WINDOW_PRESETS.map((p) =>
      h(
        "button",
        {
          type: "button",
          class: "seg",
          "data-testid": `preset-${p.id}`,
          title: `The last ${p.label}`,
          onclick: () => this.apply(presetWindow(p.seconds, new Date())),
        },
        p.label,
      ),
    );
    this.shifts = SHIFTS.map((x) =>
      h(
        "button",
        {
          type: "button",
          class: "seg",
          "data-testid": `compare-shift-${x.id}`,
          "aria-pressed": "false",
          title: `A differential flame graph of the range (or window) against the same range ${x.label}`,
          onclick: (e: Event) => opts.onShift((e.currentTarget as HTMLElement).getAttribute("aria-pressed") === "true" ? "" : x.id),
        },
        x.label,
      ),
    );
    const field = (label: string, input: HTMLElement, grow = false) => h("label", { class: `fleet-field${grow ? " grow" : ""}` }, h("span", null, label), input);
    this.el = h(
      "form",
      {
        class: "panel fleet-bar",
        "data-testid": "fleet-bar",
        "aria-label": "Fleet selection",
        onsubmit: (e: Event) => {
          e.preventDefault();
          this.apply();
        },
      },
      h(
        "div",
        { class: "fleet-row" },
        field("App", this.app),
        field("Hosts", this.hosts, true),
        field("Labels", this.labels, true),
        field("Event", this.event),
        this.events,
        h("label", { class: "check fleet-idle" }, this.idle, " Include idle"),
        h("button", { type: "submit", class: "primary", "data-testid": "fleet-apply" }, "Apply"),
      ),
      h(
        "div",
        { class: "fleet-row" },
        h("span", { class: "fleet-label" }, "Window"),
        h("div", { class: "segmented", role: "group", "aria-label": "Window presets" }, this.presets),
        h("span", { class: "muted" }, "or"),
        this.from,
        h("span", { class: "muted" }, "to"),
        this.to,
        this.length,
        h("button", { type: "button", class: "ghost small", "data-testid": "zoom-out", title: "Twice as long a window about the same middle", onclick: () => opts.onZoomOut() }, "Zoom out ×2"),
        h(
          "span",
          { class: "fleet-shift" },
          h("span", { class: "fleet-label" }, "Compare with"),
          h("div", { class: "segmented", role: "group", "aria-label": "Compare with the same window earlier" }, this.shifts),
        ),
      ),
      this.trail,
      this.err,
    );
    this.idle.addEventListener("change", () => this.apply());
    for (const i of [this.from, this.to]) i.addEventListener("keydown", (e) => e.key === "Enter" && (e.preventDefault(), this.apply()));
  }

  /** set shows view s. */
  set(s: FleetState) {
    this.app.value = s.app;
    this.hosts.value = s.hosts.join(" ");
    this.labels.value = s.labels.map(formatLabel).join(" ");
    this.event.value = s.event;
    this.idle.checked = s.idle;
    this.from.value = localInput(s.from);
    this.to.value = localInput(s.to);
    this.exact = { from: s.from, to: s.to, fromText: this.from.value, toText: this.to.value };
    const secs = windowSeconds(s);
    this.length.textContent = `${formatDuration(secs * 1e9)} window`;
    for (const [i, p] of WINDOW_PRESETS.entries()) this.presets[i].setAttribute("aria-pressed", String(p.seconds === secs));
    this.setShift(s);
    this.err.textContent = "";
    this.showTrail(s);
  }

  /** setShift shows which time-shifted comparison view s draws, if any. */
  setShift(s: FleetState) {
    for (const [i, x] of SHIFTS.entries()) this.shifts[i].setAttribute("aria-pressed", String(s.cmp === "shift" && s.shift === x.id));
  }

  /** showTrail: "Zoomed in from  [2 h window …] › [12 s …] › this window". */
  private showTrail(s: FleetState) {
    this.trail.hidden = s.zooms.length === 0;
    const crumb = (w: { from: bigint; to: bigint }, i: number) =>
      h(
        "button",
        {
          type: "button",
          class: "ghost small",
          "data-testid": "zoom-back",
          "data-from": formatUnix(w.from),
          "data-to": formatUnix(w.to),
          title: "Back out to this window",
          onclick: () => this.opts.onZoomBack(i),
        },
        `${formatDuration(windowSeconds(w) * 1e9)}: ${formatWallRange(w.from, w.to)}`,
      );
    replace(
      this.trail,
      h("span", { class: "fleet-label" }, "Zoomed in from"),
      s.zooms.flatMap((w, i) => [crumb(w, i), h("span", { class: "muted", "aria-hidden": "true" }, "›")]),
      h("span", { class: "muted small" }, "this window"),
    );
  }

  /** setEvents offers events to choose from. */
  setEvents(names: string[]) {
    replace(
      this.events,
      names.map((n) => h("option", { value: n })),
    );
  }

  /** setCounted says which event is counted when the field is empty. */
  setCounted(event: string) {
    this.event.placeholder = event ? `auto (${event})` : "auto (most samples)";
  }

  private apply(window?: { from: bigint; to: bigint }) {
    const labels = parseLabels(this.labels.value);
    const problem = (msg: string) => {
      this.err.textContent = msg;
    };
    if (labels.error) return problem(labels.error);
    const app = this.app.value.trim();
    if (!app) return problem("Choose an app.");
    let from: bigint | null;
    let to: bigint | null;
    if (window) ({ from, to } = window);
    else {
      const ex = this.exact;
      from = ex && this.from.value === ex.fromText ? ex.from : fromLocalInput(this.from.value);
      to = ex && this.to.value === ex.toText ? ex.to : fromLocalInput(this.to.value);
    }
    if (from === null || to === null) return problem("Give the window's start and end.");
    if (to <= from) return problem("The window must end after it starts.");
    if (to - from > BigInt(MAX_WINDOW_SECONDS) * NS) return problem("The window can be at most 31 days long.");
    this.err.textContent = "";
    this.opts.onApply({ app, hosts: parseHosts(this.hosts.value), labels: labels.labels, from, to, event: this.event.value.trim(), idle: this.idle.checked });
  }
}

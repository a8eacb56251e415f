// The filter bar: which samples the heatmap and the flame graph count —
// those with a frame matching a function (RE2, as the CLI's --function),
// without one matching another (--exclude-function), of chosen processes,
// threads or CPUs (picked in the thread view) — and which rows the thread
// view shows (a row per CPU, thread or process). The heatmap re-colours to
// the filtered samples, so "where in time does f run?" is one heatmap.
// Choices go to callbacks; show() reflects the view.

import { h, replace } from "../dom";
import type { Axis } from "../viewstate";

export interface FilterPanelOptions {
  onFunctions: (fn: string, xfn: string) => void;
  /** Clear the process, thread and CPU filters. */
  onClearThreads?: () => void;
  /** The thread view switch (absent: no thread view, as in the fleet view). */
  onAxis?: (axis: Axis) => void;
}

/** What the bar shows: a profile view's or a fleet view's filters. */
export interface Filters {
  fn: string;
  xfn: string;
  pids?: number[];
  tids?: number[];
  cpus?: number[];
  axis?: Axis;
}

const AXES: [Axis, string][] = [
  ["offset", "Off"],
  ["cpu", "CPUs"],
  ["thread", "Threads"],
  ["process", "Processes"],
];

export class FilterPanel {
  readonly el: HTMLElement;
  private fn: HTMLInputElement;
  private xfn: HTMLInputElement;
  private threads = h("span", { class: "filter-threads", "data-testid": "filter-threads" });
  private axisBtns: HTMLButtonElement[];
  private opts: FilterPanelOptions;

  constructor(opts: FilterPanelOptions) {
    this.opts = opts;
    const input = (testid: string, placeholder: string, label: string) =>
      h("input", { type: "search", class: "mono", "data-testid": testid, placeholder, "aria-label": label, spellcheck: "false" });
    this.fn = input("filter-function", "only samples with function (regex)", "Only samples with a function matching");
    this.xfn = input("filter-exclude", "without function (regex)", "Leave out samples with a function matching");
    const apply = () => opts.onFunctions(this.fn.value.trim(), this.xfn.value.trim());
    for (const el of [this.fn, this.xfn]) {
      el.addEventListener("keydown", (e) => {
        if (e.key === "Enter") apply();
        if (e.key === "Escape") {
          el.value = "";
          apply();
        }
      });
      el.addEventListener("search", apply); // the clear (×) button
    }
    const onAxis = opts.onAxis;
    this.axisBtns = onAxis
      ? AXES.map(([a, label]) =>
          h("button", { type: "button", class: "seg", "data-testid": `axis-${a}`, title: a === "offset" ? "No thread view" : `Samples per ${a} and second`, onclick: () => onAxis(a) }, label),
        )
      : [];
    this.el = h(
      "section",
      { class: "panel filter-panel", "aria-label": "Sample filters", "data-testid": "filters" },
      h("span", { class: "filter-label" }, "Filter"),
      this.fn,
      this.xfn,
      h("button", { type: "button", class: "ghost small", "data-testid": "filter-apply", onclick: apply }, "Apply"),
      this.threads,
      onAxis ? [h("span", { class: "filter-label" }, "Thread view"), h("div", { class: "segmented", role: "group", "aria-label": "Thread view" }, this.axisBtns)] : [],
    );
  }

  /** show reflects view v's filters and thread view. */
  show(v: Filters) {
    if (document.activeElement !== this.fn) this.fn.value = v.fn;
    if (document.activeElement !== this.xfn) this.xfn.value = v.xfn;
    const chips = [...(v.pids ?? []).map((p) => `pid ${p}`), ...(v.tids ?? []).map((t) => `tid ${t}`), ...(v.cpus ?? []).map((c) => `CPU ${c}`)];
    replace(
      this.threads,
      chips.length
        ? [h("span", { class: "chip" }, chips.join(", ")), h("button", { type: "button", class: "ghost small", "data-testid": "filter-threads-clear", onclick: () => this.opts.onClearThreads?.() }, "All threads")]
        : [],
    );
    for (const b of this.axisBtns) b.setAttribute("aria-pressed", String(b.dataset.testid === `axis-${v.axis ?? "offset"}`));
    this.el.classList.toggle("active", !!(v.fn || v.xfn || chips.length));
  }
}

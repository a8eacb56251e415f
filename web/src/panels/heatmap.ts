// The heatmap panel: the heatmap canvas (heatmap/view.ts) with its controls
// (event, rows per second, include idle, table view) and the selection bar
// under it (the selected range, its cells' sum, and whether the flame
// graph's total agrees). It keeps the heatmap it was last given; every
// choice the user makes is reported through a callback, and the owner
// decides what to load and show next. Read-only (a shared range), it shows
// the range without letting it or the event change.

import type { Problem } from "../api";
import { h, replace } from "../dom";
import { formatCount, formatDuration, formatSeconds, formatTime } from "../format";
import { cellOfIndex, cellsOfRange, gridOf, type Heatmap, type Range } from "../heatmap/model";
import { HeatmapView } from "../heatmap/view";
import { emptyState, errorState, loadingState } from "../pages/states";

const ROW_OPTIONS = [50, 100, 25];

export interface HeatmapPanelOptions {
  /** The controls' initial values. */
  rows: number;
  idle: boolean;
  /** A selection made on the heatmap (null: cleared with Escape). */
  onSelect: (range: Range | null) => void;
  /** The selection bar's Clear button. */
  onClear: () => void;
  /** An event chosen in the event selector. */
  onEvent: (event: string) => void;
  onRows: (rows: number) => void;
  onIdle: (idle: boolean) => void;
  /** After each draw, with the time since navigation (for the bench). */
  onDrawn?: (ms: number) => void;
  /** The range and event are fixed (a share link's); rows, idle and the
   * table view can still change. */
  readOnly?: boolean;
}

export class HeatmapPanel {
  readonly el: HTMLElement;
  private view: HeatmapView;
  private data: Heatmap | null = null;
  private box = h("div", { class: "heatmap-box" }, loadingState("heatmap", 440));
  private eventSel = h("select", { "data-testid": "event", "aria-label": "Event", disabled: true });
  private hint: HTMLElement;
  private rowsLabel: HTMLElement;
  private tableBtn = h("button", { type: "button", class: "ghost", "aria-pressed": "false", "data-testid": "heatmap-table-toggle" }, "Table");
  private selectionBar = h("div", { class: "selection-bar", "data-testid": "selection", "aria-live": "polite" });
  private opts: HeatmapPanelOptions;

  constructor(opts: HeatmapPanelOptions) {
    this.opts = opts;
    this.hint = h("span", { class: "muted small", "data-testid": "heatmap-hint" }, hintText(1, !!opts.readOnly));
    this.view = new HeatmapView({ onSelect: opts.onSelect, onDrawn: opts.onDrawn, readOnly: opts.readOnly });
    const rowsSel = h(
      "select",
      { "data-testid": "rows", "aria-label": "Rows per second" },
      ROW_OPTIONS.map((r) => h("option", { value: String(r) }, `${r} rows (${formatDuration(1e9 / r)} cells)`)),
    );
    if (!ROW_OPTIONS.includes(opts.rows)) rowsSel.appendChild(h("option", { value: String(opts.rows) }, `${opts.rows} rows`));
    rowsSel.value = String(opts.rows);
    this.rowsLabel = h("label", null, "Rows ", rowsSel);
    const idleBox = h("input", { type: "checkbox", "data-testid": "idle", checked: opts.idle });

    this.el = h(
      "section",
      { class: "panel heat-panel", "aria-labelledby": "heat-title" },
      h(
        "div",
        { class: "panel-head" },
        h("h2", { id: "heat-title" }, "Heatmap"),
        this.hint,
        h("div", { class: "controls" }, h("label", null, "Event ", this.eventSel), this.rowsLabel, h("label", { class: "check" }, idleBox, " Include idle"), this.tableBtn),
      ),
      this.box,
      this.selectionBar,
    );

    this.eventSel.addEventListener("change", () => opts.onEvent(this.eventSel.value));
    rowsSel.addEventListener("change", () => opts.onRows(Number(rowsSel.value)));
    idleBox.addEventListener("change", () => opts.onIdle(idleBox.checked));
    this.tableBtn.addEventListener("click", () => {
      const on = this.tableBtn.getAttribute("aria-pressed") !== "true";
      this.tableBtn.setAttribute("aria-pressed", String(on));
      this.view.toggleTable(on);
    });
  }

  destroy() {
    this.view.destroy();
  }

  /** setEvents fills the event selector; it is enabled with two or more events. */
  setEvents(events: { name: string }[], defaultEvent: string, current: string) {
    replace(
      this.eventSel,
      events.map((e) => h("option", { value: e.name }, `${e.name}${e.name === defaultEvent ? " (default)" : ""}`)),
    );
    this.eventSel.value = current || defaultEvent;
    this.eventSel.disabled = events.length < 2 || !!this.opts.readOnly;
  }

  /** loading says a heatmap is on its way: a placeholder the first time,
   * the current one greyed out after. */
  loading() {
    if (!this.data) replace(this.box, loadingState("heatmap", 440));
    else this.box.classList.add("stale");
  }

  /** show draws heatmap d with a selection; idle says whether idle samples
   * are included (for the empty state's advice). */
  show(d: Heatmap, selection: Range | null, idle: boolean) {
    this.data = d;
    this.hint.textContent = hintText(d.secondsPerColumn, !!this.opts.readOnly);
    this.box.classList.remove("stale");
    if (this.view.el.parentElement !== this.box) replace(this.box, this.view.el);
    this.view.setSelection(selection);
    this.view.setData(d);
    if (d.total === 0) {
      this.box.appendChild(emptyState("No samples", idle ? "This event has no samples." : "Every sample of this event is idle. Tick “Include idle” to see them.", "no-samples-heatmap"));
    }
    this.view.scrollToSelection();
  }

  /** untimed says the profile has no heatmap and hides what only a heatmap needs. */
  untimed() {
    replace(this.box, emptyState("No heatmap", "This profile has no per-sample timestamps, so it has no heatmap: the flame graph below is the whole profile.", "no-heatmap"));
    for (const e of [this.hint, this.rowsLabel, this.tableBtn, this.selectionBar]) e.hidden = true;
  }

  /** error shows a failed heatmap request, with Retry when that can help. */
  error(p: Problem, retry: () => void) {
    replace(this.box, errorState(p, retry));
  }

  /** clearSelection removes the selection from the heatmap (without a callback). */
  clearSelection() {
    this.view.setSelection(null);
  }

  /** showSelection writes the selection bar for range r (null: the whole
   * profile); flameTotal is the flame graph's total once it has arrived,
   * to check it against the selected cells. */
  showSelection(r: Range | null, flameTotal: number | null) {
    const bar = this.selectionBar;
    if (!r) {
      replace(
        bar,
        h("span", { class: "sel-label" }, "Whole profile"),
        h("span", { class: "muted" }, this.opts.readOnly ? " — the link shares the whole profile." : " — no range selected. Click a cell or drag from a start cell to an end cell."),
        flameTotal !== null ? h("span", { class: "sel-count" }, ` ${formatCount(flameTotal)} samples`) : null,
      );
      delete bar.dataset.start;
      return;
    }
    const d = this.data;
    const spc = d?.secondsPerColumn ?? 1;
    const span = d ? cellsOfRange(r, gridOf(d)) : null;
    const outside = d !== null && span === null;
    const cellSum = d && !outside ? this.view.selectedCount() : null;
    // what the selection covers in the heatmap: cells, or whole columns of several seconds
    const columns = span && d ? cellOfIndex(span.last, d.rows).col - cellOfIndex(span.first, d.rows).col + 1 : 0;
    const cells = span ? (spc === 1 ? `${span.last - span.first + 1} cell${span.last === span.first ? "" : "s"}` : `${columns} column${columns === 1 ? "" : "s"} of ${spc} s`) : "";
    const agree = cellSum !== null && flameTotal !== null ? cellSum === flameTotal : null;
    bar.dataset.start = formatSeconds(r.start);
    bar.dataset.end = formatSeconds(r.end);
    replace(
      bar,
      h("span", { class: "sel-label" }, "Range "),
      h("b", { "data-testid": "selection-range" }, `${formatTime(r.start)} – ${formatTime(r.end)}`),
      h("span", { class: "muted" }, ` (${formatDuration(r.end - r.start)}${cells ? `, ${cells}` : ""})`),
      cellSum !== null
        ? h("span", { class: "sel-count", "data-testid": "selection-count", "data-count": String(cellSum) }, ` · ${formatCount(cellSum)} samples in the ${spc === 1 ? "cells" : "columns"}`)
        : span && !span.aligned
          ? h("span", { class: "muted", "data-testid": "not-aligned" }, ` · not aligned to ${spc === 1 ? "cells" : "columns"}: the flame graph counts the exact range`)
          : outside
            ? h("span", { class: "muted" }, ` · outside the profile (0 – ${d!.columns.length * spc} s)`)
            : null,
      agree === true ? h("span", { class: "agree", title: "The flame graph's total equals the selected cells' sum" }, " ✓ flame graph total matches") : null,
      agree === false ? h("span", { class: "disagree", role: "alert" }, ` ✗ flame graph total ${formatCount(flameTotal!)} differs`) : null,
      this.opts.readOnly ? null : h("button", { type: "button", class: "ghost small", "data-testid": "clear-selection", onclick: () => this.opts.onClear() }, "Clear"),
    );
  }
}

/** hintText tells how to select in a heatmap of spc seconds per column
 * (or, read-only, what a shared heatmap shows). */
function hintText(spc: number, readOnly: boolean): string {
  const columns = spc === 1 ? "each column is one second" : `each column is ${spc} seconds, each cell the same slice of each of them`;
  if (readOnly) return `${columns}. A shared range is highlighted, and the heatmap has only the seconds it touches.`;
  if (spc === 1) return "each column is one second; each cell a slice of it. Click a cell or drag across cells to choose a range; shift-click extends.";
  return (
    `each column is ${spc} seconds (a long profile); a cell sums one slice of each of them, which is not one time range, ` +
    "so a selection takes whole columns: click or drag across columns. No finer zoom yet: the heatmap API has no time window."
  );
}

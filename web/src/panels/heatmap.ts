// The heatmap panel: the heatmap canvas (heatmap/view.ts) with its controls
// (event, rows per second, include idle, table view) and the selection bar
// under it (the selected range, its cells' sum, and whether the flame
// graph's total agrees). It keeps the heatmap it was last given; every
// choice the user makes is reported through a callback, and the owner
// decides what to load and show next. Read-only (a shared range), it shows
// the range without letting it or the event change. The fleet view uses it
// in wall-clock time, with its event and idle choices in the selection bar,
// its own hint and actions on a selection (zoom).

import type { Problem } from "../api";
import { h, replace } from "../dom";
import { formatCount, formatDuration, formatSeconds, formatTimeRange, formatWallRange } from "../format";
import { cellOfIndex, cellsOfRange, gridOf, type Heatmap, type Range } from "../heatmap/model";
import { HeatmapView, type ColumnAxis } from "../heatmap/view";
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
  /** The heatmap is in wall-clock time (a fleet's): its start second is a
   * unix second, and times read as times of day. */
  wallClock?: boolean;
  /** Show the event and idle controls (default true; the fleet view has
   * them in its selection bar). */
  eventAndIdle?: boolean;
  /** The hint beside the title for a heatmap of spc seconds per column
   * (default: the profile page's). */
  hint?: (spc: number) => string;
  /** What the selection bar says with no range selected: a label and a
   * hint (default: the whole profile's). */
  whole?: { label: string; hint: string };
  /** Buttons after a selected range in the selection bar. */
  selectionActions?: (r: Range) => Node[];
  /** The heatmap's left gutter (CSS px; default 64). */
  axisLeft?: number;
  /** Where the columns are, after a drawing that moved them (panels
   * sharing the time axis); not after a redraw that left them in place (a
   * hover, the cursor). */
  onAxis?: (a: ColumnAxis) => void;
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
  private noHeatmap = false; // an untimed profile's

  constructor(opts: HeatmapPanelOptions) {
    this.opts = opts;
    this.hint = h("span", { class: "muted small", "data-testid": "heatmap-hint" }, this.hintFor(1));
    let axisKey = "";
    const onAxis = opts.onAxis;
    this.view = new HeatmapView({
      onSelect: opts.onSelect,
      onDrawn: opts.onDrawn,
      readOnly: opts.readOnly,
      wallClock: opts.wallClock,
      axisLeft: opts.axisLeft,
      onAxis: onAxis
        ? (a) => {
            const key = [a.x0, a.cellW, a.visLeft, a.visRight, a.second0, a.secondsPerColumn].join();
            if (key === axisKey) return; // (a hover or the cursor redrew it)
            axisKey = key;
            onAxis(a);
          }
        : undefined,
    });
    const rowsSel = h(
      "select",
      { "data-testid": "rows", "aria-label": "Rows per second" },
      ROW_OPTIONS.map((r) => h("option", { value: String(r) }, `${r} rows (${formatDuration(1e9 / r)} cells)`)),
    );
    if (!ROW_OPTIONS.includes(opts.rows)) rowsSel.appendChild(h("option", { value: String(opts.rows) }, `${opts.rows} rows`));
    rowsSel.value = String(opts.rows);
    this.rowsLabel = h("label", null, "Rows ", rowsSel);
    const idleBox = h("input", { type: "checkbox", "data-testid": "idle", checked: opts.idle });
    const eventAndIdle = opts.eventAndIdle ?? true;

    this.el = h(
      "section",
      { class: "panel heat-panel", "aria-labelledby": "heat-title" },
      h(
        "div",
        { class: "panel-head" },
        h("h2", { id: "heat-title" }, "Heatmap"),
        this.hint,
        h(
          "div",
          { class: "controls" },
          eventAndIdle ? h("label", null, "Event ", this.eventSel) : null,
          this.rowsLabel,
          eventAndIdle ? h("label", { class: "check" }, idleBox, " Include idle") : null,
          this.tableBtn,
        ),
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

  /** shown is the heatmap on screen, null before the first: while the next
   * one loads, the last stays (dimmed) and a selection made on it is a
   * range of its seconds. */
  get shown(): Heatmap | null {
    return this.data;
  }

  /** loading says a heatmap is on its way: a placeholder the first time,
   * the current one greyed out after. */
  loading() {
    if (!this.data) replace(this.box, loadingState("heatmap", 440));
    else this.box.classList.add("stale");
  }

  /** show draws heatmap d with a selection; idle says whether idle samples
   * are included (for the empty state's advice), empty what to say instead
   * when it has no samples. */
  show(d: Heatmap, selection: Range | null, idle: boolean, empty?: string) {
    this.data = d;
    this.hint.textContent = this.hintFor(d.secondsPerColumn);
    this.box.classList.remove("stale");
    if (this.view.el.parentElement !== this.box) replace(this.box, this.view.el);
    this.view.setSelection(selection);
    this.view.setData(d);
    if (d.total === 0) {
      this.box.appendChild(
        emptyState("No samples", empty ?? (idle ? "This event has no samples." : "Every sample of this event is idle. Tick “Include idle” to see them."), "no-samples-heatmap"),
      );
    }
    this.view.scrollToSelection();
  }

  /** scrollToColumn brings column col into view (near the left). */
  scrollToColumn(col: number) {
    this.view.scrollToColumn(col);
  }

  /** untimed says the profile has no heatmap and hides what only a heatmap needs. */
  untimed() {
    replace(this.box, emptyState("No heatmap", "This profile has no per-sample timestamps, so it has no heatmap: the flame graph below is the whole profile.", "no-heatmap"));
    this.noHeatmap = true;
    for (const e of [this.hint, this.rowsLabel, this.tableBtn, this.selectionBar]) e.hidden = true;
  }

  /** error shows a failed heatmap request, with Retry when that can help. */
  error(p: Problem, retry: () => void) {
    this.box.classList.remove("stale");
    replace(this.box, errorState(p, retry));
    replace(this.selectionBar); // its cells' sum was the last heatmap's
    this.selectionBar.hidden = true;
    delete this.selectionBar.dataset.start;
  }

  /** showBaseline marks a comparison's pinned baseline range (null: none). */
  showBaseline(r: Range | null) {
    this.view.setBaseline(r);
  }

  /** clearSelection removes the selection from the heatmap (without a callback). */
  clearSelection() {
    this.view.setSelection(null);
  }

  /** showSelection writes the selection bar for range r (null: the whole
   * profile); flameTotal is the flame graph's total once it has arrived,
   * to check it against the selected cells; explain, when given, says why
   * they differ (a fleet flame graph may count profiles that have no
   * heatmap). */
  showSelection(r: Range | null, flameTotal: number | null, explain?: string) {
    const bar = this.selectionBar;
    bar.hidden = this.noHeatmap || this.box.querySelector("[data-testid=error]") !== null; // nothing to count on
    if (!r) {
      const whole = this.opts.whole ?? {
        label: "Whole profile",
        hint: this.opts.readOnly ? "the link shares the whole profile." : "no range selected. Click a cell or drag from a start cell to an end cell.",
      };
      replace(
        bar,
        h("span", { class: "sel-label" }, whole.label),
        h("span", { class: "muted" }, ` — ${whole.hint}`),
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
      h("b", { "data-testid": "selection-range" }, this.rangeText(r)),
      h("span", { class: "muted" }, ` (${formatDuration(r.end - r.start)}${cells ? `, ${cells}` : ""})`),
      cellSum !== null
        ? h("span", { class: "sel-count", "data-testid": "selection-count", "data-count": String(cellSum) }, ` · ${formatCount(cellSum)} samples in the ${spc === 1 ? "cells" : "columns"}`)
        : span && !span.aligned
          ? h("span", { class: "muted", "data-testid": "not-aligned" }, ` · not aligned to ${spc === 1 ? "cells" : "columns"}: the flame graph counts the exact range`)
          : outside
            ? h("span", { class: "muted" }, this.opts.wallClock ? " · outside the heatmap" : ` · outside the profile (0 – ${d!.columns.length * spc} s)`)
            : null,
      agree === true ? h("span", { class: "agree", title: "The flame graph's total equals the selected cells' sum" }, " ✓ flame graph total matches") : null,
      agree === false && !explain ? h("span", { class: "disagree", role: "alert" }, ` ✗ flame graph total ${formatCount(flameTotal!)} differs`) : null,
      agree === false && explain ? h("span", { class: "explained", "data-testid": "flame-explained" }, ` · flame graph total ${formatCount(flameTotal!)}: ${explain}`) : null,
      this.opts.selectionActions ? h("span", { class: "sel-actions" }, this.opts.selectionActions(r)) : null,
      this.opts.readOnly ? null : h("button", { type: "button", class: "ghost small", "data-testid": "clear-selection", onclick: () => this.opts.onClear() }, "Clear"),
    );
  }

  private rangeText(r: Range): string {
    if (!this.opts.wallClock || !this.data) return formatTimeRange(r);
    const base = BigInt(this.data.startSecond) * 1_000_000_000n;
    return formatWallRange(base + BigInt(r.start), base + BigInt(r.end));
  }

  private hintFor(spc: number): string {
    return this.opts.hint ? this.opts.hint(spc) : hintText(spc, !!this.opts.readOnly);
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

// The fleet's timeline panel: samples per column (the heatmap's columns) as
// a line across the window, in wall-clock time: the overview of a window of
// hours or days. Dragging across it (or clicking a column) asks to zoom the
// window to those columns (onZoom); the owner re-queries. The selected range
// is shaded.
//
// Test hooks on the canvas: data-totals (JSON, per column), data-cols,
// data-start-second, data-seconds-per-column, data-total, data-max, and the
// plot's geometry (data-plot-left, data-plot-width in CSS pixels).

import type { Problem } from "../api";
import { h, replace } from "../dom";
import { formatClock, formatCount, formatTick, zoneOffsetSeconds } from "../format";
import { columnsRange, NS, type AbsRange, type Columns } from "../fleetstate";
import { wallTicks } from "../heatmap/model";
import { AXIS_FONT, axisX, type ColumnAxis } from "../heatmap/view";
import { errorState, loadingState } from "../pages/states";

const LEFT = 64;
const RIGHT = 12;
const TOP = 8;
const PLOT_H = 72;
const BOTTOM = 22;

export interface TimelineData extends Columns {
  totals: number[];
}

export interface TimelinePanelOptions {
  /** Columns first..last dragged across (or clicked): zoom the window to them. */
  onZoom: (r: AbsRange) => void;
}

export class TimelinePanel {
  readonly el: HTMLElement;
  private box = h("div", { class: "timeline-box" }, loadingState("timeline", PLOT_H + TOP + BOTTOM));
  private canvas = h("canvas", { "data-testid": "timeline", class: "timeline-canvas", "aria-label": "Samples per column over the window" });
  private tooltip = h("div", { class: "tooltip", role: "tooltip", hidden: true });
  private summary = h("span", { class: "muted small", "data-testid": "timeline-summary" });
  private data: TimelineData | null = null;
  private selection: AbsRange | null = null;
  private drag: { from: number; to: number } | null = null;
  private resizeObs: ResizeObserver;
  private axis: ColumnAxis | null = null;
  private opts: TimelinePanelOptions;

  constructor(opts: TimelinePanelOptions) {
    this.opts = opts;
    this.el = h(
      "section",
      { class: "panel timeline-panel", "aria-labelledby": "timeline-title" },
      h(
        "div",
        { class: "panel-head" },
        h("h2", { id: "timeline-title" }, "Timeline"),
        h("span", { class: "muted small" }, "samples per column; drag across it (or click a column) to zoom the window there"),
        this.summary,
      ),
      this.box,
      this.tooltip,
    );
    this.canvas.addEventListener("pointerdown", this.onDown);
    this.canvas.addEventListener("pointermove", this.onMove);
    this.canvas.addEventListener("pointerup", this.onUp);
    this.canvas.addEventListener("pointercancel", () => {
      this.drag = null;
      this.draw();
    });
    this.canvas.addEventListener("pointerleave", () => (this.tooltip.hidden = true));
    this.resizeObs = new ResizeObserver(() => this.data && this.draw());
    this.resizeObs.observe(this.box);
  }

  destroy() {
    this.resizeObs.disconnect();
  }

  loading() {
    if (!this.data) replace(this.box, loadingState("timeline", PLOT_H + TOP + BOTTOM));
    else this.box.classList.add("stale");
  }

  error(p: Problem, retry: () => void) {
    this.data = null;
    this.box.classList.remove("stale");
    replace(this.box, errorState(p, retry));
    this.summary.textContent = "";
  }

  show(d: TimelineData, selection: AbsRange | null) {
    this.data = d;
    this.selection = selection;
    this.box.classList.remove("stale");
    if (this.canvas.parentElement !== this.box) replace(this.box, this.canvas);
    const ds = this.canvas.dataset;
    const total = d.totals.reduce((a, b) => a + b, 0);
    ds.totals = JSON.stringify(d.totals);
    ds.cols = String(d.totals.length);
    ds.startSecond = String(d.startSecond);
    ds.secondsPerColumn = String(d.secondsPerColumn);
    ds.total = String(total);
    ds.max = String(Math.max(0, ...d.totals));
    this.summary.textContent = `· ${formatCount(total)} samples in ${formatCount(d.totals.length)} column${d.totals.length === 1 ? "" : "s"} of ${d.secondsPerColumn} s`;
    this.draw();
  }

  setSelection(r: AbsRange | null) {
    this.selection = r;
    this.draw();
  }

  /** align draws the columns where the heatmap draws them (null: across
   * the panel's own width). */
  align(a: ColumnAxis | null) {
    this.axis = a;
    if (this.data) this.draw();
  }

  /** geometry is the canvas's size and where its columns are: x(col) is
   * column col's left edge, [plotL, plotR) the plot, in CSS px from the
   * canvas's left. With the heatmap's axis, the heatmap's pixels. */
  private geometry() {
    const width = Math.max(this.box.clientWidth, 320);
    const d = this.data!;
    const cols = Math.max(d.totals.length, 1);
    const a = this.axis;
    if (a && this.canvas.isConnected) {
      const off = a.canvas.getBoundingClientRect().left - this.box.getBoundingClientRect().left;
      const colW = (a.cellW * d.secondsPerColumn) / a.secondsPerColumn;
      const x0 = off + axisX(a, d.startSecond);
      return { width, height: TOP + PLOT_H + BOTTOM, x0, colW, plotL: off + a.visLeft, plotR: Math.min(off + a.visRight, width) };
    }
    const colW = (width - LEFT - RIGHT) / cols;
    return { width, height: TOP + PLOT_H + BOTTOM, x0: LEFT, colW, plotL: LEFT, plotR: width - RIGHT };
  }

  private draw() {
    const d = this.data;
    if (!d) return;
    const g = this.geometry();
    const dpr = window.devicePixelRatio || 1;
    const c = this.canvas;
    c.style.width = `${g.width}px`;
    c.style.height = `${g.height}px`;
    c.width = Math.round(g.width * dpr);
    c.height = Math.round(g.height * dpr);
    c.dataset.plotLeft = String(g.plotL);
    c.dataset.plotWidth = String(g.plotR - g.plotL);
    c.dataset.x0 = String(g.x0);
    c.dataset.colWidth = String(g.colW);
    const ctx = c.getContext("2d")!;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, g.width, g.height);
    const max = Math.max(1, ...d.totals);
    const y = (v: number) => TOP + PLOT_H - (v / max) * PLOT_H;
    const x = (col: number) => g.x0 + col * g.colW;

    ctx.save();
    ctx.beginPath();
    ctx.rect(g.plotL, 0, g.plotR - g.plotL, g.height);
    ctx.clip();
    // the selected range, or the drag in progress
    const span = this.drag ? columnsRange(d, this.drag.from, this.drag.to) : this.selection;
    if (span) {
      const a = (Number(span.start / NS) - d.startSecond + Number(span.start % NS) / 1e9) / d.secondsPerColumn;
      const b = (Number(span.end / NS) - d.startSecond + Number(span.end % NS) / 1e9) / d.secondsPerColumn;
      ctx.fillStyle = this.drag ? "rgba(0,150,255,0.18)" : "rgba(0,150,255,0.25)";
      ctx.fillRect(x(Math.max(a, 0)), TOP, Math.max((Math.min(b, d.totals.length) - Math.max(a, 0)) * g.colW, 2), PLOT_H);
    }
    // area and line through the columns' middles
    ctx.beginPath();
    ctx.moveTo(x(0), y(0));
    d.totals.forEach((v, i) => ctx.lineTo(x(i + 0.5), y(v)));
    ctx.lineTo(x(d.totals.length), y(0));
    ctx.closePath();
    ctx.fillStyle = "rgba(91,42,134,0.12)";
    ctx.fill();
    ctx.beginPath();
    d.totals.forEach((v, i) => (i === 0 ? ctx.moveTo(x(i + 0.5), y(v)) : ctx.lineTo(x(i + 0.5), y(v))));
    if (d.totals.length === 1) ctx.lineTo(x(1), y(d.totals[0]));
    ctx.strokeStyle = "#5b2a86";
    ctx.lineWidth = 1.5;
    ctx.stroke();
    ctx.restore();
    // frame and axes
    ctx.strokeStyle = "#c9cdd4";
    ctx.lineWidth = 1;
    ctx.strokeRect(g.plotL - 0.5, TOP - 0.5, g.plotR - g.plotL + 1, PLOT_H + 1);
    ctx.fillStyle = "#4a5160";
    ctx.font = AXIS_FONT;
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    ctx.fillText(formatCount(max), g.plotL - 6, TOP + 4);
    ctx.fillText("0", g.plotL - 6, TOP + PLOT_H - 4);
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    const ticks = wallTicks({ secondsPerColumn: d.secondsPerColumn, firstColumn: 0, cols: d.totals.length }, g.colW, d.startSecond, zoneOffsetSeconds(d.startSecond));
    for (const s of ticks.seconds) {
      const tx = x(s / d.secondsPerColumn);
      if (tx < g.plotL - 1 || tx > g.plotR + 1) continue;
      ctx.fillRect(Math.round(tx) - 0.5, TOP + PLOT_H + 1, 1, 4);
      // labels stay whole inside the canvas (the last one moved in, not cut)
      const label = formatTick(d.startSecond + s, ticks.step);
      const w = ctx.measureText(label).width;
      ctx.fillText(label, Math.min(Math.max(tx, w / 2 + 1), g.width - w / 2 - 1), TOP + PLOT_H + 6);
    }
  }

  private colAt(e: { clientX: number }): number | null {
    const d = this.data;
    if (!d || d.totals.length === 0) return null;
    const rect = this.canvas.getBoundingClientRect();
    const g = this.geometry();
    const col = Math.floor((e.clientX - rect.left - g.x0) / g.colW);
    return Math.min(Math.max(col, 0), d.totals.length - 1);
  }

  private onDown = (e: PointerEvent) => {
    if (e.button !== 0) return;
    const col = this.colAt(e);
    if (col === null) return;
    e.preventDefault();
    this.drag = { from: col, to: col };
    this.canvas.setPointerCapture(e.pointerId);
    this.draw();
  };

  private onMove = (e: PointerEvent) => {
    const col = this.colAt(e);
    const d = this.data;
    if (col === null || !d) return;
    if (this.drag && col !== this.drag.to) {
      this.drag.to = col;
      this.draw();
    }
    const r = this.drag ? columnsRange(d, this.drag.from, this.drag.to) : columnsRange(d, col, col);
    const n = this.drag ? d.totals.slice(Math.min(this.drag.from, this.drag.to), Math.max(this.drag.from, this.drag.to) + 1).reduce((a, b) => a + b, 0) : d.totals[col];
    replace(
      this.tooltip,
      h("div", { class: "tooltip-title" }, `${formatClock(r.start, true)} – ${formatClock(r.end)}`),
      h("div", null, h("b", null, formatCount(n)), n === 1 ? " sample" : " samples", this.drag ? " · release to zoom here" : ""),
    );
    this.tooltip.hidden = false;
    this.tooltip.style.left = `${Math.min(e.clientX + 14, window.innerWidth - this.tooltip.offsetWidth - 8)}px`;
    this.tooltip.style.top = `${e.clientY + 16}px`;
  };

  private onUp = (e: PointerEvent) => {
    const d = this.data;
    if (!this.drag || !d) return;
    const { from, to } = this.drag;
    this.drag = null;
    if (this.canvas.hasPointerCapture(e.pointerId)) this.canvas.releasePointerCapture(e.pointerId);
    this.tooltip.hidden = true;
    this.draw();
    const r = columnsRange(d, from, to);
    this.opts.onZoom(r);
  };
}

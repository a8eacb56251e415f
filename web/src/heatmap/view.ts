// The heatmap on a canvas: one column per second (or per secondsPerColumn
// seconds for a long profile), row 0 at the bottom, colour by count (see
// model.ts). Select with the mouse (click a cell, or drag from a start cell
// to an end cell: the range runs in time order from the earlier cell's
// start to the later cell's end; shift-click extends from the anchor) or
// the keyboard (arrows move, Enter/Space select, Shift extends, Escape
// clears). In a heatmap of multi-second columns a selection is whole
// columns (model.ts says why). Read-only (a shared range), it shows its
// selection and tooltips but selects nothing. A heatmap may be a slice
// starting after the profile's first second (firstColumn). A fleet heatmap
// (wallClock) labels its axis and tooltips in wall-clock time, its start
// second being a unix second. Wide heatmaps
// scroll sideways; only the visible columns are drawn, from a
// one-pixel-per-cell bitmap scaled up.
//
// For tests and assistive technology the canvas carries its data: data-cells
// (JSON columns of counts), data-rows, data-cols, data-seconds-per-column,
// data-total, data-max-count, the geometry of the plot
// (data-plot-left/-top, data-cell-width/-height in CSS pixels from the
// canvas's top-left), and the selection (data-selection-start/-end in
// relative seconds, data-selected-count). A table view of the same counts
// is one click away.

import { h, replace } from "../dom";
import { formatClock, formatCount, formatDuration, formatSeconds, formatTick, formatTimeRange, formatWallRange, NS_PER_SEC, zoneOffsetSeconds } from "../format";
import {
  cellIndex,
  cellOfIndex,
  cellRange,
  cellsOfRange,
  cellWidth,
  colourLUT,
  columnRange,
  firstSecond,
  gridOf,
  legendGradient,
  moveCell,
  msTicks,
  rangeOfCells,
  rowOffsets,
  secondTicks,
  sumCells,
  wallTicks,
  type Grid,
  type Heatmap,
  type Range,
} from "./model";

const AXIS_LEFT = 64;
/** The axes' labels: the page's font (style.css) at a size its text has
 * (12 px). Each font, weight and size a page first uses costs its first
 * frame lookups in the browser (a permalink's heatmap: 11 px here was one
 * more before it was drawn). */
export const AXIS_FONT = '12px system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif';
const AXIS_BOTTOM = 30;
/** The outline of a comparison's pinned baseline range. */
export const BASELINE_COLOUR = "#e67e00";
const PAD_TOP = 10;
const PAD_RIGHT = 12;
const PLOT_HEIGHT = 400;

export interface HeatmapViewOptions {
  /** A committed selection (mouse up, click, Enter), or null when cleared. */
  onSelect: (range: Range | null) => void;
  /** Called after each draw with the time since navigation (for the bench). */
  onDrawn?: (ms: number) => void;
  /** The selection is shown but cannot be changed (a shared range). */
  readOnly?: boolean;
  /** The heatmap's start second is a unix second: axis and tooltips in
   * wall-clock time (the fleet view). */
  wallClock?: boolean;
  /** The left gutter's width, CSS px (default 64): where the y axis is,
   * and the row labels of the panels that share the time axis. */
  axisLeft?: number;
  /** After each drawing: where the columns are, for panels that share the
   * heatmap's time axis (the thread view, host strip, timeline). */
  onAxis?: (a: ColumnAxis) => void;
}

/** ColumnAxis is where a heatmap's columns are drawn, for panels that draw
 * the same seconds at the same pixels. */
export interface ColumnAxis {
  /** The heatmap's canvas: positions below are CSS px from its left edge. */
  canvas: HTMLElement;
  /** Column 0's left edge (moves as the heatmap scrolls sideways). */
  x0: number;
  cellW: number;
  /** The plot's part on screen: [visLeft, visRight). */
  visLeft: number;
  visRight: number;
  /** The absolute second column 0 starts at, and seconds per column. */
  second0: number;
  secondsPerColumn: number;
  cols: number;
}

/** axisX is where second s (absolute, as second0) starts, in CSS px from
 * the heatmap canvas's left edge. */
export function axisX(a: ColumnAxis, s: number): number {
  return a.x0 + ((s - a.second0) / a.secondsPerColumn) * a.cellW;
}

interface Geometry {
  cellW: number;
  cellH: number;
  width: number; // canvas CSS width (the visible part)
  height: number;
  innerWidth: number; // scrollable width
  scrollerW: number; // the scroller's width it was laid out for
}

export class HeatmapView {
  readonly el: HTMLElement;
  private scroller: HTMLDivElement;
  private inner: HTMLDivElement;
  private canvas: HTMLCanvasElement;
  private tooltip: HTMLDivElement;
  private live: HTMLDivElement;
  private legend: HTMLDivElement;
  private tableBox: HTMLDivElement;
  private scrollHint = h("span", { class: "scroll-hint", "data-testid": "heatmap-visible" });
  private data: Heatmap | null = null;
  private bitmap: HTMLCanvasElement | null = null;
  private geo: Geometry | null = null;
  private selection: Range | null = null;
  private baseline: Range | null = null;
  private drag: { from: number; to: number } | null = null;
  private anchor: number | null = null;
  private cursor = 0;
  private hover: number | null = null;
  private raf = 0;
  private resizeObs: ResizeObserver;
  private opts: HeatmapViewOptions;
  private readonly axisLeft: number;

  constructor(opts: HeatmapViewOptions) {
    this.opts = opts;
    this.axisLeft = opts.axisLeft ?? AXIS_LEFT;
    this.canvas = h("canvas", {
      "data-testid": "heatmap",
      tabindex: "0",
      role: "application",
      "aria-roledescription": "heatmap",
      "aria-label": opts.readOnly
        ? "Sub-second offset heatmap of a shared range. Arrow keys move between cells."
        : "Sub-second offset heatmap. Arrow keys move between cells, Enter selects a cell, Shift with arrows or Enter extends the selection, Escape clears it.",
      class: "heatmap-canvas",
    });
    this.inner = h("div", { class: "heatmap-inner" }, this.canvas);
    this.scroller = h("div", { class: "heatmap-scroller" }, this.inner);
    this.tooltip = h("div", { class: "tooltip", role: "tooltip", hidden: true });
    this.live = h("div", { class: "visually-hidden", "aria-live": "polite" });
    this.legend = h("div", { class: "legend" });
    this.tableBox = h("div", { class: "heatmap-table", hidden: true });
    this.el = h("div", { class: "heatmap" }, this.legend, this.scroller, this.tooltip, this.live, this.tableBox);

    this.canvas.addEventListener("pointerdown", this.onPointerDown);
    this.canvas.addEventListener("pointermove", this.onPointerMove);
    this.canvas.addEventListener("pointerup", this.onPointerUp);
    this.canvas.addEventListener("pointercancel", () => (this.drag = null));
    this.canvas.addEventListener("pointerleave", () => {
      this.hover = null;
      this.tooltip.hidden = true;
      this.schedule();
    });
    this.canvas.addEventListener("keydown", this.onKey);
    this.canvas.addEventListener("focus", () => this.schedule());
    this.canvas.addEventListener("blur", () => this.schedule());
    this.scroller.addEventListener("scroll", () => {
      this.tooltip.hidden = true;
      this.schedule();
    });
    // Only a new width lays the plot out again: the observer's first report
    // comes in the frame after the first drawing, and laying out then (which
    // sets the canvas's size, clearing it) had that frame paint an empty
    // canvas and the heatmap wait for the next one.
    this.resizeObs = new ResizeObserver(() => {
      if (this.data && this.scroller.clientWidth !== this.geo?.scrollerW) {
        this.layoutGeometry();
        this.schedule();
      }
    });
    this.resizeObs.observe(this.scroller);
  }

  destroy() {
    cancelAnimationFrame(this.raf);
    this.resizeObs.disconnect();
  }

  /** setData shows a heatmap (keeping the selection, a time range). */
  setData(d: Heatmap) {
    this.data = d;
    const cols = d.columns.length;
    const rows = d.rows;
    const bm = document.createElement("canvas");
    bm.width = Math.max(cols, 1);
    bm.height = rows;
    const ctx = bm.getContext("2d")!;
    const img = ctx.createImageData(bm.width, rows);
    const px = new Uint32Array(img.data.buffer);
    const lut = colourLUT(d.maxCount);
    for (let c = 0; c < cols; c++) {
      const col = d.columns[c];
      for (let r = 0; r < rows; r++) px[(rows - 1 - r) * bm.width + c] = lut[col[r] ?? 0];
    }
    ctx.putImageData(img, 0, 0);
    this.bitmap = bm;
    performance.mark("fleetscope:heatmap-bitmap");
    this.cursor = Math.min(this.cursor, cols * rows - 1);
    const ds = this.canvas.dataset;
    ds.rows = String(rows);
    ds.cols = String(cols);
    ds.secondsPerColumn = String(d.secondsPerColumn);
    ds.startSecond = String(d.startSecond);
    ds.event = d.event;
    ds.total = String(d.total);
    ds.maxCount = String(d.maxCount);
    // The counts themselves, for tests and tools, without serialising
    // cols × rows numbers into an attribute on every paint.
    (this.canvas as HTMLCanvasElement & { heatmapCells?: () => number[][] }).heatmapCells = () => d.columns;
    this.renderLegend();
    if (!this.tableBox.hidden) this.renderTable();
    performance.mark("fleetscope:heatmap-data");
    this.layoutGeometry();
    performance.mark("fleetscope:heatmap-layout");
    this.updateSelectionData();
    this.draw();
  }

  /** setSelection shows a range chosen elsewhere (a permalink). */
  setSelection(r: Range | null) {
    this.selection = r;
    if (r && this.data) {
      const span = cellsOfRange(r, this.grid());
      if (span) {
        this.anchor = span.first;
        this.cursor = span.last;
      }
    }
    this.updateSelectionData();
    this.schedule();
  }

  /** setBaseline marks a comparison's pinned baseline range (null: none). */
  setBaseline(r: Range | null) {
    this.baseline = r;
    this.canvas.dataset.baselineStart = r ? formatSeconds(r.start) : "";
    this.canvas.dataset.baselineEnd = r ? formatSeconds(r.end) : "";
    this.schedule();
  }

  /** scrollToSelection brings the selection into view. */
  scrollToSelection() {
    if (!this.selection || !this.geo || !this.data) return;
    const col = Math.floor(this.selection.start / (NS_PER_SEC * this.data.secondsPerColumn)) - this.data.firstColumn;
    const x = col * this.geo.cellW;
    const vis = this.geo.width - this.axisLeft - PAD_RIGHT;
    const left = this.scroller.scrollLeft;
    if (x < left + vis * 0.1 || x > left + vis * 0.9) this.scroller.scrollLeft = Math.max(0, x - vis / 2);
  }

  /** scrollToColumn brings column col into view, near the left, if it is not. */
  scrollToColumn(col: number) {
    if (!this.geo) return;
    const x = col * this.geo.cellW;
    const vis = this.geo.width - this.axisLeft - PAD_RIGHT;
    const left = this.scroller.scrollLeft;
    if (x < left || x > left + vis * 0.9) this.scroller.scrollLeft = Math.max(0, x - vis * 0.1);
  }

  toggleTable(show: boolean) {
    this.tableBox.hidden = !show;
    if (show) this.renderTable();
    else replace(this.tableBox);
  }

  /** selectedCount is the sum of the selected cells, when the selection is
   * exactly a run of cells (else null: only the flame graph can count it). */
  selectedCount(): number | null {
    if (!this.selection || !this.data) return null;
    const span = cellsOfRange(this.selection, this.grid());
    if (!span) return 0;
    if (!span.aligned) return null;
    return sumCells(this.data, span.first, span.last);
  }

  private grid(): Grid {
    return gridOf(this.data!);
  }

  // ---- geometry and drawing --------------------------------------------------

  private layoutGeometry() {
    const d = this.data!;
    const cols = Math.max(d.columns.length, 1);
    const scrollerW = this.scroller.clientWidth;
    const avail = Math.max(scrollerW, 320);
    const cellW = cellWidth(avail - this.axisLeft - PAD_RIGHT, cols);
    const cellH = Math.max(2, Math.round(PLOT_HEIGHT / d.rows));
    const innerWidth = Math.max(this.axisLeft + cols * cellW + PAD_RIGHT, avail);
    const width = Math.min(avail, innerWidth);
    const height = PAD_TOP + d.rows * cellH + AXIS_BOTTOM;
    this.geo = { cellW, cellH, width, height, innerWidth, scrollerW };
    this.inner.style.width = `${innerWidth}px`;
    this.inner.style.height = `${height}px`;
    const dpr = window.devicePixelRatio || 1;
    this.canvas.style.width = `${width}px`;
    this.canvas.style.height = `${height}px`;
    // (Setting a canvas's size clears it, even to the size it has.)
    const cw = Math.round(width * dpr);
    const ch = Math.round(height * dpr);
    if (this.canvas.width !== cw) this.canvas.width = cw;
    if (this.canvas.height !== ch) this.canvas.height = ch;
    const ds = this.canvas.dataset;
    ds.cellWidth = String(cellW);
    ds.cellHeight = String(cellH);
    ds.plotTop = String(PAD_TOP);
  }

  private schedule() {
    cancelAnimationFrame(this.raf);
    this.raf = requestAnimationFrame(() => this.draw());
  }

  private draw() {
    // A drawing now makes a scheduled one needless (setData draws at once;
    // setSelection before it had scheduled a second drawing of the same
    // into the heatmap's first frame).
    cancelAnimationFrame(this.raf);
    const d = this.data;
    const g = this.geo;
    if (!d || !g || !this.bitmap) return;
    const ctx = this.canvas.getContext("2d")!;
    const dpr = window.devicePixelRatio || 1;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, g.width, g.height);
    const scroll = this.scroller.scrollLeft;
    const cols = d.columns.length;
    const plotLeft = this.axisLeft - scroll;
    this.canvas.dataset.plotLeft = String(plotLeft);

    this.canvas.dataset.scrollLeft = String(scroll);
    const plotH = d.rows * g.cellH;
    const c0 = Math.max(0, Math.floor(scroll / g.cellW));
    const c1 = Math.min(cols, Math.ceil((scroll + g.width - this.axisLeft) / g.cellW));
    const lastVisible = Math.min(cols, Math.floor((scroll + g.width - this.axisLeft - PAD_RIGHT) / g.cellW));
    const [spc, s0] = [d.secondsPerColumn, firstSecond(d)];
    this.scrollHint.textContent =
      lastVisible < cols || scroll > 0
        ? `showing ${this.opts.wallClock ? `${this.clock(s0 + c0 * spc)}–${this.clock(s0 + lastVisible * spc)}` : `${s0 + c0 * spc}–${s0 + lastVisible * spc} s`} · scroll sideways for the rest`
        : "";

    ctx.save();
    ctx.beginPath();
    ctx.rect(this.axisLeft, 0, g.width - this.axisLeft, g.height);
    ctx.clip();
    // plot background and frame
    ctx.fillStyle = "#ffffff";
    ctx.fillRect(plotLeft, PAD_TOP, cols * g.cellW, plotH);
    if (c1 > c0) {
      ctx.imageSmoothingEnabled = false;
      ctx.drawImage(this.bitmap, c0, 0, c1 - c0, d.rows, plotLeft + c0 * g.cellW, PAD_TOP, (c1 - c0) * g.cellW, plotH);
    }
    // faint column separators when columns are wide enough to need them
    if (g.cellW >= 10) {
      ctx.fillStyle = "rgba(255,255,255,0.6)";
      for (let c = c0 + 1; c < c1; c++) ctx.fillRect(plotLeft + c * g.cellW - 0.5, PAD_TOP, 1, plotH);
    }
    // selection (or the drag in progress)
    const sel = this.drag ? rangeOfCells(this.drag.from, this.drag.to, this.grid()) : this.selection;
    // the pinned baseline of a comparison: outlined, not filled (its cells keep their colours)
    if (this.baseline) this.drawSpan(ctx, this.baseline, plotLeft, "rgba(0,0,0,0)", BASELINE_COLOUR);
    if (sel) this.drawSpan(ctx, sel, plotLeft, this.drag ? "rgba(0,150,255,0.28)" : "rgba(0,150,255,0.35)", "#0072e5");
    if (this.hover !== null && !this.drag) this.outlineCell(ctx, this.hover, plotLeft, "rgba(20,20,20,0.9)", 1.5);
    if (document.activeElement === this.canvas) this.outlineCell(ctx, this.cursor, plotLeft, "#0072e5", 2, [3, 2]);
    ctx.restore();

    ctx.strokeStyle = "#c9cdd4";
    ctx.lineWidth = 1;
    ctx.strokeRect(this.axisLeft - 0.5, PAD_TOP - 0.5, Math.min(cols * g.cellW - scroll, g.width - this.axisLeft) + 1, plotH + 1);
    this.drawAxes(ctx, g, d, plotLeft, c0, c1);
    this.canvas.dataset.drawn = String(Number(this.canvas.dataset.drawn ?? 0) + 1);
    this.opts.onAxis?.({
      canvas: this.canvas,
      x0: plotLeft,
      cellW: g.cellW,
      visLeft: this.axisLeft,
      visRight: Math.min(plotLeft + cols * g.cellW, g.width),
      second0: d.startSecond + firstSecond(d),
      secondsPerColumn: d.secondsPerColumn,
      cols,
    });
    this.opts.onDrawn?.(performance.now());
  }

  private cellRect(idx: number, plotLeft: number) {
    const g = this.geo!;
    const d = this.data!;
    const { col, row } = cellOfIndex(idx, d.rows);
    return { x: plotLeft + col * g.cellW, y: PAD_TOP + (d.rows - 1 - row) * g.cellH, w: g.cellW, h: g.cellH };
  }

  private outlineCell(ctx: CanvasRenderingContext2D, idx: number, plotLeft: number, colour: string, width: number, dash: number[] = []) {
    const r = this.cellRect(idx, plotLeft);
    ctx.save();
    ctx.strokeStyle = colour;
    ctx.lineWidth = width;
    ctx.setLineDash(dash);
    ctx.strokeRect(r.x + width / 2, r.y + width / 2, Math.max(r.w - width, 1), Math.max(r.h - width, 1));
    ctx.restore();
  }

  // drawSpan shades the cells a range touches, column by column (whole
  // columns when they are several seconds wide).
  private drawSpan(ctx: CanvasRenderingContext2D, r: Range, plotLeft: number, fill: string, stroke: string) {
    const d = this.data!;
    const g = this.geo!;
    const span = cellsOfRange(r, this.grid());
    if (!span) return;
    const first = cellOfIndex(span.first, d.rows);
    const last = cellOfIndex(span.last, d.rows);
    ctx.fillStyle = fill;
    ctx.strokeStyle = stroke;
    ctx.lineWidth = 2;
    for (let c = first.col; c <= last.col; c++) {
      const lo = c === first.col ? first.row : 0;
      const hi = c === last.col ? last.row : d.rows - 1;
      const x = plotLeft + c * g.cellW;
      const y = PAD_TOP + (d.rows - 1 - hi) * g.cellH;
      const hgt = (hi - lo + 1) * g.cellH;
      ctx.fillRect(x, y, g.cellW, hgt);
      ctx.strokeRect(x + 1, y + 1, g.cellW - 2, hgt - 2);
    }
  }

  private drawAxes(ctx: CanvasRenderingContext2D, g: Geometry, d: Heatmap, plotLeft: number, c0: number, c1: number) {
    const plotH = d.rows * g.cellH;
    ctx.fillStyle = "#4a5160";
    ctx.font = AXIS_FONT;
    // y: offset within the second, in ms (0 at the bottom)
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    for (const ms of msTicks(plotH)) {
      const y = PAD_TOP + plotH - (ms / 1000) * plotH;
      ctx.fillText(`${ms} ms`, this.axisLeft - 6, Math.min(Math.max(y, PAD_TOP + 4), PAD_TOP + plotH - 4));
      ctx.fillRect(this.axisLeft - 4, Math.round(y) - 0.5, 3, 1);
    }
    // x: seconds from the profile's start second, at column boundaries;
    // or, in wall-clock time, round times of day
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    ctx.save();
    ctx.beginPath();
    const spill = this.opts.wallClock ? 40 : 20; // a label centred on the plot's left edge (times of day are wider)
    ctx.rect(this.axisLeft - spill, 0, g.width - this.axisLeft + spill, g.height);
    ctx.clip();
    const g0 = this.grid();
    const wall = this.opts.wallClock ? wallTicks(g0, g.cellW, d.startSecond, zoneOffsetSeconds(d.startSecond)) : null;
    for (const s of wall ? wall.seconds : secondTicks(g0, g.cellW)) {
      const c = (s - firstSecond(g0)) / g0.secondsPerColumn;
      if (c < c0 - 5 || c > c1 + 5) continue;
      const x = plotLeft + c * g.cellW;
      if (x < this.axisLeft - 1) continue;
      ctx.fillRect(Math.round(x) - 0.5, PAD_TOP + plotH + 1, 1, 4);
      // a label at the right edge is moved in, not cut ("16:10:4…")
      const label = wall ? formatTick(d.startSecond + s, wall.step) : `${s} s`;
      ctx.fillText(label, Math.min(x, g.width - ctx.measureText(label).width / 2 - 1), PAD_TOP + plotH + 7);
    }
    ctx.restore();
  }

  // ---- interaction ---------------------------------------------------------

  /** cellAtPoint is the cell under a pointer, clamped to the grid when clamp. */
  private cellAtPoint(e: { clientX: number; clientY: number }, clamp: boolean): number | null {
    const d = this.data;
    const g = this.geo;
    if (!d || !g || d.columns.length === 0) return null;
    const rect = this.canvas.getBoundingClientRect();
    const x = e.clientX - rect.left - this.axisLeft + this.scroller.scrollLeft;
    const y = e.clientY - rect.top - PAD_TOP;
    let col = Math.floor(x / g.cellW);
    let row = d.rows - 1 - Math.floor(y / g.cellH);
    const inside = col >= 0 && col < d.columns.length && row >= 0 && row < d.rows && e.clientX - rect.left >= this.axisLeft;
    if (!inside && !clamp) return null;
    col = Math.min(Math.max(col, 0), d.columns.length - 1);
    row = Math.min(Math.max(row, 0), d.rows - 1);
    return cellIndex(col, row, d.rows);
  }

  private onPointerDown = (e: PointerEvent) => {
    if (e.button !== 0 || this.opts.readOnly) return;
    const cell = this.cellAtPoint(e, false);
    if (cell === null) return;
    e.preventDefault();
    this.canvas.focus({ preventScroll: true });
    this.cursor = cell;
    if (e.shiftKey && this.anchor !== null) {
      this.commit(rangeOfCells(this.anchor, cell, this.grid()));
      return;
    }
    this.drag = { from: cell, to: cell };
    this.canvas.setPointerCapture(e.pointerId);
    this.schedule();
  };

  private onPointerMove = (e: PointerEvent) => {
    const d = this.data;
    if (!d) return;
    if (this.drag) {
      const cell = this.cellAtPoint(e, true)!;
      if (cell !== this.drag.to) {
        this.drag.to = cell;
        this.schedule();
      }
      this.showRangeTooltip(e, rangeOfCells(this.drag.from, this.drag.to, this.grid()));
      return;
    }
    const cell = this.cellAtPoint(e, false);
    if (cell !== this.hover) {
      this.hover = cell;
      this.schedule();
    }
    if (cell === null) {
      this.tooltip.hidden = true;
      return;
    }
    this.showCellTooltip(e, cell);
  };

  private onPointerUp = (e: PointerEvent) => {
    if (!this.drag) return;
    const { from, to } = this.drag;
    this.drag = null;
    if (this.canvas.hasPointerCapture(e.pointerId)) this.canvas.releasePointerCapture(e.pointerId);
    this.anchor = Math.min(from, to);
    this.cursor = to;
    this.commit(rangeOfCells(from, to, this.grid()));
  };

  private onKey = (e: KeyboardEvent) => {
    const d = this.data;
    if (!d || d.columns.length === 0) return;
    const cols = d.columns.length;
    const moves: Record<string, [number, number]> = {
      ArrowLeft: [-1, 0],
      ArrowRight: [1, 0],
      ArrowUp: [0, 1],
      ArrowDown: [0, -1],
      PageUp: [0, 10],
      PageDown: [0, -10],
    };
    if (this.opts.readOnly && (e.shiftKey || ["Enter", " ", "Escape"].includes(e.key))) return; // nothing to select
    let handled = true;
    if (e.key in moves) {
      const [dc, dr] = moves[e.key];
      this.cursor = moveCell(this.cursor, dc, dr, d.rows, cols);
      if (e.shiftKey) this.commit(rangeOfCells(this.anchor ?? this.cursor, this.cursor, this.grid()), false);
    } else if (e.key === "Home") {
      this.cursor = cellIndex(0, cellOfIndex(this.cursor, d.rows).row, d.rows);
    } else if (e.key === "End") {
      this.cursor = cellIndex(cols - 1, cellOfIndex(this.cursor, d.rows).row, d.rows);
    } else if (e.key === "Enter" || e.key === " ") {
      if (e.shiftKey && this.anchor !== null) this.commit(rangeOfCells(this.anchor, this.cursor, this.grid()));
      else {
        this.anchor = this.cursor;
        this.commit(rangeOfCells(this.cursor, this.cursor, this.grid()));
      }
    } else if (e.key === "Escape") {
      this.anchor = null;
      this.commit(null);
    } else handled = false;
    if (!handled) return;
    e.preventDefault();
    this.ensureVisible(this.cursor);
    const { col, row } = cellOfIndex(this.cursor, d.rows);
    this.live.textContent = `${this.cellWords(col, row).where}: ${formatCount(d.columns[col][row])} samples`;
    this.schedule();
  };

  private ensureVisible(idx: number) {
    const g = this.geo!;
    const { col } = cellOfIndex(idx, this.data!.rows);
    const x = col * g.cellW;
    const vis = g.width - this.axisLeft - PAD_RIGHT;
    if (x < this.scroller.scrollLeft) this.scroller.scrollLeft = x;
    else if (x + g.cellW > this.scroller.scrollLeft + vis) this.scroller.scrollLeft = x + g.cellW - vis;
  }

  private commit(r: Range | null, notify = true) {
    this.selection = r;
    this.updateSelectionData();
    this.schedule();
    if (r && this.data) {
      const n = this.selectedCount();
      this.live.textContent = `Selected ${this.rangeWords(r).replace(" – ", " to ")} (${formatDuration(r.end - r.start)}), ${n === null ? "" : `${formatCount(n)} samples`}`;
    }
    if (notify) this.opts.onSelect(r);
    else this.pendingNotify();
  }

  // Keyboard extension with Shift+arrows settles before asking the server.
  private notifyTimer: ReturnType<typeof setTimeout> | undefined;
  private pendingNotify() {
    clearTimeout(this.notifyTimer);
    this.notifyTimer = setTimeout(() => this.opts.onSelect(this.selection), 250);
  }

  private updateSelectionData() {
    const ds = this.canvas.dataset;
    if (!this.selection) {
      delete ds.selectionStart;
      delete ds.selectionEnd;
      delete ds.selectedCount;
      return;
    }
    ds.selectionStart = formatSeconds(this.selection.start);
    ds.selectionEnd = formatSeconds(this.selection.end);
    const n = this.selectedCount();
    if (n === null) delete ds.selectedCount;
    else ds.selectedCount = String(n);
  }

  /** clock writes a second relative to the heatmap's start in wall-clock time. */
  private clock(relSecond: number): string {
    return formatClock(BigInt(this.data!.startSecond + relSecond) * 1_000_000_000n);
  }

  /** rangeWords writes a relative range: relative seconds, or wall-clock time. */
  private rangeWords(r: Range): string {
    if (!this.opts.wallClock) return formatTimeRange(r);
    const base = BigInt(this.data!.startSecond) * 1_000_000_000n;
    return formatWallRange(base + BigInt(r.start), base + BigInt(r.end));
  }

  /** cellWords says where cell (col, row) lies in time, in words: a title
   * and the range, or for a multi-second column the slice of each second. */
  private cellWords(col: number, row: number): { title: string; where: string } {
    const d = this.data!;
    const spc = d.secondsPerColumn;
    const o = rowOffsets(row, d.rows);
    const ms = (ns: number) => (ns / 1e6).toFixed(ns % 1e6 === 0 ? 0 : 3);
    if (this.opts.wallClock) {
      const c = columnRange(col, d);
      const first = c.start / NS_PER_SEC;
      if (spc === 1) return { title: `${this.clock(first)}, ${ms(o.start)}–${ms(o.end)} ms`, where: this.rangeWords(cellRange(d.firstColumn + col, row, d.rows)) };
      const secs = `${this.clock(first)}–${this.clock(c.end / NS_PER_SEC)}`;
      return { title: `${secs}, ${ms(o.start)}–${ms(o.end)} ms of each second`, where: `${ms(o.start)}–${ms(o.end)} ms of each second of ${secs}` };
    }
    if (spc === 1) {
      const r = cellRange(d.firstColumn + col, row, d.rows);
      return { title: `second ${d.firstColumn + col}, ${ms(o.start)}–${ms(o.end)} ms`, where: formatTimeRange(r) };
    }
    const c = columnRange(col, d);
    const secs = `seconds ${c.start / NS_PER_SEC}–${c.end / NS_PER_SEC}`;
    return { title: `${secs}, ${ms(o.start)}–${ms(o.end)} ms of each`, where: `${ms(o.start)}–${ms(o.end)} ms of each of ${secs}` };
  }

  private showCellTooltip(e: PointerEvent, cell: number) {
    const d = this.data!;
    const { col, row } = cellOfIndex(cell, d.rows);
    const count = d.columns[col][row] ?? 0;
    const words = this.cellWords(col, row);
    const c = columnRange(col, d);
    this.placeTooltip(
      e,
      h("div", { class: "tooltip-title" }, words.title),
      d.secondsPerColumn === 1
        ? h("div", null, words.where)
        : h("div", { class: "muted" }, `${this.opts.readOnly ? "the column" : "a click selects the whole column"}: ${this.rangeWords(c)}`),
      h("div", null, h("b", null, formatCount(count)), count === 1 ? " sample" : " samples"),
    );
  }

  private showRangeTooltip(e: PointerEvent, r: Range) {
    const d = this.data!;
    const span = cellsOfRange(r, this.grid());
    const count = span ? sumCells(d, span.first, span.last) : 0;
    this.placeTooltip(
      e,
      h("div", { class: "tooltip-title" }, `${this.rangeWords(r)} (${formatDuration(r.end - r.start)})`),
      h("div", null, h("b", null, formatCount(count)), count === 1 ? " sample" : " samples", " selected"),
    );
  }

  private placeTooltip(e: PointerEvent, ...lines: HTMLElement[]) {
    replace(this.tooltip, lines);
    this.tooltip.hidden = false;
    const tw = this.tooltip.offsetWidth;
    const x = e.clientX + 14 + tw > window.innerWidth ? e.clientX - tw - 10 : e.clientX + 14;
    this.tooltip.style.left = `${x}px`;
    this.tooltip.style.top = `${e.clientY + 16}px`;
  }

  private renderLegend() {
    const d = this.data!;
    // No samples: no scale to read ("0 – 0" would look like one).
    this.legend.hidden = d.maxCount === 0;
    const spc = d.secondsPerColumn;
    const cellMs = formatDuration(Math.round(NS_PER_SEC / d.rows));
    replace(
      this.legend,
      h("span", { class: "legend-label" }, spc === 1 ? `samples per ${cellMs} cell` : `samples per cell (${cellMs} of each of ${spc} s)`),
      h("span", { class: "legend-swatch", title: "no samples" }),
      h("span", { class: "legend-tick" }, "0"),
      h("span", { class: "legend-bar", style: `background: ${legendGradient()}` }),
      h("span", { class: "legend-tick" }, d.maxCount > 1 ? `1 – ${formatCount(d.maxCount)}` : formatCount(d.maxCount)),
      h("span", { class: "legend-total" }, `${formatCount(d.total)} samples in ${formatCount(d.columns.length * spc)} s${spc === 1 ? "" : ` (${formatCount(d.columns.length)} columns of ${spc} s)`}`),
    );
    this.legend.appendChild(this.scrollHint);
  }

  private renderTable() {
    const d = this.data!;
    const spc = d.secondsPerColumn;
    const cellMs = NS_PER_SEC / d.rows / 1e6;
    const head = h(
      "tr",
      null,
      h("th", { scope: "col" }, spc === 1 ? "second" : "seconds"),
      h("th", { scope: "col" }, "total"),
      Array.from({ length: d.rows }, (_, r) => h("th", { scope: "col" }, `${Math.round(r * cellMs)} ms`)),
    );
    const body = d.columns.map((col, c) =>
      h(
        "tr",
        null,
        h(
          "th",
          { scope: "row" },
          this.opts.wallClock
            ? spc === 1
              ? this.clock((d.firstColumn + c) * spc)
              : `${this.clock((d.firstColumn + c) * spc)}–${this.clock((d.firstColumn + c + 1) * spc)}`
            : spc === 1
              ? String(d.firstColumn + c)
              : `${(d.firstColumn + c) * spc}–${(d.firstColumn + c + 1) * spc}`,
        ),
        h("td", null, formatCount(col.reduce((a, b) => a + b, 0))),
        col.map((n) => h("td", { class: n === 0 ? "zero" : undefined }, String(n))),
      ),
    );
    replace(
      this.tableBox,
      h(
        "table",
        { "data-testid": "heatmap-table" },
        h("caption", null, `Samples per cell: one row per ${spc === 1 ? "second" : `${spc} seconds`}, one column per ${formatDuration(Math.round(NS_PER_SEC / d.rows))} of the second`),
        h("thead", null, head),
        h("tbody", null, body),
      ),
    );
  }
}

// The flame graph on a canvas. Each frame is a bar as wide as its samples;
// children sit on their parent (flame: root at the bottom) or hang below it
// (icicle: root at the top). Click a frame to zoom to it (its ancestors stay
// as full-width bars; click one to zoom out), hover for its numbers, search
// to paint matching frames magenta and dim the rest. Only frames at least
// half a pixel wide are visited (a narrow frame's subtree is skipped whole)
// and labels are cut by a monospace character count instead of measuring
// each one, so a redraw stays in milliseconds at 100k nodes.
//
// A graph deeper than its box (at most the viewport's height, style.css)
// scrolls inside it; a new graph, zoom or orientation scrolls to the root.
// The canvas is only as tall as the box and stays in it (sticky) while a
// spacer gives the graph its height; a scroll redraws the rows in view. So
// a deep graph costs no more canvas than a shallow one (a canvas as tall
// as the graph was ~8 MB for the benchmark profile's 84 rows, and browsers
// cap a canvas at 32767 px: deeper rows would have been cut off).
//
// Test hooks on the canvas: data-total (samples in the graph), data-nodes,
// data-zoom (the zoomed frame's path), data-matched (samples in matching
// frames), data-orientation, data-render-ms.

import { h, replace } from "../dom";
import { labelColour } from "./diff";
import { formatCount, formatPercent } from "../format";
import {
  dimColour,
  frameColour,
  hitTest,
  HIGHLIGHT,
  isAncestor,
  matchedTotal,
  matchNames,
  compileSearch,
  nodeRect,
  pathOf,
  truncateLabel,
  visibleNodes,
  type Layout,
  type Viewport,
} from "./model";

export type Orientation = "icicle" | "flame";

const ROW_H = 18;
const FONT = "12px ui-monospace, 'DejaVu Sans Mono', Menlo, Consolas, monospace";
const MIN_WIDTH = 0.5;
const LABEL_MIN = 22;
/** The graph is drawn at least this wide (CSS px), however narrow its box. */
const MIN_GRAPH_WIDTH = 200;

export interface FlameViewOptions {
  onZoom: (node: number) => void;
  onRendered?: (ms: number) => void;
}

export class FlameView {
  readonly el: HTMLElement;
  readonly canvas: HTMLCanvasElement;
  private hoverBox: HTMLDivElement;
  private tooltip: HTMLDivElement;
  private layout: Layout | null = null;
  private zoom = 0;
  private orientation: Orientation = "icicle";
  private matches: Uint8Array = new Uint8Array(0);
  private searching = false;
  private colours: (string | undefined)[] = []; // by name, filled as drawn
  private nodeColours: string[] | null = null; // per node, for a differential graph
  private dims: (string | undefined)[] = [];
  private labelColours = new Map<string, string>(); // by fill
  private visible = new Int32Array(0);
  private count = 0;
  private rowsShown = 1; // rows in the graph
  private width = 0;
  private viewH = 0; // the canvas's height in CSS pixels: the rows in view
  private scrollTop = 0; // the graph's y at the canvas's top
  private spacer: HTMLDivElement;
  private raf = 0;
  private hover = -1;
  private resizeObs: ResizeObserver;
  private charW = 7.2;
  private opts: FlameViewOptions;

  constructor(opts: FlameViewOptions) {
    this.opts = opts;
    this.canvas = h("canvas", {
      "data-testid": "flamegraph",
      class: "flame-canvas",
      tabindex: "0",
      role: "img",
      "aria-label": "Flame graph. Click a frame to zoom in; Escape zooms out.",
    });
    // The hovered frame's outline is a box over the canvas, not a second
    // canvas as large as the graph (its bitmap, ~8 MB for a deep graph,
    // cost its allocation and a copy at every frame's commit).
    this.hoverBox = h("div", { class: "flame-hover", "aria-hidden": "true", hidden: true });
    this.tooltip = h("div", { class: "tooltip", role: "tooltip", hidden: true });
    this.spacer = h("div", { class: "flame-spacer" });
    this.el = h("div", { class: "flame" }, this.canvas, this.spacer, this.hoverBox, this.tooltip);
    this.el.addEventListener("scroll", () => {
      if (this.raf || !this.layout) return;
      this.raf = requestAnimationFrame(() => {
        this.raf = 0;
        if (this.el.scrollTop !== this.scrollTop) this.paint();
      });
    });
    this.canvas.addEventListener("mousemove", this.onMove);
    this.canvas.addEventListener("mouseleave", () => this.setHover(-1, null));
    this.canvas.addEventListener("click", this.onClick);
    this.canvas.addEventListener("keydown", (e) => {
      if (e.key === "Escape" && this.layout && this.zoom !== 0) {
        e.preventDefault();
        this.opts.onZoom(this.layout.parent[this.zoom] >= 0 ? this.layout.parent[this.zoom] : 0);
      }
    });
    // Only a width other than the one drawn for redraws (the observer's
    // first report, in the frame after the first drawing, drew it again).
    this.resizeObs = new ResizeObserver(() => {
      if (this.layout && this.boxWidth() !== this.width) this.render();
    });
    this.resizeObs.observe(this.el);
  }

  destroy() {
    this.resizeObs.disconnect();
    cancelAnimationFrame(this.raf);
  }

  get current(): Layout | null {
    return this.layout;
  }

  get zoomed(): number {
    return this.zoom;
  }

  /** set shows a tree with a zoomed node, search and orientation, and
   * draws; nodeColours, when given, colours each node (a differential
   * graph) instead of by name. */
  set(l: Layout | null, zoom: number, search: string, orientation: Orientation, nodeColours: string[] | null = null) {
    this.nodeColours = nodeColours && l && nodeColours.length === l.n ? nodeColours : null;
    const moved = l !== this.layout || zoom !== this.zoom || orientation !== this.orientation;
    if (l !== this.layout) {
      this.layout = l;
      // Each name's colours when a frame of it is first drawn: a whole
      // profile has thousands of names, most never wide enough to draw.
      this.colours = new Array(l ? l.names.length : 0);
      this.dims = new Array(l ? l.names.length : 0);
      this.visible = new Int32Array(l ? l.n : 0);
    }
    this.zoom = l && zoom >= 0 && zoom < l.n ? zoom : 0;
    this.orientation = orientation;
    const pred = compileSearch(search);
    this.searching = pred !== null;
    this.matches = l ? matchNames(l.names, pred) : new Uint8Array(0);
    this.render(moved); // scrolled to the root's row: the top for an icicle, the bottom for a flame graph
  }

  /** matched is the samples in frames matching the search, within the whole graph. */
  matched(): number {
    if (!this.layout || !this.searching) return 0;
    return matchedTotal(this.layout, this.matches, 0).samples;
  }

  /** boxWidth is the width the graph is drawn at for its box's width now. */
  private boxWidth(): number {
    return Math.max(this.el.clientWidth, MIN_GRAPH_WIDTH);
  }

  /** render lays out and draws; it returns the milliseconds it took. */
  render(toRoot = false): number {
    const t0 = performance.now();
    const l = this.layout;
    const dpr = window.devicePixelRatio || 1;
    this.width = this.boxWidth();
    let rows = 1;
    this.count = 0;
    if (l && l.n > 0 && l.total > 0) {
      const { count, maxDepth } = visibleNodes(l, { zoom: this.zoom, width: this.width }, this.visible, MIN_WIDTH);
      this.count = count;
      rows = maxDepth + 1;
    }
    this.rowsShown = rows;
    const height = rows * ROW_H;
    // The box's height: the graph's, up to the box's maximum (style.css).
    const max = parseFloat(getComputedStyle(this.el).maxHeight);
    this.viewH = Math.min(height, max > 0 ? max : window.innerHeight);
    const cw = Math.round(this.width * dpr);
    const ch = Math.round(this.viewH * dpr);
    if (this.canvas.width !== cw || this.canvas.height !== ch) {
      this.canvas.width = cw;
      this.canvas.height = ch;
      this.canvas.style.width = `${this.width}px`;
      this.canvas.style.height = `${this.viewH}px`;
    }
    this.spacer.style.height = `${height - this.viewH}px`;
    if (toRoot) this.el.scrollTop = this.orientation === "icicle" ? 0 : height;
    this.paint();
    const ms = performance.now() - t0;
    this.updateData(ms);
    this.drawOverlay();
    this.opts.onRendered?.(ms);
    return ms;
  }

  /** paint draws the frames on the rows in view (the box's scroll). */
  private paint() {
    const l = this.layout;
    const ctx = this.canvas.getContext("2d")!;
    const dpr = window.devicePixelRatio || 1;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, this.width, this.viewH);
    if (!l || this.count === 0) return;
    const top = Math.max(0, Math.min(this.el.scrollTop, this.rowsShown * ROW_H - this.viewH));
    this.scrollTop = top;
    this.canvas.dataset.scrollTop = String(top);
    ctx.font = FONT;
    this.charW = ctx.measureText("MMMMMMMMMM").width / 10;
    const v: Viewport = { zoom: this.zoom, width: this.width };

    // Bars first, then the labels (fewer fillStyle changes).
    const labels: number[] = [];
    const fills: string[] = [];
    for (let k = 0; k < this.count; k++) {
      const i = this.visible[k];
      const r = nodeRect(l, v, i);
      const y = this.rowY(r.row) - top;
      if (y <= -ROW_H || y >= this.viewH) continue;
      const nm = l.name[i];
      const ancestor = i !== this.zoom && isAncestor(l, i, this.zoom);
      const fill = this.searching
        ? this.matches[nm] && i !== 0
          ? HIGHLIGHT
          : (this.dims[nm] ??= dimColour(l.names[nm]))
        : ancestor
          ? (this.dims[nm] ??= dimColour(l.names[nm]))
          : this.nodeColours
            ? this.nodeColours[i]
            : (this.colours[nm] ??= frameColour(l.names[nm]));
      ctx.fillStyle = fill;
      const w = r.w > 1.5 ? r.w - 0.5 : r.w;
      ctx.fillRect(r.x, y, w, ROW_H - 1);
      if (r.w >= LABEL_MIN) {
        labels.push(k);
        fills.push(fill);
      }
    }
    ctx.textBaseline = "middle";
    for (let j = 0; j < labels.length; j++) {
      const k = labels[j];
      const i = this.visible[k];
      const r = nodeRect(l, v, i);
      const max = Math.floor((r.w - 6) / this.charW);
      const text = truncateLabel(l.names[l.name[i]], max);
      if (!text) continue;
      // black or white, whichever contrasts more with the frame's colour
      // (a deep blue of a differential graph, a red, the search's magenta)
      ctx.fillStyle = this.labelColours.get(fills[j]) ?? this.labelColours.set(fills[j], labelColour(fills[j])).get(fills[j])!;
      ctx.fillText(text, Math.round(r.x + 3), this.rowY(r.row) - top + ROW_H / 2);
    }
  }

  private rowY(row: number): number {
    return this.orientation === "icicle" ? row * ROW_H : (this.rowsShown - 1 - row) * ROW_H;
  }

  private updateData(ms: number) {
    const ds = this.canvas.dataset;
    const l = this.layout;
    ds.total = String(l ? l.total : 0);
    ds.nodes = String(l ? l.n : 0);
    ds.visible = String(this.count);
    ds.zoom = l ? pathOf(l, this.zoom) : "";
    ds.matched = String(this.matched());
    ds.orientation = this.orientation;
    ds.renderMs = ms.toFixed(2);
    ds.rowHeight = String(ROW_H);
    ds.rows = String(this.rowsShown);
  }

  private drawOverlay() {
    const l = this.layout;
    const box = this.hoverBox;
    if (!l || this.hover < 0) {
      box.hidden = true;
      return;
    }
    const r = nodeRect(l, { zoom: this.zoom, width: this.width }, this.hover);
    box.style.transform = `translate(${r.x}px, ${this.rowY(r.row)}px)`;
    box.style.width = `${Math.max(r.w - 0.5, 1)}px`;
    box.style.height = `${ROW_H - 1}px`; // a bar's height
    box.hidden = false;
  }

  private nodeAt(e: MouseEvent): number {
    const l = this.layout;
    if (!l) return -1;
    const rect = this.canvas.getBoundingClientRect();
    const x = e.clientX - rect.left;
    const y = e.clientY - rect.top + this.scrollTop;
    const slot = Math.floor(y / ROW_H);
    const row = this.orientation === "icicle" ? slot : this.rowsShown - 1 - slot;
    return hitTest(l, { zoom: this.zoom, width: this.width }, x, row);
  }

  private onMove = (e: MouseEvent) => {
    this.setHover(this.nodeAt(e), e);
  };

  private onClick = (e: MouseEvent) => {
    const i = this.nodeAt(e);
    if (i >= 0) this.opts.onZoom(i);
  };

  private setHover(i: number, e: MouseEvent | null) {
    if (i !== this.hover) {
      this.hover = i;
      this.drawOverlay();
      this.canvas.style.cursor = i >= 0 ? "pointer" : "default";
    }
    const l = this.layout;
    if (i < 0 || !l || !e) {
      this.tooltip.hidden = true;
      return;
    }
    const p = l.parent[i];
    const parentValue = p >= 0 ? l.value[p] : l.value[i];
    replace(
      this.tooltip,
      h("div", { class: "tooltip-title mono" }, l.names[l.name[i]]),
      h(
        "table",
        { class: "tooltip-table" },
        h("tr", null, h("th", null, "samples"), h("td", null, formatCount(l.value[i]))),
        h("tr", null, h("th", null, "of range"), h("td", null, formatPercent(l.value[i], l.total))),
        h("tr", null, h("th", null, "of parent"), h("td", null, formatPercent(l.value[i], parentValue))),
        h("tr", null, h("th", null, "self"), h("td", null, `${formatCount(l.self[i])} (${formatPercent(l.self[i], l.total)})`)),
      ),
      h("div", { class: "tooltip-hint" }, i === this.zoom ? "zoomed frame" : "click to zoom"),
    );
    this.tooltip.hidden = false;
    const tw = this.tooltip.offsetWidth;
    const th = this.tooltip.offsetHeight;
    const x = e.clientX + 14 + tw > window.innerWidth ? e.clientX - tw - 10 : e.clientX + 14;
    const y = e.clientY + 16 + th > window.innerHeight ? e.clientY - th - 10 : e.clientY + 16;
    this.tooltip.style.left = `${x}px`;
    this.tooltip.style.top = `${y}px`;
  }
}

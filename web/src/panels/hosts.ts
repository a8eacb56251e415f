// The fleet's host strip: one row per host (largest total first, as the
// server sorts them), one cell per column of the window (the heatmap's
// columns), coloured by the host's samples in it on the heatmap's scale,
// so an outlier host stands out. Clicking a host's name narrows the
// selection to it (onNarrow); "profile ↗" opens that host's profile at the
// same range (onProfile; the owner finds it, or says why not with
// showNote). The selected range is outlined.
//
// Test hooks: the list (data-testid="host-strip") has one item per host
// with data-host and data-total; the canvas (data-testid="host-strip-canvas")
// has data-hosts, data-cols, data-max and data-row-height.

import type { Problem } from "../api";
import { h, replace } from "../dom";
import { formatClock, formatCount, formatWallRange } from "../format";
import { columnsRange, NS, type AbsRange, type Columns } from "../fleetstate";
import { colourOf, legendGradient } from "../heatmap/model";
import { axisX, type ColumnAxis } from "../heatmap/view";
import { emptyState, errorState, loadingState } from "../pages/states";

const ROW_H = 20;
/** The gap between the names and the strip (style.css, .host-grid). */
const HOST_GAP = 12;
const SHOWN = 50;

export interface HostRow {
  host: string;
  total: number;
  columns: number[];
}

export interface HostsData extends Columns {
  hosts: HostRow[];
}

export interface HostsPanelOptions {
  /** A host's name clicked: narrow the selection to it. */
  onNarrow: (host: string) => void;
  /** A host's "profile ↗": open its profile at the range. */
  onProfile: (host: string) => void;
  /** "vs fleet": compare a host with the rest of the fleet. */
  onCompare?: (host: string) => void;
  /** "All hosts" (shown when the selection names hosts). */
  onAllHosts: () => void;
}

export class HostsPanel {
  readonly el: HTMLElement;
  private box = h("div", { class: "hosts-box" }, loadingState("hosts", 80));
  private note = h("div", { class: "host-note", "data-testid": "host-note", "aria-live": "polite" });
  private summary = h("span", { class: "muted small" });
  private allBtn: HTMLButtonElement;
  private canvas = h("canvas", { "data-testid": "host-strip-canvas", class: "host-canvas", "aria-hidden": "true" });
  private tooltip = h("div", { class: "tooltip", role: "tooltip", hidden: true });
  private data: HostsData | null = null;
  private selection: AbsRange | null = null;
  private showAll = false;
  private resizeObs: ResizeObserver;
  private axis: ColumnAxis | null = null;
  private opts: HostsPanelOptions;

  constructor(opts: HostsPanelOptions) {
    this.opts = opts;
    this.allBtn = h("button", { type: "button", class: "ghost small", "data-testid": "all-hosts", hidden: true, onclick: () => opts.onAllHosts() }, "All hosts");
    this.el = h(
      "section",
      { class: "panel hosts-panel", "aria-labelledby": "hosts-title" },
      h(
        "div",
        { class: "panel-head" },
        h("h2", { id: "hosts-title" }, "Hosts"),
        this.summary,
        h("span", { class: "muted small" }, "by samples, most first; click a host to narrow the selection to it; “profile ↗” opens its profile at this range"),
        h("div", { class: "controls" }, this.allBtn),
      ),
      this.box,
      this.note,
      this.tooltip,
    );
    this.canvas.addEventListener("pointermove", this.onMove);
    this.canvas.addEventListener("pointerleave", () => (this.tooltip.hidden = true));
    this.resizeObs = new ResizeObserver(() => this.data && this.draw());
    this.resizeObs.observe(this.box);
  }

  destroy() {
    this.resizeObs.disconnect();
  }

  loading() {
    if (!this.data) replace(this.box, loadingState("hosts", 80));
    else this.box.classList.add("stale");
    replace(this.note);
  }

  error(p: Problem, retry: () => void) {
    this.data = null;
    this.box.classList.remove("stale");
    replace(this.box, errorState(p, retry));
    this.summary.textContent = "";
  }

  /** show draws the strip; narrowed says the selection names hosts (so
   * "All hosts" can widen it again). */
  show(d: HostsData, selection: AbsRange | null, narrowed: boolean) {
    this.data = d;
    this.selection = selection;
    this.allBtn.hidden = !narrowed;
    this.box.classList.remove("stale");
    const sum = d.hosts.reduce((a, x) => a + x.total, 0);
    this.summary.textContent = `${formatCount(d.hosts.length)} host${d.hosts.length === 1 ? "" : "s"} · ${formatCount(sum)} samples`;
    if (d.hosts.length === 0) {
      replace(this.box, emptyState("No hosts", "No host has samples of this event in the window.", "no-hosts"));
      return;
    }
    const shown = this.showAll ? d.hosts : d.hosts.slice(0, SHOWN);
    const list = h(
      "ol",
      { class: "host-list", "data-testid": "host-strip" },
      shown.map((x) =>
        h(
          "li",
          { "data-host": x.host, "data-total": String(x.total), style: `height:${ROW_H}px` },
          h("button", { type: "button", class: "linkish host-name", "data-testid": "host-narrow", title: `Narrow the selection to ${x.host}`, onclick: () => this.opts.onNarrow(x.host) }, x.host),
          h("span", { class: "host-total" }, formatCount(x.total)),
          h("button", { type: "button", class: "linkish host-profile", "data-testid": "host-profile", title: `Open ${x.host}'s profile at this range`, onclick: () => this.opts.onProfile(x.host) }, "profile ↗"),
          this.opts.onCompare
            ? h(
                "button",
                { type: "button", class: "linkish host-compare", "data-testid": "host-compare", title: `Compare ${x.host} with the rest of the fleet`, onclick: () => this.opts.onCompare!(x.host) },
                "vs fleet",
              )
            : null,
        ),
      ),
    );
    const more =
      d.hosts.length > SHOWN
        ? h(
            "button",
            {
              type: "button",
              class: "ghost small",
              onclick: () => {
                this.showAll = !this.showAll;
                this.show(d, this.selection, narrowed);
              },
            },
            this.showAll ? `Show the first ${SHOWN}` : `Show all ${formatCount(d.hosts.length)} hosts`,
          )
        : null;
    replace(this.box, h("div", { class: "host-grid" }, list, h("div", { class: "host-plot" }, this.canvas)), this.legend(), more);
    this.draw();
  }

  setSelection(r: AbsRange | null) {
    this.selection = r;
    this.draw();
  }

  /** showNote says something about a host's profile (being looked for,
   * none found, or the request failed). */
  showNote(text: string) {
    this.note.textContent = text;
  }

  private max(): number {
    let m = 0;
    for (const x of this.shownHosts()) for (const v of x.columns) if (v > m) m = v;
    return m;
  }

  private shownHosts(): HostRow[] {
    const d = this.data!;
    return this.showAll ? d.hosts : d.hosts.slice(0, SHOWN);
  }

  private legend(): HTMLElement {
    const max = this.max();
    return h(
      "div",
      { class: "legend host-legend" },
      h("span", { class: "legend-label" }, "samples per host and column"),
      h("span", { class: "legend-swatch", title: "no samples" }),
      h("span", { class: "legend-tick" }, "0"),
      h("span", { class: "legend-bar", style: `background: ${legendGradient()}` }),
      h("span", { class: "legend-tick" }, max > 1 ? `1 – ${formatCount(max)}` : formatCount(max)),
    );
  }

  /** align draws the columns where the heatmap draws them (null: across
   * the panel's own width): the host names take the heatmap's gutter. */
  align(a: ColumnAxis | null) {
    this.axis = a;
    if (this.data) this.draw();
  }

  /** columnsAt says where the strip's columns are: x(col) is column col's
   * left edge, [plotL, plotR) the plot, CSS px from the canvas's left. */
  private columnsAt(width: number): { x0: number; colW: number; plotL: number; plotR: number } {
    const d = this.data!;
    const a = this.axis;
    const cols = Math.max(d.columns, 1);
    if (!a) return { x0: 0, colW: width / cols, plotL: 0, plotR: width };
    const off = a.canvas.getBoundingClientRect().left - this.canvas.getBoundingClientRect().left;
    return { x0: off + axisX(a, d.startSecond), colW: (a.cellW * d.secondsPerColumn) / a.secondsPerColumn, plotL: off + a.visLeft, plotR: Math.min(off + a.visRight, width) };
  }

  private draw() {
    const d = this.data;
    if (!d || d.hosts.length === 0 || !this.canvas.isConnected) return;
    const hosts = this.shownHosts();
    const cols = Math.max(d.columns, 1);
    const plot = this.canvas.parentElement as HTMLElement;
    const grid = plot.parentElement as HTMLElement;
    if (this.axis) {
      // the names' column ends where the heatmap's plot starts (less the gap)
      const a = this.axis;
      const left = a.canvas.getBoundingClientRect().left + a.visLeft - grid.getBoundingClientRect().left - HOST_GAP;
      grid.style.gridTemplateColumns = `${Math.max(Math.round(left), 60)}px 1fr`;
    } else grid.style.gridTemplateColumns = "";
    const width = Math.max(plot.clientWidth, 200);
    const height = hosts.length * ROW_H;
    const dpr = window.devicePixelRatio || 1;
    const c = this.canvas;
    c.style.width = `${width}px`;
    c.style.height = `${height}px`;
    c.width = Math.round(width * dpr);
    c.height = Math.round(height * dpr);
    const g = this.columnsAt(width);
    const max = this.max();
    const ds = c.dataset;
    ds.hosts = JSON.stringify(hosts.map((x) => x.host));
    ds.cols = String(d.columns);
    ds.max = String(max);
    ds.rowHeight = String(ROW_H);
    ds.x0 = String(g.x0);
    ds.colWidth = String(g.colW);
    ds.plotLeft = String(g.plotL);
    ds.plotWidth = String(g.plotR - g.plotL);
    // one pixel per (column, host), scaled up without smoothing
    const bm = document.createElement("canvas");
    bm.width = cols;
    bm.height = hosts.length;
    const bctx = bm.getContext("2d")!;
    const img = bctx.createImageData(cols, hosts.length);
    const px = new Uint32Array(img.data.buffer);
    // colourOf per cell rather than a table of every count: a column of a
    // long window holds a host's samples of many seconds
    hosts.forEach((x, r) =>
      x.columns.forEach((v, col) => {
        const [cr, cg, cb] = colourOf(v, max);
        px[r * cols + col] = (255 << 24) | (cb << 16) | (cg << 8) | cr; // little-endian ImageData order
      }),
    );
    bctx.putImageData(img, 0, 0);
    const ctx = c.getContext("2d")!;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.save();
    ctx.beginPath();
    ctx.rect(g.plotL, 0, g.plotR - g.plotL, height);
    ctx.clip();
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(bm, 0, 0, cols, hosts.length, g.x0, 0, cols * g.colW, height);
    ctx.fillStyle = "rgba(255,255,255,0.9)";
    for (let r = 1; r < hosts.length; r++) ctx.fillRect(g.plotL, r * ROW_H - 0.5, g.plotR - g.plotL, 1);
    if (this.selection) {
      const at = (ns: bigint) => ((Number(ns / NS) - d.startSecond) + Number(ns % NS) / 1e9) / d.secondsPerColumn;
      const a = Math.max(at(this.selection.start), 0);
      const b = Math.min(at(this.selection.end), cols);
      ctx.strokeStyle = "#0072e5";
      ctx.lineWidth = 2;
      ctx.strokeRect(g.x0 + a * g.colW + 1, 1, Math.max((b - a) * g.colW - 2, 1), height - 2);
    }
    ctx.restore();
  }

  private onMove = (e: PointerEvent) => {
    const d = this.data;
    if (!d) return;
    const rect = this.canvas.getBoundingClientRect();
    const hosts = this.shownHosts();
    const g = this.columnsAt(rect.width);
    const col = Math.floor((e.clientX - rect.left - g.x0) / g.colW);
    const row = Math.floor((e.clientY - rect.top) / ROW_H);
    const x = hosts[row];
    if (!x || col < 0 || col >= d.columns) {
      this.tooltip.hidden = true;
      return;
    }
    const r = columnsRange(d, col, col);
    const n = x.columns[col] ?? 0;
    replace(
      this.tooltip,
      h("div", { class: "tooltip-title" }, x.host),
      h("div", null, d.secondsPerColumn === 1 ? formatClock(r.start, true) : formatWallRange(r.start, r.end)),
      h("div", null, h("b", null, formatCount(n)), n === 1 ? " sample" : " samples"),
    );
    this.tooltip.hidden = false;
    this.tooltip.style.left = `${Math.min(e.clientX + 14, window.innerWidth - this.tooltip.offsetWidth - 8)}px`;
    this.tooltip.style.top = `${e.clientY + 16}px`;
  };
}

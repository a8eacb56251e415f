// The thread view: samples per CPU, thread or process (rows, largest
// first) and column of seconds, from GetHeatmapSeries; the rows sum to the
// heatmap's column totals (FlameScope users asked for per-thread and
// per-CPU views). Each row's colour scale is the heatmap's; clicking a row
// narrows the filter to that CPU, thread or process, and the offset heatmap
// above then shows just its samples.

import type { Problem } from "../api";
import { h, replace } from "../dom";
import { formatCount } from "../format";
import type { GetHeatmapSeriesResponse } from "../gen/fleetscope/v1/query_pb";
import { colourLUT } from "../heatmap/model";
import { axisX, type ColumnAxis } from "../heatmap/view";
import { errorState, loadingState } from "../pages/states";
import type { Axis } from "../viewstate";

export interface SeriesPanelOptions {
  /** A row picked: its key ("3" for CPU 3, "pid/tid", "pid"). */
  onPick: (axis: Axis, key: string) => void;
}

const COL_W = 6;
const ROW_H = 12;

export class SeriesPanel {
  readonly el = h("section", { class: "panel series-panel", "aria-label": "Thread view", "data-testid": "series-panel", hidden: true });
  private opts: SeriesPanelOptions;
  private res: GetHeatmapSeriesResponse | null = null;
  private axis: ColumnAxis | null = null;

  constructor(opts: SeriesPanelOptions) {
    this.opts = opts;
    // drawn again when the panel's width changes (or it joins the page)
    new ResizeObserver(() => this.res && !this.el.hidden && this.draw()).observe(this.el);
  }

  hide() {
    this.el.hidden = true;
  }

  loading(axis: Axis) {
    this.el.hidden = false;
    replace(this.el, this.head(axis), loadingState("thread view", 120));
  }

  error(axis: Axis, p: Problem, retry: () => void) {
    replace(this.el, this.head(axis), errorState(p, retry));
  }

  /** show draws the series of res, keys as rows: each row's name line,
   * then its strip, whose columns are the heatmap's pixels (align). */
  show(axis: Axis, res: GetHeatmapSeriesResponse) {
    this.el.hidden = false;
    this.res = res;
    const rows = res.series.map((s) => {
      const pickable = s.key !== "other" && s.key !== "unknown";
      return h(
        "div",
        { class: "series-row", "data-key": s.key, "data-total": String(s.total), "data-columns": s.columns.join(",") },
        h(
          "div",
          { class: "series-label" },
          h(
            "button",
            {
              type: "button",
              class: "linkish mono series-key",
              disabled: !pickable,
              title: pickable ? `Only ${label(axis, s.key)}` : undefined,
              onclick: () => this.opts.onPick(axis, s.key),
            },
            `${label(axis, s.key)}${s.name ? ` ${s.name}` : ""}`,
          ),
          h("span", { class: "num muted" }, formatCount(s.total)),
        ),
        h("canvas", { class: "series-strip", height: ROW_H }),
      );
    });
    replace(this.el, this.head(axis), h("div", { class: "series", "data-testid": "series", "data-start-second": String(res.startSecond), "data-seconds-per-column": String(res.secondsPerColumn) }, rows));
    this.draw();
  }

  /** align draws the strips' columns where the heatmap draws them. */
  align(a: ColumnAxis | null) {
    this.axis = a;
    if (this.res && !this.el.hidden) this.draw();
  }

  private draw() {
    const res = this.res;
    if (!res || !this.el.isConnected) return;
    let max = 0;
    for (const s of res.series) for (const c of s.columns) max = Math.max(max, Number(c));
    const lut = colourLUT(max);
    const canvases = [...this.el.querySelectorAll<HTMLCanvasElement>("canvas.series-strip")];
    const a = this.axis;
    const dpr = window.devicePixelRatio || 1;
    const start = Number(res.startSecond);
    const spc = Number(res.secondsPerColumn) || 1;
    canvases.forEach((canvas, k) => {
      const s = res.series[k];
      const width = Math.max((canvas.parentElement as HTMLElement).clientWidth, 100);
      // without the heatmap's axis (not drawn yet): COL_W px a column from the left
      let g = { x0: 0, colW: COL_W, plotL: 0, plotR: width };
      if (a) {
        const off = a.canvas.getBoundingClientRect().left - canvas.getBoundingClientRect().left;
        g = { x0: off + axisX(a, start), colW: (a.cellW * spc) / a.secondsPerColumn, plotL: off + a.visLeft, plotR: Math.min(off + a.visRight, width) };
      }
      canvas.style.width = `${width}px`;
      canvas.style.height = `${ROW_H}px`;
      canvas.width = Math.round(width * dpr);
      canvas.height = Math.round(ROW_H * dpr);
      const ds = canvas.dataset;
      ds.x0 = String(g.x0);
      ds.colWidth = String(g.colW);
      ds.plotLeft = String(g.plotL);
      ds.plotWidth = String(g.plotR - g.plotL);
      const ctx = canvas.getContext("2d");
      if (!ctx) return;
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.save();
      ctx.beginPath();
      ctx.rect(g.plotL, 0, g.plotR - g.plotL, ROW_H);
      ctx.clip();
      s.columns.forEach((c, i) => {
        const v = lut[Number(c)];
        ctx.fillStyle = `rgb(${v & 255},${(v >>> 8) & 255},${(v >>> 16) & 255})`;
        ctx.fillRect(g.x0 + i * g.colW, 0, g.colW, ROW_H - 2);
      });
      ctx.restore();
    });
  }

  private head(axis: Axis) {
    return h(
      "div",
      { class: "panel-head" },
      h("h2", null, axis === "cpu" ? "Samples per CPU" : axis === "thread" ? "Samples per thread" : "Samples per process"),
      h("span", { class: "muted small" }, "per second, largest first · click one to see only its samples"),
    );
  }
}

function label(axis: Axis, key: string): string {
  if (key === "other" || key === "unknown") return key;
  return axis === "cpu" ? `CPU ${key}` : axis === "thread" ? `tid ${key.split("/").pop()}` : `pid ${key}`;
}

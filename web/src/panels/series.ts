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
import { errorState, loadingState } from "../pages/states";
import type { Axis } from "../viewstate";

export interface SeriesPanelOptions {
  /** A row picked: its key ("3" for CPU 3, "pid/tid", "pid"). */
  onPick: (axis: Axis, key: string) => void;
}

const COL_W = 6;
const ROW_H = 14;

export class SeriesPanel {
  readonly el = h("section", { class: "panel series-panel", "aria-label": "Thread view", "data-testid": "series-panel", hidden: true });
  private opts: SeriesPanelOptions;

  constructor(opts: SeriesPanelOptions) {
    this.opts = opts;
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

  /** show draws the series of res, keys as rows. */
  show(axis: Axis, res: GetHeatmapSeriesResponse) {
    this.el.hidden = false;
    let max = 0;
    for (const s of res.series) for (const c of s.columns) max = Math.max(max, Number(c));
    const lut = colourLUT(max);
    const cols = res.series.reduce((n, s) => Math.max(n, s.columns.length), 0);
    const rows = res.series.map((s) => {
      const canvas = h("canvas", { class: "series-strip", width: Math.max(cols * COL_W, 1), height: ROW_H });
      const ctx = canvas.getContext("2d");
      if (ctx) {
        const img = ctx.createImageData(canvas.width, ROW_H);
        const px = new Uint32Array(img.data.buffer);
        s.columns.forEach((c, i) => {
          const colour = lut[Number(c)];
          for (let y = 0; y < ROW_H - 2; y++) for (let x = i * COL_W; x < (i + 1) * COL_W - 1; x++) px[y * canvas.width + x] = colour;
        });
        ctx.putImageData(img, 0, 0);
      }
      const pickable = s.key !== "other" && s.key !== "unknown";
      return h(
        "div",
        { class: "series-row", "data-key": s.key, "data-total": String(s.total), "data-columns": s.columns.join(",") },
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
        canvas,
      );
    });
    replace(this.el, this.head(axis), h("div", { class: "series", "data-testid": "series", "data-start-second": String(res.startSecond), "data-seconds-per-column": String(res.secondsPerColumn) }, rows));
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

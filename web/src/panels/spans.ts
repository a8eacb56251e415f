// The spans panel: for a recording with entry/return probes (perf's F and
// F__return uprobes), its request latency — a histogram of span durations
// with p50, p90, p95 and p99 marked (QueryService.GetSpans, computed from
// the stored probe samples) — and the ways to condition on it: drag across
// the histogram to keep the samples taken inside the spans of that latency
// band (the heatmap then shows where those spans ran, the flame graph what
// they did), slower or faster than p95 in one click, and "slow vs rest",
// the differential flame graph of the requests slower than p95 against the
// others.

import { h, replace } from "../dom";
import { formatCount } from "../format";
import type { GetSpansResponse } from "../gen/fleetscope/v1/query_pb";

export interface SpansPanelOptions {
  /** A span condition chosen ("" for every sample). */
  onCondition: (cond: string) => void;
  /** "Slow vs rest": the slow requests against the others. */
  onSlowVsRest: () => void;
}

const us = (ns: bigint | number) => Number(ns) / 1000;

export class SpansPanel {
  readonly el = h("section", { class: "panel spans-panel", "aria-label": "Request latency", "data-testid": "spans", hidden: true });
  private opts: SpansPanelOptions;
  private res: GetSpansResponse | null = null;

  constructor(opts: SpansPanelOptions) {
    this.opts = opts;
  }

  hide() {
    this.el.hidden = true;
  }

  /** show draws the latency of res; cond is the condition applied. */
  show(res: GetSpansResponse, cond: string) {
    this.res = res;
    if (res.spans === 0n) return this.hide();
    this.el.hidden = false;
    const buckets = res.histogram;
    const max = buckets.reduce((m, b) => Math.max(m, Number(b.count)), 0);
    const pcts: [string, bigint][] = [
      ["p50", res.p50Nanos],
      ["p90", res.p90Nanos],
      ["p95", res.p95Nanos],
      ["p99", res.p99Nanos],
    ];
    const hist = h("div", { class: "span-hist", "data-testid": "span-histogram", role: "img", "aria-label": "Span latency histogram; drag across it to choose a latency band" });
    const bars = buckets.map((b, i) =>
      h(
        "div",
        {
          class: "span-bar",
          "data-index": String(i),
          "data-lo": String(b.loNanos),
          "data-hi": String(b.hiNanos),
          "data-count": String(b.count),
          title: `${us(b.loNanos).toFixed(0)}–${us(b.hiNanos).toFixed(0)} µs: ${formatCount(b.count)} spans`,
        },
        h("span", { style: `height:${max ? (100 * Number(b.count)) / max : 0}%` }),
      ),
    );
    hist.append(...bars);
    // Percentile marks, placed in the bucket holding them.
    for (const [name, ns] of pcts) {
      const i = buckets.findIndex((b) => ns >= b.loNanos && ns < b.hiNanos);
      if (i >= 0) bars[i].append(h("i", { class: "pct-mark", title: `${name} ${us(ns).toFixed(0)} µs` }, name));
    }
    // Drag across buckets: the band [lo of the first, hi of the last).
    let from = -1;
    const at = (e: PointerEvent) => Number((e.target as HTMLElement).closest<HTMLElement>(".span-bar")?.dataset.index ?? -1);
    hist.addEventListener("pointerdown", (e) => {
      from = at(e);
      if (from >= 0) hist.setPointerCapture(e.pointerId);
    });
    hist.addEventListener("pointerup", (e) => {
      const el = document.elementFromPoint(e.clientX, e.clientY) as HTMLElement | null;
      const to = Number(el?.closest<HTMLElement>(".span-bar")?.dataset.index ?? -1);
      if (from < 0 || to < 0) return;
      const [a, b] = [Math.min(from, to), Math.max(from, to)];
      from = -1;
      // lo <= d < hi: slower than lo − 1 ns, not slower than hi − 1 ns.
      this.opts.onCondition(`slower:${buckets[a].loNanos - 1n}ns,faster:${buckets[b].hiNanos - 1n}ns`);
    });
    const btn = (label: string, testid: string, c: string) =>
      h("button", { type: "button", class: `ghost small${cond === c ? " active" : ""}`, "data-testid": testid, "aria-pressed": String(cond === c), onclick: () => this.opts.onCondition(c) }, label);
    replace(
      this.el,
      h(
        "div",
        { class: "panel-head" },
        h("h2", null, "Request latency"),
        h(
          "span",
          { class: "muted small", "data-testid": "spans-summary", "data-spans": String(res.spans) },
          `${formatCount(res.spans)} spans of ${res.entry} → ${res.return}`,
          res.unmatchedEntries + res.unmatchedReturns > 0n ? ` · ${formatCount(res.unmatchedEntries + res.unmatchedReturns)} unmatched probe events` : "",
        ),
        h(
          "div",
          { class: "controls" },
          btn("All samples", "spans-all", ""),
          btn("Slower than p95", "spans-slow", "slower:p95"),
          btn("Faster than p95", "spans-fast", "faster:p95"),
          h("button", { type: "button", class: "ghost small", "data-testid": "spans-diff", onclick: () => this.opts.onSlowVsRest() }, "Slow vs rest"),
        ),
      ),
      h(
        "div",
        { class: "span-pcts" },
        pcts.map(([name, ns]) => h("span", { class: "chip", "data-testid": `spans-${name}`, "data-micros": String(us(ns)) }, `${name} ${formatCount(Math.round(us(ns)))} µs`)),
        h("span", { class: "chip" }, `max ${formatCount(Math.round(us(res.maxNanos)))} µs`),
        cond ? h("span", { class: "chip active", "data-testid": "spans-condition" }, `samples in spans ${cond}`) : null,
      ),
      hist,
      h("div", { class: "span-axis muted small" }, h("span", null, `${us(buckets[0]?.loNanos ?? 0n).toFixed(0)} µs`), h("span", null, `${us(buckets.at(-1)?.hiNanos ?? 0n).toFixed(0)} µs`)),
    );
  }

  /** condition redraws the panel with condition cond applied. */
  condition(cond: string) {
    if (this.res) this.show(this.res, cond);
  }
}

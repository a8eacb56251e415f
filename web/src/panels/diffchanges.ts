// The comparison's numbers: both sides' totals and the functions that
// changed most, by self and by total samples (the server's table, from
// GetDiffFlameGraph), shown under a differential flame graph.

import { h, replace } from "../dom";
import { formatCount } from "../format";
import type { FunctionChange } from "../gen/fleetscope/v1/compare_pb";

export class DiffPanel {
  readonly el = h("section", { class: "panel diff-panel", "aria-label": "Largest changes", "data-testid": "diff-changes", hidden: true });

  hide() {
    this.el.hidden = true;
  }

  /** show lists the changes; a and b name the sides, totals as the server sent them. */
  show(a: string, b: string, totalA: number, totalB: number, normalized: boolean, bySelf: FunctionChange[], byTotal: FunctionChange[]) {
    this.el.hidden = false;
    this.el.dataset.totalA = String(totalA);
    this.el.dataset.totalB = String(totalB);
    const scale = normalized && totalA > 0 ? totalB / totalA : 1;
    const table = (title: string, rows: FunctionChange[], self: boolean) =>
      h(
        "table",
        { class: "data-table diff-table", "data-testid": self ? "diff-by-self" : "diff-by-total" },
        h("caption", null, title),
        h("thead", null, h("tr", null, h("th", { scope: "col" }, "Function"), h("th", { class: "num", scope: "col" }, "A"), h("th", { class: "num", scope: "col" }, "B"), h("th", { class: "num", scope: "col" }, "Change"))),
        h(
          "tbody",
          null,
          rows.map((c) => {
            const va = Number(self ? c.selfA : c.totalA);
            const vb = Number(self ? c.selfB : c.totalB);
            const d = vb - va * scale;
            return h(
              "tr",
              { "data-name": c.name },
              h("td", { class: "fn mono" }, c.name),
              h("td", { class: "num" }, formatCount(va)),
              h("td", { class: "num" }, formatCount(vb)),
              h("td", { class: `num ${d > 0 ? "grew" : d < 0 ? "shrank" : ""}` }, `${d > 0 ? "+" : ""}${formatCount(Math.round(d))}`),
            );
          }),
        ),
      );
    replace(
      this.el,
      h(
        "div",
        { class: "panel-head" },
        h("h2", null, "Largest changes"),
        h("span", { class: "muted small", "data-testid": "diff-sides" }, `A: ${a}, ${formatCount(totalA)} samples · B: ${b}, ${formatCount(totalB)} samples${normalized ? " · A scaled to B's total" : ""} · red grew, blue shrank`),
      ),
      h("div", { class: "diff-tables" }, table("By self samples", bySelf, true), table("By total samples", byTotal, false)),
    );
  }
}

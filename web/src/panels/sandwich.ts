// The sandwich view of one function over the current flame graph: its
// callers above (inverted and merged: the function on top, each caller a
// level further out) and its callees below (the function at the root),
// both totalling the function's samples (flame/sandwich.ts).

import { h, replace } from "../dom";
import { layout } from "../flame/model";
import { sandwich } from "../flame/sandwich";
import { FlameView } from "../flame/view";
import type { Layout } from "../flame/model";
import { formatCount } from "../format";

export interface SandwichPanelOptions {
  onClose: () => void;
}

export class SandwichPanel {
  readonly el = h("section", { class: "panel sandwich-panel", "aria-label": "Sandwich view", "data-testid": "sandwich", hidden: true });
  private callers = new FlameView({ onZoom: () => {} });
  private callees = new FlameView({ onZoom: () => {} });
  private opts: SandwichPanelOptions;

  constructor(opts: SandwichPanelOptions) {
    this.opts = opts;
    this.callers.canvas.dataset.testid = "sandwich-callers";
    this.callees.canvas.dataset.testid = "sandwich-callees";
  }

  destroy() {
    this.callers.destroy();
    this.callees.destroy();
  }

  hide() {
    this.el.hidden = true;
  }

  /** show draws fn's sandwich over flame graph l (or says it is not there). */
  show(l: Layout, fn: string) {
    this.el.hidden = false;
    const s = sandwich(l, fn);
    const head = h(
      "div",
      { class: "panel-head" },
      h("h2", null, "Sandwich: ", h("span", { class: "mono" }, fn)),
      h("span", { class: "muted small", "data-testid": "sandwich-total", "data-total": String(s?.total ?? 0) }, s ? `${formatCount(s.total)} samples · callers above, callees below` : "not in this flame graph"),
      h("div", { class: "controls" }, h("button", { type: "button", class: "ghost", "data-testid": "sandwich-close", onclick: () => this.opts.onClose() }, "Close")),
    );
    if (!s) {
      replace(this.el, head);
      return;
    }
    replace(this.el, head, h("h3", { class: "small muted" }, "Callers"), this.callers.el, h("h3", { class: "small muted" }, "Callees"), this.callees.el);
    const up = layout(s.callers);
    const down = layout(s.callees);
    this.callers.canvas.dataset.total = String(up.total);
    this.callees.canvas.dataset.total = String(down.total);
    this.callers.set(up, 0, "", "flame"); // the function at the bottom, callers growing up
    this.callees.set(down, 0, "", "icicle");
  }
}

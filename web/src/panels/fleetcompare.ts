// The fleet view's comparison switch: a host against the rest of the fleet
// (also one click from the host strip's "vs fleet"), or the profiles with
// one label condition against those with another (version=1 vs
// version=2), or the range against the same range a day or a week earlier
// (also from the selection bar's "Compare with"), raw or normalized. The
// owner draws the differential flame graph of the range and the table of
// largest changes.

import { h } from "../dom";
import { SHIFTS, type FleetCompare, type FleetState } from "../fleetstate";

export interface FleetComparePanelOptions {
  /** norm: normalize (true), raw counts (false), or automatic (null). */
  onChange: (c: { cmp: FleetCompare; chost: string; shift: string; la: string; lb: string; norm: boolean | null }) => void;
}

export class FleetComparePanel {
  readonly el: HTMLElement;
  private sel: HTMLSelectElement;
  private host: HTMLSelectElement;
  private la: HTMLInputElement;
  private lb: HTMLInputElement;
  private norm: HTMLInputElement;
  private normAuto: HTMLButtonElement;
  private normMode = h("span", { class: "norm-mode muted small", "data-testid": "diff-mode", "aria-live": "polite" });
  private chosen: boolean | null = null; // the view's norm
  private hostBox: HTMLElement;
  private labelBox: HTMLElement;

  constructor(opts: FleetComparePanelOptions) {
    this.sel = h(
      "select",
      { "data-testid": "fleet-compare", "aria-label": "Compare" },
      h("option", { value: "" }, "No comparison"),
      h("option", { value: "host" }, "A host vs the rest of the fleet"),
      h("option", { value: "labels" }, "Label vs label"),
      SHIFTS.map((x) => h("option", { value: `shift:${x.id}` }, `vs the same window ${x.label}`)),
    );
    this.host = h("select", { "data-testid": "fleet-compare-host", "aria-label": "Host" });
    const label = (testid: string, placeholder: string) => h("input", { type: "text", class: "mono", "data-testid": testid, placeholder, "aria-label": placeholder, spellcheck: "false", size: 16 });
    this.la = label("fleet-compare-a", "A: label=value");
    this.lb = label("fleet-compare-b", "B: label=value");
    this.norm = h("input", { type: "checkbox", "data-testid": "fleet-compare-norm" });
    const emit = (norm: boolean | null = this.chosen) => {
      const [cmp, shift = ""] = this.sel.value.split(":");
      opts.onChange({ cmp: cmp as FleetCompare, chost: this.host.value, shift, la: this.la.value.trim(), lb: this.lb.value.trim(), norm });
    };
    this.sel.addEventListener("change", () => emit());
    this.host.addEventListener("change", () => emit());
    this.norm.addEventListener("change", () => emit(this.norm.checked));
    this.normAuto = h(
      "button",
      { type: "button", class: "ghost small", "data-testid": "fleet-compare-norm-auto", hidden: true, title: "Normalize when the totals differ more than twofold", onclick: () => emit(null) },
      "Automatic",
    );
    for (const el of [this.la, this.lb]) el.addEventListener("keydown", (e) => e.key === "Enter" && emit());
    this.hostBox = h("span", { class: "compare-host" }, this.host);
    this.labelBox = h("span", { class: "compare-labels" }, this.la, " vs ", this.lb, h("button", { type: "button", class: "ghost small", onclick: () => emit() }, "Compare"));
    this.el = h(
      "div",
      { class: "compare-controls fleet-compare" },
      this.sel,
      this.hostBox,
      this.labelBox,
      h("label", { class: "check", title: "Scale the baseline to the other side's total" }, this.norm, " Normalize"),
      this.normAuto,
      this.normMode,
    );
  }

  /** show reflects view s; hosts are the selection's (the host strip's). */
  show(s: FleetState, hosts: string[]) {
    this.sel.value = s.cmp === "shift" ? `shift:${s.shift}` : s.cmp;
    const options = [...new Set([...hosts, ...(s.chost ? [s.chost] : [])])];
    if ([...this.host.options].map((o) => o.value).join("\n") !== options.join("\n")) {
      this.host.replaceChildren(...options.map((x) => h("option", { value: x }, x)));
    }
    this.host.value = s.chost;
    if (document.activeElement !== this.la) this.la.value = s.la;
    if (document.activeElement !== this.lb) this.lb.value = s.lb;
    this.chosen = s.norm;
    if (s.norm !== null) this.norm.checked = s.norm;
    this.normAuto.hidden = s.norm === null || s.cmp === "";
    if (s.cmp === "") this.showMode(null);
    this.hostBox.hidden = s.cmp !== "host";
    this.labelBox.hidden = s.cmp !== "labels";
  }

  /** showMode says which mode the comparison on screen is drawn in (null:
   * none), and ticks Normalize when it is normalized. */
  showMode(m: { mode: string; text: string; normalized: boolean } | null) {
    this.normMode.textContent = m ? m.text : "";
    this.normMode.dataset.mode = m ? m.mode : "";
    if (m) this.norm.checked = m.normalized;
  }
}

// The fleet view's accounting line: how many samples of which event the
// heatmap counts in the window, from how many profiles (and which were left
// out, and why), how many hosts have samples, and whether the whole
// window's merged flame graph totals the heatmap. Its data-* attributes
// carry the counts for tests.

import { h, replace } from "../dom";
import { accountingWords, leftOutData, matchesNothing, profilesWithout, selectionWords, windowCheck, type Accounting, type FleetState } from "../fleetstate";
import { formatCount, formatDuration, formatWallRange } from "../format";

export class AccountingPanel {
  readonly el = h("div", { class: "fleet-summary", "data-testid": "accounting", "aria-live": "polite" });

  /** show says what view s's heatmap counted (total samples, accounting
   * a), with the host strip's count of hosts (null before it answers) and
   * the whole window's merged flame graph's total and profiles (null
   * before it answers, or with a range). */
  show(s: FleetState, total: number, a: Accounting | undefined, hostCount: number | null, flame: { total: number; profiles: number } | null) {
    const el = this.el;
    el.dataset.total = String(total);
    el.dataset.profiles = String(a?.profiles ?? 0);
    el.dataset.event = a?.event ?? "";
    el.dataset.leftOut = leftOutData(a);
    if (matchesNothing(a)) {
      replace(el, h("b", { "data-testid": "fleet-total" }, "No profiles match"), ` ${selectionWords(s)}.`);
      return;
    }
    const check = windowCheck(s, { total, profiles: a?.profiles }, flame);
    const whole =
      check?.kind === "agree"
        ? h("span", { class: "agree", "data-testid": "window-check" }, " ✓ the whole window's merged flame graph totals the heatmap")
        : check?.kind === "disagree"
          ? h("span", { class: "disagree", role: "alert", "data-testid": "window-check" }, ` ✗ the whole window's merged flame graph totals ${formatCount(check.total)}`)
          : check?.kind === "untimed"
            ? h("span", { class: "muted", "data-testid": "window-check" }, ` · the merged flame graph also counts ${profilesWithout(check.profiles)} lying wholly inside the window`)
            : null;
    replace(
      el,
      h("b", { "data-testid": "fleet-total" }, formatCount(total)),
      ` samples of `,
      h("b", null, a?.event || "no event"),
      ` in ${formatWallRange(s.from, s.to)} (${formatDuration(Number(s.to - s.from))}) from `,
      h("span", { "data-testid": "fleet-profiles" }, accountingWords(a)),
      hostCount !== null ? ` · ${formatCount(hostCount)} host${hostCount === 1 ? "" : "s"} with samples` : "",
      s.hosts.length ? ` · hosts: ${s.hosts.join(", ")}` : "",
      whole,
    );
  }

  /** error says why the heatmap failed, when the user can act on it (an
   * invalid selection); else it empties the line. */
  error(message: string) {
    replace(this.el, h("span", { class: "muted" }, message));
  }
}

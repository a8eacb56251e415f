// The fleet view's "No profiles match" panel: shown in place of panels of
// zeros when no profile of the selection lies in the window. It says what
// was asked and where the app's data is: its latest and first profiles
// (searched for once per app: a live view asks every second), each with a
// button that makes its seconds the window.

import { problem } from "../api";
import { h, replace } from "../dom";
import { nearestProfiles, profileSpan, spanWindow, type ListedProfile } from "../fleetstate";
import { formatWallRange } from "../format";
import { Latest } from "../viewstate";

export interface NoMatchPanelOptions {
  /** One page of the app's profiles, newest first (SearchProfiles). */
  search: (req: { app: string; pageSize: number; pageToken?: string }) => Promise<{ profiles: ListedProfile[]; nextPageToken: string }>;
  /** A button's window [from, to) chosen (unix nanoseconds). */
  onWindow: (from: bigint, to: bigint) => void;
  /** The page's signal: after it aborts, nothing is shown. */
  signal: AbortSignal;
}

/** At most this many pages of 1,000 profiles are read after the first for an app's first profile. */
const MAX_PAGES = 20;

export class NoMatchPanel {
  readonly el = h("section", { class: "panel no-match", "data-testid": "no-match", "aria-live": "polite", hidden: true });
  private nearest: HTMLElement | null = null;
  private readonly req = new Latest();
  private readonly opts: NoMatchPanelOptions;

  constructor(opts: NoMatchPanelOptions) {
    this.opts = opts;
  }

  hide() {
    this.el.hidden = true;
  }

  /** show says that nothing was recorded for the selection (words: what
   * it asks for) and where app's profiles are. */
  show(app: string, words: string) {
    this.el.hidden = false;
    const known = this.nearest?.dataset.app === app ? this.nearest : null;
    this.nearest = known ?? h("p", { class: "muted", "data-testid": "no-match-nearest", "data-app": app }, `Looking for ${app}'s profiles…`);
    replace(this.el, h("h2", null, "No profiles match"), h("p", { "data-testid": "no-match-selection" }, `Nothing was recorded for ${words}.`), this.nearest);
    if (!known) void this.load(app);
  }

  /** load says where app's profiles are: its latest profile's time
   * (search lists the newest first) and its first (the last page's last). */
  private async load(app: string) {
    const current = this.req.begin();
    const { search, signal } = this.opts;
    try {
      const res0 = await search({ app, pageSize: 1000 });
      let page = res0.profiles;
      let token = res0.nextPageToken;
      for (let n = 0; token && n < MAX_PAGES; n++) {
        const res = await search({ app, pageSize: 1000, pageToken: token });
        if (res.profiles.length) page = res.profiles;
        token = res.nextPageToken;
      }
      if (!current()) return;
      const el = this.nearest;
      if (!el) return;
      const { last, first } = nearestProfiles(res0.profiles, page);
      if (!last) {
        replace(el, `No profile of app ${app} is stored (app names are exact; search lists the apps there are).`);
        return;
      }
      const go = (p: ListedProfile, label: string) => {
        const { from, to } = spanWindow(profileSpan(p));
        return h("button", { type: "button", class: "ghost small", "data-testid": `no-match-${label}`, "data-from": String(from), "data-to": String(to), onclick: () => this.opts.onWindow(from, to) }, `Show the ${label}`);
      };
      const when = (p: ListedProfile) => {
        const s = profileSpan(p);
        return `${formatWallRange(s.start, s.end)}${p.host ? ` on ${p.host}` : ""}`;
      };
      el.setAttribute("data-first", first ? String(profileSpan(first).start) : "");
      el.setAttribute("data-last", String(profileSpan(last).end));
      replace(
        el,
        `${app}'s latest profile: ${when(last)} `,
        go(last, "latest"),
        first && first !== last ? [`; its first: ${when(first)}${token ? " (or earlier: more than 20,000 profiles)" : ""} `, go(first, "first")] : null,
      );
    } catch (err) {
      if (signal.aborted || !current()) return;
      const el = this.nearest;
      if (el) el.textContent = `Could not look for ${app}'s profiles: ${problem(err).message}`;
    }
  }
}

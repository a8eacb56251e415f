// A shared range (/s/TOKEN?rows=&idle=1&frame=&search=&orient=): the profile
// view (pages/profileview.ts) over the share service, opened without an API
// key (the token in the URL is the credential). Read-only: the range and
// event are the link's; rows, idle, zoom, search and orientation can change
// and are kept in the URL, so a shared view's permalink opens the same
// view. No upload and no search of other profiles. A revoked, expired or
// unknown link says so.

import { create } from "@bufbuild/protobuf";
import { getSharedFlameGraph, problem, share } from "../api";
import { timestampNanos } from "../fleetstate";
import { formatWallRange } from "../format";
import type { FleetSelection } from "../gen/fleetscope/v1/fleet_pb";
import { ProfileSchema, type Profile } from "../gen/fleetscope/v1/profile_pb";
import { h, replace } from "../dom";
import { heatmapOf } from "../heatmap/model";
import { setQuery } from "../router";
import { linkRange, readSharedView, sharedFlameRequest, sharedHeatmapRequest, sharedPermalink, writeSharedView } from "../viewstate";
import type { Page } from "./page";
import { ProfileView } from "./profileview";
import { errorState, loadingState } from "./states";

/** linkGone is the state of a link that no longer works (or never did):
 * the server answers alike for revoked, expired and unknown tokens. */
function linkGone(): HTMLElement {
  return h(
    "div",
    { class: "state error-state", role: "alert", "data-testid": "link-gone" },
    h("h2", null, "This link was revoked or has expired"),
    h("p", null, "The share link no longer works (or was mistyped). Ask whoever sent it for a new one."),
  );
}

/** fleetProfile describes a fleet link's selection as the view's profile:
 * the app's fleet over the link's window (its heatmap starts there). */
function fleetProfile(f: FleetSelection, event: string): Profile {
  const from = f.from ? timestampNanos(f.from) : 0n;
  const to = f.to ? timestampNanos(f.to) : 0n;
  return create(ProfileSchema, {
    app: `${f.app} · fleet`,
    timed: true,
    timeSource: "realtime",
    startSecond: from / 1_000_000_000n,
    startTime: f.from,
    durationNanos: to - from,
    format: "fleet",
    events: event ? [{ name: event }] : [],
    defaultEvent: event,
    id: formatWallRange(from, to),
  });
}

export function sharedPage(token: string, params: URLSearchParams): Page {
  const ctrl = new AbortController();
  const el = h("div", { class: "page shared-page" }, loadingState("shared profile", 200));
  let pv: ProfileView | null = null;

  async function open() {
    try {
      const link = await share.getSharedProfile({ token }, { signal: ctrl.signal });
      const profile = link.fleet ? fleetProfile(link.fleet, link.event) : link.profile!;
      pv = new ProfileView({
        view: readSharedView(params, { event: link.event, range: linkRange(link) }),
        readOnly: true,
        source: {
          heatmap: async (v, signal) => {
            const res = await share.getSharedHeatmap(sharedHeatmapRequest(token, v), { signal });
            return heatmapOf(res.heatmap!, profile.startSecond); // only the seconds the range touches
          },
          flame: (v, format, signal) => getSharedFlameGraph(sharedFlameRequest(token, v, format), signal),
          permalink: (v) => sharedPermalink(location.origin, token, v),
          record: (v) => setQuery(writeSharedView(v)),
          notFound: linkGone,
        },
      });
      replace(el, pv.el);
      pv.setProfile(profile);
      document.title = `${profile.app} (shared) · fleetscope`;
      pv.start();
    } catch (err) {
      if (ctrl.signal.aborted) return;
      const p = problem(err);
      replace(el, p.kind === "notfound" ? linkGone() : errorState(p, () => void open()));
    }
  }
  void open();

  return {
    el,
    title: "Shared profile",
    destroy() {
      ctrl.abort();
      pv?.destroy();
    },
  };
}

// One profile (/p/ID?...): the profile view (pages/profileview.ts) over the
// owner's API with the user's key, where ranges are chosen on the heatmap
// and the URL is the permalink; plus the Share action (pages/sharelinks.ts),
// which creates, lists and revokes the profile's share links. This page asks
// for the profile's facts; the view asks for the rest.

import { compare, getFlameGraph, getHeatmap, query } from "../api";
import { h } from "../dom";
import { FlameGraphFormat } from "../enums";
import { askDiff } from "../flame/diff";
import { heatmapOf } from "../heatmap/model";
import { prefetched, takeHeatmap } from "../prefetch";
import { setQuery } from "../router";
import { diffSides, filtered, flameRequest, heatmapRequest, permalink, readView, seriesRequest, shareRequest, shareURL, writeView, type ViewState } from "../viewstate";
import type { Page } from "./page";
import { ProfileView } from "./profileview";
import { shareLinks } from "./sharelinks";

export function profilePage(id: string, params: URLSearchParams): Page {
  const ctrl = new AbortController();

  const { button: shareBtn, panel: shared } = shareLinks({
    signal: ctrl.signal,
    title: "Make a link to this range that works without an API key",
    mine: (l) => l.profileId === id,
    request: (ttl) => shareRequest(id, pv.view, pv.current?.defaultEvent ?? "", ttl),
    url: (u) => shareURL(u, pv.view),
    subject: () => subject(pv.view),
  });
  const subject = (v: ViewState) => shared.setSubject(v.range, v.event || pv.current?.defaultEvent || "");

  const pv = new ProfileView({
    view: readView(params),
    readOnly: false,
    extras: [shared.el],
    actions: shareBtn,
    onChange: subject,
    source: {
      heatmap: async (v, signal) => {
        const pre = filtered(v) ? undefined : await takeHeatmap(id, v.event, v.rows, v.idle);
        const res = pre ?? (await getHeatmap(heatmapRequest(id, v), signal));
        return heatmapOf(res, res.startSecond); // the owner's heatmap starts at the profile's first second
      },
      prefetched: (v) => !filtered(v) && prefetched(id, v.event, v.rows, v.idle),
      flame: (v, format, signal) => getFlameGraph(flameRequest(id, v, format), signal),
      series: (v, signal) => query.getHeatmapSeries(seriesRequest(id, v), { signal }),
      spans: (signal) => query.getSpans({ profileId: id }, { signal }),
      diff: async (v, signal) => {
        const sides = diffSides(id, v);
        if (!sides) return null;
        return askDiff(v.norm, (normalize) =>
          compare.getDiffFlameGraph(
            { a: { side: { case: "profile", value: sides.a } }, b: { side: { case: "profile", value: sides.b } }, normalize, format: FlameGraphFormat.TREE, top: 20 },
            { signal },
          ),
        );
      },
      permalink: (v) => permalink(location.origin, id, v),
      record: (v) => setQuery(writeView(v)),
      notFound: () =>
        h(
          "div",
          { class: "state error-state", role: "alert", "data-testid": "not-found" },
          h("h2", null, "Profile not found"),
          h("p", null, `No profile ${id} in your tenant. The link may be mistyped, the profile deleted, or it may belong to another tenant (links work only within a tenant).`),
          h("a", { href: "/", class: "button primary" }, "Search profiles"),
        ),
    },
  });

  async function loadProfile() {
    try {
      const res = await query.getProfile({ id }, { signal: ctrl.signal });
      const p = res.profile!;
      pv.setProfile(p);
      subject(pv.view);
      document.title = `${p.app}${p.host ? ` on ${p.host}` : ""} · fleetscope`;
    } catch (err) {
      pv.profileFailed(err, () => void loadProfile());
    }
  }

  performance.mark("fleetscope:requests");
  // The profile's facts: with the heatmap, or once a prefetched one is drawn.
  void pv.start().then(() => {
    if (!ctrl.signal.aborted) void loadProfile();
  });

  return {
    el: pv.el,
    title: "Profile",
    destroy() {
      ctrl.abort();
      pv.destroy();
    },
  };
}

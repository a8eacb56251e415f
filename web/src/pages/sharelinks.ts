// A page's share links: the Share… button and the share panel
// (panels/share.ts) wired to the admin API — list the links of the page's
// subject (a profile, or an app's fleet), create one (the subject's
// request, living the chosen time), revoke one. A key without the admin
// scope is told so in the panel; a rejected key goes to sign-in.

import type { MessageInitShape } from "@bufbuild/protobuf";
import { admin, apiKey, problem, type Problem } from "../api";
import { h } from "../dom";
import { dateOf } from "../format";
import type { CreateShareLinkRequestSchema, ShareLink } from "../gen/fleetscope/v1/admin_pb";
import { SharePanel } from "../panels/share";
import { onUnauthenticated } from "./states";

export interface ShareLinksOptions {
  signal: AbortSignal;
  /** The button's tooltip. */
  title: string;
  /** Whether a listed link is to this page's subject. */
  mine: (l: ShareLink) => boolean;
  /** The request for a new link living ttlSeconds. */
  request: (ttlSeconds: number) => MessageInitShape<typeof CreateShareLinkRequestSchema>;
  /** The URL to hand out for a new link, from the server's (default: as is). */
  url?: (serverURL: string) => string;
  /** Says in the panel what a new link would share (when it opens). */
  subject: (panel: SharePanel) => void;
}

export function shareLinks(o: ShareLinksOptions): { button: HTMLButtonElement; panel: SharePanel } {
  const panel: SharePanel = new SharePanel({
    onCreate: (ttl) => void create(ttl),
    onRevoke: (id) => void revoke(id),
    onClose: () => panel.close(),
  });
  const button = h("button", { type: "button", class: "ghost", "data-testid": "share-open", title: o.title }, "Share…");
  button.addEventListener("click", () => {
    if (panel.isOpen) return panel.close();
    panel.open();
    o.subject(panel);
    void load();
  });

  /** failed shows a failed admin call: the sign-in page for a rejected
   * key, the missing scope in words, else show(p). */
  function failed(err: unknown, show: (p: Problem) => void) {
    if (o.signal.aborted) return;
    const p = problem(err);
    if (p.kind === "unauthenticated") onUnauthenticated();
    else if (p.kind === "forbidden") panel.forbidden((apiKey() ?? "").slice(0, 12));
    else show(p);
  }

  async function load() {
    try {
      const res = await admin.listShareLinks({}, { signal: o.signal });
      panel.showLinks(res.links.filter(o.mine), new Date());
    } catch (err) {
      failed(err, (p) => panel.listError(p));
    }
  }

  async function create(ttlSeconds: number) {
    panel.creating();
    try {
      const res = await admin.createShareLink(o.request(ttlSeconds), { signal: o.signal });
      panel.created(o.url ? o.url(res.url) : res.url, res.link?.expiresAt ? dateOf(res.link.expiresAt) : null);
      void load();
    } catch (err) {
      failed(err, (p) => panel.error(p));
    }
  }

  async function revoke(id: string) {
    try {
      await admin.revokeShareLink({ id }, { signal: o.signal });
    } catch (err) {
      failed(err, (p) => panel.listError(p));
      return;
    }
    void load();
  }

  return { button, panel };
}

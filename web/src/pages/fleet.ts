// The fleet page (/fleet?app=...&from=...&to=...): the fleet view
// (pages/fleetview.ts) of the selection the URL names (fleetstate.ts's
// readFleet), every profile of an app in wall-clock time. The URL is
// rewritten to say exactly what is shown (a defaulted window, a dropped
// range), so that it is the permalink.

import { readFleet, writeFleet } from "../fleetstate";
import { setQuery } from "../router";
import { FleetView } from "./fleetview";
import type { Page } from "./page";

export function fleetPage(params: URLSearchParams): Page {
  const { state } = readFleet(params, new Date());
  if (state.app) setQuery(writeFleet(state));
  const view = new FleetView(state);
  view.start();
  return view;
}

// The flame graph benchmark page, /_bench/flame.html?nodes=N&seed=S: draws a
// synthetic N-node flame graph with the same code as the profile page and
// reports the time taken (web/e2e/bench.mjs reads data-* from the result
// element). A separate build entry (_bench/flame.html, `vite build --mode
// bench`): the app neither contains nor loads it. No API calls, no sign-in.

import "./style.css";
import { h, replace } from "./dom";
import { layout, syntheticTree } from "./flame/model";
import { FlameView } from "./flame/view";

const params = new URLSearchParams(location.search);
const n = Math.min(Math.max(Number(params.get("nodes")) || 100_000, 1), 2_000_000);
const seed = Number(params.get("seed")) || 1;
const result = h("pre", { "data-testid": "bench-result" }, "running…");
const view = new FlameView({ onZoom: () => {} });
// The app's page layout, so that the graph is as wide as on a profile page.
replace(document.getElementById("app")!, h("main", null, h("div", { class: "page" }, h("h1", null, `Synthetic flame graph: ${n.toLocaleString("en-US")} nodes`), result, view.el)));

requestAnimationFrame(() => {
  const tree = syntheticTree(n, seed);
  const t0 = performance.now();
  const l = layout(tree);
  const t1 = performance.now();
  view.set(l, 0, "", "icicle");
  const t2 = performance.now();
  const redraws: number[] = [];
  for (let k = 0; k < 5; k++) redraws.push(view.render());
  redraws.sort((a, b) => a - b);
  const search = performance.now();
  view.set(l, 0, "Func1", "icicle");
  const t3 = performance.now();
  Object.assign(result.dataset, {
    nodes: String(l.n),
    layoutMs: (t1 - t0).toFixed(2),
    firstRenderMs: (t2 - t1).toFixed(2),
    redrawMs: redraws[2].toFixed(2),
    searchRenderMs: (t3 - search).toFixed(2),
    visible: view.canvas.dataset.visible ?? "",
  });
  result.textContent = `layout ${(t1 - t0).toFixed(1)} ms · first render ${(t2 - t1).toFixed(1)} ms · redraw (median of 5) ${redraws[2].toFixed(1)} ms · search + redraw ${(t3 - search).toFixed(1)} ms · ${view.canvas.dataset.visible} frames drawn`;
  result.dataset.done = "1";
});

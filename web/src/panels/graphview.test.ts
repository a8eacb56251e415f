// GraphView's load, the requests for a page's graph: which answer is drawn,
// and how. Its panels are never made here (no DOM): load draws through the
// page's callbacks, and says a comparison's mode through showMode.

import { Code } from "@connectrpc/connect";
import { describe, expect, test } from "vitest";
import { CallError, type Problem } from "../api";
import type { GetDiffFlameGraphResponse } from "../gen/fleetscope/v1/compare_pb";
import type { GraphState } from "../graphstate";
import { GraphView, type GraphAsk } from "./graphview";

/** deferred is a promise settled from outside (an answer that comes later). */
function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

const STATE: GraphState = { search: "", orient: "icicle", frame: "", norm: null };
const DIFF = { totalA: 1n, totalB: 2n } as GetDiffFlameGraphResponse;

/** view is a GraphView recording what it says of comparisons (modes). */
function view(signal = new AbortController().signal) {
  const modes: unknown[] = [];
  const g = new GraphView({
    state: () => STATE,
    record: () => {},
    signal,
    fetch: () => Promise.reject(new Error("not asked here")),
    filename: () => "app.folded",
    exports: false,
    link: () => "",
    reload: () => {},
    showMode: (m) => modes.push(m),
  });
  return { g, modes };
}

/** asking is a GraphAsk recording what the page was asked to draw. */
function asking<G>(graph: () => Promise<G>, more: Partial<GraphAsk<G>> = {}) {
  const drawn: unknown[] = [];
  const ask: GraphAsk<G> = {
    graph,
    drawDiff: (d) => void drawn.push(d),
    draw: (g) => void drawn.push(g),
    ...more,
  };
  return { ask, drawn };
}

describe("GraphView's load", () => {
  test("an answer a newer load replaced is dropped, whichever comes first", async () => {
    const { g } = view();
    const old = deferred<string>();
    const fresh = deferred<string>();
    const a = asking(() => old.promise);
    const b = asking(() => fresh.promise);
    const done = [g.load(a.ask), g.load(b.ask)];
    fresh.resolve("new");
    old.resolve("old");
    await Promise.all(done);
    expect(a.drawn).toEqual([]);
    expect(b.drawn).toEqual(["new"]);
  });

  test("a drawing is told whether its load is still the latest (when it waits)", async () => {
    const { g } = view();
    let current: () => boolean = () => true;
    const a = asking(() => Promise.resolve("a"), { draw: (_, c) => void (current = c) });
    await g.load(a.ask);
    expect(current()).toBe(true);
    await g.load(asking(() => Promise.resolve("b")).ask);
    expect(current()).toBe(false);
  });

  test("a comparison is drawn in place of the graph", async () => {
    const { g, modes } = view();
    let asked = 0;
    const a = asking(() => Promise.resolve(++asked), { diff: () => Promise.resolve(DIFF) });
    await g.load(a.ask);
    expect(a.drawn).toEqual([DIFF]);
    expect(asked).toBe(0);
    expect(modes).toEqual([]); // (the page's showDiff says the mode)
  });

  test("no comparison (none asked, or none after all): the graph, with no comparison's mode said", async () => {
    for (const diff of [undefined, () => null, () => Promise.resolve(null)]) {
      const { g, modes } = view();
      const a = asking(() => Promise.resolve("graph"), { diff });
      await g.load(a.ask);
      expect(a.drawn).toEqual(["graph"]);
      expect(modes).toEqual([null]);
    }
  });

  test("a comparison a newer load replaced is dropped, and its graph is not asked for", async () => {
    const { g } = view();
    const d = deferred<GetDiffFlameGraphResponse | null>();
    let asked = 0;
    const a = asking(() => Promise.resolve(++asked), { diff: () => d.promise });
    const first = g.load(a.ask);
    await g.load(asking(() => Promise.resolve("b")).ask);
    d.resolve(null);
    await first;
    expect(a.drawn).toEqual([]);
    expect(asked).toBe(0);
  });

  test("a failure is the page's to show first, as a problem", async () => {
    const { g } = view();
    const seen: Problem[] = [];
    const a = asking(() => Promise.reject(new CallError("no such profile", Code.NotFound)), { failed: (p) => (seen.push(p), true) });
    await g.load(a.ask);
    expect(seen).toEqual([{ kind: "notfound", message: "no such profile" }]);
    expect(a.drawn).toEqual([]);
  });

  test("a failure of a load a newer one replaced, or after the page was left, is not shown", async () => {
    const { g } = view();
    const old = deferred<string>();
    const seen: Problem[] = [];
    const failed = (p: Problem) => (seen.push(p), true);
    const first = g.load(asking(() => old.promise, { failed }).ask);
    await g.load(asking(() => Promise.resolve("b")).ask);
    old.reject(new CallError("busy", Code.ResourceExhausted));
    await first;
    expect(seen).toEqual([]);

    const left = new AbortController();
    const { g: g2 } = view(left.signal);
    const answer = deferred<string>();
    const loading = g2.load(asking(() => answer.promise, { failed }).ask);
    left.abort();
    answer.reject(new CallError("aborted", Code.Canceled));
    await loading;
    expect(seen).toEqual([]);
  });

  test("a drawing's own failure is a failure of its load", async () => {
    const { g } = view();
    const seen: Problem[] = [];
    const a = asking(() => Promise.resolve("graph"), {
      draw: () => {
        throw new CallError("bad range", Code.InvalidArgument);
      },
      failed: (p) => (seen.push(p), true),
    });
    await g.load(a.ask);
    expect(seen.map((p) => p.kind)).toEqual(["invalid"]);
  });
});

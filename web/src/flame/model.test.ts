import { describe, expect, test } from "vitest";
import {
  compileSearch,
  exactSearch,
  findPath,
  hitTest,
  layout,
  matchedTotal,
  matchNames,
  nodeRect,
  pathOf,
  sortFunctions,
  syntheticTree,
  topFunctions,
  truncateLabel,
  visibleNodes,
  type FlatTree,
} from "./model";

// fromFolded merges folded stacks into the server's flat tree: pre-order,
// children sorted by name (bytewise), root "all".
function fromFolded(lines: [string, number][]): FlatTree {
  interface N {
    name: string;
    value: number;
    kids: Map<string, N>;
  }
  const root: N = { name: "all", value: 0, kids: new Map() };
  for (const [stack, v] of lines) {
    let n = root;
    n.value += v;
    for (const f of stack.split(";")) {
      let k = n.kids.get(f);
      if (!k) n.kids.set(f, (k = { name: f, value: 0, kids: new Map() }));
      k.value += v;
      n = k;
    }
  }
  const names: string[] = [];
  const ids = new Map<string, number>();
  const name: number[] = [];
  const value: number[] = [];
  const depth: number[] = [];
  const walk = (n: N, d: number) => {
    if (!ids.has(n.name)) {
      ids.set(n.name, names.length);
      names.push(n.name);
    }
    name.push(ids.get(n.name)!);
    value.push(n.value);
    depth.push(d);
    for (const k of [...n.kids.keys()].sort()) walk(n.kids.get(k)!, d + 1);
  };
  walk(root, 0);
  return { names, name, value, depth };
}

const FOLDED: [string, number][] = [
  ["java;start_thread;GCTaskThread::run();StealTask::do_it;drain_stacks_depth", 29],
  ["java;Ljava/lang/Thread;::run;Server::handle;Encoder::encode", 7],
  ["java;Ljava/lang/Thread;::run;Server::handle;Pool::borrow;futex", 5],
  ["java;Ljava/lang/Thread;::run;Server::handle", 2],
  ["nginx;main;ngx_process_events;epoll_wait", 4],
  ["worker;start_thread;process_stride", 3],
  ["rec;a;b;a;b;a", 6],
  ["rec;a", 1],
];

describe("layout", () => {
  const l = layout(fromFolded(FOLDED));
  test("values, offsets, self and subtrees", () => {
    expect(l.total).toBe(57);
    expect(l.names[l.name[0]]).toBe("all");
    for (let i = 1; i < l.n; i++) {
      const p = l.parent[i];
      expect(l.depth[i]).toBe(l.depth[p] + 1);
      expect(l.x[i]).toBeGreaterThanOrEqual(l.x[p]);
      expect(l.x[i] + l.value[i]).toBeLessThanOrEqual(l.x[p] + l.value[p]);
    }
    // children tile their parent from its left edge; self is the rest
    for (let i = 0; i < l.n; i++) {
      let sum = 0;
      let x = l.x[i];
      for (let c = i + 1; c < l.end[i]; c = l.end[c]) {
        expect(l.x[c]).toBe(x);
        x += l.value[c];
        sum += l.value[c];
      }
      expect(l.self[i]).toBe(l.value[i] - sum);
    }
    expect(l.maxDepth).toBe(6);
  });
  test("paths name nodes and come back", () => {
    for (let i = 0; i < l.n; i++) expect(findPath(l, pathOf(l, i))).toBe(i);
    expect(pathOf(l, findPath(l, "java;start_thread;GCTaskThread::run()"))).toBe("java;start_thread;GCTaskThread::run()");
    expect(findPath(l, "java;nope")).toBe(-1);
  });
  test("rejects trees that are not pre-order", () => {
    expect(() => layout({ names: ["all", "a"], name: [0, 1], value: [1, 1], depth: [0, 2] })).toThrow();
    expect(() => layout({ names: ["all"], name: [0, 0], value: [1, 1], depth: [0, 0] })).toThrow();
    expect(() => layout({ names: ["all"], name: [0, 3], value: [1, 1], depth: [0, 1] })).toThrow();
    expect(layout({ names: [], name: [], value: [], depth: [] }).n).toBe(0);
  });
});

describe("drawing and hit testing", () => {
  test("every visible node is hit at its centre, also when zoomed", () => {
    const l = layout(syntheticTree(3000, 5));
    const out = new Int32Array(l.n);
    for (const zoom of [0, 1, 17, 400]) {
      const v = { zoom, width: 1200 };
      const { count, maxDepth } = visibleNodes(l, v, out, 0.5);
      expect(count).toBeGreaterThan(0);
      for (let k = 0; k < count; k++) {
        const i = out[k];
        expect(l.depth[i]).toBeLessThanOrEqual(maxDepth);
        const r = nodeRect(l, v, i);
        if (r.w < 2) continue; // sub-pixel: centre rounding is ambiguous
        expect(hitTest(l, v, r.x + r.w / 2, r.row)).toBe(i);
      }
      // zoomed: the zoomed node spans the width; its ancestors too
      expect(nodeRect(l, v, zoom)).toMatchObject({ x: 0, w: 1200 });
      for (let p = l.parent[zoom]; p >= 0; p = l.parent[p]) expect(hitTest(l, v, 600, l.depth[p])).toBe(p);
    }
  });
  test("narrow subtrees are skipped whole", () => {
    const l = layout(fromFolded(FOLDED));
    const out = new Int32Array(l.n);
    const { count } = visibleNodes(l, { zoom: 0, width: 57 }, out, 5); // 1 px per sample
    for (let k = 0; k < count; k++) expect(l.value[out[k]]).toBeGreaterThanOrEqual(5);
  });
  test("100k nodes: layout and a full draw pass cover the tree", () => {
    // Speed is measured by bench.sh, never asserted here.
    const t = syntheticTree(100_000, 9);
    const l = layout(t);
    const out = new Int32Array(l.n);
    const { count } = visibleNodes(l, { zoom: 0, width: 1600 }, out);
    expect(l.n).toBe(100_000);
    expect(count).toBeGreaterThan(100);
  });
});

describe("search", () => {
  const l = layout(fromFolded(FOLDED));
  // brute force: samples whose stack has a matching frame
  const brute = (pred: (n: string) => boolean) => FOLDED.filter(([s]) => s.split(";").some(pred)).reduce((a, [, v]) => a + v, 0);
  test("matched samples count each sample once", () => {
    for (const q of ["drain", "thread", "a", "/^(a|b)$/", "/server/i", "JAVA", "zzz"]) {
      const pred = compileSearch(q)!;
      expect(matchedTotal(l, matchNames(l.names, pred)).samples).toBe(brute(pred));
    }
  });
  test("empty and bad queries match nothing", () => {
    expect(compileSearch("  ")).toBeNull();
    expect(compileSearch("/(/")).toBeNull();
    expect(matchedTotal(l, matchNames(l.names, null)).samples).toBe(0);
  });
  test("an exact search matches that name only, special characters and all", () => {
    const names = ["RegExp:[&<>\\]", "a.b", "axb", "operator()", "x/y", "$f^", "a|b", "a", "GC (young)", "f+", "ff"];
    for (const n of names) {
      const pred = compileSearch(exactSearch(n))!;
      expect(names.filter(pred)).toEqual([n]);
      expect(pred(`${n}x`) || pred(`x${n}`)).toBe(false);
    }
  });
  test("matches within a zoomed subtree", () => {
    const z = findPath(l, "java");
    const pred = compileSearch("handle")!;
    expect(matchedTotal(l, matchNames(l.names, pred), z).samples).toBe(14);
  });
});

describe("top functions", () => {
  test("self and total agree with the folded stacks (recursion counted once)", () => {
    const l = layout(fromFolded(FOLDED));
    const stats = topFunctions(l);
    const names = new Set(FOLDED.flatMap(([s]) => s.split(";")));
    expect(stats.length).toBe(names.size);
    for (const st of stats) {
      const self = FOLDED.filter(([s]) => s.split(";").at(-1) === st.name).reduce((a, [, v]) => a + v, 0);
      const total = FOLDED.filter(([s]) => s.split(";").includes(st.name)).reduce((a, [, v]) => a + v, 0);
      expect([st.name, st.self, st.total]).toEqual([st.name, self, total]);
    }
    const bySelf = sortFunctions(stats, "self", false);
    expect(bySelf[0]).toEqual({ name: "drain_stacks_depth", self: 29, total: 29 });
    const byTotal = sortFunctions(stats, "total", false);
    expect(byTotal[0].name).toBe("java");
    expect(sortFunctions(stats, "name", true)[0].name).toBe("::run");
  });
});

test("labels are cut with an ellipsis", () => {
  expect(truncateLabel("GCTaskThread::run()", 8)).toBe("GCTaskT…");
  expect(truncateLabel("main", 8)).toBe("main");
  expect(truncateLabel("main", 2)).toBe("");
});

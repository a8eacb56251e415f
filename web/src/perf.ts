// Timings the benchmark script reads (window.__fleetscopePerf, and a
// "fleetscope:perf" event on window each time one is added, so that it need
// not poll the page while it loads): when the
// first heatmap was drawn into its canvas, and when the frame holding it
// had been painted (the first task after that frame's rendering), in ms
// since navigation started; and what each flame graph cost (server and
// transfer, decode and layout, drawing).

export interface FlameTiming {
  nodes: number;
  /** From asking to the answer read and decoded (its tree laid out too, if wasm). */
  fetchMs: number;
  /** Whether the tree was decoded and laid out in WebAssembly. */
  wasm: boolean;
  /** The tree's layout in JavaScript (~0 if wasm). */
  decodeMs: number;
  renderMs: number;
  /** When it was asked for and when drawn, in ms since navigation started. */
  askedAtMs: number;
  drawnAtMs: number;
}

interface PerfRecord {
  heatmapDrawnMs: number | null;
  heatmapPaintedMs: number | null;
  flames: FlameTiming[];
  flameRenders: number[];
}

const rec: PerfRecord = { heatmapDrawnMs: null, heatmapPaintedMs: null, flames: [], flameRenders: [] };
(window as unknown as { __fleetscopePerf: PerfRecord }).__fleetscopePerf = rec;
const added = (what: string) => window.dispatchEvent(new CustomEvent("fleetscope:perf", { detail: what }));

export const perf = {
  /** mark records a named moment once per page (performance.mark). */
  mark(name: string) {
    if (performance.getEntriesByName(`fleetscope:${name}`).length === 0) performance.mark(`fleetscope:${name}`);
  },
  heatmapDrawn(ms: number) {
    if (rec.heatmapDrawnMs === null) {
      rec.heatmapDrawnMs = ms;
      performance.mark("fleetscope:heatmap-drawn");
      added("heatmapDrawn");
      requestAnimationFrame(() =>
        setTimeout(() => {
          rec.heatmapPaintedMs = performance.now();
          added("heatmapPainted");
        }),
      );
    }
  },
  flameRendered(ms: number) {
    rec.flameRenders.push(ms);
    added("flameRendered");
  },
  flameLoaded(t: FlameTiming) {
    rec.flames.push(t);
    added("flameLoaded");
  },
};

// The heatmap request that index.html starts for a permalink before the
// app's code has loaded. takeHeatmap hands its answer over once, if it was
// for the same request and succeeded; otherwise (a different view, an error
// such as a rejected key) the app asks again the usual way, which reports
// errors properly. With it, the whole profile's flame graph (a permalink
// with no range, filter or comparison); for a fleet permalink, the fleet
// heatmap and (with no range in the link) the whole window's merged flame
// graph: takeAsked hands each over once, if its request's bytes are the
// app's.

import { decodeHeatmap, type WireHeatmap } from "./heatmap/wire";

interface Prefetch {
  request: string;
  response: Promise<Response>;
  /** The response's body, read as soon as it came (null: it could not be). */
  body: Promise<ArrayBuffer | null>;
}

/** A request index.html made: its bytes (as "1,2,3"), its answer. */
interface Asked {
  request: string;
  response: Promise<Response>;
  body: Promise<ArrayBuffer | null>;
}

declare global {
  interface Window {
    __fleetscopePrefetch?: Prefetch;
    __fleetscopeAsked?: Partial<Record<AskedKind, Asked>>;
  }
}

/** prefetchKey names a heatmap request the way index.html does. */
export function prefetchKey(id: string, event: string, rows: number, idle: boolean): string {
  return JSON.stringify([id, event, rows, idle]);
}

/** arrived resolves once index.html's request has been answered (or has
 * failed), or after ms if it has not by then; at once if there is none.
 * The app builds a permalink's page then, so that its heatmap is drawn
 * with the page in one task: built earlier, the page's first frame and the
 * tasks that read the answer's body compete, and the heatmap comes a frame
 * or more later. */
export function arrived(ms: number): Promise<void> {
  const p = window.__fleetscopePrefetch;
  if (!p) return Promise.resolve();
  return Promise.race([p.body.then(() => undefined), new Promise<void>((r) => setTimeout(r, ms))]);
}

/** prefetched says whether index.html's request is this one and is still
 * waiting to be taken. */
export function prefetched(id: string, event: string, rows: number, idle: boolean): boolean {
  return window.__fleetscopePrefetch?.request === prefetchKey(id, event, rows, idle);
}

export async function takeHeatmap(id: string, event: string, rows: number, idle: boolean): Promise<WireHeatmap | null> {
  const p = window.__fleetscopePrefetch;
  delete window.__fleetscopePrefetch;
  if (!p || p.request !== prefetchKey(id, event, rows, idle)) return null;
  try {
    const res = await p.response;
    if (res.status !== 200 || !res.headers.get("Content-Type")?.startsWith("application/proto")) return null;
    const body = await p.body;
    return body ? decodeHeatmap(new Uint8Array(body)) : null;
  } catch {
    return null;
  }
}

/** The requests index.html makes besides a profile's heatmap. */
export type AskedKind = "flame" | "fleetHeatmap" | "fleetFlame";

/** takeAsked is the answer's bytes to index.html's request of kind (once),
 * when its request was these bytes and it succeeded; else null. */
export async function takeAsked(kind: AskedKind, request: Uint8Array): Promise<Uint8Array | null> {
  const all = window.__fleetscopeAsked;
  const p = all?.[kind];
  if (!all || !p) return null;
  delete all[kind];
  if (p.request !== request.join(",")) return null;
  try {
    const res = await p.response;
    if (res.status !== 200 || !res.headers.get("Content-Type")?.startsWith("application/proto")) return null;
    const body = await p.body;
    return body ? new Uint8Array(body) : null;
  } catch {
    return null;
  }
}

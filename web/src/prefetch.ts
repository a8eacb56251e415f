// The heatmap request that index.html starts for a permalink before the
// app's code has loaded. takeHeatmap hands its answer over once, if it was
// for the same request and succeeded; otherwise (a different view, an error
// such as a rejected key) the app asks again the usual way, which reports
// errors properly.

import { decodeHeatmap, type WireHeatmap } from "./heatmap/wire";

interface Prefetch {
  request: string;
  response: Promise<Response>;
  /** The response's body, read as soon as it came (null: it could not be). */
  body: Promise<ArrayBuffer | null>;
}

declare global {
  interface Window {
    __fleetscopePrefetch?: Prefetch;
  }
}

/** prefetchKey names a heatmap request the way index.html does. */
export function prefetchKey(id: string, event: string, rows: number, idle: boolean): string {
  return JSON.stringify([id, event, rows, idle]);
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

// The app's one way to the server: the Connect clients (binary protobuf over
// fetch; src/rpc.ts, loaded on the first call so that the generated code
// does not delay the first paint), errors sorted into what the UI says
// about them, the calls whose answers are decoded by hand (flame graphs,
// heatmaps; the profile page's two requests encoded by hand too, in
// requests.ts), and browser uploads with progress. The key's storage is
// src/auth.ts.

import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { apiKey } from "./auth";
import { prepareTreeWasm } from "./flame/treewasm";
import { decodeFlameGraph, decodeFleetFlameGraph, decodeSharedFlameGraph, type WireFlameGraph } from "./flame/wire";
import type { GetFleetFlameGraphRequestSchema, GetFleetHeatmapRequestSchema } from "./gen/fleetscope/v1/fleet_pb";
import type { UploadFileResponse } from "./gen/fleetscope/v1/ingest_pb";
import type { GetFlameGraphRequestSchema, GetHeatmapRequestSchema } from "./gen/fleetscope/v1/query_pb";
import type { GetSharedFlameGraphRequestSchema } from "./gen/fleetscope/v1/share_pb";
import { decodeAccounting, decodeFleetHeatmap, decodeHeatmap, type WireAccounting, type WireFleetHeatmap, type WireHeatmap } from "./heatmap/wire";
import { takeAsked } from "./prefetch";
import {
  encodeFlameGraphRequest,
  encodeFleetFlameGraphRequest,
  encodeFleetHeatmapRequest,
  encodeHeatmapRequest,
  GET_FLAME_GRAPH,
  GET_FLEET_FLAME_GRAPH,
  GET_FLEET_HEATMAP,
  GET_HEATMAP,
} from "./requests";
import type { Clients } from "./rpc";

export { apiKey, clearKey, saveKey } from "./auth";

let loading: Promise<typeof import("./rpc")> | null = null;

/** rpc loads src/rpc.ts once. */
function rpc(): Promise<typeof import("./rpc")> {
  return (loading ??= import("./rpc"));
}

/** rpcAsked says whether src/rpc.ts has been asked for (its evaluation,
 * ~30 ms of the main thread, is then no longer ahead). */
export function rpcAsked(): boolean {
  return loading !== null;
}

/** lazy is the client named name, which loads src/rpc.ts on its first call
 * (every method the app calls is unary: it returns a promise). */
function lazy<K extends keyof Clients>(name: K): Clients[K] {
  return new Proxy({} as Clients[K], {
    get: (_, method) =>
      async (...args: unknown[]) => {
        const c = (await rpc()).clients[name] as unknown as Record<string | symbol, (...a: unknown[]) => unknown>;
        return c[method](...args);
      },
  });
}

export const query = lazy("query");
export const ingest = lazy("ingest");
export const admin = lazy("admin");
export const fleet = lazy("fleet");
export const compare = lazy("compare");
/** share reads through a share link: no key is sent, the token is the credential. */
export const share = lazy("share");

/** clientsWithKey are clients that send a key tried before it is saved (sign-in). */
export async function clientsWithKey(key: string) {
  return (await rpc()).withKey(key);
}

/** Problem is an error sorted for the UI. */
export type ProblemKind = "unauthenticated" | "forbidden" | "notfound" | "invalid" | "toolarge" | "busy" | "down" | "other";

export interface Problem {
  kind: ProblemKind;
  message: string;
}

/** ERROR_CODE_HEADER carries the server's own error code (docs/api.md):
 * finer than the Connect code, which is ResourceExhausted for both a size
 * limit (too_large) and a rate limit (rate_limited). */
export const ERROR_CODE_HEADER = "Fleetscope-Error-Code";

/** kindOfCode sorts the server's own error codes. */
const kindOfCode: Record<string, ProblemKind> = {
  unauthenticated: "unauthenticated",
  forbidden: "forbidden",
  not_found: "notfound",
  invalid: "invalid",
  empty: "invalid",
  conflict: "invalid",
  too_large: "toolarge",
  rate_limited: "busy",
};

/** problem sorts any error from a call: a ConnectError (from the clients)
 * or a CallError (from the calls here) by the server's own code
 * (ERROR_CODE_HEADER) when it sent one, else by its Connect code; anything
 * else as ConnectError.from would (an abort is Canceled; a dynamic import
 * that failed, like fetch, is a network error). */
export function problem(err: unknown): Problem {
  const ce = asConnectError(err);
  const msg = ce.rawMessage;
  const network = ce.cause instanceof TypeError || /failed to fetch|networkerror|load failed|network error/i.test(msg);
  if (network || ce.code === Code.Unavailable) {
    return { kind: "down", message: network ? "The server cannot be reached." : `The server is unavailable: ${msg}` };
  }
  const kind = ce.fsCode ? kindOfCode[ce.fsCode] : undefined;
  if (kind) return { kind, message: msg };
  switch (ce.code) {
    case Code.Unauthenticated:
      return { kind: "unauthenticated", message: msg };
    case Code.PermissionDenied:
      return { kind: "forbidden", message: msg };
    case Code.NotFound:
      return { kind: "notfound", message: msg };
    case Code.InvalidArgument:
    case Code.FailedPrecondition:
    case Code.OutOfRange:
      return { kind: "invalid", message: msg };
    case Code.ResourceExhausted:
      return { kind: "toolarge", message: msg };
    case Code.Canceled:
      return { kind: "other", message: "Cancelled." };
    default:
      return { kind: "other", message: msg || `Error: ${Code[ce.code]}` };
  }
}

interface ConnectErrorLike {
  code: Code;
  rawMessage: string;
  cause?: unknown;
  fsCode?: string; // the server's own code (ERROR_CODE_HEADER), when it sent one
}

/** CallError is a failed call made here rather than through a client: a
 * ConnectError's code and message, without ConnectError's class, which
 * would bring protobuf-es's runtime into the first page's code. */
export class CallError extends Error implements ConnectErrorLike {
  override name = "CallError";
  constructor(
    readonly rawMessage: string,
    readonly code: Code,
    override readonly cause?: unknown,
    readonly fsCode?: string,
  ) {
    super(`[${Code[code]}] ${rawMessage}`);
  }
}

function asConnectError(err: unknown): ConnectErrorLike {
  if (err instanceof CallError) return err;
  if (err instanceof Error && err.name === "ConnectError" && "code" in err && "rawMessage" in err) {
    const ce = err as unknown as ConnectErrorLike & { metadata?: Headers };
    return { code: ce.code, rawMessage: ce.rawMessage, cause: ce.cause, fsCode: ce.metadata?.get(ERROR_CODE_HEADER) ?? undefined };
  }
  if (err instanceof Error) return { code: err.name === "AbortError" ? Code.Canceled : Code.Unknown, rawMessage: err.message, cause: err };
  return { code: Code.Unknown, rawMessage: String(err), cause: err };
}

// ---- flame graphs -------------------------------------------------------------

/** getFlameGraph calls QueryService.GetFlameGraph (Connect unary, binary)
 * with fetch and decodes the answer with the fast decoder in flame/wire.ts
 * rather than the generic one: the tree can be ~10^5 nodes. Errors are
 * CallErrors, which problem() sorts as it does the clients' ConnectErrors. */
export async function getFlameGraph(req: MessageInitShape<typeof GetFlameGraphRequestSchema>, signal?: AbortSignal): Promise<WireFlameGraph> {
  prepareTreeWasm();
  const body = encodeFlameGraphRequest(req);
  // (a permalink's whole flame graph: index.html asked for it)
  return decodeFlameGraph((await takeAsked("flame", body)) ?? (await post(GET_FLAME_GRAPH, body, true, signal)));
}

/** getHeatmap calls QueryService.GetHeatmap as getFlameGraph does, with the
 * decoder in heatmap/wire.ts (numbers, not a bigint per cell). */
export async function getHeatmap(req: MessageInitShape<typeof GetHeatmapRequestSchema>, signal?: AbortSignal): Promise<WireHeatmap> {
  return decodeHeatmap(await post(GET_HEATMAP, encodeHeatmapRequest(req), true, signal));
}

/** getSharedFlameGraph is getFlameGraph through a share link (no key). */
export async function getSharedFlameGraph(req: MessageInitShape<typeof GetSharedFlameGraphRequestSchema>, signal?: AbortSignal): Promise<WireFlameGraph> {
  const { sharedFlameGraph: c } = (await rpc()).calls;
  return decodeSharedFlameGraph(await postFlame(c.path, c.encode(req), false, signal));
}

/** getFleetFlameGraph is getFlameGraph for a fleet selection: the merged
 * flame graph, and the accounting of the profiles it merged. Encoded and
 * decoded by hand, it needs no generated code; a fleet permalink's is
 * taken from index.html's prefetch when it is the same request. */
export async function getFleetFlameGraph(
  req: MessageInitShape<typeof GetFleetFlameGraphRequestSchema>,
  signal?: AbortSignal,
  /** decode the answer only once this has settled (what is drawn first) */
  after?: Promise<unknown>,
): Promise<{ graph: WireFlameGraph; accounting: WireAccounting }> {
  prepareTreeWasm();
  const body = encodeFleetFlameGraphRequest(req);
  const bytes = (await takeAsked("fleetFlame", body)) ?? (await post(GET_FLEET_FLAME_GRAPH, body, true, signal));
  if (after) await after.catch(() => {});
  const res = decodeFleetFlameGraph(bytes);
  return { graph: res.graph, accounting: decodeAccounting(res.accounting) };
}

/** getFleetHeatmap calls FleetService.GetFleetHeatmap as getHeatmap does
 * GetHeatmap (hand-encoded, hand-decoded: no generated code); a fleet
 * permalink's is taken from index.html's prefetch when it is the same. */
export async function getFleetHeatmap(req: MessageInitShape<typeof GetFleetHeatmapRequestSchema>, signal?: AbortSignal): Promise<WireFleetHeatmap> {
  const body = encodeFleetHeatmapRequest(req);
  return decodeFleetHeatmap((await takeAsked("fleetHeatmap", body)) ?? (await post(GET_FLEET_HEATMAP, body, true, signal)));
}

// postFlame is post for a flame graph call: the tree decoder's
// WebAssembly compiles while the answer comes.
function postFlame(procedure: string, body: Uint8Array, withKey: boolean, signal?: AbortSignal): Promise<Uint8Array> {
  prepareTreeWasm();
  return post(procedure, body, withKey, signal);
}

// post makes a Connect unary call in protobuf binary with fetch and
// returns the answer's bytes.
async function post(procedure: string, body: Uint8Array, withKey: boolean, signal?: AbortSignal): Promise<Uint8Array> {
  const headers: Record<string, string> = { "Content-Type": "application/proto", "Connect-Protocol-Version": "1" };
  const key = apiKey();
  if (withKey && key) headers.Authorization = `Bearer ${key}`;
  let res: Response;
  let bytes: Uint8Array;
  try {
    res = await fetch(`${location.origin}/${procedure}`, { method: "POST", headers, body: body as BlobPart, signal });
    bytes = new Uint8Array(await res.arrayBuffer());
  } catch (e) {
    if (signal?.aborted) throw new CallError("cancelled", Code.Canceled);
    throw new CallError("Failed to fetch", Code.Unavailable, e);
  }
  if (res.status !== 200) throw callErrorFrom(res.status, bytes, res.headers.get(ERROR_CODE_HEADER));
  return bytes;
}

// ---- uploads ----------------------------------------------------------------

export interface UploadMeta {
  app: string;
  host: string;
  labels: Record<string, string>;
  filename: string;
}

export type UploadPhase = "reading" | "compressing" | "sending" | "processing";

/** Files above this size that are not already gzip are compressed in the
 * browser before sending (perf text shrinks ~10×), to stay under the
 * server's single-message limit (FLEETSCOPE_BROWSER_UPLOAD_BYTES, 64 MiB by
 * default). Smaller files go as they are, so the same bytes uploaded with
 * the CLI are recognised as the same profile. */
export const COMPRESS_ABOVE = 32 << 20;

function isGzip(b: Uint8Array): boolean {
  return b.length >= 2 && b[0] === 0x1f && b[1] === 0x8b;
}

async function gzip(data: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([data as BlobPart]).stream().pipeThrough(new CompressionStream("gzip"));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** uploadFile sends a file with IngestService.UploadFile. It speaks the
 * Connect unary protocol over XMLHttpRequest rather than fetch, because
 * only XHR reports upload progress. */
export async function uploadFile(
  file: Blob,
  meta: UploadMeta,
  onProgress: (phase: UploadPhase, fraction: number) => void,
  signal?: AbortSignal,
): Promise<UploadFileResponse> {
  onProgress("reading", 0);
  let data: Uint8Array = new Uint8Array(await file.arrayBuffer());
  if (data.length > COMPRESS_ABOVE && !isGzip(data) && typeof CompressionStream !== "undefined") {
    onProgress("compressing", 0);
    data = await gzip(data);
  }
  const r = await rpc();
  const body = r.calls.uploadFile.encode({ metadata: { app: meta.app, host: meta.host, labels: meta.labels, filename: meta.filename }, data });
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", `${location.origin}/${r.calls.uploadFile.path}`);
    xhr.responseType = "arraybuffer";
    xhr.setRequestHeader("Content-Type", "application/proto");
    xhr.setRequestHeader("Connect-Protocol-Version", "1");
    const key = apiKey();
    if (key) xhr.setRequestHeader("Authorization", `Bearer ${key}`);
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable) onProgress("sending", e.loaded / e.total);
    };
    xhr.upload.onload = () => onProgress("processing", 1);
    xhr.onerror = () => reject(new CallError("Failed to fetch", Code.Unavailable, new TypeError("network error")));
    xhr.onabort = () => reject(new CallError("upload cancelled", Code.Canceled));
    xhr.onload = () => {
      const bytes = new Uint8Array(xhr.response as ArrayBuffer);
      if (xhr.status === 200) {
        try {
          resolve(r.decodeUploadFileResponse(bytes));
        } catch (e) {
          reject(e);
        }
        return;
      }
      reject(callErrorFrom(xhr.status, bytes, xhr.getResponseHeader(ERROR_CODE_HEADER)));
    };
    signal?.addEventListener("abort", () => xhr.abort());
    xhr.send(new Blob([body as BlobPart]));
  });
}

// The Connect protocol's error body is JSON {"code": "not_found", "message": ...};
// without one, the HTTP status decides (as connect-web does).
function callErrorFrom(status: number, body: Uint8Array, fsCode: string | null): CallError {
  const codes: Record<string, Code> = {
    canceled: Code.Canceled,
    unknown: Code.Unknown,
    invalid_argument: Code.InvalidArgument,
    deadline_exceeded: Code.DeadlineExceeded,
    not_found: Code.NotFound,
    already_exists: Code.AlreadyExists,
    permission_denied: Code.PermissionDenied,
    resource_exhausted: Code.ResourceExhausted,
    failed_precondition: Code.FailedPrecondition,
    aborted: Code.Aborted,
    out_of_range: Code.OutOfRange,
    unimplemented: Code.Unimplemented,
    internal: Code.Internal,
    unavailable: Code.Unavailable,
    data_loss: Code.DataLoss,
    unauthenticated: Code.Unauthenticated,
  };
  try {
    const j = JSON.parse(new TextDecoder().decode(body)) as { code?: string; message?: string };
    if (j.code && j.code in codes) return new CallError(j.message ?? j.code, codes[j.code], undefined, fsCode ?? undefined);
  } catch {
    // not JSON: fall through to the status
  }
  const byStatus: Record<number, Code> = { 400: Code.Internal, 401: Code.Unauthenticated, 403: Code.PermissionDenied, 404: Code.Unimplemented, 413: Code.ResourceExhausted, 429: Code.Unavailable, 502: Code.Unavailable, 503: Code.Unavailable, 504: Code.Unavailable };
  return new CallError(`HTTP ${status}`, byStatus[status] ?? Code.Unknown, undefined, fsCode ?? undefined);
}


// The app's one way to the server: the Connect clients (binary protobuf over
// fetch, the API key as a bearer token on every call but the share
// service's, whose credential is the link's token), the key's storage,
// errors sorted into what the UI says about them, and browser uploads with
// progress.
//
// The key lives under "fleetscope.apiKey" in sessionStorage, or in
// localStorage when the user ticks "remember me"; it is read from either (a
// contract that tests rely on to preset it).

import { create, fromBinary, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { AdminService } from "./gen/fleetscope/v1/admin_pb";
import { CompareService } from "./gen/fleetscope/v1/compare_pb";
import { AccountingSchema, FleetService, GetFleetFlameGraphRequestSchema, type Accounting } from "./gen/fleetscope/v1/fleet_pb";
import { IngestService, UploadFileRequestSchema, UploadFileResponseSchema, type UploadFileResponse } from "./gen/fleetscope/v1/ingest_pb";
import { GetFlameGraphRequestSchema, GetHeatmapRequestSchema, QueryService } from "./gen/fleetscope/v1/query_pb";
import { GetSharedFlameGraphRequestSchema, ShareService } from "./gen/fleetscope/v1/share_pb";
import { decodeFlameGraph, decodeFleetFlameGraph, decodeSharedFlameGraph, type WireFlameGraph } from "./flame/wire";
import { decodeHeatmap, type WireHeatmap } from "./heatmap/wire";

export const KEY_NAME = "fleetscope.apiKey";

/** apiKey is the stored key, from sessionStorage or else localStorage. */
export function apiKey(): string | null {
  try {
    return sessionStorage.getItem(KEY_NAME) || localStorage.getItem(KEY_NAME) || null;
  } catch {
    return null;
  }
}

/** saveKey keeps the key for this tab, or on this device when remember. */
export function saveKey(key: string, remember: boolean) {
  clearKey();
  (remember ? localStorage : sessionStorage).setItem(KEY_NAME, key);
}

export function clearKey() {
  sessionStorage.removeItem(KEY_NAME);
  localStorage.removeItem(KEY_NAME);
}

const auth: Interceptor = (next) => async (req) => {
  const key = apiKey();
  if (key) req.header.set("Authorization", `Bearer ${key}`);
  return next(req);
};

const transport = createConnectTransport({
  baseUrl: location.origin,
  useBinaryFormat: true,
  interceptors: [auth],
});

export const query = createClient(QueryService, transport);
export const ingest = createClient(IngestService, transport);
export const admin = createClient(AdminService, transport);
export const fleet = createClient(FleetService, transport);
export const compare = createClient(CompareService, transport);

/** share reads through a share link: no key is sent, the token is the credential. */
export const share = createClient(ShareService, createConnectTransport({ baseUrl: location.origin, useBinaryFormat: true }));

/** A key tried before it is saved (sign-in). */
export function clientsWithKey(key: string) {
  const t = createConnectTransport({
    baseUrl: location.origin,
    useBinaryFormat: true,
    interceptors: [
      (next) => async (req) => {
        req.header.set("Authorization", `Bearer ${key}`);
        return next(req);
      },
    ],
  });
  return { query: createClient(QueryService, t) };
}

/** Problem is an error sorted for the UI. */
export type ProblemKind = "unauthenticated" | "forbidden" | "notfound" | "invalid" | "toolarge" | "down" | "other";

export interface Problem {
  kind: ProblemKind;
  message: string;
}

/** problem sorts any error from a call. */
export function problem(err: unknown): Problem {
  const ce = ConnectError.from(err);
  const msg = ce.rawMessage;
  const network = ce.cause instanceof TypeError || /failed to fetch|networkerror|load failed|network error/i.test(msg);
  if (network || ce.code === Code.Unavailable) {
    return { kind: "down", message: network ? "The server cannot be reached." : `The server is unavailable: ${msg}` };
  }
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

// ---- flame graphs -------------------------------------------------------------

/** getFlameGraph calls QueryService.GetFlameGraph (Connect unary, binary)
 * with fetch and decodes the answer with the fast decoder in flame/wire.ts
 * rather than the generic one: the tree can be ~10^5 nodes. Errors are
 * ConnectErrors, as from the generated client. */
export async function getFlameGraph(req: MessageInitShape<typeof GetFlameGraphRequestSchema>, signal?: AbortSignal): Promise<WireFlameGraph> {
  const body = toBinary(GetFlameGraphRequestSchema, create(GetFlameGraphRequestSchema, req));
  return decodeFlameGraph(await postProto(`${QueryService.typeName}/${QueryService.method.getFlameGraph.name}`, body, true, signal));
}

/** getHeatmap calls QueryService.GetHeatmap as getFlameGraph does, with the
 * decoder in heatmap/wire.ts (numbers, not a bigint per cell). */
export async function getHeatmap(req: MessageInitShape<typeof GetHeatmapRequestSchema>, signal?: AbortSignal): Promise<WireHeatmap> {
  const body = toBinary(GetHeatmapRequestSchema, create(GetHeatmapRequestSchema, req));
  return decodeHeatmap(await postProto(`${QueryService.typeName}/${QueryService.method.getHeatmap.name}`, body, true, signal));
}

/** getSharedFlameGraph is getFlameGraph through a share link (no key). */
export async function getSharedFlameGraph(req: MessageInitShape<typeof GetSharedFlameGraphRequestSchema>, signal?: AbortSignal): Promise<WireFlameGraph> {
  const body = toBinary(GetSharedFlameGraphRequestSchema, create(GetSharedFlameGraphRequestSchema, req));
  return decodeSharedFlameGraph(await postProto(`${ShareService.typeName}/${ShareService.method.getSharedFlameGraph.name}`, body, false, signal));
}

/** getFleetFlameGraph is getFlameGraph for a fleet selection: the merged
 * flame graph, and the accounting of the profiles it merged. */
export async function getFleetFlameGraph(
  req: MessageInitShape<typeof GetFleetFlameGraphRequestSchema>,
  signal?: AbortSignal,
): Promise<{ graph: WireFlameGraph; accounting: Accounting }> {
  const body = toBinary(GetFleetFlameGraphRequestSchema, create(GetFleetFlameGraphRequestSchema, req));
  const res = decodeFleetFlameGraph(await postProto(`${FleetService.typeName}/${FleetService.method.getFleetFlameGraph.name}`, body, true, signal));
  return { graph: res.graph, accounting: fromBinary(AccountingSchema, res.accounting) };
}

// postProto makes a Connect unary call in protobuf binary with fetch and
// returns the answer's bytes.
async function postProto(procedure: string, body: Uint8Array, withKey: boolean, signal?: AbortSignal): Promise<Uint8Array> {
  const headers: Record<string, string> = { "Content-Type": "application/proto", "Connect-Protocol-Version": "1" };
  const key = apiKey();
  if (withKey && key) headers.Authorization = `Bearer ${key}`;
  let res: Response;
  let bytes: Uint8Array;
  try {
    res = await fetch(`${location.origin}/${procedure}`, { method: "POST", headers, body: body as BlobPart, signal });
    bytes = new Uint8Array(await res.arrayBuffer());
  } catch (e) {
    if (signal?.aborted) throw new ConnectError("cancelled", Code.Canceled);
    throw new ConnectError("Failed to fetch", Code.Unavailable, undefined, undefined, e);
  }
  if (res.status !== 200) throw connectErrorFrom(res.status, bytes);
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
  const body = toBinary(
    UploadFileRequestSchema,
    create(UploadFileRequestSchema, { metadata: { app: meta.app, host: meta.host, labels: meta.labels, filename: meta.filename }, data }),
  );
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", `${location.origin}/${IngestService.typeName}/${IngestService.method.uploadFile.name}`);
    xhr.responseType = "arraybuffer";
    xhr.setRequestHeader("Content-Type", "application/proto");
    xhr.setRequestHeader("Connect-Protocol-Version", "1");
    const key = apiKey();
    if (key) xhr.setRequestHeader("Authorization", `Bearer ${key}`);
    xhr.upload.onprogress = (e) => {
      if (e.lengthComputable) onProgress("sending", e.loaded / e.total);
    };
    xhr.upload.onload = () => onProgress("processing", 1);
    xhr.onerror = () => reject(new ConnectError("Failed to fetch", Code.Unavailable, undefined, undefined, new TypeError("network error")));
    xhr.onabort = () => reject(new ConnectError("upload cancelled", Code.Canceled));
    xhr.onload = () => {
      const bytes = new Uint8Array(xhr.response as ArrayBuffer);
      if (xhr.status === 200) {
        try {
          resolve(fromBinary(UploadFileResponseSchema, bytes));
        } catch (e) {
          reject(ConnectError.from(e));
        }
        return;
      }
      reject(connectErrorFrom(xhr.status, bytes));
    };
    signal?.addEventListener("abort", () => xhr.abort());
    xhr.send(new Blob([body as BlobPart]));
  });
}

// The Connect protocol's error body is JSON {"code": "not_found", "message": ...};
// without one, the HTTP status decides (as connect-web does).
function connectErrorFrom(status: number, body: Uint8Array): ConnectError {
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
    if (j.code && j.code in codes) return new ConnectError(j.message ?? j.code, codes[j.code]);
  } catch {
    // not JSON: fall through to the status
  }
  const byStatus: Record<number, Code> = { 400: Code.Internal, 401: Code.Unauthenticated, 403: Code.PermissionDenied, 404: Code.Unimplemented, 413: Code.ResourceExhausted, 429: Code.Unavailable, 502: Code.Unavailable, 503: Code.Unavailable, 504: Code.Unavailable };
  return new ConnectError(`HTTP ${status}`, byStatus[status] ?? Code.Unknown);
}

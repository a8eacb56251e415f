// The generated Connect clients and the request encoders, loaded by api.ts
// on first use rather than with the page: evaluating src/gen builds the
// protobuf descriptors (~30 ms), which must not delay the first heatmap.
// Every call sends the API key as a bearer token but the share service's,
// whose credential is the link's token.

import { create, fromBinary, toBinary, type DescMessage, type MessageInitShape } from "@bufbuild/protobuf";
import { createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { apiKey } from "./auth";
import { AdminService } from "./gen/fleetscope/v1/admin_pb";
import { CompareService } from "./gen/fleetscope/v1/compare_pb";
import { FleetService } from "./gen/fleetscope/v1/fleet_pb";
import { IngestService, UploadFileRequestSchema, UploadFileResponseSchema } from "./gen/fleetscope/v1/ingest_pb";
import { QueryService } from "./gen/fleetscope/v1/query_pb";
import { GetSharedFlameGraphRequestSchema, ShareService } from "./gen/fleetscope/v1/share_pb";

const auth: Interceptor = (next) => async (req) => {
  const key = apiKey();
  if (key) req.header.set("Authorization", `Bearer ${key}`);
  return next(req);
};

const transport = createConnectTransport({ baseUrl: location.origin, useBinaryFormat: true, interceptors: [auth] });

export const clients = {
  query: createClient(QueryService, transport),
  ingest: createClient(IngestService, transport),
  admin: createClient(AdminService, transport),
  fleet: createClient(FleetService, transport),
  compare: createClient(CompareService, transport),
  /** share reads through a share link: no key is sent, the token is the credential. */
  share: createClient(ShareService, createConnectTransport({ baseUrl: location.origin, useBinaryFormat: true })),
};

export type Clients = typeof clients;

/** withKey are clients that send key, one not saved yet (sign-in). */
export function withKey(key: string) {
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

/** Call is a method api.ts calls with fetch or XHR rather than through a
 * client (its answer is decoded by hand): its path and request encoder.
 * (GetHeatmap, GetFlameGraph and the fleet's GetFleetHeatmap and
 * GetFleetFlameGraph are encoded without the generated code:
 * src/requests.ts.) */
export interface Call<S extends DescMessage> {
  path: string;
  encode(req: MessageInitShape<S>): Uint8Array;
}

function call<S extends DescMessage>(service: { typeName: string }, method: { name: string }, schema: S): Call<S> {
  return { path: `${service.typeName}/${method.name}`, encode: (req) => toBinary(schema, create(schema, req)) };
}

export const calls = {
  sharedFlameGraph: call(ShareService, ShareService.method.getSharedFlameGraph, GetSharedFlameGraphRequestSchema),
  uploadFile: call(IngestService, IngestService.method.uploadFile, UploadFileRequestSchema),
};

export const decodeUploadFileResponse = (b: Uint8Array) => fromBinary(UploadFileResponseSchema, b);

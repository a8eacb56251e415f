// Package api is fleetscope's Connect API. It owns:
//
//   - one handler per service (ingest, query, fleet, compare, admin, share,
//     and Pyroscope's push and query), each in its own file, built by a
//     New… constructor returning the generated handler interface;
//   - the Pyroscope-compatible HTTP ingest endpoint (pyroscope.go) and the
//     OpenTelemetry profiles ingest, gRPC and OTLP/HTTP (otlp.go);
//   - Pyroscope's query API for Grafana's Pyroscope data source
//     (querier.go): unlike the other handlers it holds query logic of its
//     own, turning Pyroscope's model into fleetscope's: label selectors
//     parsed (selector.go) and resolved against the window's label sets
//     into fleet selections, one per app; profile types mapped to events
//     (profiletype.go); answers as flamebearer trees and series;
//   - the authentication interceptor that resolves an API key to a tenant
//     and scope before any handler runs (auth.go), and the gate that bounds
//     uploads in flight per key and per server (gate.go);
//   - the wire: Connect codecs with hand-written fast paths for writing the
//     large answers (protocodec.go, jsoncodec.go; measured against the
//     generated code by BenchmarkCodecs), the protobuf conversions
//     (convert.go), the HTTP client the command line's Connect clients use
//     (client.go), and the one table mapping fleetscope error codes to
//     Connect codes and HTTP statuses (errors.go).
//
// Apart from the querier, handlers translate between protobuf and the
// domain: the work is done by ingest, query and the stores behind the
// interfaces this package owns (Authenticator, AdminStore, ShareLinks).
// Handlers hold no state another replica needs.
package api

import (
	"context"

	"github.com/grafana/pyroscope/api/gen/proto/go/push/v1/pushv1connect"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/api/gen/fleetscope/v1/fleetscopev1connect"
)

// Public marks procedures that take no API key: share links, whose token
// is the credential.
const Public = ""

// Scopes says which scope each procedure needs. Every registered procedure
// must be listed: the interceptor refuses any other (deny by default).
var Scopes = map[string]string{
	fleetscopev1connect.AdminServiceGetTenantProcedure:           fleetscope.ScopeAdmin,
	fleetscopev1connect.AdminServiceListKeysProcedure:            fleetscope.ScopeAdmin,
	fleetscopev1connect.AdminServiceCreateKeyProcedure:           fleetscope.ScopeAdmin,
	fleetscopev1connect.AdminServiceRevokeKeyProcedure:           fleetscope.ScopeAdmin,
	fleetscopev1connect.AdminServiceDeleteProfileProcedure:       fleetscope.ScopeAdmin,
	fleetscopev1connect.AdminServiceUpdateProfileProcedure:       fleetscope.ScopeAdmin,
	fleetscopev1connect.AdminServiceListAuditEventsProcedure:     fleetscope.ScopeAdmin,
	fleetscopev1connect.AdminServiceCreateShareLinkProcedure:     fleetscope.ScopeAdmin,
	fleetscopev1connect.AdminServiceListShareLinksProcedure:      fleetscope.ScopeAdmin,
	fleetscopev1connect.AdminServiceRevokeShareLinkProcedure:     fleetscope.ScopeAdmin,
	fleetscopev1connect.ShareServiceGetSharedProfileProcedure:    Public,
	fleetscopev1connect.ShareServiceGetSharedHeatmapProcedure:    Public,
	fleetscopev1connect.ShareServiceGetSharedFlameGraphProcedure: Public,
	fleetscopev1connect.IngestServiceUploadProcedure:             fleetscope.ScopeIngest,
	fleetscopev1connect.IngestServiceUploadFileProcedure:         fleetscope.ScopeIngest,
	fleetscopev1connect.IngestServiceAppendLiveProcedure:         fleetscope.ScopeIngest,
	fleetscopev1connect.QueryServiceSearchProfilesProcedure:      fleetscope.ScopeRead,
	fleetscopev1connect.QueryServiceGetProfileProcedure:          fleetscope.ScopeRead,
	fleetscopev1connect.QueryServiceGetHeatmapProcedure:          fleetscope.ScopeRead,
	fleetscopev1connect.QueryServiceGetFlameGraphProcedure:       fleetscope.ScopeRead,
	fleetscopev1connect.QueryServiceGetHeatmapSeriesProcedure:    fleetscope.ScopeRead,
	fleetscopev1connect.QueryServiceGetSpansProcedure:            fleetscope.ScopeRead,
	fleetscopev1connect.FleetServiceGetFleetHeatmapProcedure:     fleetscope.ScopeRead,
	fleetscopev1connect.FleetServiceGetFleetHostsProcedure:       fleetscope.ScopeRead,
	fleetscopev1connect.FleetServiceGetFleetTimelineProcedure:    fleetscope.ScopeRead,
	fleetscopev1connect.FleetServiceGetFleetFlameGraphProcedure:  fleetscope.ScopeRead,
	fleetscopev1connect.CompareServiceGetDiffFlameGraphProcedure: fleetscope.ScopeRead,
	pushv1connect.PusherServicePushProcedure:                     fleetscope.ScopeIngest, // Pyroscope's push API
	OTLPProcedure:                                                fleetscope.ScopeIngest, // OpenTelemetry profiles (gRPC)
	// Pyroscope's query API, as far as Grafana's data source uses it (the
	// rest of QuerierService is unimplemented, so refused here).
	querierv1connect.QuerierServiceProfileTypesProcedure:           fleetscope.ScopeRead,
	querierv1connect.QuerierServiceLabelNamesProcedure:             fleetscope.ScopeRead,
	querierv1connect.QuerierServiceLabelValuesProcedure:            fleetscope.ScopeRead,
	querierv1connect.QuerierServiceSeriesProcedure:                 fleetscope.ScopeRead,
	querierv1connect.QuerierServiceSelectMergeStacktracesProcedure: fleetscope.ScopeRead,
	querierv1connect.QuerierServiceSelectSeriesProcedure:           fleetscope.ScopeRead,
}

type principalKey struct{}

// PrincipalFrom returns the authenticated principal of a request.
func PrincipalFrom(ctx context.Context) (fleetscope.Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(fleetscope.Principal)
	return p, ok
}

// principal returns the request's principal; EUNAUTHENTICATED if the
// interceptor set none (a procedure wired without it).
func principal(ctx context.Context) (fleetscope.Principal, error) {
	p, ok := PrincipalFrom(ctx)
	if !ok {
		return p, fleetscope.Errorf(fleetscope.EUNAUTHENTICATED, "not authenticated")
	}
	return p, nil
}

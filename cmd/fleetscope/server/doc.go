// Package server is the service's composition root, on the command side
// (fleetscope server): configuration, the stores (store/postgres, the
// blob store, store/lifecycle) wired to ingest, query and the API's
// handlers, the HTTP server (Connect API over HTTP/1.1 and cleartext
// HTTP/2, the health and metrics endpoints), background upkeep
// (retention, idle live streams) and graceful shutdown. Handlers live in
// package api, which imports no store; this package owns no business
// logic.
package server

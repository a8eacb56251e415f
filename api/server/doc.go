// Package server wires the fleetscope service together: configuration,
// the HTTP server (Connect API over HTTP/1.1 and cleartext HTTP/2, the
// health and metrics endpoints), and graceful shutdown. Handlers live in
// package api; storage in store; this package owns no business logic.
package server

// Package otlp converts OpenTelemetry profiles (OTLP, the
// opentelemetry.proto.profiles.v1development messages of
// opentelemetry-proto v1.10.0, as generated in the Go module
// go.opentelemetry.io/proto/slim/otlp/profiles/v1development v0.4.1) into
// perf script text, the text the live streams of package ingest join
// (fleetscope agent --live sends the same). It owns the mapping: which
// resource and sample attributes become the app, host, process, thread and
// labels, how the dictionary's stacks, locations, functions and mappings
// become frames, and which profiles are refused and why.
//
// Everything a request says is checked before it is used: every index
// into a dictionary table is bounds-checked (an index out of range is
// EINVALID naming the table and the index, never a panic), names are text
// without control characters, and the output is bounded (MaxSamples).
// Symbolization is not done: a location without a function name becomes
// "BINARY+0xADDR".
//
// Why the slim module: go.opentelemetry.io/proto/otlp v1.7.0 is the last
// release of that module with profiles/v1development, at
// opentelemetry-proto v1.7.0 (no stack_table: an older, incompatible
// dictionary). The later profiles messages are published as modules of
// their own; the Go module proxy serves the slim ones (the same messages,
// without gRPC stubs: fleetscope serves gRPC with Connect), which are the
// ones the Collector's pdata itself depends on.
package otlp

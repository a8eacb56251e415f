# fleetscope: `make run` and `make test` work from a fresh machine; each
# installs what it needs (Go tools via the Go module proxy, Debian packages
# via apt-get) and starts the local services it uses.

GO       ?= go
BIN      := $(CURDIR)/bin
SHARED   ?= $(CURDIR)/../shared
MINIO_VERSION := v0.0.0-20260212201848-7aac2a2c5b7c
BUF_VERSION   := v1.75.0
PROTOC_GEN_GO_VERSION := v1.36.12
CONNECT_VERSION := v1.21.1
PG_URL   ?= postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable
FUZZTIME ?= 3s
FUZZTIME_LONG ?= 2m

ORIGINAL_PATH := $(PATH)
export PATH := $(BIN):$(PATH)

# The shared corpus (../shared beside the repository). CI sets
# FLEETSCOPE_TEST_REQUIRE=1: a missing fixture then fails its test. A clone
# with ../shared beside it requires it too; a plain clone skips the tests
# that need it and says so once.
SHARED_OK := $(shell test -d '$(SHARED)/corpus' && echo 1)
FLEETSCOPE_TEST_REQUIRE ?= $(SHARED_OK)
export FLEETSCOPE_SHARED := $(abspath $(SHARED))

.PHONY: build install test test-deps test-citus citus fuzz fuzz-brief bench pgo run stop postgres tools generate check-generated check-deps docs-cli check-docs web perf clean

# Static, as the image builds it (deploy/Dockerfile): Go's own DNS resolver
# and user lookup instead of libc's, and no dynamic loader at every start
# (each CLI command starts ~0.8 ms sooner).
build:
	CGO_ENABLED=0 $(GO) build -o $(BIN)/fleetscope ./cmd/fleetscope

# The binary on PATH: go install puts it in $GOBIN, or else in the first
# GOPATH's bin (~/go/bin by default); says where, and whether that is on PATH.
install:
	CGO_ENABLED=0 $(GO) install ./cmd/fleetscope
	@dir=$$($(GO) env GOBIN); dir=$${dir:-$$($(GO) env GOPATH | cut -d: -f1)/bin}; \
	echo "installed $$dir/fleetscope"; \
	case ":$(ORIGINAL_PATH):" in *":$$dir:"*) ;; \
	*) echo "$$dir is not on your PATH: add it (export PATH=\"$$dir:\$$PATH\") or run $$dir/fleetscope";; esac

# MinIO for the blob store tests, built from the Go module proxy once and
# kept under ./bin (about 5 minutes cold on 2 cores).
$(BIN)/minio:
	GOBIN=$(BIN) $(GO) install github.com/minio/minio@$(MINIO_VERSION)

# Start the machine's Postgres cluster if it is down.
postgres:
	@pg_isready -q -h 127.0.0.1 -p 5432 || pg_ctlcluster --skip-systemctl-redirect $$(ls /etc/postgresql) main start
	@for i in $$(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && exit 0; sleep 1; done; echo "postgres did not come up" >&2; exit 1

# Code generators for the API, pinned; buf runs them as local plugins.
$(BIN)/buf:
	GOBIN=$(BIN) $(GO) install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
$(BIN)/protoc-gen-go:
	GOBIN=$(BIN) $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
$(BIN)/protoc-gen-connect-go:
	GOBIN=$(BIN) $(GO) install connectrpc.com/connect/cmd/protoc-gen-connect-go@$(CONNECT_VERSION)

# linux-perf for the agent's real-recording tests (they skip, saying so,
# where perf cannot be installed or is not permitted).
perf:
	@command -v perf >/dev/null || { apt-get update -qq && apt-get install -y -qq linux-perf; } || echo "linux-perf not installed: the real-perf agent tests will skip" >&2

tools: $(BIN)/minio $(BIN)/buf $(BIN)/protoc-gen-go $(BIN)/protoc-gen-connect-go

# What the Go tests drive besides Postgres and MinIO: Debian's chromium (the
# exported SVG's script) and the dashboard's npm packages (speedscope's file
# format schema validates the speedscope export).
test-deps:
	@test -x /usr/bin/chromium || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; }
	bash web/scripts/build.sh --deps

# Regenerate api/gen from api/fleetscope/v1/*.proto.
generate: $(BIN)/buf $(BIN)/protoc-gen-go $(BIN)/protoc-gen-connect-go
	cd api && buf lint && buf generate

# Fails if the committed generated code is not what the protos produce.
check-generated: generate
	git diff --exit-code -- api/gen
	@test -z "$$(git status --porcelain -- api/gen)" || { echo "untracked files in api/gen" >&2; exit 1; }

# The architecture's one-way data flow (store/ and ingest/ import no query
# package; api/ no store but through ingest and query) and a tidy go.mod.
check-deps:
	@if $(GO) list -deps ./store/... ./ingest/... | grep 'fleetscope/fleetscope/query'; then \
		echo "store/ or ingest/ imports a query package (data flows api -> ingest -> store -> query)" >&2; exit 1; fi
	@if $(GO) list -deps ./api/... | grep -E 'fleetscope/fleetscope/(store/postgres|store/lifecycle|store/blob/s3|store/blob/localfs)$$'; then \
		echo "api/ imports a store directly (only the composition root, cmd/fleetscope/server, wires stores)" >&2; exit 1; fi
	$(GO) mod tidy -diff

# The CLI reference (docs/cli, one page per command), generated from the
# cobra command tree by cmd/fleetscope/gendocs.go (built only with the
# gendocs tag, so the binary does not change). Run after changing a
# command's flags or help text, and commit docs/cli.
docs-cli:
	$(GO) run -tags gendocs ./cmd/fleetscope docs/cli

# Fails if docs/cli is not what the commands generate, or if a file speaks
# of the project's working history instead of the product (git log keeps
# that). The brackets keep the pattern from matching this Makefile.
check-docs: docs-cli
	git diff --exit-code -- docs/cli
	@test -z "$$(git status --porcelain -- docs/cli)" || { echo "untracked or deleted files in docs/cli: run make docs-cli and commit docs/cli" >&2; git status --short -- docs/cli >&2; exit 1; }
	@if git grep --untracked -n -i -E '(first|second|third|fourth|fifth)[ ]session|session[ ]notes|figures[ ]by[ ]session'; then \
		echo "the files above speak of working sessions: say what the product does, git log keeps the history" >&2; exit 1; fi

# The test command (README): vet, unit and integration tests against real
# Postgres and MinIO, then each fuzz target briefly.
test: build tools test-deps postgres perf check-generated check-deps check-docs
	@test -n '$(SHARED_OK)' || echo "make test: $(SHARED) not found: the tests that need the shared corpus are skipped (go test -v names them); FLEETSCOPE_TEST_REQUIRE=1 makes them fail"
	$(GO) vet ./...
	FLEETSCOPE_TEST_REQUIRE=$(FLEETSCOPE_TEST_REQUIRE) FLEETSCOPE_TEST_MINIO=$(BIN)/minio FLEETSCOPE_TEST_DATABASE_URL='$(PG_URL)' \
		$(GO) test -count=1 -timeout 30m ./...
	$(MAKE) --no-print-directory fuzz-brief FUZZTIME=$(FUZZTIME)
	PG_URL='$(PG_URL)' SHARED=$(SHARED) bash web/scripts/test.sh

# Citus (distributed Postgres): $(SHARED)/tools/citus.sh builds Citus 13.2
# from ../shared/vendor into this machine's Postgres (1 to 2.5 minutes on 2
# cores, once: the build is kept where Postgres loads it, and a second build
# does nothing) and runs 1 coordinator + 2 workers on 127.0.0.1:5441-5443,
# their data under CITUS_DIR (citus.sh's default, /tmp/citus: the postgres
# user must be able to reach it). A cluster already up is reused;
# `$(SHARED)/tools/citus.sh down` stops it.
CITUS_SH   := $(SHARED)/tools/citus.sh
CITUS_PORT ?= 5441
CITUS_URL  := postgres://postgres@127.0.0.1:$(CITUS_PORT)/postgres?sslmode=disable
export CITUS_PORT

citus:
	@test -f '$(CITUS_SH)' || { echo "make citus: $(CITUS_SH) not found (../shared beside the repository)" >&2; exit 1; }
	bash '$(CITUS_SH)' build
	@if [ "$$(psql -qAt '$(CITUS_URL)' -c 'SELECT count(*) FROM pg_dist_node WHERE groupid <> 0 AND isactive' 2>/dev/null || echo 0)" -ge 1 ]; then \
		echo "citus: cluster already up at $(CITUS_URL)"; else bash '$(CITUS_SH)' up; fi

# The Postgres-backed tests again, on the Citus cluster: pgtest makes each
# test database on every node and Migrate distributes it; the store tests
# (TestCitusDistribution among them: it is skipped elsewhere), the API and
# the end-to-end and tenant isolation tests of the server binary.
# FLEETSCOPE_TEST_CITUS=1: a server that is not a Citus coordinator fails.
test-citus: citus $(BIN)/minio perf
	FLEETSCOPE_TEST_CITUS=1 FLEETSCOPE_TEST_REQUIRE=$(FLEETSCOPE_TEST_REQUIRE) FLEETSCOPE_TEST_MINIO=$(BIN)/minio \
		FLEETSCOPE_TEST_DATABASE_URL='$(CITUS_URL)' $(GO) test -count=1 -timeout 30m ./store/... ./api/... ./cmd/fleetscope/

# Each fuzz target of every parser package under ingest/ for FUZZTIME
# (.ci/fuzz: a target stopped only by Go's fuzztime deadline race is run
# once more).
fuzz-brief:
	@GO='$(GO)' FUZZTIME='$(FUZZTIME)' bash .ci/fuzz

fuzz:
	$(MAKE) --no-print-directory fuzz-brief FUZZTIME=$(FUZZTIME_LONG)

bench: build
	SHARED=$(SHARED) bash .ci/bench
	SHARED=$(SHARED) bash web/scripts/bench.sh

# Regenerate cmd/fleetscope/default.pgo, the CPU profile Go's compiler
# optimizes the server for (profile-guided optimization, used by every
# go build of ./cmd/fleetscope): the server's profiles of a 2-hour
# continuous fleet benchmark (its ingest and each query), merged. Needs
# what make bench needs (Postgres, ../shared, exported above as an
# absolute FLEETSCOPE_SHARED: the test runs in cmd/fleetscope).
PGO_DIR ?= $(CURDIR)/.data/pgo
pgo: tools
	rm -rf '$(PGO_DIR)' && mkdir -p '$(PGO_DIR)'
	FLEETSCOPE_TEST_REQUIRE=1 FLEETSCOPE_BENCH_HOURS=2 FLEETSCOPE_BENCH_PROFILES='$(PGO_DIR)' \
		$(GO) test -run '^$$' -bench '^BenchmarkContinuousFleet$$' -benchtime 1x -timeout 60m ./cmd/fleetscope/
	$(GO) tool pprof -proto '$(PGO_DIR)'/*.pprof > cmd/fleetscope/default.pgo

# Rebuild the dashboard (web/dist, committed) from web/src with npm.
web:
	bash web/scripts/build.sh

# Server and UI on embedded defaults (FLEETSCOPE_ADDR, default
# 127.0.0.1:8080): a private Postgres under ./.data on 127.0.0.1:54329 or
# the next free port (installed with apt-get if absent), blobs in
# ./.data/blobs, a default tenant and a printed key (also in
# ./.data/api-key). Ctrl-C stops the server, not Postgres: make stop does.
run: build
	bash deploy/run-local.sh

# Stop the private Postgres that make run started (it outlives the server).
stop:
	bash deploy/run-local.sh stop

clean:
	rm -rf $(BIN)

# fleetscope: `make run` and `make test` work from a fresh machine; each
# installs what it needs (Go tools via the Go module proxy, Debian packages
# via apt-get) and starts the local services it uses.

GO       ?= go
BIN      := $(CURDIR)/bin
SHARED   ?= $(CURDIR)/../shared
MINIO_VERSION := v0.0.0-20260212201848-7aac2a2c5b7c
PG_URL   ?= postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable
FUZZTIME ?= 3s
FUZZTIME_LONG ?= 2m

export PATH := $(BIN):$(PATH)

.PHONY: build test unit fuzz fuzz-brief bench run postgres tools clean

build:
	$(GO) build -o $(BIN)/fleetscope ./cmd/fleetscope

# MinIO for the blob store tests, built from the Go module proxy once and
# kept under ./bin (about 5 minutes cold on 2 cores).
$(BIN)/minio:
	GOBIN=$(BIN) $(GO) install github.com/minio/minio@$(MINIO_VERSION)

# Start the machine's Postgres cluster if it is down.
postgres:
	@pg_isready -q -h 127.0.0.1 -p 5432 || pg_ctlcluster --skip-systemctl-redirect $$(ls /etc/postgresql) main start
	@for i in $$(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && exit 0; sleep 1; done; echo "postgres did not come up" >&2; exit 1

tools: $(BIN)/minio

# The test command (README): vet, unit and integration tests against real
# Postgres and MinIO, then each fuzz target briefly.
test: build tools postgres
	$(GO) vet ./...
	FLEETSCOPE_TEST_REQUIRE=1 FLEETSCOPE_TEST_MINIO=$(BIN)/minio FLEETSCOPE_TEST_DATABASE_URL='$(PG_URL)' \
		$(GO) test -count=1 -timeout 30m ./...
	$(MAKE) --no-print-directory fuzz-brief FUZZTIME=$(FUZZTIME)

# Each fuzz target for FUZZTIME.
fuzz-brief:
	@for t in $$($(GO) test -list '^Fuzz' ./ingest/perf/ | grep '^Fuzz'); do \
		echo "fuzz $$t ($(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) ./ingest/perf/ || exit 1; \
	done

fuzz:
	$(MAKE) --no-print-directory fuzz-brief FUZZTIME=$(FUZZTIME_LONG)

bench: build
	SHARED=$(SHARED) bash .ci/bench

clean:
	rm -rf $(BIN)

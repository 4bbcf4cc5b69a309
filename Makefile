# Argosy's build. `make test` runs every test, starting the real servers it
# needs by itself: an Apache Kafka broker from Maven Central's jars, etcd,
# kube-apiserver and Argo CD built from their Go modules (make kube-tools),
# PostgreSQL from Debian's packages (make test-tools), and a Python virtual
# environments with PyPI's packages pinned in
# events/internal/pyreader/requirements.txt and (Schemathesis, the OpenAPI
# fuzzer of hub.TestOpenAPIFuzz) hub/testdata/schemathesis/requirements.txt.
# Tools, jars and environments are cached under $(CACHE), never in the
# repository.

GO        ?= go
SHELL     := bash
CACHE     ?= $(or $(ARGOSY_CACHE),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/argosy)
BIN       := $(CACHE)/bin
export ARGOSY_CACHE := $(CACHE)
# Strimzi's CRDs are not ours to commit; use the copy beside the repository.
STRIMZI_CRDS := $(abspath ../shared/crds/strimzi-1.2.0)
export ARGOSY_STRIMZI_CRDS ?= $(if $(wildcard $(STRIMZI_CRDS)),$(STRIMZI_CRDS))

GOLANGCI_LINT_VERSION := v2.15.0
BENCHSTAT_VERSION     := v0.0.0-20260908200009-22c9c6c9d4da
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse --short HEAD 2>/dev/null)
LDFLAGS   := -X github.com/argosyproj/argosy/internal/version.Version=$(VERSION) \
             -X github.com/argosyproj/argosy/internal/version.Commit=$(COMMIT)

# Tests that need real servers carry this build tag.
INTEGRATION := -tags integration
FUZZTIME    ?= 60s
# Examples per operation and phase of the OpenAPI fuzzer under make fuzz;
# make test runs it with the test's own small budget.
OPENAPI_FUZZ_EXAMPLES ?= 400
BENCHCOUNT  ?= 1

.PHONY: all build run dev-soak test test-unit test-integration test-argocd-ui fuzz bench bench-fleet lint generate verify tools test-tools kube-tools clean

all: build

build: ## Build bin/argosy, bin/argosy-hub, bin/argosy-spoke and bin/argosy-dev (what argosy dev runs; not released).
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/argosy ./cmd/argosy
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/argosy-hub ./cmd/argosy-hub
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/argosy-spoke ./cmd/argosy-spoke
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/argosy-dev ./cmd/argosy-dev

run: ## Run the whole system with a simulated fleet (argosy dev; ARGS="--clusters 50", say). Needs only Go.
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/ ./cmd/argosy ./cmd/argosy-dev
	@echo 'bin/argosy is built: put bin/ on your PATH (export PATH="$$PWD/bin:$$PATH") to use it from another terminal.'
	bin/argosy dev $(ARGS)

dev-soak: build ## Run argosy-dev with SOAK_CLUSTERS (1000) clusters for SOAK_FOR seconds (3600), sampling memory, goroutines and open files every SOAK_EVERY (60) to a CSV (docs/dev.md).
	SOAK_BIN=bin/argosy-dev cmd/argosy-dev/soak.sh

# A package's tests may take this long: the dashboard's browser tests at
# fleet scale take 8 minutes on two busy cores, near go test's default 10.
TEST_TIMEOUT ?= 20m
# How many packages' tests run at once. Most of a real-server test's time
# is spent waiting on its servers (Argo CD's controller, the broker, the
# browser), so two cores run four packages at once (docs/testing.md).
TEST_PACKAGES ?= 4

test: test-tools kube-tools ## Run every test: unit, integration (real Kafka, Kubernetes, Argo CD, PostgreSQL), schema and golden checks.
	$(GO) test -race -count=1 -p $(TEST_PACKAGES) -timeout $(TEST_TIMEOUT) $(INTEGRATION) ./...

test-unit: test-tools ## Run the tests that need no server.
	$(GO) test -race -count=1 ./...

test-integration: test-tools kube-tools ## Run the packages whose tests use real servers.
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) $(INTEGRATION) ./deploy/... ./events/... ./bench/... ./internal/testenv/kubetest/... ./internal/testenv/kafkatest/... ./internal/kafkaconn/... ./internal/testenv/pgtest/... ./spoke/... ./cmd/... ./projector/... ./hub/...

test-argocd-ui: test-tools kube-tools ## Open the stock Argo CD UI, built into ARGOCD_UI (Argo CD's ui/dist/app), in Chromium over the mirror; with SCREENSHOTS=dir, save its pages there (docs/testing.md).
	@test -n "$(ARGOCD_UI)" || { echo "ARGOCD_UI must name a build of Argo CD's web UI, the directory of its index.html (docs/testing.md)" >&2; exit 2; }
	ARGOSY_ARGOCD_UI="$(abspath $(ARGOCD_UI))" ARGOSY_SCREENSHOTS="$(if $(SCREENSHOTS),$(abspath $(SCREENSHOTS)))" \
	  $(GO) test -count=1 -timeout $(TEST_TIMEOUT) -tags integration,argocdui -run 'TestStockArgoCDUIShowsTheFleet' -v ./cmd/argosy-hub/internal/cli/

kube-tools: test-tools ## Build and cache etcd, kube-apiserver, kubectl, kube-controller-manager, Argo CD and helm.
	$(GO) run ./internal/testenv/kubetest/build >/dev/null

fuzz: test-tools ## Run every fuzz target for FUZZTIME each (default 60s), then the OpenAPI fuzzer against a real hub and read API with OPENAPI_FUZZ_EXAMPLES examples per operation (default 400).
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$f ($(FUZZTIME))"; \
	    $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 5s $$pkg; \
	  done; \
	done
	@echo "== ./hub TestOpenAPIFuzz ($(OPENAPI_FUZZ_EXAMPLES) examples)"
	ARGOSY_OPENAPI_FUZZ_EXAMPLES=$(OPENAPI_FUZZ_EXAMPLES) $(GO) test -race -count=1 $(INTEGRATION) -timeout 2h -run '^TestOpenAPIFuzz$$' -v ./hub/

bench: test-tools ## Run the micro-benchmarks and the Kafka throughput benchmarks.
	$(GO) test $(INTEGRATION) -run '^$$' -bench . -benchmem -count $(BENCHCOUNT) ./... | tee bench.txt
	@echo "compare runs with: $(BIN)/benchstat old.txt bench.txt"

FLEET_SIZES ?= 100,1000,10000
FLEET_ARGS  ?=

bench-fleet: build ## Run the fleet benchmark (docs/bench.md) on a real Kafka: FLEET_SIZES clusters; writes bench/results/DATE.md.
	$(GO) run ./bench/fleet -sizes $(FLEET_SIZES) $(FLEET_ARGS)

lint: $(BIN)/golangci-lint ## Run golangci-lint (config: .golangci.yml).
	$(BIN)/golangci-lint run ./...

generate: ## Write golden wire samples for event types that have none, the hub's copies of Argo CD's CRDs, the dashboard's pinned npm assets and the browser test's axe-core.
	$(GO) run ./events/internal/golden/gen -dir events/testdata/golden
	$(GO) generate ./hub/... ./deploy/...

# Files that generate writes.
GENERATED := events/testdata hub/internal/validate/crds hub/web/static/vendor hub/web/testdata/axe deploy/strimzi

verify: generate ## Fail if go.mod, go.sum or generated files are stale.
	$(GO) mod tidy
	@git diff --exit-code -- go.mod go.sum $(GENERATED) || { echo "stale: commit the changes above"; exit 1; }
	@test -z "$$(git status --porcelain -- $(GENERATED))" || { git status --porcelain -- $(GENERATED); echo "new generated files: commit them"; exit 1; }

tools: $(BIN)/golangci-lint $(BIN)/benchstat

# The tests run java and mvn (the Kafka broker under test), npm (the
# AsyncAPI specification schema ships in an npm package), git and
# redis-server (Argo CD under test), chromium (the web dashboard's browser
# tests, internal/testenv/browsertest), PostgreSQL's initdb and postgres
# (internal/testenv/pgtest), and python3 with its venv module (the Python
# reader of events/internal/pyreader, whose environment the test makes).
# Missing ones are installed with apt-get on Debian as root; elsewhere this
# says what to install.
TEST_TOOLS := java:openjdk-17-jre-headless mvn:maven npm:npm git:git redis-server:redis-server chromium:chromium
# Debian keeps PostgreSQL's server binaries off PATH, in
# /usr/lib/postgresql/<major>/bin; ARGOSY_PG_BIN names another directory.
PG_INITDB  := $(if $(ARGOSY_PG_BIN),$(ARGOSY_PG_BIN)/initdb,/usr/lib/postgresql/*/bin/initdb)
test-tools: ## Install java, mvn, npm, git, redis-server, chromium, PostgreSQL and python3 with venv if they are missing (Debian, as root).
	@missing=; for t in $(TEST_TOOLS); do command -v $${t%%:*} >/dev/null || missing="$$missing $${t#*:}"; done; \
	compgen -G '$(PG_INITDB)' >/dev/null || missing="$$missing postgresql"; \
	python3 -c 'import venv, ensurepip' 2>/dev/null || missing="$$missing python3 python3-venv"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing$$missing"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "missing tools, please install:$$missing (Java 17+, Maven, npm, git, redis, Chromium, PostgreSQL 13+ server, Python 3.10+ with venv; or set ARGOSY_PG_BIN)"; exit 1; fi; \
	fi

$(BIN)/golangci-lint:
	GOBIN=$(BIN) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION)

$(BIN)/benchstat:
	GOBIN=$(BIN) $(GO) install golang.org/x/perf/cmd/benchstat@$(BENCHSTAT_VERSION)

clean:
	rm -rf bin bench.txt

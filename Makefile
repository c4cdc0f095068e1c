# idlegrid developer tasks. `make help` lists them.
GO      ?= go
PKGS    ?= ./...
BIN     ?= bin/idlegrid

.PHONY: help build install test test-short check fmt vet staticcheck devnet bench fuzz clean

help: ## show this help
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## build the idlegrid binary into bin/
	$(GO) build -o $(BIN) ./cmd/idlegrid

install: ## install idlegrid into $(go env GOBIN), else $(go env GOPATH)/bin: put that on PATH
	$(GO) install ./cmd/idlegrid
	@dir=$$($(GO) env GOBIN); [ -n "$$dir" ] || dir=$$($(GO) env GOPATH)/bin; \
	echo "installed $$dir/idlegrid"; \
	case ":$$PATH:" in *":$$dir:"*) ;; *) echo "add it to PATH: export PATH=\"$$dir:\$$PATH\"";; esac

# One package at a time: the multi-process tests (real binaries, Docker) and
# the 30-node in-process clusters each load both cores of a CI machine, and
# running them side by side starves them into timeouts.
# The race detector runs on every package but the two that start whole
# networks (in-process clusters, real binaries): it slows each node five- to
# tenfold on a 2-core CI machine, turning their timing into flakes, and the
# code they drive is raced in its own packages' tests (the rooms' unit
# tests). Those two run without it, the large cluster test last.
RACE_PKGS = $$($(GO) list $(PKGS) | grep -v -e '/node/nodetest$$' -e '/cmd/idlegrid$$')
test: ## run every test (what CI runs): race detector on, except for the network packages
	$(GO) test -race -count=1 -p 1 -timeout 30m $(RACE_PKGS)
	$(GO) test -count=1 -p 1 -timeout 30m ./node/nodetest ./cmd/idlegrid

test-short: ## run the fast tests only (skips multi-process tests)
	$(GO) test -short -count=1 $(PKGS)

check: fmt vet staticcheck test ## gofmt, go vet, staticcheck (when installed), tests

fmt: ## fail if any file needs gofmt
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet: ## go vet, with and without cgo
	$(GO) vet $(PKGS)
	CGO_ENABLED=0 $(GO) vet $(PKGS)

staticcheck: ## staticcheck, if it is installed
	@if command -v staticcheck >/dev/null 2>&1; then staticcheck $(PKGS); \
	else echo "staticcheck not installed; skipping (go install honnef.co/go/tools/cmd/staticcheck@latest)"; fi

devnet: ## run a local network: bootstrap, 3 providers, 1 renter
	$(GO) run ./cmd/idlegrid devnet

bench: ## run the benchmarks recorded in docs/benchmarks.md
	$(GO) test -run '^$$' -bench . -benchtime=1x $(PKGS)

fuzz: ## run every fuzz target for 30s each
	scripts/fuzz.sh 30s

clean: ## remove build output
	rm -rf bin

# idlegrid developer tasks. `make help` lists them.
GO      ?= go
PKGS    ?= ./...
BIN     ?= bin/idlegrid

# VERSION is node.Version in the binary and the package's version: the
# newest v* tag (v1.2.3 -> 1.2.3; 4 commits later 1.2.3+4.gabcdef1, which
# sorts after 1.2.3 for dpkg), else the default in node/version.go with the
# commit (0.1.0-dev+g1a2b3c4d5e6f). `make VERSION=1.2.3 package` overrides.
ifndef VERSION
VERSION := $(shell git describe --tags --match 'v[0-9]*' 2>/dev/null | sed -E 's/^v//; s/-([0-9]+)-g([0-9a-f]+)$$/+\1.g\2/')
ifeq ($(VERSION),)
VERSION := 0.1.0-dev$(patsubst %,+g%,$(shell git rev-parse --short=12 HEAD 2>/dev/null))
endif
endif
LDFLAGS := -X github.com/idlegrid/idlegrid/node.Version=$(VERSION)

# Packages: ARCH is a GOARCH. The binary needs cgo for NVML, so an arch
# other than the host's needs a cross compiler, e.g.
#   make package ARCH=arm64 CC=aarch64-linux-gnu-gcc
ARCH    ?= $(shell $(GO) env GOARCH)
DIST    ?= dist
NFPM    ?= $(GO) run github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2
# Docker tags allow no "+": 0.1.0-dev+gabc becomes 0.1.0-dev_gabc.
IMAGE   ?= idlegrid:$(subst +,_,$(VERSION))

.PHONY: help build install test test-short check fmt vet staticcheck devnet bench fuzz clean package docker-image release

help: ## show this help
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## build the idlegrid binary into bin/
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/idlegrid

# nfpm runs through `go run` at a pinned version so go.mod does not carry
# it; deploy/nfpm.yaml reads the IDLEGRID_* variables. No -trimpath here or
# in docker-image: flags that change how packages compile would make these
# builds miss the cache of plain go build and go vet (CI's, a developer's),
# and compile all of idlegrid again for one binary.
package: ## build the .deb into dist/ (ARCH: the host's GOARCH by default; deploy/nfpm.yaml)
	@mkdir -p $(DIST)/$(ARCH)
	CGO_ENABLED=1 GOOS=linux GOARCH=$(ARCH) $(GO) build -ldflags '-s -w $(LDFLAGS)' -o $(DIST)/$(ARCH)/idlegrid ./cmd/idlegrid
	IDLEGRID_VERSION=$(VERSION) IDLEGRID_ARCH=$(ARCH) IDLEGRID_BIN=$(DIST)/$(ARCH)/idlegrid \
		$(NFPM) package --config deploy/nfpm.yaml --packager deb --target $(DIST)/

# The image has nothing but a static binary (no cgo, so no NVML: see
# deploy/docker/Dockerfile) and Go's own tz database for [costs].time_zone
# (the Dockerfile points ZONEINFO at it; the timetzdata tag would recompile
# everything that imports time).
docker-image: ## build the provider daemon's image FROM scratch (IMAGE=idlegrid:VERSION)
	@rm -rf $(DIST)/docker && mkdir -p $(DIST)/docker/rootfs/tmp $(DIST)/docker/rootfs/var/lib/idlegrid $(DIST)/docker/rootfs/usr/share
	@chmod 1777 $(DIST)/docker/rootfs/tmp
	cp "$$($(GO) env GOROOT)/lib/time/zoneinfo.zip" $(DIST)/docker/rootfs/usr/share/zoneinfo.zip
	CGO_ENABLED=0 GOOS=linux $(GO) build -ldflags '-s -w $(LDFLAGS)' -o $(DIST)/docker/rootfs/usr/bin/idlegrid ./cmd/idlegrid
	docker build -f deploy/docker/Dockerfile -t $(IMAGE) $(DIST)/docker

# Release archives: the Linux binary of the host's arch (with cgo, for
# NVML: providers run here) and the renter's desktops, cross-compiled
# without cgo (no NVML off Linux; a Mac or a Windows PC rents, or offers
# CPU and WASM). No -trimpath, as in package: the compile cache of go
# build and go vet stays valid. Each archive holds the binary, README and
# LICENSE; SHA256SUMS lists them all. Windows gets a .zip (the zip tool).
RELEASE_TARGETS ?= linux/$(ARCH) darwin/arm64 darwin/amd64 windows/amd64
release: ## build archives for Linux, macOS (arm64, amd64) and Windows (amd64), and SHA256SUMS, into dist/release
	@rm -rf $(DIST)/release && mkdir -p $(DIST)/release
	@set -e; for t in $(RELEASE_TARGETS); do \
		os=$${t%/*}; arch=$${t#*/}; name=idlegrid_$(VERSION)_$${os}_$${arch}; dir=$(DIST)/release/$$name; \
		exe=idlegrid; cgo=0; \
		if [ $$os = windows ]; then exe=idlegrid.exe; fi; \
		if [ $$os = linux ] && [ $$arch = $$($(GO) env GOARCH) ]; then cgo=1; fi; \
		mkdir -p $$dir; \
		echo "build $$os/$$arch (CGO_ENABLED=$$cgo)"; \
		CGO_ENABLED=$$cgo GOOS=$$os GOARCH=$$arch $(GO) build -ldflags '-s -w $(LDFLAGS)' -o $$dir/$$exe ./cmd/idlegrid; \
		cp README.md LICENSE $$dir/; \
		if [ $$os = windows ]; then (cd $(DIST)/release && zip -qr $$name.zip $$name); \
		else tar -C $(DIST)/release -czf $(DIST)/release/$$name.tar.gz $$name; fi; \
		rm -rf $$dir; \
	done
	cd $(DIST)/release && sha256sum idlegrid_* > SHA256SUMS && cat SHA256SUMS

install: ## install idlegrid into $(go env GOBIN), else $(go env GOPATH)/bin: put that on PATH
	$(GO) install -ldflags '$(LDFLAGS)' ./cmd/idlegrid
	@dir=$$($(GO) env GOBIN); [ -n "$$dir" ] || dir=$$($(GO) env GOPATH)/bin; \
	echo "installed $$dir/idlegrid"; \
	case ":$$PATH:" in *":$$dir:"*) ;; *) echo "add it to PATH: export PATH=\"$$dir:\$$PATH\"";; esac

# The race-enabled packages run one at a time: under the detector each
# loads both cores of a CI machine. node/nodetest and cmd/idlegrid, without
# it, run side by side (-p 2): the clusters spend most of their time waiting
# on bid and attestation windows (about a fifth of a core on average) and
# the real binaries on Docker and their own processes, so together they
# take about as long as the longer of the two (461 s against 892 s one after
# the other, docs/testing.md).
# The race detector runs on every package, and on the small clusters of
# node/nodetest listed in RACE_CLUSTER (three to six in-process nodes each:
# auction, lease, job, payment and fraud flows). The rest of node/nodetest
# (clusters of 10 to 100 nodes and the hostile-peer floods) and
# cmd/idlegrid (real binaries in their own processes, which a race-enabled
# test binary does not instrument) run without it: docs/testing.md lists
# them and why.
RACE_PKGS = $$($(GO) list $(PKGS) | grep -v -e '/node/nodetest$$' -e '/cmd/idlegrid$$')
RACE_CLUSTER = TestCheapestFeasibleBidWins|TestDeclinedAwardPassesToNextBest|TestLosingBidsReleaseTheirGPUs|TestMicroPoolAcrossProviders|TestWASMJobEndToEnd|TestCancelRunningJob|TestCPUOnlyLeaseIsPaidByTime|TestHonestTelemetryIsPaid|TestRenterStopsPayingProviderStopsWork|TestCheatingTelemetryIsCaught|TestForkedChainBlockedByEveryNode|TestWrongResultProvenAndExcluded|TestFalseWrongResultProofCostsItsSender|TestReplicasCatchACheater|TestReplicasDisagreeOnDocker|TestReplicaCPUCheaterNotPaidItsLastStretch|TestPreemptedReplicaIsReplacedAlone
test: ## run every test (what CI runs): race detector on, except for the large clusters and the real binaries
	$(GO) test -race -count=1 -p 1 -timeout 30m $(RACE_PKGS)
	$(GO) test -race -count=1 -timeout 30m -run '^($(RACE_CLUSTER))$$' ./node/nodetest
	$(GO) test -count=1 -p 2 -timeout 30m -skip '^($(RACE_CLUSTER))$$' ./node/nodetest ./cmd/idlegrid

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
	rm -rf bin $(DIST)

# superfluid — build, run and test. `make run` and `make test` work on a fresh Debian 12 machine
# (as root, or with sudo): scripts/setup.sh installs the build dependencies first.

GO       ?= go
# make run starts the desktop app over the whole catalog (the bundled stories260K on a fresh
# machine; with no display, the server alone); MODEL=... serves and loads that model at start (a
# catalog id, a .gguf path or hf.co/OWNER/REPO:QUANT).
MODEL    ?=
# make bench measures one model file; the bundled model is always there.
BENCH_MODEL ?= $(or $(MODEL),assets/stories260K.gguf)
ARGS     ?=
# Headers llama.cpp's cgo build needs but the module zip lacks. A fixed path (not inside the
# checkout) keeps the cgo build cache valid across clones: a different -I would rebuild llama.cpp.
INCLUDE  := $(HOME)/.cache/superfluid/include

# CPU target. native: this machine's instruction set (AVX2/AVX-512, and AMX kernels on CPUs that
# have AMX, which ggml's cgo packages otherwise leave out). portable: x86-64-v3 for packaging.
# HAS_AMX=yes|no on the command line (or in the environment) overrides the /proc/cpuinfo probe.
TARGET   ?= native
ifndef HAS_AMX
  HAS_AMX := $(shell grep -qw amx_int8 /proc/cpuinfo 2>/dev/null && echo yes)
endif
ifeq ($(TARGET),portable)
  CPU_FLAGS := -march=x86-64-v3
  TAGS      :=
else ifeq ($(HAS_AMX),yes)
  CPU_FLAGS := -march=native
  TAGS      := amx
  # The amx package includes ggml's own headers from the ollama module. On a fresh machine the
  # module is not in the module cache yet when make reads this file, so download it first
  # (a no-op once it is there); `go list -m` alone would print an empty Dir.
  OLLAMA    := $(shell $(GO) mod download github.com/ollama/ollama && $(GO) list -m -f '{{.Dir}}' github.com/ollama/ollama)
  ifeq ($(OLLAMA),)
    $(error could not download the github.com/ollama/ollama module (needed for the AMX build); check the network or build without AMX: make HAS_AMX=no)
  endif
  GGML      := $(OLLAMA)/ml/backend/ggml/ggml
  AMX_INC   := -I$(GGML)/src/ggml-cpu -I$(GGML)/src -I$(GGML)/include
else
  CPU_FLAGS := -march=native
  TAGS      :=
endif

export CGO_ENABLED  := 1
export CGO_CFLAGS   := -O3 $(CPU_FLAGS)
export CGO_CXXFLAGS := -O3 $(CPU_FLAGS)
export CGO_CPPFLAGS := -I$(INCLUDE) $(AMX_INC)

GOFLAGS_BUILD := -tags '$(TAGS)'

# The coding agents app/agents_e2e_test.go runs (Claude Code, Codex CLI), pinned in
# scripts/agents; installed outside the checkout, in a folder named by the pins' hash, so an
# installed set costs nothing and a clone shares it. The tests find them through SUPERFLUID_AGENTS
# (and skip, saying why, when they are absent).
AGENTS_HASH := $(shell cat scripts/agents/package.json scripts/agents/package-lock.json 2>/dev/null | sha256sum | cut -c1-16)
AGENTS_DIR  := $(HOME)/.cache/superfluid/agents/$(AGENTS_HASH)
export SUPERFLUID_AGENTS ?= $(AGENTS_DIR)/node_modules/.bin

# The real Ollama server the peer tests run as an upstream (app/peertest), built by `make peers`
# from the github.com/ollama/ollama module go.mod pins, into a cache folder named by that version
# (outside the checkout, so a clone shares it). The tests find it through SUPERFLUID_OLLAMA (and
# skip, saying why, when it is absent).
OLLAMA_VERSION := $(shell $(GO) list -m -f '{{.Version}}' github.com/ollama/ollama 2>/dev/null)
PEERS_DIR      := $(HOME)/.cache/superfluid/peers/ollama-$(OLLAMA_VERSION)
export SUPERFLUID_OLLAMA ?= $(PEERS_DIR)/ollama

.PHONY: all setup agents peers browser tray-tools packaging-tools build portable run test test-short gotest fuzz bench screenshots package clean
all: build

setup:
	@bash scripts/setup.sh $(INCLUDE)

build: setup
	@echo "build: tags=[$(TAGS)] CGO_CFLAGS=[$(CGO_CFLAGS)] CGO_CPPFLAGS=[$(CGO_CPPFLAGS)]"
	$(GO) build $(GOFLAGS_BUILD) -o bin/superfluid .

portable:
	$(MAKE) build TARGET=portable

# run: the desktop app (with no display, the server alone); MODEL=... runs superfluid serve MODEL.
run: build
	./bin/superfluid $(if $(MODEL),serve $(MODEL)) $(ARGS)

# agents: install the pinned coding agents (a no-op when installed; never fails: without npm or
# a network their tests skip).
agents:
	@bash scripts/agents/install.sh $(AGENTS_DIR)

# peers: build the pinned Ollama server for the peer tests (a no-op when built; never fails:
# without it their tests skip). With make's cgo flags, so the llama.cpp build cache is reused.
peers: setup
	@GO='$(GO)' bash scripts/peers/build-ollama.sh $(PEERS_DIR) $(OLLAMA_VERSION) $(GOFLAGS_BUILD)

# browser: install Debian's chromium for the web pages' browser tests (a no-op when installed;
# never fails: without apt the tests skip).
browser:
	@bash scripts/browser/install.sh

# tray-tools: Xvfb, D-Bus, xdotool, ImageMagick and xfce4-panel for the real tray test
# (scripts/tray_e2e.sh, run by tray_e2e_test.go); never fails: without them the test skips.
tray-tools:
	@bash scripts/tray/install.sh

# packaging-tools: install the Debian tools make package and packaging/'s tests use (dpkg-dev,
# librsvg2-bin, appstream, desktop-file-utils, lintian; a no-op when installed; never fails:
# without apt the tests skip).
packaging-tools:
	@bash scripts/packaging/install.sh

# test: gofmt, vet and every test; bin/superfluid is built first, for the tests that start it as a
# real process (runtime/supervise runs it as a supervised `command` engine).
test: setup agents peers browser tray-tools packaging-tools build
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "not gofmt-formatted: $$unformatted"; exit 1; fi
	$(GO) vet $(GOFLAGS_BUILD) ./...
	$(GO) test $(GOFLAGS_BUILD) -count=1 -timeout 20m ./...

test-short: setup
	$(GO) test $(GOFLAGS_BUILD) -short ./...

# gotest: go test with make's build flags, for one package set while working:
# make gotest PKG=./server/... RUN=TestName
PKG ?= ./...
RUN ?=
gotest: setup
	$(GO) test $(GOFLAGS_BUILD) -count=1 $(if $(RUN),-run '$(RUN)') $(PKG)

# fuzz: every Go fuzz target (func FuzzXxx in a _test.go file) for FUZZTIME each, one after
# another (scripts/fuzz.sh); make test runs only their seed corpora. FUZZ=REGEXP picks targets
# by name; FUZZPARALLEL is the fuzzing processes per target (default: every core). It builds
# bin/superfluid first: FuzzTokenize drives that binary's real llama.cpp worker.
FUZZTIME     ?= 10m
FUZZPARALLEL ?= $(shell nproc 2>/dev/null || echo 1)
FUZZ         ?= .
fuzz: build
	GO='$(GO)' TAGS='$(TAGS)' FUZZTIME='$(FUZZTIME)' FUZZPARALLEL='$(FUZZPARALLEL)' \
	  FUZZ='$(FUZZ)' SUPERFLUID_WORKER_BIN='$(CURDIR)/bin/superfluid' bash scripts/fuzz.sh

bench: build
	./bin/superfluid bench $(ARGS) $(BENCH_MODEL)

# bench-peers: one client workload against the pinned Ollama and superfluid on BENCH_MODEL, one
# server at a time, one table (bench/peers; ARGS=... for its flags, e.g. --repeat 5).
.PHONY: bench-peers
bench-peers: build peers
	$(GO) run ./bench/peers --model $(BENCH_MODEL) --superfluid bin/superfluid --ollama $(SUPERFLUID_OLLAMA) $(ARGS)

# screenshots: the real app under Xvfb, each tab written to docs/screenshots/; then the web
# pages (team mode) in headless Chromium, docs/screenshots/web-*.png (app/web_pages_e2e_test.go).
screenshots: build browser packaging-tools
	$(GO) build -o bin/fakehub ./scripts/fakehub
	$(GO) build -o bin/fakeproj ./scripts/fakeproj
	$(GO) build -o bin/fakewatcher ./scripts/fakewatcher
	bash scripts/screenshots.sh
	SUPERFLUID_SCREENSHOTS=1 $(GO) test $(GOFLAGS_BUILD) -count=1 -run 'TestWebPagesE2E|TestWebPlaygroundInChromium' ./app

# package: the Linux packages of the binary `make build` made. First a .deb,
# dist/superfluid_VERSION_ARCH.deb, staged and packed by packaging/deb.sh (icons rendered from
# assets/icon.svg, the AppStream metainfo and .desktop file validated; Depends from
# dpkg-shlibdeps), then checked by lintian, which fails the target on an error (no AppImage:
# appimagetool is not in Debian). Then a tarball written by fyne package (fyne.io/tools, pinned
# below) from FyneApp.toml: dist/superfluid-VERSION-linux-ARCH-TARGET.tar.xz holding
# usr/local/bin/superfluid, usr/local/share/applications/io.superfluid.app.desktop, the icon in
# usr/local/share/pixmaps and a Makefile (make user-install, sudo make install). fyne package gets
# the built binary (--executable): its own go build appends -O2 -g and hardening flags to
# CGO_CFLAGS, which would rebuild llama.cpp with flags other than make build's. It also rewrites
# FyneApp.toml (Build+1, comments dropped), so it reads a copy staged in dist/.stage (a dot folder:
# ./... skips it; main.go is copied only because fyne wants Go code there). The default TARGET
# (native) runs on this CPU only; make package TARGET=portable runs on any x86-64-v3 CPU.
# Other OSes: packaging/README.md.
FYNE_TOOLS_VERSION := v1.7.4
FYNE        := bin/tools/fyne-$(FYNE_TOOLS_VERSION)/fyne
APP_VERSION = $(shell sed -n 's/^ *Version *= *"\(.*\)"/\1/p' FyneApp.toml)
APP_ICON    = $(shell sed -n 's/^ *Icon *= *"\(.*\)"/\1/p' FyneApp.toml)
BUNDLE      = dist/superfluid-$(APP_VERSION)-linux-$(shell $(GO) env GOARCH)-$(TARGET).tar.xz

$(FYNE):
	GOBIN=$(CURDIR)/$(dir $(FYNE)) $(GO) install fyne.io/tools/cmd/fyne@$(FYNE_TOOLS_VERSION)

package: build $(FYNE) packaging-tools
	deb=$$(bash packaging/deb.sh bin/superfluid dist) && dpkg-deb --info "$$deb" && ls -l "$$deb" \
	  && if command -v lintian >/dev/null; then lintian --fail-on error --tag-display-limit 0 "$$deb"; \
	     else echo "package: lintian is not installed; the .deb was not linted"; fi
	rm -rf dist/.stage && mkdir -p dist/.stage
	cp FyneApp.toml main.go dist/.stage/ && cp --parents $(APP_ICON) dist/.stage/
	cd dist && $(CURDIR)/$(FYNE) package --os linux --src .stage --executable $(CURDIR)/bin/superfluid
	mv dist/superfluid.tar.xz $(BUNDLE) && rm -rf dist/.stage
	@tar -xJOf $(BUNDLE) --wildcards '*/io.superfluid.app.desktop' | diff -u -B -I '^#' packaging/superfluid.desktop - \
	  || { echo "package: the bundle's .desktop file differs from packaging/superfluid.desktop; make them agree (FyneApp.toml is the source)"; exit 1; }
	tar -tvJf $(BUNDLE)

clean:
	rm -rf bin

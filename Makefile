# superfluid — build, run and test. `make run` and `make test` work on a fresh Debian 12 machine
# (as root, or with sudo): scripts/setup.sh installs the build dependencies first.

GO       ?= go
MODEL    ?= $(firstword $(wildcard ../shared/models/stories260K.gguf))
ARGS     ?=
# Headers llama.cpp's cgo build needs but the module zip lacks. A fixed path (not inside the
# checkout) keeps the cgo build cache valid across clones: a different -I would rebuild llama.cpp.
INCLUDE  := $(HOME)/.cache/superfluid/include

# CPU target. native: this machine's instruction set (AVX2/AVX-512, and AMX kernels on CPUs that
# have AMX, which ggml's cgo packages otherwise leave out). portable: x86-64-v3 for packaging.
TARGET   ?= native
HAS_AMX  := $(shell grep -qw amx_int8 /proc/cpuinfo 2>/dev/null && echo yes)
ifeq ($(TARGET),portable)
  CPU_FLAGS := -march=x86-64-v3
  TAGS      :=
else ifeq ($(HAS_AMX),yes)
  CPU_FLAGS := -march=native
  TAGS      := amx
  GGML      := $(shell $(GO) list -m -f '{{.Dir}}' github.com/ollama/ollama)/ml/backend/ggml/ggml
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

.PHONY: all setup build portable run test test-short bench clean
all: build

setup:
	@bash scripts/setup.sh $(INCLUDE)

build: setup
	$(GO) build $(GOFLAGS_BUILD) -o bin/superfluid .

portable:
	$(MAKE) build TARGET=portable

run: build
	@if [ -z "$(MODEL)" ]; then \
	  echo "make run: no model. Pass one: make run MODEL=path/to/model.gguf"; exit 2; fi
	./bin/superfluid serve $(ARGS) $(MODEL)

test: setup
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "not gofmt-formatted: $$unformatted"; exit 1; fi
	$(GO) vet $(GOFLAGS_BUILD) ./...
	$(GO) test $(GOFLAGS_BUILD) -count=1 -timeout 20m ./...

test-short: setup
	$(GO) test $(GOFLAGS_BUILD) -short ./...

bench: build
	@if [ -z "$(MODEL)" ]; then \
	  echo "make bench: no model. Pass one: make bench MODEL=path/to/model.gguf"; exit 2; fi
	./bin/superfluid bench $(ARGS) $(MODEL)

clean:
	rm -rf bin

# icekeeper: the two set-up commands are `make demo` and `make test`.
# Go is the only requirement (see .ci/run for a fresh machine).

GO        ?= go
BIN       := bin
LAMBDA    := $(BIN)/lambda
FUNCTIONS := planner rewriter committer

.PHONY: demo test test-short build lambdas bench bench-smoke vet fmt clean

## demo: the embedded default: compact sample tables end to end, in-process
demo:
	$(GO) run ./cmd/icekeeper demo

## test: every test, end to end over the in-process AWS emulator
test:
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 30m ./...

## test-short: skip the tests that build the Lambda binaries
test-short:
	$(GO) test -count=1 -short ./...

## bench: the benchmark (1 GB per table; see docs/PERFORMANCE.md). BENCH_FLAGS adds flags.
bench:
	$(GO) build -o $(BIN)/icekeeper-bench ./cmd/icekeeper-bench
	$(BIN)/icekeeper-bench --out $(BIN)/PERFORMANCE-latest.md $(BENCH_FLAGS)

## bench-smoke: a 16 MB run of the benchmark, to check the harness
bench-smoke:
	$(GO) build -o $(BIN)/icekeeper-bench ./cmd/icekeeper-bench
	$(BIN)/icekeeper-bench --size-mb 16 --file-kb 128 --target-mb 8

## build: the operator CLI in bin/icekeeper
build:
	$(GO) build -o $(BIN)/icekeeper ./cmd/icekeeper

## lambdas: one bootstrap per function for provided.al2023 on arm64
lambdas:
	@for f in $(FUNCTIONS); do \
		echo "building $(LAMBDA)/$$f/bootstrap"; \
		CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -trimpath -ldflags='-s -w' -tags lambda.norpc \
			-o $(LAMBDA)/$$f/bootstrap ./functions/$$f || exit 1; \
	done

vet:
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf $(BIN)

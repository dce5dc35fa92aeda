# icekeeper: the two set-up commands are `make demo` and `make test`.
# Go, Java 17 and Maven are the requirements (see .ci/run for a fresh machine).

GO        ?= go
BIN       := bin
LAMBDA    := $(BIN)/lambda
FUNCTIONS := planner rewriter committer

.PHONY: moto-test demo test interop interop-setup hygiene fuzz test-short build lambdas bench bench-busy bench-fleet bench-smoke vet fmt clean fuzz-pipeline

## demo: the embedded default: compact sample tables end to end, in-process
demo:
	$(GO) run ./cmd/icekeeper demo

## test: the hygiene checks, every test, end to end over the in-process AWS
## emulator, and the CDK stack's offline tests (infra/ is its own module; it
## needs Node); tpch-setup for the benchmark's TPC-H smoke test
test: hygiene interop-setup tpch-setup
	$(GO) test -count=1 -timeout 30m $$($(GO) list ./... | grep -v '/tests/interop$$')
	ICEKEEPER_INTEROP=subset $(GO) test -count=1 -timeout 20m ./tests/interop
	$(MAKE) moto-test
	$(MAKE) infra-test

## moto-test: the second opinion: the store and queue tests (lease, jobs,
## ledger, signals, blobs through fileio) and a pipeline subset run again
## against moto's server instead of kumo, with the same assertions
## (tests/moto/README.md); moto comes pinned from PyPI into tests/moto/.venv
MOTO_VERSION ?= 5.2.1
MOTO_DIR     := tests/moto
MOTO_PY      := $(CURDIR)/$(MOTO_DIR)/.venv/bin/python
MOTO_PACKAGES := ./shared/lease ./shared/jobs ./shared/ledger ./shared/signals ./shared/fileio
MOTO_TESTS   ?= TestPipeline|TestExpire|TestOrphans|TestBounds|TestSQS|TestCleanup|TestTriggers|TestManifests|TestDeletes|TestGlue|TestCatalogs|TestSignals|TestLedger|TestRebase|TestPartial|TestCrash
moto-test: $(MOTO_PY)
	$(MOTO_DIR)/run.sh $(MOTO_PY) -count=1 -timeout 15m $(MOTO_PACKAGES)
	$(MOTO_DIR)/run.sh $(MOTO_PY) -count=1 -timeout 15m -run '$(MOTO_TESTS)' ./tests

$(MOTO_PY):
	rm -rf $(MOTO_DIR)/.venv
	$(PYTHON) -m venv $(MOTO_DIR)/.venv
	$(MOTO_DIR)/.venv/bin/pip install --quiet --disable-pip-version-check 'moto[server]==$(MOTO_VERSION)'
	@$(MOTO_PY) -c 'import moto, sys; sys.exit(moto.__version__ != "$(MOTO_VERSION)")' || { echo "moto: want $(MOTO_VERSION)"; exit 1; }

## interop: every table case of the interop harness (Spark 4.0 and Iceberg
## Java 1.10 on the same catalogs as icekeeper), writing the compatibility
## matrix docs/INTEROP.md; make test runs a subset and checks it against
## that file
interop: interop-setup
	ICEKEEPER_INTEROP=all $(GO) test -count=1 -timeout 90m -v ./tests/interop

## interop-setup: resolve the interop harness's pinned Java modules from
## Maven Central and build them (needs Java 17 and Maven; see .ci/run), and
## install the pinned PyIceberg from PyPI (needs Python 3 with venv)
INTEROP_MODULES := shared/harness/sparkdriver/java tests/interop/restserver
# PyIceberg, the third reader (tests/interop/pyiceberg), pinned, in a venv
PYICEBERG_DIR   := tests/interop/pyiceberg
PYICEBERG_STAMP := $(PYICEBERG_DIR)/.venv/.installed
interop-setup: $(PYICEBERG_STAMP)
	@for m in $(INTEROP_MODULES); do \
		[ -f $$m/pom.xml ] || continue; \
		echo "building $$m"; \
		(cd $$m && mvn -B -q package -DskipTests dependency:build-classpath -Dmdep.outputFile=target/classpath.txt) || exit 1; \
	done

$(PYICEBERG_STAMP): $(PYICEBERG_DIR)/requirements.txt
	rm -rf $(PYICEBERG_DIR)/.venv
	$(PYTHON) -m venv $(PYICEBERG_DIR)/.venv
	timeout 10m $(PYICEBERG_DIR)/.venv/bin/pip install --quiet --disable-pip-version-check -r $(PYICEBERG_DIR)/requirements.txt
	touch $@

## tpch-setup: install the pinned TPC-H generator (tpchgen-cli, from PyPI)
## into shared/harness/bench/tpch/.venv, for icekeeper-bench --data tpch
## (needs Python 3 with venv)
TPCH_DIR   := shared/harness/bench/tpch
TPCH_STAMP := $(TPCH_DIR)/.venv/.installed
.PHONY: tpch-setup
tpch-setup: $(TPCH_STAMP)

$(TPCH_STAMP): $(TPCH_DIR)/requirements.txt
	rm -rf $(TPCH_DIR)/.venv
	$(PYTHON) -m venv $(TPCH_DIR)/.venv
	timeout 10m $(TPCH_DIR)/.venv/bin/pip install --quiet --disable-pip-version-check -r $(TPCH_DIR)/requirements.txt
	$(TPCH_DIR)/.venv/bin/tpchgen-cli --version
	touch $@

## hygiene: gofmt, go vet and go mod tidy report nothing, in both modules
hygiene:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './infra/.cdk/*')); \
		if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) mod tidy -diff
	cd infra && $(INFRA_ENV) $(GO) vet ./...
	cd infra && $(GO) mod tidy -diff

## test-short: skip the tests that build the Lambda binaries
test-short:
	$(GO) test -count=1 -short ./...

## fuzz-pipeline: the differential harness (live rows under compaction) and
## the safety harness (nothing needed deleted, no ref lost, every job ends)
## on SEEDS random seeds each (default 20); a failing seed prints the
## command that replays it
SEEDS ?= 20
fuzz-pipeline:
	ICEKEEPER_FUZZ_SEEDS=$(SEEDS) $(GO) test -count=1 -timeout 60m ./tests -run 'TestDifferential_CompactionPreservesLiveRows|TestSafety_NothingNeededIsEverDeleted'

## fuzz: each fuzz target for FUZZTIME (default 30s); make test runs their seed corpora
FUZZTIME ?= 30s
fuzz:
	$(GO) test -run XXX -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./events
	$(GO) test -run XXX -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME) ./shared/messages
	$(GO) test -run XXX -fuzz '^FuzzTableIdent$$' -fuzztime $(FUZZTIME) ./shared/messages
	$(GO) test -run XXX -fuzz '^FuzzProperties$$' -fuzztime $(FUZZTIME) ./shared/optin
	$(GO) test -run XXX -fuzz '^FuzzGrants$$' -fuzztime $(FUZZTIME) ./shared/optin

## soak: a fleet of 100 busy tables (4 namespaces, v2 and v3, partitioned
## and not; streaming, CDC, MERGE, overwrite and idle workloads; queried
## or not) over a simulated day, icekeeper driven only by its triggers,
## every interval scaled by 48 (about 35 min wall); writes bin/soak/soak.md,
## soak.json and soak.png and fails on a lost writer commit, rows that
## differ from the writer's model, a leaked byte, a stuck job or an alarm.
## make test runs a short version (TestSoak_*). SOAK_FLAGS adds flags
## (--seed, --tables, --scale, --duration, --table-property KEY=VALUE for
## an owner's tuning on every table; see cmd/icekeeper-soak).
SOAK_FLAGS ?=
.PHONY: soak
soak:
	nice $(GO) run ./cmd/icekeeper-soak --tables 100 --scale 48 --duration 24h --out bin/soak $(SOAK_FLAGS)

## bench: the benchmark (1 GB per table; see docs/PERFORMANCE.md). BENCH_FLAGS adds flags.
## Real data instead of the synthetic rows: TPC-H lineitem and orders written
## by Spark (needs make interop-setup and make tpch-setup), e.g.
## BENCH_FLAGS='--data tpch --scale-factor 1 --tpch-cache bin/tpch'
## (--tpch-tables lineitem,orders, --tpch-commits 48 appends per table;
## --tpch-cache keeps the generator's output between runs).
bench:
	$(GO) build -o $(BIN)/icekeeper-bench ./cmd/icekeeper-bench
	$(BIN)/icekeeper-bench --out $(BIN)/PERFORMANCE-latest.md $(BENCH_FLAGS)

## bench-busy: only the busy-table scenario (jobs under a writer committing
## deletes; rebase off, then on). BUSY_INTERVAL sets the writer's interval.
BUSY_INTERVAL ?= 250ms
bench-busy:
	$(GO) build -o $(BIN)/icekeeper-bench ./cmd/icekeeper-bench
	$(BIN)/icekeeper-bench --kinds "" --memory=false --planner-files "" --commit-files 0 --busy-jobs 20 --busy-interval $(BUSY_INTERVAL) --out $(BIN)/PERFORMANCE-busy.md

## bench-fleet: one scheduled sweep over fleets of 100, 1,000 and 10,000
## synthetic tables and a job of 50 and 500 groups (issue 34; about 7
## minutes; docs/PERFORMANCE.md, "Sweeps and fan-out at fleet scale");
## make test runs 50 and 200 tables, 10 and 50 groups
FLEET_TABLES ?= 100,1000,10000
FLEET_GROUPS ?= 50,500
bench-fleet:
	$(GO) build -o $(BIN)/icekeeper-bench ./cmd/icekeeper-bench
	$(BIN)/icekeeper-bench --kinds "" --memory=false --planner-files "" --commit-files 0 --busy-jobs 0 --cold-starts 0 --spark-cores "" --coordinator-memory-mb 1024 --sweep-tables $(FLEET_TABLES) --fanout-groups $(FLEET_GROUPS) --out $(BIN)/PERFORMANCE-fleet.md $(BENCH_FLAGS)

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

# --- infra: the CDK stack (its own Go module in infra/, see infra/README.md)
# and the LocalStack path (localstack/README.md). Context goes in CDK_CONTEXT,
# e.g. make deploy CDK_CONTEXT='-c mode=active -c grants=analytics.*'.

CDK_DIR          := infra/.cdk
CDK_CLI_VERSION  ?= 2.1148.1
CDKLOCAL_VERSION ?= 3.0.4
CDK              := $(CURDIR)/$(CDK_DIR)/node_modules/.bin/cdk
CDKLOCAL         := $(CURDIR)/$(CDK_DIR)/node_modules/.bin/cdklocal
CDK_CONTEXT      ?=
# jsii warns on every run about Node versions it no longer supports; the
# warning is silenced for the Node found here (the stack still synthesizes).
NODE_MAJOR       := $(shell node -p 'process.versions.node.split(".")[0]' 2>/dev/null)
INFRA_ENV        := JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=$(NODE_MAJOR) JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION=$(NODE_MAJOR) JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION=$(NODE_MAJOR)
COMPOSE          ?= docker compose
LOCAL_COMPOSE    := $(COMPOSE) -f localstack/docker-compose.yml
LOCAL_LAMBDA     := $(BIN)/lambda-local
LOCAL_GOARCH     ?= $(shell $(GO) env GOARCH)
LOCAL_CDK_ARCH   := $(if $(filter arm64,$(LOCAL_GOARCH)),arm64,x86_64)
LOCAL_ENV        := AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1 \
	AWS_ENVAR_ALLOWLIST=AWS_REGION,AWS_DEFAULT_REGION CDK_DEFAULT_ACCOUNT=000000000000 CDK_DEFAULT_REGION=us-east-1
# The local deployment: mode active, the REST catalog container, a sample
# grant (namespace demo), resources destroyed with the stack.
LOCAL_CONTEXT    ?= -c stackName=IcekeeperLocal -c mode=active -c 'grants=demo.*' \
	-c catalogType=rest -c catalogUri=http://iceberg-rest:8181 \
	-c catalogProperties=s3.endpoint=http://localstack:4566,s3.region=us-east-1 \
	-c warehouseLocation=s3://warehouse -c 'tableLocationTemplate={warehouse}/{namespacePath}/{table}' \
	-c assetDir=../$(LOCAL_LAMBDA) -c architecture=$(LOCAL_CDK_ARCH) -c removalPolicy=destroy -c alarms=false

.PHONY: infra-test cfn-lint event-ruler metrics-cost cdk-cli synth preview bootstrap deploy lambdas-local localstack-up localstack-down deploy-local

# cfn-lint, AWS's CloudFormation linter, pinned, in a virtual environment
# under infra/.cfn-lint (git-ignored); the stack's tests lint every
# template they synthesize with it (infra/cfnlint_test.go).
CFN_LINT_VERSION ?= 1.58.0
PYTHON           ?= python3
CFN_LINT_DIR     := infra/.cfn-lint
CFN_LINT         := $(CURDIR)/$(CFN_LINT_DIR)/venv/bin/cfn-lint

# event-ruler, the Java library EventBridge's pattern matching is built on,
# pinned in infra/eventruler/pom.xml and resolved from Maven Central; the
# stack's tests match every rule they synthesize against the sample events
# with it (infra/eventrules_test.go).
EVENT_RULER_DIR  := infra/eventruler

## infra-test: the CDK stack's tests, offline (needs Node for jsii, Python for cfn-lint, Java 17 and Maven for event-ruler, no AWS)
infra-test: $(CFN_LINT) event-ruler
	cd infra && $(INFRA_ENV) ICEKEEPER_CFN_LINT=$(CFN_LINT) ICEKEEPER_EVENT_RULER=$(CURDIR)/$(EVENT_RULER_DIR) $(GO) test -count=1 ./...

## event-ruler: build infra/eventruler (event-ruler from Maven Central, and
## the small Match program the stack's tests run; needs Java 17 and Maven)
event-ruler:
	cd $(EVENT_RULER_DIR) && mvn -B -q package -DskipTests dependency:build-classpath -Dmdep.outputFile=target/classpath.txt

## cfn-lint: install the pinned cfn-lint into infra/.cfn-lint
cfn-lint: $(CFN_LINT)

$(CFN_LINT):
	rm -rf $(CFN_LINT_DIR)/venv
	$(PYTHON) -m venv $(CFN_LINT_DIR)/venv
	$(CFN_LINT_DIR)/venv/bin/pip install --quiet --disable-pip-version-check cfn-lint==$(CFN_LINT_VERSION)
	@$(CFN_LINT) --version | grep -qx 'cfn-lint $(CFN_LINT_VERSION)' || { echo "cfn-lint: want $(CFN_LINT_VERSION), got $$($(CFN_LINT) --version)"; exit 1; }

## metrics-cost: the monthly CloudWatch cost of 10, 100 and 1,000 tables, from
## the metric contract (infra/testdata/emitted-metrics.json), the synthesized
## alarms and dashboard and CloudWatch's prices (infra/cost.go); fails when
## README.md's table differs
metrics-cost:
	cd infra && $(INFRA_ENV) $(GO) test -count=1 -run 'TestCost_' -v .

## cdk-cli: the CDK CLI and cdklocal, pinned, in infra/.cdk (git-ignored)
cdk-cli: $(CDK)

$(CDK):
	npm install --prefix $(CDK_DIR) --no-save --no-audit --no-fund --loglevel=error \
		aws-cdk@$(CDK_CLI_VERSION) aws-cdk-local@$(CDKLOCAL_VERSION)

## synth: build the bootstraps, then synthesize the stack into infra/cdk.out
synth: lambdas $(CDK)
	cd infra && $(INFRA_ENV) $(CDK) synth -q $(CDK_CONTEXT)

## preview: synthesize the stack and print what it will be allowed to do (from infra/settings.json)
## and its policy sizes, environments and template against AWS's limits
preview: lambdas $(CDK)
	cd infra && $(INFRA_ENV) $(CDK) synth -q $(CDK_CONTEXT) > /dev/null

## bootstrap: prepare the account and region for CDK deployments (once per account and region)
bootstrap: $(CDK)
	cd infra && $(INFRA_ENV) $(CDK) bootstrap $(CDK_CONTEXT)

## deploy: deploy the stack with the current AWS credentials (run make lambdas first)
deploy: $(CDK)
	cd infra && $(INFRA_ENV) $(CDK) deploy $(CDK_CONTEXT)

## lambdas-local: bootstraps for this machine's architecture (LocalStack runs them in Docker)
lambdas-local:
	@for f in $(FUNCTIONS); do \
		echo "building $(LOCAL_LAMBDA)/$$f/bootstrap ($(LOCAL_GOARCH))"; \
		CGO_ENABLED=0 GOOS=linux GOARCH=$(LOCAL_GOARCH) $(GO) build -trimpath -ldflags='-s -w' -tags lambda.norpc \
			-o $(LOCAL_LAMBDA)/$$f/bootstrap ./functions/$$f || exit 1; \
	done

# LocalStack's own server from PyPI, run in host mode (no Docker), in a
# venv under localstack/.venv (git-ignored): localstack-core and every
# package it runs with pinned in localstack/requirements.txt, plus
# icekeeper's two LocalStack plugins (localstack/plugin: functions under
# AWS's runtime interface emulator, DynamoDB through moto). See
# localstack/README.md.
LOCALSTACK_VENV  := localstack/.venv
LOCALSTACK_STAMP := $(LOCALSTACK_VENV)/.installed
LOCALSTACK_TEST_TIMEOUT ?= 15m

.PHONY: localstack-venv localstack-test

## localstack-venv: install the pinned LocalStack (host mode) and icekeeper's plugins into localstack/.venv (needs Python 3.13)
localstack-venv: $(LOCALSTACK_STAMP)

$(LOCALSTACK_STAMP): localstack/requirements.txt localstack/plugin/pyproject.toml localstack/plugin/icekeeper_localstack.py localstack/python.sh
	rm -rf $(LOCALSTACK_VENV)
	py=$$(localstack/python.sh) && "$$py" -m venv $(LOCALSTACK_VENV)
	timeout 15m $(LOCALSTACK_VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps -r localstack/requirements.txt
	timeout 5m $(LOCALSTACK_VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps ./localstack/plugin
	$(LOCALSTACK_VENV)/bin/pip check --disable-pip-version-check
	rm -rf localstack/plugin/build localstack/plugin/*.egg-info
	touch $@

## localstack-test: deploy the synthesized stack to LocalStack (started and stopped by the test, host mode,
## no Docker) and check its resources and that events reach the planner through its rules (tests/localstack)
localstack-test: $(LOCALSTACK_STAMP)
	ICEKEEPER_LOCALSTACK=1 ICEKEEPER_LOCALSTACK_VENV=$(CURDIR)/$(LOCALSTACK_VENV) \
		timeout --kill-after=30s $(LOCALSTACK_TEST_TIMEOUT) $(GO) test -count=1 -timeout $(LOCALSTACK_TEST_TIMEOUT) -v ./tests/localstack

## localstack-up: LocalStack and an Iceberg REST catalog in Docker (not run on the dev machine: no Docker there)
localstack-up:
	$(LOCAL_COMPOSE) up -d --wait

## localstack-down: stop them and drop their state
localstack-down:
	$(LOCAL_COMPOSE) down -v

## deploy-local: deploy the stack to LocalStack with cdklocal (mode active, REST catalog, grant demo.*)
deploy-local: lambdas-local $(CDK)
	cd infra && $(LOCAL_ENV) $(INFRA_ENV) $(CDKLOCAL) bootstrap aws://000000000000/us-east-1 $(LOCAL_CONTEXT)
	cd infra && $(LOCAL_ENV) $(INFRA_ENV) $(CDKLOCAL) deploy --require-approval never $(LOCAL_CONTEXT)

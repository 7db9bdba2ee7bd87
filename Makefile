# rdmaform — make help lists the targets.
GO       ?= go
BIN      ?= bin/rdmaform
PKGS     ?= ./...
FUZZTIME ?= 20s

.PHONY: help build test test-short lint fuzz demo clean

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## build bin/rdmaform
	$(GO) build -o $(BIN) ./cmd/rdmaform

test: ## run every test (real NetworkManager, netns, systemd when root)
	$(GO) test -count=1 $(PKGS)

test-short: ## unit tests only, no lab components
	$(GO) test -count=1 -short $(PKGS)

lint: ## gofmt, go vet, and the OS-boundary check
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) run ./internal/lint .

fuzz: ## run each fuzz target for FUZZTIME
	$(GO) test ./schema -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime $(FUZZTIME)
	$(GO) test ./schema -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)
	$(GO) test ./providers/firmware/mlxfmt -run '^$$' -fuzz '^FuzzParseQuery$$' -fuzztime $(FUZZTIME)
	$(GO) test ./providers/firmware/mlxfmt -run '^$$' -fuzz '^FuzzParseMSTStatus$$' -fuzztime $(FUZZTIME)
	$(GO) test ./providers/ipoib/nmcli -run '^$$' -fuzz '^FuzzSplitTabular$$' -fuzztime $(FUZZTIME)
	$(GO) test ./providers/ipoib/nmcli -run '^$$' -fuzz '^FuzzParseList$$' -fuzztime $(FUZZTIME)
	$(GO) test ./providers/ipoib/nmcli -run '^$$' -fuzz '^FuzzParseProfiles$$' -fuzztime $(FUZZTIME)
	$(GO) test ./providers/ipoib/nmcli -run '^$$' -fuzz '^FuzzParseAdded$$' -fuzztime $(FUZZTIME)
	$(GO) test ./inventory -run '^$$' -fuzz '^FuzzDiscoverPort$$' -fuzztime $(FUZZTIME)

DEMO ?= $(or $(TMPDIR),/tmp)/rdmaform-demo

demo: build ## plan, apply, plan again: examples/roce.yaml on a copy of the simulated host examples/hosts/cx5-roce
	rm -rf $(DEMO) && mkdir -p $(DEMO) && cp examples/hosts/cx5-roce/sim.yaml $(DEMO)/
	$(BIN) --sim $(DEMO) plan -f examples/roce.yaml; test $$? -eq 2
	$(BIN) --sim $(DEMO) apply --yes -f examples/roce.yaml
	$(BIN) --sim $(DEMO) plan -f examples/roce.yaml

clean: ## remove build outputs
	rm -rf bin

.PHONY: ansible schema

ANSIBLE_LIBRARY_DIR ?= build/ansible/library

ansible: ## build the Ansible module, static: build/ansible/library/rdmaform
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o $(ANSIBLE_LIBRARY_DIR)/rdmaform ./cmd/rdmaform-ansible

schema: ## regenerate schema/rdmaform.schema.json from the spec's Go types
	$(GO) test ./schema -count=1 -run '^TestJSONSchemaFile$$' -update

.PHONY: bench

BENCHFLAGS ?=

bench: build ## performance comparisons side by side, one table (plan rounds, tool runs, NetworkManager vs Ansible, 2,000 resources)
	$(GO) run ./bench/cmd/rdmaform-bench -rdmaform $(BIN) $(BENCHFLAGS)

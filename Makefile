# rdmaform — make help lists the targets.
GO       ?= go
BIN      ?= bin/rdmaform
PKGS     ?= ./...
FUZZTIME ?= 20s
# The spec loader reads what operators (and their tools) write: it gets ten
# minutes (its seed corpus is schema/testdata/fuzz).
LOADFUZZTIME ?= 10m

# What the binary says it is (rdmaform version): a tag vX.Y.Z gives X.Y.Z;
# between releases, the next one with -dev.
VERSION ?= $(or $(shell git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null | sed 's/^v//'),0.1.0-dev)
COMMIT  ?= $(or $(shell git rev-parse --short=12 HEAD 2>/dev/null),unknown)$(shell git diff --quiet HEAD -- 2>/dev/null || echo -dirty)
# Where make install puts things; the boot unit runs $(SBINDIR)/rdmaform.
PREFIX  ?= /usr/local
SBINDIR ?= $(PREFIX)/sbin
MANDIR  ?= $(PREFIX)/share/man
DESTDIR ?=
# Static builds for these Linux architectures (x86_64 and Grace/aarch64 hosts).
ARCHES  ?= amd64 arm64
NATIVE  := $(shell $(GO) env GOARCH)

MOD      := github.com/rdmaform/rdmaform
LDFLAGS   = -s -w -X $(MOD)/version.Version=$(VERSION) -X $(MOD)/version.Commit=$(COMMIT) -X $(MOD)/providers/bootunit.DefaultBinary=$(1)/rdmaform
# $(call gobuild,ARCH,SBINDIR,OUT,PKG): a static, reproducible build.
gobuild   = CGO_ENABLED=0 GOOS=linux GOARCH=$(1) $(GO) build -trimpath -ldflags '$(call LDFLAGS,$(2))' -o $(3) $(4)

.PHONY: help build test kernel-test test-short mutate lint fuzz demo clean docs manpages install uninstall package

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-17s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## static bin/linux_{amd64,arm64}/rdmaform, bin/rdmaform for this machine
	$(foreach a,$(ARCHES),$(call gobuild,$(a),$(SBINDIR),bin/linux_$(a)/rdmaform,./cmd/rdmaform) &&) true
	cp bin/linux_$(NATIVE)/rdmaform $(BIN)

docs: manpages ## docs/reference from the code (spec, commands, JSON, exit codes, metrics; TestReferenceCurrent fails when stale), and what manpages makes
	$(GO) run ./cmd/rdmaform-docs -reference docs/reference

# install does not rewrite docs/reference: make test in CI would then
# compare the pages with themselves.
manpages: ## man pages (rdmaform's commands and rdmaform-agent), shell completions and the boot unit in build/
	$(GO) run ./cmd/rdmaform-docs -man build/man -completions build/completions -unit build/rdmaform.service -binary $(SBINDIR)/rdmaform -version $(VERSION)

DOCFILES := README.md CHANGELOG.md LICENSE
# The documentation README.md links to, and the examples it uses (specs,
# the simulated hosts, the Ansible inventory and playbooks), installed
# with their paths under docs/ and examples/.
DOCS     := $(shell find docs -type f)
EXAMPLES := $(wildcard examples/*.yaml examples/hosts/*/sim.yaml examples/ansible/*)

install: build manpages ## install under DESTDIR/PREFIX: binary, man pages, completions, boot unit, examples
	install -D -m 0755 $(BIN) $(DESTDIR)$(SBINDIR)/rdmaform
	install -d $(DESTDIR)$(MANDIR)/man8
	install -m 0644 build/man/*.8 $(DESTDIR)$(MANDIR)/man8/
	install -D -m 0644 build/completions/rdmaform.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/rdmaform
	install -D -m 0644 build/completions/_rdmaform $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_rdmaform
	install -D -m 0644 build/completions/rdmaform.fish $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/rdmaform.fish
	install -D -m 0644 build/rdmaform.service $(DESTDIR)$(PREFIX)/lib/systemd/system/rdmaform.service
	install -d $(DESTDIR)$(PREFIX)/share/doc/rdmaform/examples
	install -m 0644 $(DOCFILES) $(DESTDIR)$(PREFIX)/share/doc/rdmaform/
	$(foreach f,$(DOCS) $(EXAMPLES),install -D -m 0644 $(f) $(DESTDIR)$(PREFIX)/share/doc/rdmaform/$(f) &&) true

uninstall: ## remove what make install installed (same DESTDIR/PREFIX)
	rm -f $(DESTDIR)$(SBINDIR)/rdmaform $(DESTDIR)$(MANDIR)/man8/rdmaform.8 $(DESTDIR)$(MANDIR)/man8/rdmaform-*.8 \
	  $(DESTDIR)$(PREFIX)/share/bash-completion/completions/rdmaform $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_rdmaform \
	  $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/rdmaform.fish $(DESTDIR)$(PREFIX)/lib/systemd/system/rdmaform.service
	rm -rf $(DESTDIR)$(PREFIX)/share/doc/rdmaform

# nfpm (deb and rpm without dpkg-deb or rpmbuild), built from the Go proxy.
NFPM_VERSION ?= v2.45.2
NFPM ?= build/tools/nfpm

$(NFPM):
	GOBIN=$(CURDIR)/build/tools $(GO) install github.com/goreleaser/nfpm/v2/cmd/nfpm@$(NFPM_VERSION)

package: $(NFPM) ## .deb and .rpm for amd64 and arm64 in dist/ (rdmaform and rdmaform-agent in /usr/sbin, the Ansible module in /usr/share/ansible/plugins/modules)
	rm -rf dist build/pkg && mkdir -p dist
	$(GO) run ./cmd/rdmaform-docs -man build/pkg/man -completions build/pkg/completions -unit build/pkg/rdmaform.service -binary /usr/sbin/rdmaform -version $(VERSION)
	$(foreach a,$(ARCHES),$(call gobuild,$(a),/usr/sbin,build/pkg/rdmaform,./cmd/rdmaform) && \
	  $(call gobuild,$(a),/usr/sbin,build/pkg/rdmaform-agent,./cmd/rdmaform-agent) && \
	  $(call gobuild,$(a),/usr/sbin,build/pkg/ansible/rdmaform,./cmd/rdmaform-ansible) && \
	  ARCH=$(a) VERSION=$(VERSION) $(NFPM) package -f packaging/nfpm.yaml -p deb -t dist/ && \
	  ARCH=$(a) VERSION=$(VERSION) $(NFPM) package -f packaging/nfpm.yaml -p rpm -t dist/ &&) true
	ls -l dist

# go test's -timeout for make test: how long one package's test binary
# may run before go test ends it. The longest
# package of make test (ansible) ran 12 minutes on two cores at a load
# average near 20; raise it on a slower machine (make test
# TEST_TIMEOUT=90m).
TEST_TIMEOUT ?= 45m
# How many simulated hosts make fleet-test rolls out to (make test's
# TestRolloutWaves has 16), and its -timeout: the 200-host rollout had
# run 22 minutes, unfinished, when a busy two-core machine's make test
# stopped it at 30.
FLEET_HOSTS ?= 200
FLEET_TIMEOUT ?= 120m

test: ## every test (real NetworkManager, netns, systemd when root; TEST_TIMEOUT per package), the skipped tests counted, then the real-kernel lab
	$(GO) build -o build/testsum ./internal/testlab/testsum
	build/testsum $(GO) test -json -count=1 -timeout $(TEST_TIMEOUT) $(PKGS)
	$(MAKE) kernel-test

.PHONY: fleet-test
fleet-test: k8s-lab ## the rollout role and the fabric test role on FLEET_HOSTS (200) simulated hosts under ansible-core, the rollout without and with a policy (TestRolloutWaves, TestRolloutPolicy, TestFabricTestRole; make test runs them on 16, 16 and 8); then the rollout policy in the Kubernetes agent on FLEET_HOSTS nodes against the lab's API server (TestRolloutPolicyInTheAgent; make test: 12)
	RDMAFORM_ROLLOUT_HOSTS=$(FLEET_HOSTS) RDMAFORM_FABRIC_HOSTS=$(FLEET_HOSTS) $(GO) test -count=1 -timeout $(FLEET_TIMEOUT) -run '^(TestRolloutWaves|TestRolloutPolicy|TestFabricTestRole)$$' ./ansible
	RDMAFORM_AGENT_HOSTS=$(FLEET_HOSTS) RDMAFORM_REQUIRE_LAB=1 $(GO) test -count=1 -timeout $(FLEET_TIMEOUT) -v -run '^TestRolloutPolicyInTheAgent$$' ./agent

kernel-test: ## boot Debian's kernel under QEMU with Soft-RoCE and run the guest tests (internal/testlab/kernlab)
	bash internal/testlab/kernlab/run.sh

test-short: ## unit tests only, no lab components
	$(GO) test -count=1 -short $(PKGS)

MUTATEFLAGS ?=
mutate: ## hand mutation run: each mutant of internal/mutate/mutants.yaml alone on a copy of the tree, its tests, the kill rate (MUTATEFLAGS: -only, -timeout, -min)
	$(GO) run ./internal/mutate $(MUTATEFLAGS)

lint: ## gofmt, go vet, and the OS-boundary check
	@out=$$(gofmt -l $$(git ls-files --cached --others --exclude-standard '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) run ./internal/lint .

fuzz: ## run the spec loader's fuzz target for LOADFUZZTIME (10m), every other for FUZZTIME (20s)
	$(GO) test ./schema -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime $(LOADFUZZTIME)
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
	rm -rf bin build dist

.PHONY: ansible schema

ANSIBLE_LIBRARY_DIR ?= build/ansible/library

ansible: ## build the Ansible module, static: build/ansible/library/rdmaform
	$(call gobuild,$(NATIVE),/usr/sbin,$(ANSIBLE_LIBRARY_DIR)/rdmaform,./cmd/rdmaform-ansible)

# The collection rdmaform.rdma: ansible/ holds galaxy.yml, the docs, the
# action plugin and (built here, not committed) one module binary per
# architecture, named as uname -m names it.
COLLECTION_ARCHES := amd64:x86_64 arm64:aarch64

.PHONY: collection collection-test
collection: ## the Ansible collection tarball dist/rdmaform-rdma-VERSION.tar.gz (x86_64 and aarch64 modules)
	$(foreach p,$(COLLECTION_ARCHES),$(call gobuild,$(word 1,$(subst :, ,$(p))),/usr/sbin,ansible/plugins/modules/rdmaform_$(word 2,$(subst :, ,$(p))),./cmd/rdmaform-ansible) &&) true
	mkdir -p dist
	ansible-galaxy collection build ansible --output-path dist --force

collection-test: collection bin/rdmaform ## install the tarball in build/collections, ansible-doc it, run ansible/tests/localhost.yml on a simulated host
	rm -rf build/collections build/collection-sim build/module-cache
	ansible-galaxy collection install dist/rdmaform-rdma-*.tar.gz -p build/collections --force
	ANSIBLE_COLLECTIONS_PATH=$(CURDIR)/build/collections ansible-doc rdmaform.rdma.rdmaform | grep -q 'allow_firmware'
	ANSIBLE_COLLECTIONS_PATH=$(CURDIR)/build/collections ansible-doc rdmaform.rdma.drain | grep -q 'delete_emptydir_data'
	ANSIBLE_COLLECTIONS_PATH=$(CURDIR)/build/collections ansible-doc -t strategy rdmaform.rdma.fleet | grep -q 'gc.freeze'
	bin/rdmaform sim new build/collection-sim --profile cx5-roce
	ANSIBLE_COLLECTIONS_PATH=$(CURDIR)/build/collections ANSIBLE_LOCALHOST_WARNING=0 RDMAFORM_MODULE_CACHE=$(CURDIR)/build/module-cache \
	  ansible-playbook -i localhost, ansible/tests/localhost.yml -e sim=$(CURDIR)/build/collection-sim

# ansible-test sanity's tests that run offline; the others (ansible-doc,
# validate-modules, import, pep8, pylint, yamllint, runtime-metadata)
# first download pip into a virtualenv. ansible-test reads the files git
# tracks when it runs inside a checkout, so it runs on a copy.
SANITY_OFFLINE := action-plugin-docs changelog compile empty-init future-import-boilerplate ignores \
  line-endings metaclass-boilerplate no-assert no-basestring no-illegal-filenames no-smart-quotes shebang symlinks
SANITY_DIR = $(or $(TMPDIR),/tmp)/rdmaform-sanity

.PHONY: collection-sanity
collection-sanity: collection ## ansible-test sanity (the offline tests) on the collection
	rm -rf $(SANITY_DIR) && mkdir -p $(SANITY_DIR)/ansible_collections/rdmaform
	tar -xzf $(wildcard dist/rdmaform-rdma-*.tar.gz) --one-top-level=$(SANITY_DIR)/ansible_collections/rdmaform/rdma
	cd $(SANITY_DIR)/ansible_collections/rdmaform/rdma && ansible-test sanity --local \
	  --python $$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])') $(foreach t,$(SANITY_OFFLINE),--test $(t))
	rm -rf $(SANITY_DIR)

bin/rdmaform:
	$(MAKE) build

schema: ## regenerate schema/rdmaform.schema.json from the spec's Go types
	$(GO) test ./schema -count=1 -run '^TestJSONSchemaFile$$' -update

.PHONY: k8s-lab

k8s-lab: ## build kube-apiserver, kubectl, the kubelet and etcd from the Go module proxy for the Kubernetes lab (reused when present; RDMAFORM_K8S_LAB_DIR)
	$(GO) run ./internal/testlab/kubelab/buildlab

.PHONY: bench

BENCHFLAGS ?=

bench: build ansible agent ## performance comparisons side by side, one table (plan rounds, tool runs, NetworkManager vs Ansible, 2,000 resources, a 1,000-host rollout vs serial:, the agent's memory and CPU and 1,000 nodes against the lab's API server)
	$(GO) run ./bench/cmd/rdmaform-bench -rdmaform $(BIN) $(BENCHFLAGS)

.PHONY: manifests agent image

image: agent build ## the agent's OCI image, dist/rdmaform-agent_VERSION_ARCH.oci.tar, with its SPDX package list and digest (mmdebstrap, umoci; root)
	packaging/image/build $(VERSION) $(NATIVE) dist

agent: ## static bin/linux_{amd64,arm64}/rdmaform-agent, the Kubernetes node agent (docs/guides/kubernetes.md)
	$(foreach a,$(ARCHES),$(call gobuild,$(a),$(SBINDIR),bin/linux_$(a)/rdmaform-agent,./cmd/rdmaform-agent) &&) true

manifests: ## regenerate deploy/kubernetes/crds, api/v1alpha1's deep copies and the Helm chart's files made from deploy/kubernetes (internal/crdgen; TestManifestsCurrent checks them)
	$(GO) run ./internal/crdgen/cmd/crdgen

# labctl — everything the project needs is installed into this folder (.venv, .labctl/, node_modules).
# Two commands on a fresh machine:  `make demo` (main job on the simulated lab)  and  `make test`.

SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
BIN := $(CURDIR)/.labctl/bin
GOENV := GOPATH=$(CURDIR)/.labctl/go GOMODCACHE=$(CURDIR)/.labctl/go/pkg/mod GOFLAGS=-modcacherw GOBIN=$(BIN) GOTOOLCHAIN=local
GOVMOMI_VERSION := v0.46.3
# The lease store and site agents' hub (JetStream key-value, leaf nodes); exact, from the Go module proxy.
NATS_SERVER_VERSION := v2.11.17

.PHONY: help install demo test lint typecheck unit bench clean postgresql-server pdf-libs ipmi-tools rdp-debs snmp-client wol-sender

help:
	@echo "make demo   install everything, start the simulated lab, run the boot-storm plan, build the report"
	@echo "make test   install everything and run lint, type check and the test suite"
	@echo "make bench  run the benchmarks under bench/ (prints figures)"
	@echo "make clean  remove installed tools and virtual environment"

$(VENV)/.installed: pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[dev]'
	touch $@

$(BIN)/vcsim:
	@mkdir -p $(BIN)
	$(GOENV) go install github.com/vmware/govmomi/vcsim@$(GOVMOMI_VERSION)

$(BIN)/govc:
	@mkdir -p $(BIN)
	$(GOENV) go install github.com/vmware/govmomi/govc@$(GOVMOMI_VERSION)

# nats-server: the shared lease store and the site agents' hub/leaf nodes (labctl/agents/).
$(BIN)/nats-server:
	@mkdir -p $(BIN)
	$(GOENV) go install github.com/nats-io/nats-server/v2@$(NATS_SERVER_VERSION)

# The simulated vCenter: vcsim's v0.46.3 simulator library shaped like the inventory (topology, VM
# names, task latency with jitter, injected task failures). Built offline from the module cache
# that installing vcsim filled.
VCSIMLAB := labctl/sim/vcenter/vcsimlab
$(BIN)/labctl-vcsim: $(BIN)/vcsim $(wildcard $(VCSIMLAB)/*.go) $(VCSIMLAB)/go.mod $(VCSIMLAB)/go.sum
	cd $(VCSIMLAB) && $(GOENV) go build -o $@ .

# Allure 3 report generator (npm `allure`, exact version in package-lock.json) into ./node_modules.
node_modules/.bin/allure: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $@

# PostgreSQL 15 server binaries: the results store's tests start a real server from them (initdb,
# pg_ctl) on loopback. Debian's postgresql-15 when initdb is neither on PATH nor in its folder;
# without creating the package's own cluster (nothing is left running).
PG_BIN := /usr/lib/postgresql/15/bin
SUDO := $(if $(filter 0,$(shell id -u)),,sudo)
postgresql-server:
	@if command -v initdb >/dev/null 2>&1 || test -x $(PG_BIN)/initdb; then exit 0; fi; \
	echo "installing Debian's postgresql-15 (server binaries for the results store's tests)"; \
	$(SUDO) mkdir -p /etc/postgresql-common/createcluster.d && \
	echo "create_main_cluster = false" | $(SUDO) tee /etc/postgresql-common/createcluster.d/labctl.conf >/dev/null && \
	$(SUDO) apt-get update -qq && \
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold postgresql-15 >/dev/null && \
	test -x $(PG_BIN)/initdb

# WeasyPrint (`labctl certify`'s PDF) loads Pango, HarfBuzz and fontconfig from the system and the
# document is set in DejaVu: Debian's packages when WeasyPrint cannot load them or the font is absent.
PDF_DEBS := libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz-subset0 fontconfig fonts-dejavu-core
pdf-libs: $(VENV)/.installed
	@if $(PY) -c "import weasyprint" >/dev/null 2>&1 && fc-list 2>/dev/null | grep -q "DejaVu Sans"; then exit 0; fi; \
	echo "installing Debian's $(PDF_DEBS) (Pango and fonts for the certification PDF)"; \
	$(SUDO) apt-get update -qq && \
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(PDF_DEBS) >/dev/null && \
	$(PY) -c "import weasyprint"

# OpenIPMI's ipmi_sim (an independent BMC: the IPMI driver's conformance tests start it on loopback)
# and ipmitool (the reference client the simulated BMC is checked with): Debian's openipmi and
# ipmitool when either command is absent.
IPMI_DEBS := openipmi ipmitool
ipmi-tools:
	@if command -v ipmi_sim >/dev/null 2>&1 && command -v ipmitool >/dev/null 2>&1; then exit 0; fi; \
	echo "installing Debian's $(IPMI_DEBS) (ipmi_sim and ipmitool for tests/conformance/ipmi)"; \
	$(SUDO) apt-get update -qq && \
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(IPMI_DEBS) >/dev/null && \
	command -v ipmi_sim >/dev/null && command -v ipmitool >/dev/null

# Real desktop sessions in the tests (tests/realsessions): Debian's xrdp serving Xvnc desktops
# (tigervnc) on loopback, FreeRDP as the launcher's client under Xvfb, OpenSSH's sshd between the
# controller and the launcher. Skipped when all are present.
RDP_DEBS := xrdp tigervnc-standalone-server freerdp2-x11 xvfb openssh-server
rdp-debs:
	@if command -v xrdp-sesman >/dev/null 2>&1 && command -v Xvnc >/dev/null 2>&1 && command -v xfreerdp >/dev/null 2>&1 && command -v Xvfb >/dev/null 2>&1 && test -x /usr/sbin/sshd; then exit 0; fi; \
	echo "installing Debian's $(RDP_DEBS) (real RDP sessions for the launcher's tests)"; \
	$(SUDO) apt-get update -qq && \
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold $(RDP_DEBS) >/dev/null

# net-snmp's snmpwalk / snmpbulkwalk: the independent SNMP client the conformance suite walks the
# simulated EqualLogic agent with (tests/conformance/snmp).
snmp-client:
	@if command -v snmpwalk >/dev/null 2>&1 && command -v snmpbulkwalk >/dev/null 2>&1; then exit 0; fi; \
	echo "installing Debian's snmp (net-snmp's client tools for the conformance suite)"; \
	$(SUDO) apt-get update -qq && \
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends snmp >/dev/null && \
	command -v snmpwalk >/dev/null

# Debian's wakeonlan (a Perl sender, not the PyPI library the driver uses, whose own `wakeonlan`
# script is in the venv): the independent sender the simulated clients' WoL listeners are checked
# with, and the relay command the driver runs on a relay host (tests/conformance/wol).
wol-sender:
	@if [ -x /usr/bin/wakeonlan ]; then exit 0; fi; \
	echo "installing Debian's wakeonlan (an independent Wake-on-LAN sender for tests/conformance/wol)"; \
	$(SUDO) apt-get update -qq && \
	$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends wakeonlan >/dev/null && \
	[ -x /usr/bin/wakeonlan ]

install: $(VENV)/.installed $(BIN)/vcsim $(BIN)/govc $(BIN)/labctl-vcsim $(BIN)/nats-server node_modules/.bin/allure postgresql-server pdf-libs ipmi-tools rdp-debs snmp-client wol-sender

# The main job on the simulated lab: check the inventory, then the 2007 boot storm (1 to 100
# clients) with live progress; the simulated lab is started for the run and stopped after it.
demo: install
	$(VENV)/bin/labctl inventory validate
	$(VENV)/bin/labctl run boot_storm

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-logo --no-cache

typecheck: $(VENV)/.installed
	$(VENV)/bin/mypy

# Two pytest-xdist workers: about a third of the suite's wall time is waiting on simulated lab time,
# so two workers on a 2-core machine cut it by about a third; each module runs on one worker, in its
# order (tests/conftest.py). TEST_WORKERS=0 runs the suite in one process.
TEST_WORKERS ?= 2
unit: install
	$(VENV)/bin/pytest -q -n $(TEST_WORKERS) --dist loadfile tests

test: lint typecheck unit

bench: install
	@for b in bench/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

clean:
	rm -rf $(VENV) .labctl node_modules

# mlfabric: `sudo make run` runs the quickstart; `sudo make test` runs every test.
# Both first run testbed/bootstrap.sh, which installs and starts what is missing.
PY := .venv/bin/python
CONFIG ?= experiments/configs/quickstart.yaml
OUT ?= results/quickstart

.PHONY: setup run predict test unit clean
setup:
	@bash testbed/bootstrap.sh

run: setup
	.venv/bin/mlfabric run $(CONFIG) --out $(OUT) --force

predict: setup
	.venv/bin/mlfabric predict $(CONFIG) --out $(OUT)-predicted --force

test: setup
	.venv/bin/ruff check .
	$(PY) -m pytest tests -ra

unit:   # pure tests, no root: needs only the venv (`sudo make setup` once)
	$(PY) -m pytest tests/unit -q

clean: setup
	.venv/bin/mlfabric clean

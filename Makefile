# All targets create the virtual environment and install the package first.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test verify regenerate bench clean figures docs

# Bytecode is compiled at install (and the package's own before the tests): where
# PYTHONDONTWRITEBYTECODE is set (containers, CI) every Python process would otherwise compile
# numba, SymPy, SciPy, ... from source on import (numba alone ~8 s of CPU), and the test suite
# starts one per worker, per notebook kernel and per command-line subprocess.
$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q uv   # resolves and installs in seconds where pip takes minutes
	$(VENV)/bin/uv pip install -q --compile-bytecode --python $(PY) -e '.[test,docs]'
	$(PY) -m ipykernel install --user --name scaling-odes >/dev/null 2>&1 || true
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/scaling-odes demo --out demo-output

test: $(STAMP)
	$(PY) -m compileall -q solvers derive
	$(PY) -m pytest -q -ra -n 2 --dist loadgroup --durations=25

verify: $(STAMP)
	SCALING_ODES_FULL=1 $(PY) -m pytest -q -ra -m "full or bench"

regenerate: $(STAMP)
	$(VENV)/bin/scaling-odes regenerate

bench: $(STAMP)
	$(VENV)/bin/uv pip install -q --python $(PY) -e '.[test,bench]'
	$(PY) bench/run_all.py

clean:
	rm -rf $(VENV) demo-output .pytest_cache site

# The paper's figures at full size (hours on 2 cores; cached pieces, resumable): make figures [FIG=6]
figures: $(STAMP)
	nice -n 19 $(VENV)/bin/scaling-odes figures $(if $(FIG),--fig $(FIG),)

# The documentation site into site/ (MkDocs; warnings are errors; offline)
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

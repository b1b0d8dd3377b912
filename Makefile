# `make run` serves the app; `make test` runs the whole suite. Both create .venv first.
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

.PHONY: run test mutants bench-dpmerf bench-datalens bench-workshop clean

$(STAMP): requirements.txt
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q -r requirements.txt
	touch $(STAMP)

# `make run RAY=auto` (or RAY=ray://host:10001) trains on a Ray cluster; unset, Ray never starts.
run: $(STAMP)
	$(if $(RAY),DPSYNTH_RAY_ADDRESS=$(RAY) )$(VENV)/bin/streamlit run app.py

test: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadfile --durations=15

# Plant each privacy bug of bench/mutants.py in a scratch copy; fail if a test misses one.
mutants: $(STAMP)
	$(PY) bench/mutants.py --jobs 2

bench-dpmerf: $(STAMP)
	$(PY) bench/dpmerf_fashion.py --seeds 0-9

bench-datalens: $(STAMP)
	$(PY) bench/datalens_fashion.py

bench-workshop: $(STAMP)
	$(PY) bench/workshop.py --sessions 20

# the preview's whole wait (training + scoring) against what two Fashion-MNIST runs measure
.PHONY: bench-preview
bench-preview: $(STAMP)
	$(PY) bench/preview_error.py --dataset fashion_mnist --runs 2

# every method's default run at ε = 1 and ε = 10 (issue 41: defaults by ε)
.PHONY: bench-defaults bench-rules
bench-defaults: $(STAMP)
	$(PY) bench/defaults_by_epsilon.py

# rows of each tabular method's output that break a rule of the census-like table
bench-rules: $(STAMP)
	$(PY) bench/rules_broken.py

clean:
	rm -rf runs .pytest_cache .hypothesis

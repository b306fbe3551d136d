# Transformers, hands-on — the two commands a learner needs:
#   make lab    set up (first time only) and open the course in JupyterLab
#   make test   set up (first time only) and run every test
PY     ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PORT   ?= 8888
KERNEL := transformers-course
# Re-install only when what is installed changes.
STAMP  := $(VENV)/.course-installed

.PHONY: setup lab test test-other-machine test-fast execute student pack html clean-venv hub

setup: $(STAMP)

$(STAMP): requirements.txt requirements-nodeps.txt pyproject.toml
	@$(PY) tools/check_python.py
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --disable-pip-version-check -q -r requirements.txt
	$(BIN)/python -m pip install --disable-pip-version-check -q --no-deps -r requirements-nodeps.txt
	$(BIN)/python -m pip install --disable-pip-version-check -q --no-deps -e .
	$(BIN)/python -m ipykernel install --sys-prefix --name $(KERNEL) \
	    --display-name "Python (Transformers course)" >/dev/null
	@touch $(STAMP)
	@echo "Course environment ready in $(VENV)."

lab: setup
	@$(BIN)/python tools/lab.py --port $(PORT)

# Another machine, simulated on this one (tests/portability.py): PyTorch's scalar
# kernels, MKL's other matmul path and two threads change the last bits of floats.
OTHER_MACHINE := ATEN_CPU_CAPABILITY=default MKL_CBWR=COMPATIBLE COURSE_THREADS=2

# The whole suite: unit tests, checkers, nbval on every lesson, student
# versions (on the simulated other machine), the browser test, under the network
# guard — then nbval over every lesson again on the simulated other machine.
test: setup
	@status=0; \
	$(BIN)/python -m pytest || status=1; \
	echo "== nbval again, on a simulated other machine: $(OTHER_MACHINE)"; \
	env $(OTHER_MACHINE) $(BIN)/python -m pytest notebooks || status=1; \
	exit $$status

# Only nbval on the simulated other machine (a few minutes): what another CPU would see.
test-other-machine: setup
	env $(OTHER_MACHINE) $(BIN)/python -m pytest notebooks

# The quick loop while editing: no notebook execution, no browser.
test-fast: setup
	$(BIN)/python -m pytest -m "not slow and not browser"

# Re-execute every lesson in place (outputs and widget state saved).
execute: setup
	$(BIN)/python tools/execute_notebooks.py notebooks/*.ipynb

# Build the student version of every lesson into student/.
student: setup
	$(BIN)/python -m course_lib.classroom.student build notebooks student

# Every lesson as an HTML page that reads offline: build/html/index.html
html: setup
	$(BIN)/python tools/export_html.py notebooks/*.ipynb --out build/html

# The pack to hand out: student_pack/ (notebooks + assets) and student_pack.zip.
pack: setup
	$(BIN)/python -m course_lib.classroom.student pack student_pack

# A JupyterHub serving the course to a class on this machine (docs/instructor_guide.md):
#   make hub HUB_USERS=alice,bob [HUB_PORT=8000] [HUB_ARGS="--version student --admin teacher"]
HUB_PORT  ?= 8000
HUB_USERS ?=
hub: setup
	@$(BIN)/python classroom/hub/hub.py --port $(HUB_PORT) $(if $(HUB_USERS),--users $(HUB_USERS)) $(HUB_ARGS)

clean-venv:
	rm -rf $(VENV)

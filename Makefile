# A thin alias for those who like `make`: every target runs course.py, which does the
# same on Windows, macOS and Linux without make (see README.md).
#   make lab    = python3 course.py lab     set up (first time only), open the course
#   make test   = python3 course.py test    set up (first time only), run every test
PY       ?= python3
PORT     ?= 8888
HUB_PORT ?= 8000
HUB_USERS ?=

.PHONY: setup lab test test-other-machine test-fast execute student pack html hub clean-venv

setup:
	$(PY) course.py setup all
lab:
	$(PY) course.py lab --port $(PORT)
test:
	$(PY) course.py test
test-other-machine:
	$(PY) course.py test --other-machine
test-fast:
	$(PY) course.py test --fast
execute:
	$(PY) course.py execute
student:
	$(PY) course.py student
pack:
	$(PY) course.py pack
html:
	$(PY) course.py html
# make hub HUB_USERS=alice,bob [HUB_PORT=8000] [HUB_ARGS="--version student --admin teacher"]
hub:
	$(PY) course.py hub --port $(HUB_PORT) $(if $(HUB_USERS),--users $(HUB_USERS)) $(HUB_ARGS)
clean-venv:
	$(PY) course.py clean

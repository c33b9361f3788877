# TileLab quick start: `make run` (set up, build, run the main job) and `make test` (set up, build, test).
BUILD ?= build
JOBS ?= $(shell nproc)
WERROR := $(if $(CI),ON,OFF)
CMAKE_FLAGS ?=
VENV := $(BUILD)/venv
PY_TOOLS := nanobind scikit-build-core pytest numpy
PY_FLAGS = -DTL_PYTHON=ON -DPython_EXECUTABLE=$(abspath $(VENV))/bin/python

.PHONY: run test build setup python-setup configure gui-smoke fuzz-smoke clean

setup:
	@bash cmake/install_deps.sh

# The Python package's build and test tools in $(VENV), from PyPI. Without a venv or PyPI the package and its tests
# are left out of the build, saying why; everything else goes on.
python-setup:
	@mkdir -p $(BUILD)
	@if [ ! -f $(VENV)/.ok ]; then \
	  if python3 -m venv $(VENV) > $(BUILD)/pip.log 2>&1 && \
	     $(VENV)/bin/pip install -q --disable-pip-version-check $(PY_TOOLS) >> $(BUILD)/pip.log 2>&1; then \
	    touch $(VENV)/.ok; \
	  else \
	    echo "tilelab setup: could not install $(PY_TOOLS) into $(VENV) (see $(BUILD)/pip.log): the Python package and its tests are left out"; \
	  fi; \
	fi

$(BUILD)/build.ninja: | python-setup
	@PATH=$$PATH:/usr/local/cuda/bin cmake -S . -B $(BUILD) -G Ninja -DTL_WERROR=$(WERROR) \
	  $(if $(wildcard $(VENV)/.ok),$(PY_FLAGS)) $(CMAKE_FLAGS)

# A build configured before the Python tools were there gets the package once they are.
configure: setup python-setup $(BUILD)/build.ninja
	@if [ -f $(VENV)/.ok ] && ! grep -q '^TL_PYTHON:BOOL=ON' $(BUILD)/CMakeCache.txt; then \
	  PATH=$$PATH:/usr/local/cuda/bin cmake -S . -B $(BUILD) $(PY_FLAGS) > /dev/null; \
	fi

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

# The main job: the desktop app when a display is present, the headless quickstart otherwise.
run: build
	@if [ -n "$$DISPLAY$$WAYLAND_DISPLAY" ]; then \
	  $(BUILD)/tilelab gui; \
	else \
	  echo "no display: running the headless quickstart (results in out/quickstart/)"; \
	  $(BUILD)/tilelab run samples/quickstart.lua out/quickstart; \
	fi

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The GUI smoke test under a virtual display (used by .ci/run): a screenshot of each panel, driven by the scripts in
# tests/gui/, into out/ci/<panel>.png, then checked (the window's size, not blank) by test_gui_screenshots. Writing
# each one, the app checks its text (test mode): nothing cut off by its window, no glyph the font lacks, and in every
# plot no text outside the plot, overlapping another or struck through by a line; any of them fails the run. Each
# panel runs on a fresh results store of made-up rows (tests/gui/gui_history_fixture): the Results panel shows them.
# A script's "-- args: ..." line adds options (panel_hidpi.lua: --scale 1.5 --theme light).
GUI_PANELS := layouts source ptx sass results sweep timeline roofline lua device compare timelines hidpi
gui-smoke: build
	@mkdir -p out/ci
	@for p in $(GUI_PANELS); do \
	  $(BUILD)/tests/gui/gui_history_fixture out/ci/history.db > /dev/null || exit 1; \
	  args=$$(sed -n 's/^-- args: //p' tests/gui/panel_$$p.lua); \
	  TILELAB_DB=$$PWD/out/ci/history.db xvfb-run -a -s "-screen 0 1400x900x24" $(BUILD)/tilelab gui \
	    --script tests/gui/panel_$$p.lua --frames 5 --screenshot out/ci/$$p.png $$args || exit 1; \
	done
	@TL_SCREENSHOT_DIR=out/ci $(BUILD)/tests/gui/test_gui_screenshots
	@echo "gui smoke: wrote and checked out/ci/{$(shell echo $(GUI_PANELS) | tr ' ' ',')}.png"

# Short libFuzzer runs (clang build of the fuzz targets, used by .ci/run): FUZZ_SECONDS each of the layout SPEC
# parser and of the JSON readers (device profiles, run records, Chrome traces), each from its seed corpus.
FUZZ_SECONDS ?= 20
fuzz-smoke: setup
	@bash cmake/install_deps.sh clang libclang-rt-14-dev
	@PATH=$$PATH:/usr/local/cuda/bin cmake -S . -B build-fuzz -G Ninja -DCMAKE_C_COMPILER=clang \
	  -DCMAKE_CXX_COMPILER=clang++ -DTL_FUZZ=ON -DTL_BUILD_GUI=OFF -DTL_BUILD_TESTS=ON >/dev/null
	@cmake --build build-fuzz --target fuzz_layout_spec fuzz_json_readers
	@for t in "fuzz_layout_spec corpus 256" "fuzz_json_readers json_corpus 4096"; do \
	  set -- $$t; \
	  rm -rf build-fuzz/$$2 && cp -r tests/fuzz/$$2 build-fuzz/$$2 && \
	  build-fuzz/tests/fuzz/$$1 -max_total_time=$(FUZZ_SECONDS) -max_len=$$3 build-fuzz/$$2 \
	    > build-fuzz/$$1.log 2>&1 || { tail -40 build-fuzz/$$1.log; exit 1; }; \
	  tail -1 build-fuzz/$$1.log; \
	done
	@echo "fuzz smoke: $(FUZZ_SECONDS) s of the SPEC parser and $(FUZZ_SECONDS) s of the JSON readers without a crash"

clean:
	rm -rf $(BUILD)

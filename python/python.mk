# The Python package hmc (python/): ctypes bindings over the shared libhmc.
#
#   python-test          the unit and two-process tests (python/tests), run
#                        from the build tree: PYTHONPATH=python, libhmc found
#                        in HMC_BUILD=$(O)
#   python-install-test  `pip install ./python` into a fresh venv with no
#                        package index, then a smoke test of that copy
#   python-bench         Python put_bw of a 1 MiB NumPy array against
#                        hmcperf (RATIO py_vs_c_put_bw_1MiB)
#
# PYTHON is Debian's interpreter, whose python3-numpy the tests use.

PYTHON		?= /usr/bin/python3
PY_VENV		:= $(O)/python/venv
PY_ENV		:= PYTHONPATH=$(CURDIR)/python HMC_BUILD=$(abspath $(O)) \
		   HMC_PY_REQUIRE=numpy,torch PYTHONDONTWRITEBYTECODE=1

.PHONY: python-test python-install-test python-bench
_test: python-test python-install-test
_bench: python-bench

# The mock GPU runtimes of tests/gpu/gpu.mk, for the GPU paths without a GPU.
python-test: $(O)/lib/libhmc.so $(addprefix $(O)/tests/gpu/mock/,libcuda.so.1 \
		libamdhip64.so libascendcl.so libcnrt.so libmusart.so)
	@echo "== python/tests ($(PYTHON))"
	@$(PY_ENV) $(PYTHON) -m unittest discover -s python/tests -v

python-install-test: $(O)/lib/libhmc.so
	@echo "== pip install ./python (no index) into $(PY_VENV)"
	@rm -rf $(PY_VENV)
	@$(PYTHON) -m venv --system-site-packages $(PY_VENV)
	@$(PY_VENV)/bin/pip install --quiet --no-index --no-cache-dir ./python
	@cd / && HMC_LIBRARY=$(abspath $(O))/lib/libhmc.so.0 \
		$(abspath $(PY_VENV))/bin/python -c 'import hmc, sys; \
		assert hmc.__file__.startswith(sys.prefix), hmc.__file__; \
		b = hmc.IOBuffer(size=4096); b.put(b"installed", offset=7); \
		assert b.get(9, 7) == b"installed"; \
		print("ok - installed hmc", hmc.__version__, "from", hmc.__file__)'

python-bench: $(O)/lib/libhmc.so $(HMCPERF)
	@$(PY_ENV) $(PYTHON) python/bench/put_bw.py --hmcperf $(HMCPERF)

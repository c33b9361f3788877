"""TileLab from Python: the library's kernels (schemas, compile, run, sweeps, results), layouts, timelines, rooflines,
and a direct call of a kernel on CUDA tensors (torch, JAX, CuPy) in this process. Mirrors the Lua `tl` API.

    import tilelab, torch
    k = tilelab.kernel("gemm.wgmma")
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    c = k(a, b, config={"block_N": 256})          # C = A @ B.T on torch's current stream
"""
import glob
import os
import shutil
import sys

try:
    from tilelab import _tilelab
except ImportError as e:
    _here = os.path.dirname(os.path.abspath(__file__))
    _built = [os.path.basename(f) for f in glob.glob(os.path.join(_here, "_tilelab*.so"))]
    raise ImportError(f"tilelab: cannot load its module ({e}); this is Python {sys.version_info[0]}.{sys.version_info[1]}, "
                      f"the package has {', '.join(_built) or 'none'}: build it for this Python "
                      "(pip install . with it, or cmake -DTL_PYTHON=ON -DPython_EXECUTABLE=...)") from e
from tilelab._direct import call as _call
from tilelab._errors import (ERRORS, CompileError, CudaError, Error, FaultError, InternalError,  # noqa: F401
                             InvalidArgumentError, IoError, KernelTimeoutError, NoDeviceError, NotFoundError,
                             ParseError, UnsupportedError)

__version__ = _tilelab.version
version = _tilelab.version

Layout = _tilelab.Layout
Plot = _tilelab.Plot
Timeline = _tilelab.Timeline


def _worker_path():
    """The `tilelab` executable the GPU worker runs as: $TILELAB_WORKER, else the one in this package, else PATH's."""
    env = os.environ.get("TILELAB_WORKER")
    if env:
        return env
    own = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "tilelab")
    if os.access(own, os.X_OK):
        return own
    return shutil.which("tilelab") or ""


def configure(kernels_dir="", cache_dir="", db="", launch_timeout=30.0, worker=None):
    """Where kernel sources, the compile cache and the results store are (as the CLI's --kernels-dir, --cache-dir,
    --db; "" = the defaults), the watchdog per launch in seconds, and the worker executable."""
    _tilelab.configure(kernels_dir, cache_dir, db, float(launch_timeout), worker or _worker_path())


configure()


def info():
    """The host, the CUDA toolkit/runtime/driver and NVRTC versions, each GPU or why there is none."""
    return _tilelab.info()


def device(measure=True):
    """GPU 0 and its measured ceilings (measured once in the worker when not cached and `measure`); raises
    NoDeviceError without a GPU."""
    return _tilelab.device(measure)


def kernels(all=False):
    """The library's kernels with their problem and config schemas (`all`: the hidden test kernels too)."""
    return _tilelab.kernels(all)


def kernel(name):
    """A kernel of the library by name; NotFoundError names the closest one."""
    return Kernel(name)


class Kernel:
    """A library kernel: its schema, values, can_implement, compile, layouts, run/bench (in the worker), model
    timeline, and a direct call on CUDA tensors in this process: k(a, b, config=..., stream=..., out=...)."""

    def __init__(self, name):
        schema = _tilelab.schema(name)
        self.name = schema["name"]
        self.family = schema["family"]
        self.summary = schema["summary"]

    def __repr__(self):
        return f"tilelab.kernel({self.name!r})"

    def schema(self):
        """{name, family, summary, problem: [params], config: [params], ...}: each parameter with its default,
        allowed values and meaning."""
        return _tilelab.schema(self.name)

    def config(self, config=None, **values):
        """Every config parameter, typed, defaults filled in; raises InvalidArgumentError naming what is wrong."""
        return _tilelab.values(self.name, "config", _merge(config, values))

    def problem(self, problem=None, **values):
        """Every problem parameter, typed, defaults filled in."""
        return _tilelab.values(self.name, "problem", _merge(problem, values))

    def can_implement(self, problem=None, config=None):
        """(True, None) or (False, reason): the schemas and can_implement, before any compile."""
        return _tilelab.can_implement(self.name, problem, config)

    def compile(self, config=None, problem=None, timeline=False):
        """Compiles one config with NVRTC (no GPU needed): registers, shared memory, spills, stack, name_expression,
        lowered_name, arch, cached, compile_ms, ptx, log. `timeline`: the probe build."""
        return _tilelab.compile(self.name, config, problem, timeline)

    def layouts(self, problem=None, config=None):
        """[{name, spec}]: the shared-memory and fragment layouts the kernel indexes with (SPECs for layout())."""
        return _tilelab.layouts(self.name, problem, config)

    def tensors(self, problem=None, config=None):
        """[{name, dtype, shape, role}]: the tensors of a direct call at these values (defaults for the rest), in
        the kernel's order; role "in"/"inout" (passed), "out" (returned), "scratch"/"table" (TileLab's own)."""
        return _tilelab.direct_tensors(self.name, problem, config)

    def infer_problem(self, *tensors, problem=None, config=None, **named):
        """The problem a direct call with these tensors runs (shapes and dtypes; no GPU needed)."""
        from tilelab._direct import bind
        return _tilelab.direct_infer(self.name, problem, config, bind(self, tensors, named, problem, config))

    def run(self, problem=None, config=None, rep=20, warmup=3, verify=True, timeline=False, baseline=None,
            store=False, timer="events", graph_launches=0):
        """Runs one config in the worker on its own random inputs, checked against the float64 reference and timed
        as `tilelab bench` does: {median_ms, min_ms, max_ms, timer, tflops, gbps, efficiency, bound, rel_err,
        max_abs_err, passed, failure, resources, baseline, timeline, record}. Raises what keeps it from running
        (invalid config, NoDeviceError, CompileError, FaultError, KernelTimeoutError); a failed check is
        passed=False. `store`: recorded in the results store (its row id in "stored_id"). `timer`: "events",
        "cupti" or "graph" (`bench --timer`); `graph_launches`: launches per graph (0: sized by the worker)."""
        return _tilelab.run(self.name, problem, config, rep, warmup, verify, timeline, baseline or "", store, timer,
                            graph_launches)

    def bench(self, problem=None, config=None, rep=20, warmup=3, timeline=False, baseline=None, store=True,
              timer="events", graph_launches=0):
        """`tilelab bench`: run() recorded in the results store; returns the run record (the JSON of bench --json)."""
        return self.run(problem, config, rep, warmup, True, timeline, baseline, store, timer, graph_launches)["record"]

    def model_timeline(self, problem=None, config=None):
        """The pipeline timeline modelled from the config and the device's rates (no GPU; labelled MODEL)."""
        return _tilelab.model_timeline(self.name, problem, config)

    def __call__(self, *tensors, config=None, problem=None, out=None, stream=None, **named):
        """Runs the kernel in this process on CUDA tensors (DLPack: torch, JAX, CuPy) on `stream` (default: the
        inputs' framework's current stream, else torch's, else 0) and returns its outputs (one tensor, or a tuple
        in the kernel's order), allocated with the inputs' framework unless `out` gives them. Inputs go by position
        in the kernel's order (tensors()) or by name; the problem comes from their shapes and dtypes (`problem`
        sets what they cannot say). Nothing is checked against a reference: run() does that."""
        return _call(self, tensors, named, config, problem, out, stream)


def _merge(given, values):
    merged = dict(given or {})
    merged.update(values)
    return merged


def model_timeline(kernel, problem=None, config=None):
    """The model timeline of a kernel's config (as Lua's tl.model_timeline{kernel=, problem=, config=})."""
    return _tilelab.model_timeline(kernel, problem, config)


def load_timeline(path):
    """A timeline from a Chrome trace TileLab wrote."""
    return _tilelab.load_timeline(path)


def layout(spec, dtype=""):
    """A layout, swizzled layout, shared-memory tile or hardware atom from its SPEC (those of `tilelab layout`)."""
    return _tilelab.Layout(spec, dtype)


def layouts():
    """[{name, description}]: every named atom."""
    return _tilelab.layout_atoms()


def banks(spec, access, elem_bytes=0):
    """Bank conflicts of one access pattern over a shared-memory SPEC or Layout (`tilelab banks --json`)."""
    return _tilelab.banks(spec, access, elem_bytes)


def roofline(runs, device_profile="", kernels=None):
    """The runs (run results or records) on the measured roofline: {device, ceilings, ridges, points, skipped,
    ceilings_from}. Ceilings from `device_profile`, else GPU 0 (measured once), else the cached ones."""
    return _tilelab.roofline(list(runs), device_profile, list(kernels or []))


class SweepResults(list):
    """The points of a sweep (dicts: status, reason, config, problem, resources, metrics, record), with .id,
    .summary and .best."""

    def __init__(self, points, id, summary, best):
        super().__init__(points)
        self.id = id
        self.summary = summary
        self.best = best


def sweep(kernel, space, problem=None, problems=None, config=None, filter=None, on_result=None, jobs=0, rep=None,
          warmup=None, samples=None, store=True, resume=True, progress=True, best="tflops", timer="events",
          graph_launches=0, gpus=None):
    """The sweep engine (`tilelab sweep`): every point of `space` ({param: [values]}, the first varying slowest)
    over each problem; invalid points skipped with their reason, the rest compiled on `jobs` threads and run in a
    worker per GPU (`gpus`: "all", an index or a list of them; default GPU 0), each GPU taking the next point when
    it is free, each stored as it finishes (a rerun skips stored points unless resume=False).
    filter(config, problem) -> bool or (bool, why); on_result(point, done, total), both on the calling thread.
    Returns SweepResults."""
    if problem is not None and problems is not None:
        raise InvalidArgumentError("sweep: give problem or problems, not both")
    if problem is not None:
        problems = [problem]
    r = _tilelab.sweep(kernel, problems, space, config, filter, on_result, jobs, -1 if rep is None else rep,
                       -1 if warmup is None else warmup, -1 if samples is None else samples, store, resume, progress,
                       best, timer, graph_launches, _gpus_text(gpus))
    return SweepResults(r["points"], r["id"], r["summary"], r["best"])


def _gpus_text(gpus):
    """gpus= of sweep() as `tilelab sweep --gpus` takes it: "all", "1" or "0,1" ("" for the default)."""
    if gpus is None:
        return ""
    if isinstance(gpus, str):
        return gpus if gpus.strip() else " "  # blank: the engine says what it expected
    if isinstance(gpus, int) and not isinstance(gpus, bool):
        return str(gpus)
    if isinstance(gpus, (list, tuple)) and gpus and all(isinstance(g, int) and not isinstance(g, bool) for g in gpus):
        return ",".join(str(g) for g in gpus)
    raise InvalidArgumentError('sweep: gpus: expected "all", a GPU index or a non-empty list of them, e.g. [0, 1]; '
                               "got " + repr(gpus))


class _Results:
    """The results store (`tilelab results`): where configure(db=) points, else $TILELAB_DB or the default."""

    @staticmethod
    def query(kernel="", since="", sweep="", limit=0, best=""):
        """Stored runs, oldest first; `best`: the best passed run per kernel and problem by that metric."""
        return _tilelab.results_query(kernel, since, sweep, limit, best)

    @staticmethod
    def compare(a, b):
        """Two stored runs (ids or rows): config/problem differences and each metric with its ratio."""
        return _tilelab.results_compare(_run_id(a), _run_id(b))

    @staticmethod
    def path():
        return _tilelab.results_db()


def _run_id(x):
    if isinstance(x, dict):
        x = x.get("id") or x.get("row_id") or x.get("stored_id")
    if not isinstance(x, int):
        raise InvalidArgumentError("results.compare: expected a run id or a stored result (a dict with id)")
    return x


results = _Results()


class _Plots:
    """Plots (each a Plot with .save("x.png|svg|pdf") and .size), as Lua's tl.plot."""

    @staticmethod
    def layout(spec, dtype="", color="", inverse=False, title="", cell_size=0.0):
        return _tilelab.plot_layout(spec, dtype, color, inverse, title, cell_size)

    @staticmethod
    def banks(spec, access, elem_bytes=0):
        return _tilelab.plot_banks(spec, access, elem_bytes)

    @staticmethod
    def timeline(timeline, view="gantt", t0=0.0, t1=0.0, tracks=0, first_track=0, width=0.0, title=""):
        """A Timeline, a run result with one, or a Chrome trace file."""
        if isinstance(timeline, dict):
            if "timeline" not in timeline:
                raise InvalidArgumentError("this run has no timeline: " +
                                           timeline.get("timeline_error", "run it with timeline=True"))
            timeline = timeline["timeline"]
        elif isinstance(timeline, (str, os.PathLike)):
            timeline = load_timeline(os.fspath(timeline))
        return timeline.plot(view, t0, t1, tracks, first_track, width, title)

    @staticmethod
    def roofline(runs, device_profile="", color_by="", title="", width=0.0, height=0.0):
        return _tilelab.plot_roofline(list(runs), device_profile, color_by, title, width, height)

    @staticmethod
    def heatmap(results, x, y, metric="tflops", title=""):
        """A sweep's heat map over two config parameters (points of sweep() or rows of results.query())."""
        return _tilelab.plot_heatmap(list(results), x, y, metric, title)


plot = _Plots()

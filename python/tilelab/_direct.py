"""The direct call: a kernel on the caller's tensors in this process. Binds the arguments to the kernel's tensors,
allocates what the caller did not pass with the inputs' framework, finds the stream, and launches."""
from tilelab import _tilelab
from tilelab._errors import InvalidArgumentError

# TileLab dtype -> the framework's name for it (None: the framework has no such type).
_TORCH = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "f64": "float64", "i32": "int32",
          "u32": "uint32", "i8": "int8", "u8": "uint8", "e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2",
          "i64": "int64", "u64": "uint64"}
_NUMPY = {"f32": "float32", "f16": "float16", "f64": "float64", "i32": "int32", "u32": "uint32", "i8": "int8",
          "u8": "uint8", "i64": "int64", "u64": "uint64"}

_inputs = {}  # (kernel, problem, config) -> names of the tensors passed by position
_plans = {}   # (kernel, problem, config, tensors' types/shapes/dtypes/devices) -> DirectPlan


def _key(d):
    return tuple(sorted((d or {}).items()))


def _framework(t):
    return type(t).__module__.split(".")[0]


def bind(kernel, tensors, named, problem, config):
    """{name: tensor}: positional tensors take the kernel's inputs in order, named ones their names."""
    key = (kernel.name, _key(problem), _key(config))
    names = _inputs.get(key)
    if names is None:
        names = [t["name"] for t in _tilelab.direct_tensors(kernel.name, problem, config) if t["role"] in ("in", "inout")]
        _inputs[key] = names
    if len(tensors) > len(names):
        raise InvalidArgumentError(f"{kernel.name}: {len(tensors)} tensors given by position; it takes "
                                   f"{len(names)} ({', '.join(names)})")
    bound = dict(zip(names, tensors))
    for name, t in named.items():
        if name in bound:
            raise InvalidArgumentError(f"{kernel.name}: tensor '{name}' given twice (by position and by name)")
        bound[name] = t
    return bound


def _outputs_given(plan, out):
    """out=: one tensor (a kernel with one output), a tuple/list in the outputs' order, or {name: tensor}."""
    names = [t["name"] for t in plan.tensors if t["role"] == "out"]
    if out is None:
        return {}
    if isinstance(out, dict):
        return dict(out)
    if isinstance(out, (list, tuple)):
        if len(out) != len(names):
            raise InvalidArgumentError(f"{plan.kernel}: out= has {len(out)} tensors; its outputs are "
                                       f"{', '.join(names)}")
        return dict(zip(names, out))
    if len(names) != 1:
        raise InvalidArgumentError(f"{plan.kernel}: out= must give each of its outputs ({', '.join(names)})")
    return {names[0]: out}


def _allocate(like, device, spec, kernel):
    """A tensor for `spec` ({name, dtype, shape, role, data}) from `like`'s framework, on its device: empty for an
    output, zeros for scratch, the table's bytes for a table."""
    fw = _framework(like) if like is not None else "torch"
    name, dtype, shape = spec["name"], spec["dtype"], tuple(spec["shape"])
    if fw == "torch":
        import torch
        tdt = getattr(torch, _TORCH[dtype], None)
        if tdt is None:
            raise InvalidArgumentError(f"{kernel}: this torch has no {dtype} for tensor '{name}': pass it with out=")
        dev = like.device if like is not None else torch.device("cuda", device)
        if spec["data"] is not None:
            return torch.frombuffer(bytearray(spec["data"]), dtype=tdt).reshape(shape).to(dev)
        if spec["role"] == "scratch":
            return torch.zeros(shape, dtype=tdt, device=dev)
        return torch.empty(shape, dtype=tdt, device=dev)
    if fw == "cupy":
        import cupy
        import numpy
        if dtype not in _NUMPY:
            raise InvalidArgumentError(f"{kernel}: CuPy has no {dtype} for tensor '{name}': pass it with out= "
                                       "(a torch tensor through DLPack, say)")
        with cupy.cuda.Device(device):
            if spec["data"] is not None:
                return cupy.asarray(numpy.frombuffer(spec["data"], dtype=_NUMPY[dtype]).reshape(shape))
            if spec["role"] == "scratch":
                return cupy.zeros(shape, dtype=_NUMPY[dtype])
            return cupy.empty(shape, dtype=_NUMPY[dtype])
    raise InvalidArgumentError(f"{kernel}: cannot allocate tensor '{name}' with {fw} arrays (JAX arrays are "
                               "immutable): pass it with out= (or pass torch or CuPy tensors)")


def _stream(stream, like, device):
    """A cudaStream_t as an int: the given one (an int, a torch/CuPy stream, or anything with __cuda_stream__),
    else the current stream of the inputs' framework, else torch's current stream, else 0."""
    if stream is not None:
        if isinstance(stream, int):
            return stream
        for attr in ("cuda_stream", "ptr"):
            if hasattr(stream, attr):
                return int(getattr(stream, attr))
        if hasattr(stream, "__cuda_stream__"):
            return int(stream.__cuda_stream__()[1])
        raise InvalidArgumentError(f"stream: expected an int (a cudaStream_t), a torch or CuPy stream "
                                   f"(got {type(stream).__name__})")
    fw = _framework(like) if like is not None else None
    if fw == "cupy":
        import cupy
        return int(cupy.cuda.get_current_stream().ptr)
    try:
        import torch
    except ImportError:
        return 0
    return int(torch.cuda.current_stream(device).cuda_stream)


def _describe(t):
    return (type(t), tuple(getattr(t, "shape", ())), str(getattr(t, "dtype", "")), str(getattr(t, "device", "")))


def call(kernel, tensors, named, config, problem, out, stream):
    given = bind(kernel, tensors, named, problem, config)
    like = next(iter(given.values()), None)
    device = -1
    if like is None:
        outs = out.values() if isinstance(out, dict) else out if isinstance(out, (list, tuple)) else [out]
        like = next((o for o in outs if o is not None), None)
    if like is None:
        try:
            import torch
            device = torch.cuda.current_device()
        except ImportError:
            device = 0
    key = (kernel.name, _key(problem), _key(config), device, tuple((n, _describe(t)) for n, t in given.items()))
    plan = _plans.get(key)
    if plan is None:
        plan = _tilelab.direct_plan(kernel.name, problem, config, given, device)
        _plans[key] = plan
    all_tensors = dict(given)
    all_tensors.update(_outputs_given(plan, out))
    for spec in plan.tensors:
        if spec["name"] not in all_tensors:
            all_tensors[spec["name"]] = _allocate(like, plan.device, spec, plan.kernel)
    plan.launch(all_tensors, _stream(stream, like, plan.device))
    results = tuple(all_tensors[t["name"]] for t in plan.tensors if t["role"] in ("out", "inout"))
    return results[0] if len(results) == 1 else results

# The perf scripts' pure-Python helpers (tests/perf): what they compute without a GPU.
import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / "perf" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_mla_lengths_match_the_kernels_draw():
    # The same numbers test_mla_schedule's VarlenLengthsArePinned pins for make_paged_cache: FlashMLA timed from Python
    # with LENGTHS=tilelab runs on mla.decode's own caches.
    m = _load("mla_lengths")
    lens = m.tilelab_lengths(32, 32768, 1)
    assert lens[:4] == [37585, 14909, 54423, 50093]
    assert sum(lens) == 1046307 and max(lens) == 83074
    assert sum(m.tilelab_lengths(128, 4096, 2, zeros=True)) == 295911
    assert min(m.tilelab_lengths(64, 100, 7)) >= 7

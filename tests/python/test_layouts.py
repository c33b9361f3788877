# Layouts from Python: the algebra against CuTe's definitions, atoms against the PTX ISA, cells, plots, banks.
import json
import subprocess

import pytest

import tilelab


def test_layout_maps_as_cute_defines():
    l = tilelab.layout("(8,4):(4,1)")
    assert (l.size(), l.cosize(), l.rank(), l.kind()) == (32, 32, 2, "layout")
    # Column-major coordinates: index i is (i % 8, i // 8) and goes to (i % 8) * 4 + (i // 8).
    assert [l(i) for i in range(32)] == [(i % 8) * 4 + i // 8 for i in range(32)]
    assert l.at(3, 2) == 3 * 4 + 2


def test_composition_agrees_pointwise():
    a = tilelab.layout("(8,4):(4,1)")
    b = tilelab.layout("(4,2):(2,1)")
    c = a.compose(b)
    assert [c(i) for i in range(c.size())] == [a(b(i)) for i in range(b.size())]
    assert a.compose("(4,2):(2,1)") == c
    with pytest.raises(tilelab.InvalidArgumentError, match="is an atom"):
        a.compose(tilelab.layout("mma.m16n8k16.f16.A"))


def test_mma_a_fragment_is_the_ptx_isa_one():
    # PTX ISA, mma.m16n8k16 .f16 A: groupID = lane / 4, threadID_in_group = lane % 4; a0,a1 at row groupID,
    # a2,a3 at row groupID + 8, columns threadID_in_group * 2 + (i & 1), and + 8 for a4..a7.
    a = tilelab.layout("mma.m16n8k16.f16.A")
    assert a.threads() == (32, 8, 1) and a.tile() == (16, 16)
    for lane in range(32):
        for i in range(8):
            row = lane // 4 + (8 if i in (2, 3, 6, 7) else 0)
            col = (lane % 4) * 2 + (i & 1) + (8 if i >= 4 else 0)
            assert a.at(lane, i) == (row, col)
            assert a.owner(row, col) == (lane, i)


def test_repeat_and_replicate_grow_the_fragment():
    a = tilelab.layout("mma.m16n8k16.f16.A")
    r = a.repeat(2, 1, "thread")
    assert r.threads() == (64, 8, 1) and r.tile() == (32, 16)
    assert r.at(32, 0) == (16, 0)
    assert a.replicate(2).threads()[2] == 2
    with pytest.raises(tilelab.InvalidArgumentError, match="memory layout"):
        tilelab.layout("(8,4)").repeat(2, 1)


def test_cells_cover_the_tile(cli):
    l = tilelab.layout("swizzle<3,3,3> o (8,64):(64,1)", "f16")
    j = l.json()
    assert len(j["cells"]) == 8 * 64
    assert sorted(c["offset"] for c in j["cells"]) == list(range(512))
    out = subprocess.run([cli, "layout", "swizzle<3,3,3> o (8,64):(64,1)", "--dtype", "f16", "--format", "json"],
                         capture_output=True, text=True, check=True).stdout
    assert j == json.loads(out)
    assert l.cells() == j["cells"]
    assert l.text().strip()


def test_plots_save_png_and_svg(tmp_path):
    p = tilelab.layout("mma.m16n8k16.f32.C").plot(color="warp", title="C")
    w, h = p.size
    assert w > 100 and h > 100
    assert p.save(str(tmp_path / "c.png")) == str(tmp_path / "c.png")
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"
    tilelab.plot.layout("(8,8):(8,1)").save(str(tmp_path / "l.svg"))
    assert b"<svg" in (tmp_path / "l.svg").read_bytes()[:400]
    with pytest.raises(tilelab.InvalidArgumentError, match="unknown color"):
        tilelab.layout("(8,8)").plot(color="rainbow")
    with pytest.raises(tilelab.Error):
        p.save(str(tmp_path / "c.bmp"))


def test_banks_are_the_cli_analysis(cli):
    swizzled = tilelab.banks("smem.swizzle128B.bf16.(64,64)", "ldmatrix.x4")
    # The 128-byte swizzle exists so that ldmatrix reads 8 rows of 16 bytes from 8 different bank groups.
    assert swizzled["wavefronts"] == swizzled["ideal_wavefronts"]
    plain = tilelab.banks("(64,64):(64,1)", "ldmatrix.x4", elem_bytes=2)
    assert plain["wavefronts"] > plain["ideal_wavefronts"]
    out = subprocess.run([cli, "banks", "(64,64):(64,1)", "--access", "ldmatrix.x4", "--elem-bytes", "2", "--json"],
                         capture_output=True, text=True, check=True).stdout
    assert plain == json.loads(out)
    assert tilelab.plot.banks("smem.swizzle128B.bf16.(64,64)", "ldmatrix.x4").kind == "banks"


def test_atoms_are_listed():
    names = [a["name"] for a in tilelab.layouts()]
    assert "mma.m16n8k16.f16.A" in names and all(a["description"] for a in tilelab.layouts())


def test_kernel_layouts_parse():
    for l in tilelab.kernel("gemm.wgmma").layouts():
        assert tilelab.layout(l["spec"]).size() > 0, l

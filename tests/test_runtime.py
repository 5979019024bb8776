"""Launch API: argument packing, backends, results written back."""

from __future__ import annotations

import struct

import numpy as np
import pytest

import asterism
from asterism.errors import AsterismError
from asterism.runtime import launch, select_backend
from asterism.runtime.hip_backend import HipError, HipRuntime, find_hip_library
from asterism.runtime.kernargs import ArgumentError, pack_kernargs

DEMO = "examples/demo/add_10.mlir"

META = {
    ".name": "k", ".kernarg_segment_size": 280,
    ".args": [
        {".name": "a", ".offset": 0, ".size": 8, ".value_kind": "global_buffer",
         ".access": "read_only", ".type_name": "float*"},
        {".name": "out", ".offset": 8, ".size": 8, ".value_kind": "global_buffer",
         ".access": "write_only"},
        {".name": "n", ".offset": 16, ".size": 4, ".value_kind": "by_value",
         ".type_name": "int"},
        {".name": "x", ".offset": 20, ".size": 4, ".value_kind": "by_value"},
        {".offset": 24, ".size": 4, ".value_kind": "hidden_block_count_x"},
        {".offset": 28, ".size": 4, ".value_kind": "hidden_block_count_y"},
        {".offset": 36, ".size": 2, ".value_kind": "hidden_group_size_x"},
        {".offset": 88, ".size": 2, ".value_kind": "hidden_grid_dims"},
    ],
}


def test_pack_kernargs_layout():
    a, out = np.zeros(4, np.float32), np.zeros(4, np.int32)
    packed = pack_kernargs(META, [a, out, -3, 1.5], (7, 2, 1), (64, 1, 1))
    seg = bytes(packed.segment)
    assert len(seg) == 280
    assert struct.unpack_from("<i", seg, 16)[0] == -3
    assert struct.unpack_from("<f", seg, 20)[0] == 1.5
    assert struct.unpack_from("<II", seg, 24) == (7, 2)
    assert struct.unpack_from("<H", seg, 36)[0] == 64
    assert struct.unpack_from("<H", seg, 88)[0] == 2  # x and y span more than one item
    assert [(b.name, b.copy_in, b.copy_out) for b in packed.buffers] == [
        ("a", True, False), ("out", False, True)]
    packed.set_pointer(packed.buffers[1], 0x1234)
    assert struct.unpack_from("<Q", packed.segment, 8)[0] == 0x1234


@pytest.mark.parametrize("args,message", [
    ([np.zeros(4, np.float32)], "takes 4 argument(s)"),
    ([np.zeros(4, np.float64), np.zeros(4), 1, 1.0], "argument 'a': expected an array of float32"),
    ([np.zeros(4, np.float32), 5, 1, 1.0], "argument 'out' is a buffer"),
    ([np.zeros(4, np.float32), np.zeros(4), 2**40, 1.0], "argument 'n' (int32)"),
    ([np.zeros(4, np.float32), np.zeros(4), 1.5, 1.0], "non-integer 1.5"),
    ({"a": np.zeros(4, np.float32), "b": 1}, "unknown argument(s) b"),
])
def test_argument_errors_name_the_argument(args, message):
    with pytest.raises(ArgumentError) as err:
        pack_kernargs(META, args, (1, 1, 1), (64, 1, 1))
    assert message in err.value.message


def test_demo_runs_on_the_emulator():
    out = np.zeros(256, np.int32)
    result = launch(DEMO, "add_10", grid=(4, 1, 1), block=(64, 1, 1), args=[out],
                    backend="emu", iterations=2)
    np.testing.assert_array_equal(out, np.arange(256) + 10)
    assert result.backend == "emu" and len(result.times) == 2
    assert result.stats.waves == 4


def test_launch_errors():
    out = np.zeros(256, np.int32)
    with pytest.raises(AsterismError, match="no kernel 'nope'"):
        launch(DEMO, "nope", args=[out])
    with pytest.raises(AsterismError, match="requires workgroups of"):
        launch(DEMO, "add_10", block=(128, 1, 1), args=[out])
    with pytest.raises(AsterismError, match="unknown backend"):
        launch(DEMO, "add_10", args=[out], backend="cuda")


def test_top_level_launch_and_compile():
    out = np.zeros(64, np.int32)
    asterism.launch(asterism.compile(DEMO), "add_10", grid=1, block=64, args={"out": out})
    assert out[63] == 73


def test_hip_library_discovery_and_errors(monkeypatch, tmp_path):
    monkeypatch.setenv("ROCM_PATH", str(tmp_path))
    monkeypatch.setenv("LD_LIBRARY_PATH", "")
    monkeypatch.setattr("ctypes.util.find_library", lambda name: None)
    monkeypatch.setattr("asterism.runtime.hip_backend.Path.exists", lambda self: False)
    assert find_hip_library() is None
    with pytest.raises(HipError, match="HIP runtime not found"):
        HipRuntime()
    # A library path that exists but is not a loadable library is a clear error too.
    fake = tmp_path / "lib" / "libamdhip64.so"
    fake.parent.mkdir()
    fake.write_bytes(b"not an ELF")
    with pytest.raises(HipError, match="cannot load"):
        HipRuntime(str(fake))


def test_auto_backend_falls_back_to_the_emulator(monkeypatch):
    monkeypatch.setattr("asterism.runtime.hip_backend.hip_device_matches", lambda t: False)
    assert select_backend("auto", "gfx942").name == "emu"


@pytest.mark.gpu
def test_demo_on_a_real_gpu():
    from asterism.runtime.hip_backend import hip_device_matches

    if not hip_device_matches("gfx942"):
        pytest.skip("no gfx942 GPU with HIP here")
    out = np.zeros(256, np.int32)
    launch(DEMO, "add_10", grid=4, block=64, args=[out], backend="hip")
    np.testing.assert_array_equal(out, np.arange(256) + 10)


def test_emulator_runs_the_code_it_is_given_not_a_cached_one():
    # The backend's decoded-program cache was keyed by the code object's id(): a code object
    # whose text changed (or a new one that reused a freed one's id, as a test session's
    # kernels do) ran the old program (seen as "v176 is used but the kernel descriptor
    # allocates 176 VGPRs" between two attention builds).
    from asterism.api import load_code_object

    text = open(DEMO).read()
    obj, _ = load_code_object(asterism.compile(DEMO))
    twice, _ = load_code_object(asterism.compile(
        text.replace("arith.constant 1 :", "arith.constant 2 :")))
    assert len(twice.text) == len(obj.text) and twice.text != obj.text
    out = np.zeros(64, np.int32)
    launch(obj, "add_10", grid=1, block=64, args=[out], backend="emu")
    assert out[5] == 15
    obj.text = twice.text
    launch(obj, "add_10", grid=1, block=64, args=[out], backend="emu")
    assert out[5] == 25

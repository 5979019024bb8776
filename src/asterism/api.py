"""One-call functions behind the CLI verbs, for scripts:

    mod = kb.finish()                       # or asterism.parse(open("k.mlir").read())
    asm = asterism.translate(mod)           # LLVM-syntax assembly
    hsaco = asterism.compile(mod)           # code object bytes, no external tool
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from asterism.mc.codeobject import CodeObject


def _read(source: str | os.PathLike[str] | bytes, what: str) -> tuple[str, str]:
    """(text, filename) from text or a path."""
    from asterism.textio import decode_text, read_text

    if isinstance(source, bytes):
        return decode_text(source, "<input>"), "<input>"
    text = os.fspath(source) if isinstance(source, os.PathLike) else str(source)
    if "\n" not in text and os.path.isfile(text):
        return read_text(text), text
    return text, "<input>"


# What upstream input (gpu/amdgpu/arith/vector/memref/scf kernels) runs when the pipeline is
# empty; a non-empty pipeline runs after `lower-upstream` instead of `auto`.
UPSTREAM_PIPELINE = "lower-upstream,auto"


def parse(source, filename: str | None = None, verify: bool = True):
    """Parse amdgcn IR or upstream MLIR text (or a path) into a module, verified unless
    `verify` is False (amdgcn IR only: `lower`, `translate`, `compile` and `optimize` verify
    what they take; upstream input is always verified, by its own rules first)."""
    return _parsed(source, filename, verify)[0]


def _parsed(source, filename: str | None = None, verify: bool = True):
    """(module, whether it was verified) of IR text or a path (see `parse`)."""
    from asterism.frontend.parse import is_upstream_text, parse_upstream
    from asterism.ir import parse_ir

    text, name = _read(source, "IR")
    if is_upstream_text(text):
        return parse_upstream(text, filename or name), True
    return parse_ir(text, filename or name, verify=verify), verify


def retarget(module, target: str) -> None:
    """Set the target of every amdgcn.module in `module` and verify it again."""
    from xdsl.dialects.builtin import StringAttr

    from asterism.ir import verify_module
    from asterism.target import get_target

    name = get_target(target).name
    from asterism.frontend.parse import has_upstream

    if has_upstream(module):
        module.attributes["asterism.target"] = StringAttr(name)
    for op in module.walk():
        if op.name == "amdgcn.module":
            op.properties["target"] = StringAttr(name)
    verify_module(module)


def _module(source):
    """The verified module of `source`: text is parsed and verified; a module object is
    verified too (it may have been built or changed by hand since)."""
    if isinstance(source, (str, bytes, os.PathLike)):
        return parse(source)
    from asterism.ir import verify_module

    verify_module(source)
    return source


def implied_pipeline(module, pipeline: str = "") -> str:
    """The pipeline that runs on `module`: for upstream input, `lower-upstream,auto` when
    `pipeline` is empty, else `lower-upstream` followed by `pipeline`; else `pipeline`."""
    from asterism.frontend.parse import has_upstream

    if not has_upstream(module) or "lower-upstream" in pipeline:
        return pipeline
    return f"lower-upstream,{pipeline}" if pipeline.strip() else UPSTREAM_PIPELINE


def optimize(source, pipeline: str = "", *, print_after_all=None, timings=None):
    """Run a pass pipeline on IR (the empty pipeline is the identity; upstream input gets
    `implied_pipeline`)."""
    from asterism.passes.pipeline import run_pipeline

    module = _module(source)
    return run_pipeline(module, implied_pipeline(module, pipeline),
                        print_after_all=print_after_all, timings=timings)


def lower(source, pipeline: str = ""):
    """IR (module or text) -> McModule, after the pipeline. What the passes take is verified
    first and lowering verifies what it lowers (text without passes is verified once)."""
    from asterism.ir import lower_module, verify_module
    from asterism.passes.pipeline import run_pipeline
    from asterism.support.gcpause import pause_cyclic_gc, resume_cyclic_gc

    # The collector paused from the parse to the lowered module: paused only step by step,
    # each resume let the next allocations scan everything the steps before made (the IR,
    # the passes' facts): about a seventh of a 10,000-instruction kernel's compile.
    was_enabled = pause_cyclic_gc()
    try:
        if isinstance(source, (str, bytes, os.PathLike)):
            module, verified = _parsed(source, verify=False)
        else:
            module, verified = source, False  # (it may have been built or changed by hand)
        pipeline = implied_pipeline(module, pipeline)
        if pipeline:
            if not verified:
                verify_module(module)
            module = run_pipeline(module, pipeline)
        return lower_module(module)  # (verifies what it lowers)
    finally:
        resume_cyclic_gc(was_enabled)


def translate(source, pipeline: str = "") -> str:
    """IR -> LLVM-syntax assembly with the .amdhsa_kernel and metadata directives."""
    from asterism.mc.asm_writer import print_module

    return print_module(lower(source, pipeline))


def compile(source, pipeline: str = "") -> bytes:
    """IR -> HSACO bytes (no external tool)."""
    from asterism.mc.assembler import assemble as assemble_mc

    return assemble_mc(lower(source, pipeline))


def assemble(source, target: str | None = None, filename: str | None = None) -> bytes:
    """LLVM-syntax assembly text (or a path) -> HSACO bytes (no external tool)."""
    from asterism.mc.assembler import assemble as assemble_mc
    from asterism.mc.parser import parse_asm

    text, name = _read(source, "assembly")
    return assemble_mc(parse_asm(text, filename or name, target))


def raise_kernel(source, kernel: str | None = None, *, target: str | None = None,
                 relocatable: bool = False, keep_pinned: str = "", drop_waits: bool = False,
                 drop_nops: bool = False):
    """Code object or assembly (path or bytes) -> amdgcn IR module: every kernel or the one
    named `kernel`, fixed registers unless `relocatable` (see asterism.ir.raising)."""
    from asterism.ir.raising import raise_kernel as raise_

    return raise_(source, kernel, target=target, relocatable=relocatable,
                  keep_pinned=keep_pinned, drop_waits=drop_waits, drop_nops=drop_nops)


def disassemble(source) -> tuple[object, list]:
    """Decode every kernel of a code object: (CodeObject, [DecodedInst or undecodable])."""
    from asterism.mc.codeobject import read_code_object
    from asterism.mc.decoder import decode_code

    obj = read_code_object(source)
    items = decode_code(obj.text, obj.target.name, obj.text_address, skip_undecodable=True)
    return obj, items


def disassembly_listing(source, filename: str | None = None) -> str:
    """The llvm-objdump -d style listing of a code object's .text (path or bytes), decoded
    and printed in one pass; `filename` names it in the header (default: the path)."""
    from asterism.mc.listing import listing

    return listing(source, filename)


# --- a code object from whatever the user has --------------------------------------------
#
# Here rather than in runtime/: launching, `asterism stats` and trace bundles (profile/, below
# the runtime) all take a kernel as bytes, a path (.hsaco, .s or .mlir), a CodeObject or a
# module, and turning .mlir/.s into a code object is this layer's compile/assemble.


def _mc_module(source):
    """The McModule of a .mlir/.s path, an xDSL module or an McModule (None otherwise)."""
    from asterism.mc.program import McModule

    if isinstance(source, McModule):
        return source
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if path.endswith(".mlir"):
            return lower(path)
        if path.endswith(".s"):
            from asterism.mc.parser import parse_asm
            from asterism.textio import read_text

            return parse_asm(read_text(path), path)
        return None
    if hasattr(source, "body") and hasattr(source, "walk"):  # an xDSL module (builder)
        return lower(source)
    return None


def load_with_source_map(source) -> tuple[CodeObject, bytes, dict[int, str]]:
    """As load_code_object, plus address -> "file:line" when the source has locations."""
    module = _mc_module(source)
    if module is None:
        obj, data = load_code_object(source)
        return obj, data, {}
    from asterism.mc.assembler import assemble as assemble_mc
    from asterism.mc.codeobject import read_code_object
    from asterism.mc.source_map import source_map

    data = assemble_mc(module)
    obj = read_code_object(data)
    return obj, data, source_map(module, obj.text_address)


def load_code_object(source) -> tuple[CodeObject, bytes]:
    """A CodeObject and its bytes from bytes, a path (.hsaco, .s or .mlir), a CodeObject or
    a module (builder/xDSL or McModule)."""
    from asterism.errors import AsterismError, CodeObjectError
    from asterism.mc.codeobject import CodeObject, read_code_object

    module = None if isinstance(source, (str, os.PathLike, bytes, bytearray, CodeObject)) \
        else _mc_module(source)
    if module is not None:
        from asterism.mc.assembler import assemble as assemble_mc

        data = assemble_mc(module)
        return read_code_object(data), data
    if isinstance(source, CodeObject):
        from asterism.mc.codeobject import write_code_object

        return source, write_code_object(source)
    if isinstance(source, (bytes, bytearray)):
        data = bytes(source)
    else:
        path = os.fspath(source)
        if path.endswith((".mlir", ".s")):
            data = compile(path) if path.endswith(".mlir") else assemble(path)
        else:
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except OSError as err:
                raise AsterismError(f"cannot read {path}: {err.strerror}") from None
            try:
                return read_code_object(data), data
            except CodeObjectError as err:  # (the message names the file)
                raise CodeObjectError(f"{path}: {err.message}") from None
    return read_code_object(data), data

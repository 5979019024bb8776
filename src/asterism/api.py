"""One-call functions behind the CLI verbs, for scripts:

    mod = kb.finish()                       # or asterism.parse(open("k.mlir").read())
    asm = asterism.translate(mod)           # LLVM-syntax assembly
    hsaco = asterism.compile(mod)           # code object bytes, no external tool
"""

from __future__ import annotations

import os


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


def parse(source, filename: str | None = None):
    """Parse amdgcn IR or upstream MLIR text (or a path) into a verified module."""
    from asterism.frontend.parse import is_upstream_text, parse_upstream
    from asterism.ir import parse_ir

    text, name = _read(source, "IR")
    if is_upstream_text(text):
        return parse_upstream(text, filename or name)
    return parse_ir(text, filename or name)


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


def _module(source, filename: str | None = None, verify: bool = True):
    """The module of `source`: text is parsed (and verified); a module object is verified
    too (it may have been built or changed by hand since) unless `verify` is False."""
    if isinstance(source, (str, bytes, os.PathLike)):
        return parse(source, filename)
    if verify:
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
    """IR (module or text) -> McModule, after the pipeline."""
    from asterism.ir import lower_module, verify_module
    from asterism.passes.pipeline import run_pipeline

    module = _module(source, verify=False)  # (text: parsed and verified)
    pipeline = implied_pipeline(module, pipeline)
    if pipeline:
        if module is source:
            verify_module(module)  # a module object: verified before the passes run
        module = run_pipeline(module, pipeline)
    return lower_module(module)  # (verifies what it lowers)


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

"""Assembly file parser (LLVM AMDGPU syntax) -> `McModule`.

Handles instructions and the directives a kernel file needs: `.amdgcn_target`, `.text`,
`.globl`, `.p2align`, `.type`, `.size`, labels, `.set`/`.equ`, the `.amdhsa_kernel` block,
the `.amdgpu_metadata` YAML block, `.amdhsa_code_object_version` and harmless bookkeeping
directives. Errors carry file:line:col.
"""

from __future__ import annotations

import re

from asterism.errors import AsterismError, ParseError, SourceLocation, VerifyError
from asterism.mc import yaml_subset
from asterism.mc.asm_syntax import InstParser, eval_int, quote, split_top
from asterism.mc.matcher import select_form
from asterism.mc.program import LabelDef, McKernel, McModule
from asterism.support.gcpause import pause_cyclic_gc, resume_cyclic_gc
from asterism.target import DEFAULT_CODE_OBJECT_VERSION

# Directives accepted and ignored (they do not change the code object we write).
IGNORED_DIRECTIVES = {
    ".file", ".ident", ".section", ".addrsig", ".addrsig_sym", ".loc", ".cfi_startproc",
    ".cfi_endproc", ".cfi_sections", ".hidden", ".protected", ".local", ".weak", ".type",
    ".size", ".p2align", ".align", ".balign", ".text", ".rodata", ".data", ".end",
    ".amdgpu_hsa_kernel", ".globl", ".global",
}
_LABEL_RE = re.compile(r"[A-Za-z_.$][\w.$@]*:", re.ASCII)
TARGET_RE = re.compile(r'"?amdgcn-amd-amdhsa--(gfx[0-9a-f]+)((?::[a-z]+[+-])*)"?')


def _strip_comment(line: str) -> str:
    if ";" not in line and "/" not in line:
        return line  # the common case: nothing to strip
    out, quote = [], False
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == '"':
            quote = not quote
        if not quote and (ch == ";" or line.startswith("//", i)):
            break
        out.append(ch)
        i += 1
    return "".join(out)


class AsmParser:
    """Parses one assembly file into an McModule."""

    def __init__(self, filename: str = "<asm>", target: str | None = None):
        self.filename = filename
        self.target = target
        self.features = ""
        self.symbols: dict[str, int] = {}
        self.inst_parser = InstParser(self.symbols)
        self.kernels: dict[str, McKernel] = {}
        self.order: list[str] = []
        self.current: McKernel | None = None
        self.globals: set[str] = set()
        self.functions: set[str] = set()
        self.pending: list = []  # items before the first kernel label
        self.in_text = True  # (`.long` in .text is code: see _words)
        self.code_object_version = DEFAULT_CODE_OBJECT_VERSION

    def loc(self, line: int, col: int = 1) -> SourceLocation:
        return SourceLocation(self.filename, line, col)

    def parse(self, text: str) -> McModule:
        """Parse the whole file."""
        paused = pause_cyclic_gc()
        try:
            return self._parse(text)
        finally:
            resume_cyclic_gc(paused)

    def _parse(self, text: str) -> McModule:
        lines = text.splitlines()
        i = 0
        while i < len(lines):
            raw = lines[i]
            line_no = i + 1
            i += 1
            line = (_strip_comment(raw) if ";" in raw or "/" in raw else raw).strip()
            if not line:
                continue
            col = raw.find(line[0]) + 1
            if line[0] == ".":
                if line.startswith(".amdhsa_kernel"):
                    i = self._amdhsa_block(lines, i, line, line_no)
                    continue
                if line.startswith(".amdgpu_metadata"):
                    i = self._metadata_block(lines, i, line_no)
                    continue
            # A label: the first token ends with ':' (an instruction may follow it).
            if ":" in line:
                first = line.split(None, 1)[0]
                if first.endswith(":") and _LABEL_RE.fullmatch(first):
                    self._label(first[:-1], line_no)
                    line = line[len(first):].strip()
                    if not line:
                        continue
                    col = raw.find(line) + 1
            if line[0] == ".":
                self._directive(line, line_no, col)
                continue
            self._instruction(line, line_no, col)
        return self._finish()

    # -------------------------------------------------------------- pieces

    def _label(self, name: str, line_no: int) -> None:
        if name in self.functions or name in self.globals and not name.startswith(".L"):
            if name in self.kernels:
                raise ParseError(f"kernel '{name}' defined twice", self.loc(line_no))
            kernel = McKernel(name)
            self.kernels[name] = kernel
            self.order.append(name)
            self.current = kernel
            return
        item = LabelDef(name)
        item.loc = self.loc(line_no)  # type: ignore[attr-defined]
        if self.current is None:
            self.pending.append(item)
        else:
            self.current.body.append(item)

    def _directive(self, line: str, line_no: int, col: int) -> None:
        name, _, rest = line.partition(" ")
        name = name.strip().rstrip(",")
        rest = rest.strip()
        if "\t" in name:
            name, _, more = name.partition("\t")
            rest = (more + " " + rest).strip()
        if name == ".amdgcn_target":
            m = TARGET_RE.fullmatch(rest.strip())
            if not m:
                raise ParseError(f"bad .amdgcn_target {rest} (expected "
                                 '"amdgcn-amd-amdhsa--gfx942" or similar)', self.loc(line_no, col))
            if self.target and self.target.split(":")[0] != m.group(1):
                raise ParseError(f".amdgcn_target {m.group(1)} does not match the requested "
                                 f"target {self.target}", self.loc(line_no, col))
            self.target = m.group(1)
            self.features = m.group(2)
            return
        if name == ".amdhsa_code_object_version":
            self._code_object_version(rest, line_no, col)
            return
        if name in (".globl", ".global"):
            self.globals.add(rest.strip())
            return
        if name == ".type":
            sym, _, kind = rest.partition(",")
            if "function" in kind:
                self.functions.add(sym.strip())
            return
        if name in (".text", ".rodata", ".data", ".section"):
            self.in_text = name == ".text" or rest.split(",")[0].strip() == ".text"
        if name == ".long" and self.in_text:
            self._words(rest, line_no, col)
            return
        if name in (".set", ".equ"):
            sym, _, expr = rest.partition(",")
            where = self.loc(line_no, col)
            value = eval_int(expr, self.symbols, where)
            if value is None:
                raise ParseError(f"cannot evaluate {quote(expr.strip())}", where)
            self.symbols[sym.strip()] = value
            return
        if name in IGNORED_DIRECTIVES:
            return
        raise ParseError(f"unsupported directive '{name}'", self.loc(line_no, col))

    def _code_object_version(self, rest: str, line_no: int, col: int) -> None:
        from asterism.target import CODE_OBJECT_VERSIONS

        value = eval_int(rest, self.symbols)
        writable = [v for v in CODE_OBJECT_VERSIONS if v >= 4]  # (the writer's: v4 to v6)
        if value not in writable:
            raise ParseError(f".amdhsa_code_object_version {rest.strip()}: expected one of "
                             f"{', '.join(map(str, writable))}", self.loc(line_no, col))
        self.code_object_version = value

    def _instruction(self, line: str, line_no: int, col: int) -> None:
        if self.target is None:
            raise ParseError("no target: add '.amdgcn_target \"amdgcn-amd-amdhsa--gfx942\"' or "
                             "pass --target", self.loc(line_no, col))
        loc = SourceLocation(self.filename, line_no, col)
        inst = self.inst_parser.parse(line, loc)
        try:
            inst.form = select_form(inst, self.target)
        except AsterismError as err:
            where = getattr(err, "operand", None)
            if where is not None:
                loc = SourceLocation(self.filename, line_no, col + operand_offset(line, where))
            raise VerifyError(err.message, loc) from None
        if self.current is None:
            self.pending.append(inst)
        else:
            self.current.body.append(inst)

    def _words(self, rest: str, line_no: int, col: int) -> None:
        """`.long` words in .text: the instructions they encode (mc/exact.py)."""
        from asterism.mc.exact import insts_of_words

        if self.target is None:
            raise ParseError("no target: add '.amdgcn_target \"amdgcn-amd-amdhsa--gfx942\"' or "
                             "pass --target", self.loc(line_no, col))
        loc = self.loc(line_no, col)
        items = insts_of_words(parse_words(rest, self.symbols, loc), self.target, loc)
        (self.pending if self.current is None else self.current.body).extend(items)

    def _amdhsa_block(self, lines: list[str], i: int, head: str, line_no: int) -> int:
        parts = head.split()
        if len(parts) != 2:
            raise ParseError("expected '.amdhsa_kernel NAME'", self.loc(line_no))
        name = parts[1]
        directives: dict[str, int] = {}
        while i < len(lines):
            raw = lines[i]
            i += 1
            text = _strip_comment(raw).strip()
            if not text:
                continue
            if text == ".end_amdhsa_kernel":
                break
            key, _, value = text.partition(" ")
            if not key.startswith(".amdhsa_"):
                raise ParseError(f"expected an .amdhsa_ directive, got '{key}'",
                                 self.loc(i, raw.find(key) + 1))
            where = self.loc(i, raw.find(key) + 1)
            v = eval_int(value, self.symbols, where)
            if v is None:
                raise ParseError(f"bad value {quote(value.strip())} for {key}", where)
            directives[key.removeprefix(".amdhsa_")] = v
        else:
            raise ParseError(f".amdhsa_kernel {name} has no .end_amdhsa_kernel", self.loc(line_no))
        kernel = self.kernels.get(name)
        if kernel is None:
            kernel = McKernel(name)
            self.kernels[name] = kernel
            self.order.append(name)
        kernel.descriptor_directives = directives
        kernel.descriptor_loc = self.loc(line_no)
        return i

    def _metadata_block(self, lines: list[str], i: int, line_no: int) -> int:
        start = i
        while i < len(lines) and lines[i].strip() != ".end_amdgpu_metadata":
            i += 1
        if i >= len(lines):
            raise ParseError(".amdgpu_metadata has no .end_amdgpu_metadata", self.loc(line_no))
        text = "\n".join(lines[start:i])
        self.metadata_positions: dict = {}
        self.metadata = yaml_subset.load(text, self.filename, start + 1,
                                         self.metadata_positions)
        self.metadata_loc = self.loc(line_no)
        return i + 1

    def _finish(self) -> McModule:
        if self.target is None:
            raise ParseError("no target: add '.amdgcn_target \"amdgcn-amd-amdhsa--gfx942\"' or "
                             "pass --target", self.loc(1))
        kernels = [self.kernels[n] for n in self.order]
        if self.pending and any(not isinstance(x, LabelDef) for x in self.pending):
            if not kernels:
                kernels = [McKernel("main", body=list(self.pending))]
            else:
                raise ParseError("instructions before the first kernel label",
                                 getattr(self.pending[0], "loc", None) or self.loc(1))
        meta = getattr(self, "metadata", None)
        module = McModule(self.target, kernels, self.features, self.code_object_version)
        if meta:
            module.metadata = meta  # type: ignore[attr-defined]
            _apply_metadata(module, meta, self.metadata_loc, self.metadata_positions)
        return module


def operand_offset(line: str, index: int) -> int:
    """Characters from the start of an instruction line to its operand `index` (0-based),
    or 0 if the line has fewer operands."""
    head = len(line) - len(line.lstrip())
    rest = line[head:]
    cut = len(rest.split(None, 1)[0]) if rest.strip() else 0
    pos = head + cut
    for k, part in enumerate(split_top(line[pos:], ",")):
        if k == index:
            return pos + len(part) - len(part.lstrip())
        pos += len(part) + 1
    return 0


def _apply_metadata(module: McModule, meta, loc: SourceLocation,
                    positions: dict | None = None) -> None:
    """Take kernel arguments and workgroup sizes from a metadata block, after checking it
    against the metadata schema (the block is user text): a bad field is a ParseError at
    its line."""
    from asterism.mc.codeobject.schema import MetadataError, check_metadata
    from asterism.mc.kernel_abi import ArgumentLayoutError, kernel_args_from_metadata

    if not isinstance(meta, dict):
        raise ParseError(f".amdgpu_metadata: the block must be a mapping, got {meta!r:.60}",
                         loc)
    try:
        check_metadata(meta)
    except MetadataError as err:
        raise ParseError(err.message, _field_location(err.path, positions, loc)) from None
    for n, entry in enumerate(meta.get("amdhsa.kernels", [])):
        kernel = next((k for k in module.kernels if k.name == entry.get(".name")), None)
        if kernel is None:
            continue
        kernel.metadata = entry  # type: ignore[attr-defined]
        path = ("amdhsa.kernels", n, ".args")
        try:
            kernel.args = kernel_args_from_metadata(entry.get(".args", []), path)
        except ArgumentLayoutError as err:
            raise ParseError(err.message, _field_location(err.path, positions, loc)) from None
        wg = entry.get(".reqd_workgroup_size")
        if wg:
            kernel.workgroup_size = tuple(wg)  # type: ignore[assignment]


def _field_location(path: tuple, positions: dict | None, loc: SourceLocation
                    ) -> SourceLocation:
    """Where the YAML reader read the field at `path` (or its nearest parent), else `loc`."""
    while positions:
        if path in positions:
            return positions[path]
        if not path:
            break
        path = path[:-1]
    return loc


def parse_asm(text: str, filename: str = "<asm>", target: str | None = None) -> McModule:
    """Parse assembly text into an McModule (instructions with forms selected)."""
    if target is not None:
        from asterism.target import get_target

        get_target(target)  # (a requested target is checked before the file is compared to it)
    return AsmParser(filename, target).parse(text)


def parse_words(rest: str, symbols: dict[str, int], loc: SourceLocation) -> list[int]:
    """The 32-bit values of a `.long` directive's operand list."""
    words = []
    for part in split_top(rest, ","):
        value = eval_int(part, symbols, loc) if part.strip() else None
        if value is None or not -(1 << 31) <= value < (1 << 32):
            raise ParseError(f"bad .long value {quote(part.strip())} (expected a 32-bit "
                             "integer)", loc)
        words.append(value & 0xFFFFFFFF)
    return words

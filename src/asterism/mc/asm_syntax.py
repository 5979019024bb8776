"""Parsing of one instruction's text (LLVM AMDGPU syntax) into `mc.Inst` operands/modifiers.

Operands: registers (v5, s[0:1], a[0:3], ttmp2, vcc, exec_lo, m0...), integers (decimal, hex,
negative, simple expressions), floats, labels, `off`, special immediates (vmcnt(..),
hwreg(..), sendmsg(..), gpr_idx(..)) and source modifiers (-x, |x|, -|x|, neg(x), abs(x),
sext(x)). Modifiers: `name`, `name:value`, `name:[a,b,c]`.
"""

from __future__ import annotations

import re

from asterism.errors import ParseError, SourceLocation
from asterism.isa import syntax
from asterism.mc.inst import Inst
from asterism.mc.operands import (
    OFF,
    FloatImm,
    Imm,
    Label,
    Literal,
    Mod,
    Operand,
    Syntax,
    parse_register,
)

_INT_RE = re.compile(r"^[-+]?(0x[0-9a-fA-F]+|0b[01]+|0o?[0-7]+|\d+)$")
_FLOAT_RE = re.compile(r"^[-+]?(\d+\.\d*([eE][-+]?\d+)?|\d+[eE][-+]?\d+|\.\d+)$")
_IDENT_RE = re.compile(r"^[A-Za-z_.$][\w.$@]*$")

# Modifiers that are flags (no value).
FLAG_MODIFIERS = {"clamp", "gds", "sc0", "sc1", "nt", "glc", "slc", "nv", "offen", "idxen",
                  "lds", "row_mirror", "row_half_mirror", "bound_ctrl", "fi"}
DPP_CONTROLS = {"quad_perm", "row_shl", "row_shr", "row_ror", "wave_shl", "wave_rol",
                "wave_shr", "wave_ror", "row_mirror", "row_half_mirror", "row_bcast",
                "row_newbcast"}
OMOD_NAMES = {"mul:2": 1, "mul:4": 2, "div:2": 3}


def split_top(text: str, sep: str) -> list[str]:
    """Split on `sep` (one character) outside brackets and parentheses."""
    if "[" not in text and "(" not in text and "]" not in text and ")" not in text:
        return text.split(sep)  # nothing nests: a plain split is the same
    marks = _SPLIT_MARKS.get(sep)
    if marks is None:
        marks = _SPLIT_MARKS[sep] = re.compile(f"[][()]|{re.escape(sep)}")
    # Visit only the characters that matter (brackets and separators), not every character.
    parts, start, depth = [], 0, 0
    for m in marks.finditer(text):
        ch = m.group()
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        elif depth == 0:
            parts.append(text[start:m.start()])
            start = m.end()
    parts.append(text[start:])
    return parts


_SPLIT_MARKS: dict[str, re.Pattern] = {}


def _split_commas(text: str) -> list[str]:
    """split_top(text, ","), faster for the common shapes."""
    if "(" in text or ")" in text:
        return split_top(text, ",")
    pieces = text.split(",")
    if "[" in text or "]" in text:
        # Every comma splits when the brackets before it are balanced: when each piece but
        # the last opens as many brackets as it closes.
        for piece in pieces[:-1]:
            if piece.count("[") != piece.count("]"):
                return split_top(text, ",")
    return pieces


def eval_int(text: str, symbols: dict[str, int] | None = None) -> int | None:
    """Evaluate an integer expression (+ - * / % << >> & | ^ ~, parentheses, symbols)."""
    t = text.strip()
    if not t:
        return None
    if _INT_RE.match(t):
        return _int_literal(t)
    if not re.fullmatch(r"[\w\s+\-*/%<>&|^~().$]+", t):
        return None
    tokens = re.findall(r"0x[0-9a-fA-F]+|\d+|[A-Za-z_.$][\w.$]*|<<|>>|[-+*/%&|^~()]", t)
    if "".join(tokens) != re.sub(r"\s+", "", t):
        return None
    py = []
    for tok in tokens:
        if tok[0].isdigit():
            py.append(str(_int_literal(tok)))
        elif tok[0].isalpha() or tok[0] in "_.$":
            if symbols is None or tok not in symbols:
                return None
            py.append(str(symbols[tok]))
        elif tok == "/":
            py.append("//")
        else:
            py.append(tok)
    try:
        value = eval(" ".join(py), {"__builtins__": {}}, {})
    except Exception:
        return None
    return value if isinstance(value, int) else None


def _int_literal(t: str) -> int:
    neg = t.startswith("-")
    body = t.lstrip("+-").lower()
    if body.startswith("0x"):
        v = int(body, 16)
    elif body.startswith("0b"):
        v = int(body[2:], 2)
    elif len(body) > 1 and body.startswith("0o"):
        v = int(body[2:], 8)
    else:
        v = int(body, 10)
    return -v if neg else v


class InstParser:
    """Parses instruction lines; `symbols` holds `.set` values for expressions."""

    def __init__(self, symbols: dict[str, int] | None = None):
        self.symbols = symbols if symbols is not None else {}

    def parse(self, text: str, loc: SourceLocation | None = None) -> Inst:
        """Parse `mnemonic operands modifiers` into an Inst (form not yet selected)."""
        text = text.strip()
        mnemonic, _, rest = text.partition(" ")
        lowered = _MNEMONICS.get(mnemonic)
        if lowered is None:
            if not _MNEMONIC_RE.fullmatch(mnemonic):
                raise ParseError(f"expected an instruction mnemonic, got '{mnemonic}'", loc)
            lowered = _remember(_MNEMONICS, mnemonic, mnemonic.lower())
        mnemonic = lowered
        rest = rest.strip()
        inst = Inst(mnemonic, [], {}, None, loc)
        if not rest:
            return inst
        if mnemonic == "s_waitcnt":
            inst.operands.append(self._waitcnt(rest, loc))
            return inst
        op_text, mod_tokens = self._split_operands(rest)
        operands = inst.operands
        for k, piece in enumerate(op_text):
            piece = piece.strip()
            op = _OPERANDS.get(piece)
            if op is None:
                if not piece:
                    raise ParseError(f"operand {k + 1} is empty", loc)
                op, fixed = self._operand(piece, loc)
                if fixed:
                    _remember(_OPERANDS, piece, op)
            operands.append(op)
        modifiers = inst.modifiers
        for tok in mod_tokens:
            item = _MODIFIERS.get(tok)
            if item is None:
                item = self._modifier_item(tok, loc)
            modifiers[item[0]] = item[1]
        return inst

    # -------------------------------------------------------------- splitting

    def _split_operands(self, rest: str) -> tuple[list[str], list[str]]:
        pieces = _split_commas(rest)
        # The last piece holds the last operand followed by space-separated modifiers.
        last = pieces[-1].strip()
        ops = pieces[:-1]
        if " " not in last:  # (one token: the last operand, or a lone modifier)
            if last:
                if not ops and self._is_modifier(last):
                    return [], [last]
                ops.append(last)
            return ops, []
        last_tokens = [t for t in split_top(last, " ") if t]
        mods: list[str] = []
        if last_tokens:
            first, *more = last_tokens
            if not ops and self._is_modifier(first):
                return [], last_tokens
            if not more:
                ops.append(first)
                return ops, mods
            # Operand text may contain spaces ("- v1", "| v1 |"): glue them back.
            op = first
            while more and not self._is_modifier(more[0]) and (
                    op in ("-", "|", "-|") or more[0] in ("|",) or op.endswith(("|", "-"))
                    and op.count("|") % 2 == 1):
                op += more.pop(0)
            ops.append(op)
            mods = more
        return ops, mods

    @staticmethod
    def _is_modifier(tok: str) -> bool:
        known = _IS_MODIFIER.get(tok)
        if known is None:
            known = _remember(_IS_MODIFIER, tok, InstParser._modifier_shaped(tok))
        return known

    @staticmethod
    def _modifier_shaped(tok: str) -> bool:
        name = tok.split(":", 1)[0].lower()
        if tok.lower() in FLAG_MODIFIERS or tok.lower() in OMOD_NAMES:
            return True
        if ":" in tok and not tok.startswith(("v[", "s[", "a[", "ttmp[")):
            return bool(re.fullmatch(r"[a-z_][a-z0-9_]*", name))
        return name in DPP_CONTROLS

    # -------------------------------------------------------------- operands

    def operand(self, text: str, loc: SourceLocation | None = None) -> Operand:
        """Parse one operand."""
        op = _OPERANDS.get(text)
        if op is None:
            op, fixed = self._operand(text, loc)
            if fixed:
                _remember(_OPERANDS, text, op)
        return op

    def _operand(self, text: str, loc: SourceLocation | None) -> tuple[Operand, bool]:
        """(operand, fixed): `fixed` when the text's meaning cannot depend on `.set` symbols
        (registers and plain numbers), so the operand may be reused for the same text."""
        t = text.strip()
        if _INT_RE.match(t):
            # A plain number (first, as the checks below cannot take it for anything else).
            value = _int_literal(t)
            # (kept for reuse only if it is an inline constant: other values rarely repeat and
            # would crowd the table)
            return Imm(value, fmt="hex" if "0x" in t.lower() else "dec"), -16 <= value <= 64
        low = t.lower()
        for fn in ("neg", "abs", "sext"):
            if low.startswith(fn + "(") and t.endswith(")"):
                inner, fixed = self._operand(t[len(fn) + 1:-1], loc)
                return _with_mod(inner, **{fn: True}), fixed
        if t.startswith("-") and len(t) > 1 and (t[1] == "|" or not _is_number(t)):
            inner, fixed = self._operand(t[1:], loc)
            if isinstance(inner, (Imm, FloatImm)) and not isinstance(inner, Mod):
                raise ParseError(f"bad operand '{t}'", loc)
            return _with_mod(inner, neg=True), fixed
        if t.startswith("|") and t.endswith("|") and len(t) > 2:
            inner, fixed = self._operand(t[1:-1], loc)
            return _with_mod(inner, abs=True), fixed
        for fn in ("lit", "lit64"):  # (lower case only, as LLVM)
            if t.startswith(fn + "(") and t.endswith(")"):
                return self._forced_literal(t[len(fn) + 1:-1].strip(), fn, loc), False
        reg = parse_register(t)
        if reg is not None:
            return reg, True
        if low == "off":
            return OFF, True
        if _FLOAT_RE.match(t):
            return FloatImm(float(t)), True
        return self._symbolic_operand(t, low, loc), False

    def _forced_literal(self, inner: str, spelling: str,
                        loc: SourceLocation | None) -> Literal | FloatImm:
        """lit(x) / lit64(x): the value as a 32-bit literal even if it is an inline constant
        (LLVM's syntax; a float takes the operand type's bits when matched)."""
        if _FLOAT_RE.match(inner):
            return FloatImm(float(inner), lit=spelling)
        value = eval_int(inner, self.symbols)
        if value is None:
            raise ParseError(f"expected an immediate in {spelling}(...), got '{inner}'", loc)
        if not -(1 << 31) <= value < (1 << 32):
            raise ParseError(f"{spelling}({inner}): the value does not fit a 32-bit literal",
                             loc)
        return Literal(value & 0xFFFFFFFF, spelling=spelling)

    def _symbolic_operand(self, t: str, low: str, loc: SourceLocation | None) -> Operand:
        """Operands whose value may involve `.set` symbols: expressions, special immediates,
        labels."""
        value = eval_int(t, self.symbols)
        if value is not None:
            return Imm(value, fmt="hex" if "0x" in low else "dec")
        for prefix, handler in (("hwreg(", self._hwreg), ("sendmsg(", self._sendmsg),
                                ("gpr_idx(", self._gpr_idx)):
            if low.startswith(prefix) and t.endswith(")"):
                return handler(t, loc)
        if low.startswith(("vmcnt(", "expcnt(", "lgkmcnt(")):
            return self._waitcnt(t, loc)
        if re.fullmatch(r"[sva]\[.*", low) or re.fullmatch(r"[sva]\d+.*", low):
            raise ParseError(f"bad register '{t}'", loc)
        if _IDENT_RE.match(t):
            return Label(t)
        raise ParseError(f"cannot parse operand '{t}'", loc)

    def _waitcnt(self, text: str, loc) -> Syntax:
        value = eval_int(text, self.symbols)
        if value is not None:
            return Syntax(value, syntax.format_waitcnt(value))
        counts = dict(syntax.WAITCNT_MAX)
        found = False
        for m in re.finditer(r"(vmcnt|expcnt|lgkmcnt)(_sat)?\s*\(\s*([^)]*)\)", text):
            v = eval_int(m.group(3), self.symbols)
            if v is None:
                raise ParseError(f"bad counter value '{m.group(3)}'", loc)
            limit = syntax.WAITCNT_MAX[m.group(1)]
            if v > limit:
                if not m.group(2):
                    raise ParseError(f"{m.group(1)}({v}) is out of range (max {limit})", loc)
                v = limit
            counts[m.group(1)] = v
            found = True
        leftover = re.sub(r"(vmcnt|expcnt|lgkmcnt)(_sat)?\s*\([^)]*\)|[&,\s]", "", text)
        if not found or leftover:
            raise ParseError(f"bad s_waitcnt operand '{text}' (expected e.g. "
                             "'vmcnt(0) lgkmcnt(0)')", loc)
        value = syntax.encode_waitcnt(counts["vmcnt"], counts["expcnt"], counts["lgkmcnt"])
        return Syntax(value, syntax.format_waitcnt(value))

    def _args(self, text: str) -> list[str]:
        inner = text[text.index("(") + 1:-1]
        return [a.strip() for a in inner.split(",")] if inner.strip() else []

    def _hwreg(self, text: str, loc) -> Syntax:
        args = self._args(text)
        names = {v: k for k, v in syntax.HWREG_NAMES.items()}
        if not 1 <= len(args) <= 3:
            raise ParseError(f"bad hwreg '{text}': expected hwreg(REG[, offset, size])", loc)
        reg = names.get(args[0].upper(), eval_int(args[0], self.symbols))
        if reg is None:
            raise ParseError(f"unknown hardware register '{args[0]}'", loc)
        offset = eval_int(args[1], self.symbols) if len(args) > 1 else 0
        size = eval_int(args[2], self.symbols) if len(args) > 2 else 32
        if offset is None or size is None or not (0 <= offset < 32 and 1 <= size <= 32):
            raise ParseError(f"bad hwreg offset/size in '{text}'", loc)
        value = syntax.encode_hwreg(reg, offset, size)
        return Syntax(value, syntax.format_hwreg(value))

    def _sendmsg(self, text: str, loc) -> Syntax:
        args = self._args(text)
        msgs = {v: k for k, v in syntax.SENDMSG_NAMES.items()}
        ops = {v: k for k, v in {**syntax.GS_OPS, **syntax.SYSMSG_OPS}.items()}
        if not 1 <= len(args) <= 3:
            raise ParseError(f"bad sendmsg '{text}'", loc)
        msg = msgs.get(args[0].upper(), eval_int(args[0], self.symbols))
        op = ops.get(args[1].upper(), eval_int(args[1], self.symbols)) if len(args) > 1 else 0
        stream = eval_int(args[2], self.symbols) if len(args) > 2 else 0
        if msg is None or op is None or stream is None:
            raise ParseError(f"bad sendmsg '{text}'", loc)
        value = (msg & 0xF) | ((op & 0x7) << 4) | ((stream & 0x3) << 8)
        return Syntax(value, syntax.format_sendmsg(value))

    def _gpr_idx(self, text: str, loc) -> Syntax:
        names = ["SRC0", "SRC1", "SRC2", "DST"]
        value = 0
        for a in self._args(text):
            if a.upper() not in names:
                raise ParseError(f"bad gpr_idx mode '{a}'", loc)
            value |= 1 << names.index(a.upper())
        on = [n for k, n in enumerate(names) if (value >> k) & 1]
        return Syntax(value, f"gpr_idx({','.join(on)})")

    # -------------------------------------------------------------- modifiers

    def _modifier_item(self, tok: str, loc) -> tuple[str, object]:
        """(modifier name, value) of one modifier token; remembered when no `.set` symbol
        can change it."""
        item, fixed = self._parse_modifier(tok, loc)
        if fixed:
            _remember(_MODIFIERS, tok, item)
        return item

    def _parse_modifier(self, tok: str, loc) -> tuple[tuple[str, object], bool]:
        low = tok.lower()
        if low in OMOD_NAMES:
            return ("omod", OMOD_NAMES[low]), True
        if low in ("row_mirror", "row_half_mirror"):
            return ("dpp_ctrl", 0x140 if low == "row_mirror" else 0x141), True
        if low in FLAG_MODIFIERS:
            return (low, True), True
        name, _, value = tok.partition(":")
        name = name.lower()
        if not value:
            raise ParseError(f"unknown modifier '{tok}'", loc)
        if value.startswith("["):
            items = [v.strip() for v in value.strip("[]").split(",")]
            if name == "format":
                return ("format", _mtbuf_format(items, tok, loc)), True
            ints = [eval_int(v, self.symbols) for v in items]
            if any(v is None for v in ints):
                raise ParseError(f"bad list in modifier '{tok}'", loc)
            fixed = all(_INT_RE.match(v) for v in items)
            if name == "quad_perm":
                if len(ints) != 4 or any(not 0 <= v <= 3 for v in ints):
                    raise ParseError(f"quad_perm needs four values 0..3, got '{value}'", loc)
                return ("dpp_ctrl", sum(v << (2 * k) for k, v in enumerate(ints))), fixed
            return (name, tuple(ints)), fixed
        if name in ("dst_sel", "dst_unused", "src0_sel", "src1_sel"):
            return (name, value.upper()), True
        if name == "offset" and value.lower().startswith("swizzle(") and value.endswith(")"):
            try:
                off = syntax.parse_swizzle(value[8:-1].split(","))
            except ValueError as err:
                raise ParseError(str(err), loc) from None
            return ("offset", Syntax(off, syntax.format_swizzle(off))), True
        v = eval_int(value, self.symbols)
        if v is None:
            raise ParseError(f"bad value in modifier '{tok}'", loc)
        fixed = bool(_INT_RE.match(value.strip()))
        dpp = {"row_shl": 0x100, "row_shr": 0x110, "row_ror": 0x120, "row_newbcast": 0x150}
        if name in dpp:
            if not 1 <= v <= 15 and not (name == "row_newbcast" and 0 <= v <= 15):
                raise ParseError(f"{name}:{v} is out of range (1..15)", loc)
            return ("dpp_ctrl", dpp[name] + v), fixed
        if name in ("wave_shl", "wave_rol", "wave_shr", "wave_ror"):
            return ("dpp_ctrl", {"wave_shl": 0x130, "wave_rol": 0x134, "wave_shr": 0x138,
                                 "wave_ror": 0x13C}[name]), fixed
        if name == "row_bcast":
            if v not in (15, 31):
                raise ParseError(f"row_bcast must be 15 or 31, got {v}", loc)
            return ("dpp_ctrl", 0x142 if v == 15 else 0x143), fixed
        if name == "bound_ctrl":
            # LLVM: bound_ctrl:0 and bound_ctrl:1 both set the bit
            return ("bound_ctrl", True), fixed
        return (name, v), fixed


# Parse results reused by text. Only results no `.set` symbol can change are kept (see
# InstParser._operand / _parse_modifier), so they are shared by every parser; the values are
# immutable. Each table is emptied when it reaches _TABLE_LIMIT entries to bound memory.
_MNEMONIC_RE = re.compile(r"[A-Za-z_][\w]*")
_MNEMONICS: dict[str, str] = {}  # mnemonic as written -> lower case (valid ones only)
_OPERANDS: dict[str, Operand] = {}  # stripped operand text -> operand
_MODIFIERS: dict[str, tuple[str, object]] = {}  # modifier token -> (name, value)
_IS_MODIFIER: dict[str, bool] = {}  # token -> InstParser._modifier_shaped(token)
_TABLE_LIMIT = 1 << 16


def _remember(table: dict, key: str, value):
    """Store `value` under `key` in one of the reuse tables above; returns `value`."""
    if len(table) >= _TABLE_LIMIT:
        table.clear()
    table[key] = value
    return value


def _mtbuf_format(items: list[str], tok: str, loc) -> int:
    dfmt, nfmt = 1, 0
    for it in items:
        up = it.upper()
        if up in syntax.MTBUF_DFMT:
            dfmt = syntax.MTBUF_DFMT.index(up)
        elif up in syntax.MTBUF_NFMT:
            nfmt = syntax.MTBUF_NFMT.index(up)
        else:
            raise ParseError(f"unknown buffer format '{it}' in '{tok}'", loc)
    return dfmt | (nfmt << 4)


def _is_number(t: str) -> bool:
    return bool(_INT_RE.match(t) or _FLOAT_RE.match(t))


def _with_mod(op: Operand, neg: bool = False, abs: bool = False, sext: bool = False) -> Mod:
    if isinstance(op, Mod):
        return Mod(op.operand, neg=op.neg or neg, abs=op.abs or abs, sext=op.sext or sext)
    return Mod(op, neg=neg, abs=abs, sext=sext)

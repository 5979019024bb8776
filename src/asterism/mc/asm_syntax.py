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
    """Split on `sep` outside brackets, parentheses and |...|."""
    parts, cur, depth = [], "", 0
    for ch in text:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return parts


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
        if not re.fullmatch(r"[A-Za-z_][\w]*", mnemonic):
            raise ParseError(f"expected an instruction mnemonic, got '{mnemonic}'", loc)
        mnemonic = mnemonic.lower()
        rest = rest.strip()
        inst = Inst(mnemonic, loc=loc)
        if not rest:
            return inst
        if mnemonic == "s_waitcnt":
            inst.operands.append(self._waitcnt(rest, loc))
            return inst
        op_text, mod_tokens = self._split_operands(rest)
        for k, piece in enumerate(op_text):
            if not piece.strip():
                raise ParseError(f"operand {k + 1} is empty", loc)
            inst.operands.append(self.operand(piece.strip(), loc))
        for tok in mod_tokens:
            self._modifier(tok, inst, loc)
        return inst

    # -------------------------------------------------------------- splitting

    def _split_operands(self, rest: str) -> tuple[list[str], list[str]]:
        pieces = split_top(rest, ",")
        # The last piece holds the last operand followed by space-separated modifiers.
        last_tokens = [t for t in split_top(pieces[-1].strip(), " ") if t]
        ops = pieces[:-1]
        mods: list[str] = []
        if last_tokens:
            first, *more = last_tokens
            if not ops and self._is_modifier(first):
                return [], last_tokens
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
        name = tok.split(":", 1)[0].lower()
        if tok.lower() in FLAG_MODIFIERS or tok.lower() in OMOD_NAMES:
            return True
        if ":" in tok and not tok.startswith(("v[", "s[", "a[", "ttmp[")):
            return bool(re.fullmatch(r"[a-z_][a-z0-9_]*", name))
        return name in DPP_CONTROLS

    # -------------------------------------------------------------- operands

    def operand(self, text: str, loc: SourceLocation | None = None) -> Operand:
        """Parse one operand."""
        t = text.strip()
        low = t.lower()
        for fn in ("neg", "abs", "sext"):
            if low.startswith(fn + "(") and t.endswith(")"):
                inner = self.operand(t[len(fn) + 1:-1], loc)
                return _with_mod(inner, **{fn: True})
        if t.startswith("-") and len(t) > 1 and (t[1] == "|" or not _is_number(t)):
            inner = self.operand(t[1:], loc)
            if isinstance(inner, (Imm, FloatImm)) and not isinstance(inner, Mod):
                raise ParseError(f"bad operand '{t}'", loc)
            return _with_mod(inner, neg=True)
        if t.startswith("|") and t.endswith("|") and len(t) > 2:
            return _with_mod(self.operand(t[1:-1], loc), abs=True)
        reg = parse_register(t)
        if reg is not None:
            return reg
        if low == "off":
            return OFF
        if _FLOAT_RE.match(t):
            return FloatImm(float(t))
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

    def _modifier(self, tok: str, inst: Inst, loc) -> None:
        m = inst.modifiers
        low = tok.lower()
        if low in OMOD_NAMES:
            m["omod"] = OMOD_NAMES[low]
            return
        if low in ("row_mirror", "row_half_mirror"):
            m["dpp_ctrl"] = 0x140 if low == "row_mirror" else 0x141
            return
        if low in FLAG_MODIFIERS:
            m[low] = True
            return
        name, _, value = tok.partition(":")
        name = name.lower()
        if not value:
            raise ParseError(f"unknown modifier '{tok}'", loc)
        if value.startswith("["):
            items = [v.strip() for v in value.strip("[]").split(",")]
            if name == "format":
                m["format"] = _mtbuf_format(items, tok, loc)
                return
            ints = [eval_int(v, self.symbols) for v in items]
            if any(v is None for v in ints):
                raise ParseError(f"bad list in modifier '{tok}'", loc)
            if name == "quad_perm":
                if len(ints) != 4 or any(not 0 <= v <= 3 for v in ints):
                    raise ParseError(f"quad_perm needs four values 0..3, got '{value}'", loc)
                m["dpp_ctrl"] = sum(v << (2 * k) for k, v in enumerate(ints))
                return
            m[name] = tuple(ints)
            return
        if name in ("dst_sel", "dst_unused", "src0_sel", "src1_sel"):
            m[name] = value.upper()
            return
        if name == "offset" and value.lower().startswith("swizzle(") and value.endswith(")"):
            try:
                off = syntax.parse_swizzle(value[8:-1].split(","))
            except ValueError as err:
                raise ParseError(str(err), loc) from None
            m["offset"] = Syntax(off, syntax.format_swizzle(off))
            return
        v = eval_int(value, self.symbols)
        if v is None:
            raise ParseError(f"bad value in modifier '{tok}'", loc)
        dpp = {"row_shl": 0x100, "row_shr": 0x110, "row_ror": 0x120, "row_newbcast": 0x150}
        if name in dpp:
            if not 1 <= v <= 15 and not (name == "row_newbcast" and 0 <= v <= 15):
                raise ParseError(f"{name}:{v} is out of range (1..15)", loc)
            m["dpp_ctrl"] = dpp[name] + v
            return
        if name in ("wave_shl", "wave_rol", "wave_shr", "wave_ror"):
            m["dpp_ctrl"] = {"wave_shl": 0x130, "wave_rol": 0x134, "wave_shr": 0x138,
                             "wave_ror": 0x13C}[name]
            return
        if name == "row_bcast":
            if v not in (15, 31):
                raise ParseError(f"row_bcast must be 15 or 31, got {v}", loc)
            m["dpp_ctrl"] = 0x142 if v == 15 else 0x143
            return
        if name == "bound_ctrl":
            m["bound_ctrl"] = True  # LLVM: bound_ctrl:0 and bound_ctrl:1 both set the bit
            return
        if name == "format":
            m["format"] = v
            return
        m[name] = v


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

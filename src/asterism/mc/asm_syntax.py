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

_INT_RE = re.compile(r"^[-+]?(0x[0-9a-fA-F]+|0b[01]+|0o?[0-7]+|\d+)$", re.ASCII)
_FLOAT_RE = re.compile(r"^[-+]?(\d+\.\d*([eE][-+]?\d+)?|\d+[eE][-+]?\d+|\.\d+)$",
                       re.ASCII)
_IDENT_RE = re.compile(r"^[A-Za-z_.$][\w.$@]*$", re.ASCII)

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


# --- integer expressions ----------------------------------------------------------------------
#
# As LLVM's MC layer (MCExpr, AsmParser with GNU operator precedence): values are 64-bit two's
# complement integers, + - * wrap, / and % truncate towards zero, >> is a logical shift, a
# literal is read as an unsigned 64-bit number (0xffffffffffffffff is -1) and one past 64 bits
# is an error (llvm-mc-22: "literal value out of range"). Everything is bounded before it is
# computed, so text cannot make a value (or the time to compute it) grow: literal digits are
# counted before conversion, shift counts must be 0..63 (LLVM shifts by the host's rules there,
# undefined in C++; we say so), nesting is limited, division by zero is an error.

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
MAX_EXPR_DEPTH = 64  # parentheses and unary operators nested in one expression
MAX_MODIFIER_DEPTH = 8  # source modifiers around one operand (-|x| is two, neg(abs(x)) two)
_MAX_QUOTE = 40  # characters of an operand quoted in a message
# Precedence of the binary operators (LLVM's getGNUBinOpPrecedence; higher binds tighter).
_PRECEDENCE = {"*": 6, "/": 6, "%": 6, "<<": 6, ">>": 6, "|": 5, "^": 5, "&": 5, "+": 4, "-": 4}
_TOKEN_RE = re.compile(r"\s*(?:([0-9][0-9a-zA-Z]*)|([A-Za-z_.$][\w.$]*)|(<<|>>|[-+*/%&|^~()]))",
                       re.ASCII)
# Digits of the largest 64-bit value per base: more (after leading zeros) cannot fit.
_MAX_DIGITS = {16: 16, 10: 20, 8: 22, 2: 64}


def quote(text: str) -> str:
    """`text` for a message, cut in the middle when long (inputs may be megabytes)."""
    if len(text) <= _MAX_QUOTE:
        return f"'{text}'"
    return f"'{text[:_MAX_QUOTE // 2]}...{text[-_MAX_QUOTE // 4:]}' ({len(text)} characters)"


def wrap64(value: int) -> int:
    """`value` as a 64-bit two's complement integer (what LLVM's int64_t arithmetic keeps)."""
    value &= 0xFFFFFFFFFFFFFFFF
    return value - (1 << 64) if value >> 63 else value


def int_literal(text: str, loc: SourceLocation | None = None) -> int:
    """The value of an integer literal (decimal, 0x hex, 0b binary, 0o or leading-0 octal,
    optional sign) as LLVM reads it: 64 bits, wrapped to signed; a ParseError if it does not
    fit 64 bits or is not a number (digits are counted before converting)."""
    neg = text.startswith("-")
    body = text.lstrip("+-").lower()
    if body.startswith(("0x", "0b", "0o")):
        base, digits = {"x": 16, "b": 2, "o": 8}[body[1]], body[2:]
    elif len(body) > 1 and body.startswith("0"):
        base, digits = 8, body[1:]  # (LLVM: a leading 0 means octal)
    else:
        base, digits = 10, body
    significant = digits.lstrip("0")
    if len(significant) > _MAX_DIGITS[base]:
        raise ParseError(f"integer literal {quote(text)} does not fit 64 bits", loc)
    try:
        value = int(significant or "0", base) if digits else None
    except ValueError:
        value = None
    if value is None:
        kind = {16: "hexadecimal", 8: "octal", 2: "binary", 10: "decimal"}[base]
        raise ParseError(f"invalid {kind} number {quote(text)}", loc)
    if value >> 64:
        raise ParseError(f"integer literal {quote(text)} does not fit 64 bits", loc)
    return wrap64(-value if neg else value)


class _NotAnExpression(Exception):
    """The text is not an expression of this grammar (the caller tries other readings)."""


def eval_int(text: str, symbols: dict[str, int] | None = None,
             loc: SourceLocation | None = None) -> int | None:
    """Evaluate an integer expression (+ - * / % << >> & | ^ ~, parentheses, `.set` symbols)
    with LLVM's 64-bit semantics (see above). None if `text` is not such an expression (an
    unknown symbol, another operand kind); a ParseError at `loc` if it is one whose value
    cannot be computed (a literal past 64 bits, a shift count outside 0..63, division by
    zero, nesting deeper than MAX_EXPR_DEPTH)."""
    t = text.strip()
    if not t:
        return None
    if t.isascii() and t.isdigit() and len(t) < 19 and (t[0] != "0" or len(t) == 1):
        return int(t)  # the common case: a plain decimal number
    tokens: list[str] = []
    pos = 0
    for m in _TOKEN_RE.finditer(t):
        if m.start() != pos:
            return None
        tokens.append(m.group(m.lastindex))
        pos = m.end()
    if pos != len(t):
        return None
    try:
        return _ExprParser(tokens, symbols or {}, loc, t).parse()
    except _NotAnExpression:
        return None


class _ExprParser:
    """Precedence climbing over the tokens of one expression."""

    def __init__(self, tokens: list[str], symbols: dict[str, int],
                 loc: SourceLocation | None, text: str):
        self.tokens, self.symbols, self.loc, self.text = tokens, symbols, loc, text
        self.pos = 0

    def parse(self) -> int:
        value = self.binary(1, 0)
        if self.pos != len(self.tokens):
            raise _NotAnExpression
        return value

    def binary(self, min_prec: int, depth: int) -> int:
        """An expression whose binary operators bind at least `min_prec` (left to right)."""
        lhs = self.unary(depth)
        tokens = self.tokens
        while self.pos < len(tokens):
            op = tokens[self.pos]
            prec = _PRECEDENCE.get(op, 0)
            if prec < min_prec or not prec:
                break
            self.pos += 1
            # (the right operand takes only tighter operators: at most 6 levels of calls)
            lhs = self.apply(op, lhs, self.binary(prec + 1, depth))
        return lhs

    def unary(self, depth: int) -> int:
        if depth > MAX_EXPR_DEPTH:
            raise ParseError(f"expression {quote(self.text)} is nested more than "
                             f"{MAX_EXPR_DEPTH} levels deep", self.loc)
        if self.pos >= len(self.tokens):
            raise _NotAnExpression
        tok = self.tokens[self.pos]
        self.pos += 1
        if tok == "(":
            value = self.binary(1, depth + 1)
            if self.pos >= len(self.tokens) or self.tokens[self.pos] != ")":
                raise _NotAnExpression
            self.pos += 1
            return value
        if tok == "-":
            return wrap64(-self.unary(depth + 1))
        if tok == "~":
            return ~self.unary(depth + 1)
        if tok == "+":
            return self.unary(depth + 1)
        if tok[0].isdigit():
            return int_literal(tok, self.loc)
        if tok[0].isalpha() or tok[0] in "_.$":
            value = self.symbols.get(tok)
            if value is None:
                raise _NotAnExpression
            return value
        raise _NotAnExpression

    def apply(self, op: str, a: int, b: int) -> int:
        """`a op b` in 64 bits (operands are already 64-bit values: nothing grows past 128)."""
        if op == "+":
            return wrap64(a + b)
        if op == "-":
            return wrap64(a - b)
        if op == "*":
            return wrap64(a * b)
        if op in ("/", "%"):
            if b == 0:
                raise ParseError(f"division by zero in {quote(self.text)}", self.loc)
            q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)  # (C: towards zero)
            return wrap64(q) if op == "/" else wrap64(a - q * b)
        if op in ("<<", ">>"):
            if not 0 <= b <= 63:
                raise ParseError(f"shift count {b} in {quote(self.text)} is outside 0..63 (a "
                                 "64-bit value)", self.loc)
            if op == "<<":
                return wrap64(a << b)
            # (logical, as LLVM's AMDGPU assembler; by 0 the sign comes back)
            return wrap64((a & 0xFFFFFFFFFFFFFFFF) >> b)
        if op == "&":
            return a & b
        if op == "|":
            return a | b
        return a ^ b


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

    def _operand(self, text: str, loc: SourceLocation | None,
                 depth: int = 0) -> tuple[Operand, bool]:
        """(operand, fixed): `fixed` when the text's meaning cannot depend on `.set` symbols
        (registers and plain numbers), so the operand may be reused for the same text."""
        if depth > MAX_MODIFIER_DEPTH:
            raise ParseError(f"operand {quote(text.strip())} nests more than "
                             f"{MAX_MODIFIER_DEPTH} source modifiers (-, |x|, neg, abs, sext)",
                             loc)
        t = text.strip()
        if _INT_RE.match(t):
            # A plain number (first, as the checks below cannot take it for anything else).
            value = int_literal(t, loc)
            # (kept for reuse only if it is an inline constant: other values rarely repeat and
            # would crowd the table)
            return Imm(value, fmt="hex" if "0x" in t.lower() else "dec"), -16 <= value <= 64
        low = t.lower()
        for fn in ("neg", "abs", "sext"):
            if low.startswith(fn + "(") and t.endswith(")"):
                inner, fixed = self._operand(t[len(fn) + 1:-1], loc, depth + 1)
                return _with_mod(inner, **{fn: True}), fixed
        if t.startswith("-") and len(t) > 1 and (t[1] == "|" or not _is_number(t)):
            inner, fixed = self._operand(t[1:], loc, depth + 1)
            if isinstance(inner, (Imm, FloatImm)) and not isinstance(inner, Mod):
                raise ParseError(f"bad operand '{t}'", loc)
            return _with_mod(inner, neg=True), fixed
        if t.startswith("|") and t.endswith("|") and len(t) > 2:
            inner, fixed = self._operand(t[1:-1], loc, depth + 1)
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
        value = eval_int(inner, self.symbols, loc)
        if value is None:
            raise ParseError(f"expected an immediate in {spelling}(...), got {quote(inner)}",
                             loc)
        if not -(1 << 31) <= value < (1 << 32):
            raise ParseError(f"{spelling}({quote(inner)}): the value does not fit a 32-bit "
                             "literal", loc)
        return Literal(value & 0xFFFFFFFF, spelling=spelling)

    def _symbolic_operand(self, t: str, low: str, loc: SourceLocation | None) -> Operand:
        """Operands whose value may involve `.set` symbols: expressions, special immediates,
        labels."""
        value = eval_int(t, self.symbols, loc)
        if value is not None:
            return Imm(value, fmt="hex" if "0x" in low else "dec")
        for prefix, handler in (("hwreg(", self._hwreg), ("sendmsg(", self._sendmsg),
                                ("gpr_idx(", self._gpr_idx)):
            if low.startswith(prefix) and t.endswith(")"):
                return handler(t, loc)
        if low.startswith(("vmcnt(", "expcnt(", "lgkmcnt(")):
            return self._waitcnt(t, loc)
        if re.fullmatch(r"[sva]\[.*", low) or re.fullmatch(r"[sva]\d+.*", low):
            raise ParseError(f"bad register {quote(t)}", loc)
        if _IDENT_RE.match(t):
            return Label(t)
        raise ParseError(f"cannot parse operand {quote(t)}", loc)

    def _waitcnt(self, text: str, loc) -> Syntax:
        value = eval_int(text, self.symbols, loc)
        if value is not None:
            return Syntax(value, syntax.format_waitcnt(value))
        counts = dict(syntax.WAITCNT_MAX)
        found = False
        for m in re.finditer(r"(vmcnt|expcnt|lgkmcnt)(_sat)?\s*\(\s*([^)]*)\)", text):
            v = eval_int(m.group(3), self.symbols, loc)
            if v is None:
                raise ParseError(f"bad counter value {quote(m.group(3))}", loc)
            limit = syntax.WAITCNT_MAX[m.group(1)]
            if v > limit:
                if not m.group(2):
                    raise ParseError(f"{m.group(1)}({v}) is out of range (max {limit})", loc)
                v = limit
            counts[m.group(1)] = v
            found = True
        leftover = re.sub(r"(vmcnt|expcnt|lgkmcnt)(_sat)?\s*\([^)]*\)|[&,\s]", "", text)
        if not found or leftover:
            raise ParseError(f"bad s_waitcnt operand {quote(text)} (expected e.g. "
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
        reg = names.get(args[0].upper())
        if reg is None:
            reg = eval_int(args[0], self.symbols, loc)
        if reg is None:
            raise ParseError(f"unknown hardware register {quote(args[0])}", loc)
        offset = eval_int(args[1], self.symbols, loc) if len(args) > 1 else 0
        size = eval_int(args[2], self.symbols, loc) if len(args) > 2 else 32
        if offset is None or size is None or not (0 <= offset < 32 and 1 <= size <= 32):
            raise ParseError(f"bad hwreg offset/size in {quote(text)}", loc)
        value = syntax.encode_hwreg(reg, offset, size)
        return Syntax(value, syntax.format_hwreg(value))

    def _sendmsg(self, text: str, loc) -> Syntax:
        args = self._args(text)
        msgs = {v: k for k, v in syntax.SENDMSG_NAMES.items()}
        ops = {v: k for k, v in {**syntax.GS_OPS, **syntax.SYSMSG_OPS}.items()}
        if not 1 <= len(args) <= 3:
            raise ParseError(f"bad sendmsg '{text}'", loc)
        msg = msgs.get(args[0].upper())
        if msg is None:
            msg = eval_int(args[0], self.symbols, loc)
        op = ops.get(args[1].upper()) if len(args) > 1 else 0
        if op is None:
            op = eval_int(args[1], self.symbols, loc)
        stream = eval_int(args[2], self.symbols, loc) if len(args) > 2 else 0
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
            ints = [eval_int(v, self.symbols, loc) for v in items]
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
        v = eval_int(value, self.symbols, loc)
        if v is None:
            raise ParseError(f"bad value in modifier {quote(tok)}", loc)
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
_MNEMONIC_RE = re.compile(r"[A-Za-z_][\w]*", re.ASCII)
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

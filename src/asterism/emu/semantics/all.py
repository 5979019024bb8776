"""Every family's semantics in one table (`TABLE`, base mnemonic -> builder).

The only module that imports every family; `emu/compiler.py` imports it on the first
compile (building the family tables reads the ISA database of both targets).
"""

from __future__ import annotations

from asterism.emu.semantics import branch, cvt, lds, mem, mfma, salu, valu
from asterism.emu.semantics.registry import merge

TABLE = merge(branch.TABLE, salu.TABLE, valu.TABLE, cvt.TABLE, mfma.TABLE, mem.TABLE,
              lds.TABLE)

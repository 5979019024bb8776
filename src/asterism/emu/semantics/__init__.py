"""The emulator's instruction semantics, one module per family, behind a registry.

`registry.py` holds the table type (base mnemonic -> builder of the instruction's op) and
imports no family; each family module (`branch`, `salu`, `valu`, `cvt`, `mfma`, `mem`,
`lds`) exports its `TABLE`; `all.py` merges them (a mnemonic in two families is an error)
and is the only module that imports them all. Shared helpers sit below the families:
`emu/info.py` (what is known of an instruction), `emu/sops.py` / `emu/vops.py` (scalar and
vector operands), `emu/spaces.py` (address spaces), `bits.py` and `vmem.py` here.
This package module imports nothing, so importing the registry loads no family.
"""

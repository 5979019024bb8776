"""Instruction database per target (generated data + loader + queries)."""

from asterism.isa.database import (
    Form,
    Instruction,
    IsaDatabase,
    OperandSpec,
    get_isa,
    known_isa_targets,
)

__all__ = ["Form", "Instruction", "IsaDatabase", "OperandSpec", "get_isa", "known_isa_targets"]

"""asterism.timing: the timing model (modeled cycles, not measured)."""

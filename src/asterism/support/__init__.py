"""Helpers every layer may use (the lowest layer, above `asterism.errors` only): the memory
budget of value-sized allocations (`limits`) and the progress line of long work on stderr
(`progress`)."""

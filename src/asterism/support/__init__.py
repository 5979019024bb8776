"""Helpers every layer may use (the lowest layer, above `asterism.errors` only): the memory
budget of value-sized allocations (`limits`), the progress line of long work on stderr
(`progress`) and the pause of the cyclic garbage collector around bulk work (`gcpause`)."""

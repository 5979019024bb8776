"""asterism.timing: the timing model. Its figures are modeled, not measured.

The model estimates the cycles of the waves of the first CU(s) of a dispatch, instruction
by instruction. Its parameters are chip facts in asterism/target/data/timing.toml (read by
asterism.target.timing). Two drivers run it: `functional.py` drives the emulator's execution
(``asterism.launch(..., timing=True)``, ``asterism run --timing``), and `replay.py` replays a
capture's recorded instruction streams (``asterism trace replay``, via
asterism.profile.replay). Writing a result as an ATT trace folder is
asterism.profile.att_export's job.

Modules, lowest first:
    params.py      options (TimingOptions, --latency) and the parameter record of a result
    result.py      ATT record codes, WaveTiming, TimingResult (summary, JSON)
    state.py       the run state the engine and the mechanisms share (ModelWave, Cu)
    mfma.py, lds.py, memory.py, barriers.py, dispatch.py, bandwidth.py, priority.py   one
                   mechanism each (lds.py: LDS bandwidth, bank conflicts and the SIMD-pair
                   ports; priority.py: s_setprio in the issue arbitration; memory.py: counters,
                   latency, cost by cache lines, the scalar-cache miss; bandwidth.py: the chip's
                   L2 and HBM bandwidth the CUs share, memory.py asks it)
    stores.py, valu.py   the store write-out queue (memory.py asks it) and the VALU result
                   paths to other units (the engine asks `earliest`, tells `issued`)
    icache.py      the instruction cache per CU pair: a taken branch to a line not fetched
                   yet waits for it (the engine asks `branched`, tells `executed`)
    static.py      per-instruction facts, by tables (program control by mnemonic, the rest
                   by timing class), built from the mechanisms' numbers
    issue.py       the engine: issue cycles, ports, dependencies, units. It asks the
                   mechanisms (memory.latency, lds.cost, barriers.release, dispatch.admit...)
                   and knows none of their internals
    functional.py, replay.py   the drivers

A new mechanism goes into the module of what it models, behind the calls the engine makes
already: LDS bank conflicts in lds.py (`Lds.cost` / `latency`; the DS instruction's
addresses come through the functional driver, `lds.LdsAccesses`), memory cost by cache lines
in memory.py (`LineMemory.cost` and `latency`), barriers in barriers.py
(`Barriers.arrive`/`release`: one per workgroup, also when several share a CU; a replay's
workgroups are inferred by asterism.profile.workgroups), the whole-grid bandwidth ceiling in
bandwidth.py (memory.py's `LineMemory.latency` asks it). A mechanism with numbers of its own
per instruction adds them to static.Static where static.py's tables build it; one with
per-instruction figures to report adds them to the TimingResult (as `lds_costs`,
`line_costs`; the scalar misses, store write-out and VALU-path holds as `paths`).
`TimingOptions.off` turns the LDS bank, cache-line, bandwidth, per-workgroup barrier,
scalar-miss, store-queue, VALU-path, SIMD-pair LDS port, s_setprio, instruction-cache and
MFMA co-execution (packed VALU, memory) mechanisms off (params.MECHANISMS: lds_banks,
vmem_lines, bandwidth, wg_barriers, smem_miss, store_queue, valu_paths, lds_ports, setprio,
icache, packed_valu, mfma_memory; a replay: params.REPLAY_MECHANISMS,
which adds lane_patterns: the lanes' address patterns lanes.py derives from the code).
The engine changes only when a new kind of question must be asked.

Not modeled: the instruction cache's capacity and fetch bandwidth (icache.py models its
misses), the vector L1 (hits) and TLB (a cold scalar load's measured latency includes
whatever it costs), contention between CUs beyond their shares of the L2 and HBM bandwidth
(the other CUs are taken to run like the modeled ones; the MALL, L2 channel and HBM bank
conflicts, the fabric between XCDs and the L2's write-back buffering are not modeled), clock
changes (cycles are converted at the peak engine clock). A trace replay has no addresses:
there DS instructions cost their bandwidth and SIMD-pair port and vector memory its bytes
rule only (no bank conflicts, no cache lines, no bandwidth ceiling), or with the capture's
measured acceptance (``--memory accept|measured``) only its issue cycle.
"""

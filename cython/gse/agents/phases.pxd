# Augments gse/agents/phases.py: enter() compiled, a C function the agents cimport (a message
# changes phase two or three times in its life); the phase constants stay Python integers
# (each compiled agent declares its own C copies).

cpdef enter(msg, long long phase)

"""The drivers that move packets between agents: ``sim`` (a deterministic discrete-event
simulation on a virtual clock), ``udp`` (real datagrams on asyncio, one process or one
process per node) and ``mininet`` (a namespace per node, veth links).  A runtime owns
clocks, sockets and processes; the agents it drives own none."""

"""``gse agent --config NODE.json``: one host or switch of a real fabric, in this process.

The program itself is ``gse.runtimes.udp.agent_process`` (which the Mininet runtime starts
directly, without loading the rest of the command line); this registers it as a command.
"""

from gse.runtimes.udp.agent_process import add_arguments, cmd_agent


def add_commands(sub):
    p = sub.add_parser("agent", help="run one node (host or switch) from its configuration")
    add_arguments(p)
    return {"agent": cmd_agent}

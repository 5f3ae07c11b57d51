"""The Mininet runtime: every host and switch position of a topology in its own network
namespace, veth links with one /31 each, a ``gse agent`` process per node.  The only
package that imports Mininet.

``environment`` (is Mininet usable here), ``addressing`` (interface names and /31s),
``processes`` (children that die with their parent; what is left behind), ``fabric``
(``MininetFabric``: build and tear down), ``run`` (``gse run --runtime mininet``).
``python -m gse.runtimes.mininet --k 4`` builds a Fat-Tree, pings every link and tears
it down."""

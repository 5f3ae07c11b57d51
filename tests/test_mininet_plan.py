"""The Mininet layout as data: addresses, interface names and agent configurations.

Runs everywhere (no root, no Mininet): what the builder and ``gse.runtimes.mininet.run`` compute
before they touch the kernel.  The runs themselves are in tests/test_mininet_fattree.py.
"""

import argparse
import io
import ipaddress
import random

import pytest

from gse.config import GseConfig
from gse.runtimes.mininet.addressing import IFNAME_MAX, address_plan, interface_names
from gse.runtimes.mininet.fabric import MininetFabric
from gse.runtimes.mininet.progress import ProgressLine
from gse.runtimes.mininet.run import (PLACEMENTS, agent_configs, default_start_budget,
                                      group_name, placement_groups)
from gse.runtimes.mininet.system import left_behind
from gse.runtimes.udp.config import check_node_config, udp_profile
from gse.workloads.traffic import incast, permutation
from topologies.fattree import fat_tree
from topologies.registry import add_topology_options, build_topology
from topologies.topology import TopologyError


def registry_topology(name, **opts):
    p = argparse.ArgumentParser()
    add_topology_options(p)
    args = p.parse_args(["--topology", name])
    for key, value in opts.items():
        setattr(args, key, value)
    return build_topology(args)


TOPOLOGIES = [("fat-tree", {"k": 4}), ("fat-tree", {"k": 8}), ("spine-leaf-rail", {}),
              ("pod-fat-tree", {})]


@pytest.mark.parametrize("name,opts", TOPOLOGIES)
def test_one_slash31_per_link_and_valid_interface_names(name, opts):
    topo = registry_topology(name, **opts)
    plan = address_plan(topo)
    assert len(plan) == len(topo.links)
    seen_ips, seen_macs, seen_intfs = set(), set(), set()
    for la, link in zip(plan, topo.links):
        a, b = ipaddress.IPv4Address(la.ip_a), ipaddress.IPv4Address(la.ip_b)
        net = ipaddress.IPv4Network("%s/31" % la.ip_a, strict=False)
        assert a in net and b in net and a != b, la.as_dict()
        assert (la.a, la.a_port, la.b, la.b_port) == (link.a, link.a_port, link.b, link.b_port)
        seen_ips |= {la.ip_a, la.ip_b}
        seen_macs |= {la.mac_a, la.mac_b}
        seen_intfs |= {la.intf_a, la.intf_b}
    assert len(seen_ips) == len(seen_macs) == len(seen_intfs) == 2 * len(topo.links)
    for names in interface_names(topo):
        assert all(0 < len(n) <= IFNAME_MAX for n in names)


def test_address_plan_refuses_a_base_too_small():
    with pytest.raises(TopologyError, match="48 links need 96"):
        address_plan(fat_tree(4), "198.18.0.0/26")


def test_agent_configs_address_each_neighbour_on_its_link():
    topo = fat_tree(4, link_gbps=0.01)
    fab = MininetFabric(topo)                     # not started: the plan only
    msgs = permutation(16, 50_000, random.Random(1)) + incast(16, 4, 20_000,
                                                              random.Random(2), receiver=0)
    for i, m in enumerate(msgs):
        m.msg_id = i + 1
    confs = agent_configs(fab, msgs, "gse", udp_profile(GseConfig()), 1, 0.0, 0.0,
                          "/tmp/out", {"timeout_s": 30.0}, port=47001)
    own = {}                                      # (node, port) -> own ip on that link
    for conf in confs:
        check_node_config(conf)
        assert conf["bind"] == ["0.0.0.0", 47001]
        for itf in conf["interfaces"]:
            own[(conf["node"], itf["port"])] = itf["ip"]
    for conf in confs:
        peers = set()
        for pc in conf["ports"]:
            ip, port = pc["peer_addr"]
            assert port == 47001
            assert ip == own[(pc["peer"], pc["peer_port"])]
            mine = own[(conf["node"], pc["port"])]
            assert ipaddress.IPv4Network("%s/31" % mine, strict=False) == \
                ipaddress.IPv4Network("%s/31" % ip, strict=False)
            peers.add(ip)
        assert len(peers) == len(conf["ports"])  # the ingress port is known by source ip
    hosts = [c for c in confs if c["role"] == "host"]
    assert sum(len(c["messages"]) for c in hosts) == len(msgs)
    assert sum(len(c["expect"]) for c in hosts) == len(msgs)


def test_start_budget_grows_with_the_fabric():
    assert 2.0 < default_start_budget(36) < default_start_budget(208)
    assert default_start_budget(36, 17) < default_start_budget(36)   # fewer processes


@pytest.mark.parametrize("placement", PLACEMENTS)
def test_placements_put_every_node_in_exactly_one_process(placement):
    topo = fat_tree(4)
    groups = placement_groups(topo, placement)
    nodes = sorted(n for g in groups for n in g)
    assert nodes == list(range(len(topo.nodes)))
    kinds = [{topo.nodes[n].kind for n in g} for g in groups]
    hosts = [g for g in groups if any(topo.nodes[n].kind == "host" for n in g)]
    if placement == "all":
        assert len(groups) == 1 and group_name(topo, groups[0]) == "all"
        return
    assert all(len(g) == 1 for g in hosts)               # a host keeps its own process
    expect = {"node": 36, "tier": 16 + 3, "switches": 16 + 1}[placement]
    assert len(groups) == expect
    if placement == "tier":
        assert sorted(group_name(topo, g) for g in groups if len(g) > 1) == [
            "tier-agg", "tier-core", "tier-edge"]
        assert all(len(k) == 1 for k in kinds)
    if placement == "switches":
        assert group_name(topo, groups[-1]) == "switches" and len(groups[-1]) == 20
    with pytest.raises(ValueError, match="placement"):
        placement_groups(topo, "everywhere")


def test_left_behind_of_nothing_is_empty():
    assert left_behind({"shell_pids": [], "program_pids": [], "namespaces": [],
                        "interfaces": []}) == {}


def test_progress_line_writes_lines_when_not_a_terminal():
    out = io.StringIO()
    line = ProgressLine(out, every_s=0.0)
    line({"label": "incast gse", "stage": "running", "t_s": 1.5, "agents": 36,
          "ready": 36, "hosts": 16, "hosts_done": 3, "datagrams": 1234})
    line(None)
    text = out.getvalue()
    assert "[incast gse] running" in text and "hosts done 3/16" in text
    assert text.endswith("\n")


def test_gse_run_offers_the_mininet_runtime_and_refuses_until(capsys):
    from gse.api.scenario import Scenario, ScenarioError
    from gse.cli.main import main
    from gse.cli.run import available_runtimes
    assert "mininet" in available_runtimes()
    with pytest.raises(ScenarioError, match="scenario.until_us: expected null for runtime "
                                            "mininet"):
        Scenario(runtime="mininet", until_us=100.0)
    assert main(["run", "--runtime", "mininet", "--until-us", "100"]) == 2
    assert "until_us: expected null for runtime mininet" in capsys.readouterr().err


def test_node_commands_fit_a_pty_line():
    from gse.runtimes.mininet.fabric import _command_lines
    cmds = ["ip addr replace 198.18.%d.%d/31 dev spine1_3-eth%d" % (i, i, i) for i in range(200)]
    lines = list(_command_lines(cmds))
    assert len(lines) > 1 and all(len(line) < 4095 for line in lines)
    assert "; ".join(lines).split("; ") == cmds

"""The cluster as its nodes see it: the status table, what `up` and `wait` wait for, the
quorum's leader, and the nodes a call must also stop."""

import json
import time
from collections.abc import Callable, Iterable
from typing import Any

from .console import say, warn
from .containers import container_name
from .errors import LabError
from .layout import bootstrap_servers, lab_port, netns_mode, netns_name, node_host, node_port
from .netns import disk_mount
from .processes import node_pid, proc_in_container, proc_is_node, proc_paused, read_pid
from .protocol import NotLeader, Quorum, describe_cluster, describe_quorum
from .secured import client_properties
from .settings import BROKERS, CONTROLLER, CONTROLLERS, KAFKA_VERSION, NODES
from .state import Lab, load_lab, pid_path, state_dir


def quorum(base: int, timeout: float = 1.0) -> tuple[Quorum | None, str | None, str | None]:
    """Asks the controllers in turn (`timeout` s for each step) until one answers DescribeQuorum
    as the leader. Returns (the quorum, "host:port" of who answered, None), or (None, None, a
    summary of what each controller said) when none did."""
    tried = []
    for c in CONTROLLERS:
        host, port = node_host(c, base), node_port(c, base)
        where = f"{host}:{port}"
        pid = read_pid(c)
        if pid and proc_is_node(pid, c) and proc_paused(pid):
            tried.append(f"{c} ({where}) is paused")  # would not answer: don't wait for it
            continue
        try:
            return describe_quorum(port, timeout=timeout, host=host), where, None
        except NotLeader as e:
            tried.append(f"{c} ({where}): {e}")
        except (OSError, ValueError) as e:
            tried.append(f"{c} ({where}): {str(e) or type(e).__name__}")
    return None, None, "; ".join(tried)


def snapshot(base: int) -> dict[str, Any]:
    """Per node: pid, port, alive; per broker its registration as a live broker sees it."""
    nodes = {}
    for node in NODES:
        pid = node_pid(node)
        nodes[node] = {
            "node": node,
            "role": "controller" if node in CONTROLLERS else "broker",
            "pid": pid,
            "port": node_port(node, base),
            "alive": pid is not None,
            "paused": pid is not None and proc_paused(pid),
            "container": pid is not None and proc_in_container(pid),
            "registered": None,
            "fenced": None,
        }
    view = None
    for b in BROKERS:
        if nodes[b]["alive"] and not nodes[b]["paused"]:  # a paused JVM would not answer
            try:
                view = describe_cluster(lab_port(b, base), host=node_host(b, base))
                view["seen_by"] = b
                break
            except (OSError, ValueError):
                continue
    if view:
        for b in BROKERS:
            entry = view["nodes"].get(b)
            nodes[b]["registered"] = entry is not None
            nodes[b]["fenced"] = entry["fenced"] if entry else None
    cluster_id = view["cluster_id"] if view else None
    # Each live controller says whether it sees itself registered and whom it takes for the
    # active controller (its quorum's leader). The leader knows it leads; a follower may still
    # name the one before, for as long as it takes to notice.
    claims = []
    for c in CONTROLLERS:
        if not nodes[c]["alive"] or nodes[c]["paused"]:
            continue
        try:
            cview = describe_cluster(node_port(c, base), endpoint_type=2)
        except (OSError, ValueError):
            continue
        nodes[c]["registered"] = c in cview["nodes"]
        if cview["controller_id"] >= 0:
            claims.append((c, cview["controller_id"]))
        cluster_id = cluster_id or cview["cluster_id"]
    active = next((said for c, said in claims if said == c), claims[0][1] if claims else None)
    return {
        "nodes": nodes,
        "active_controller": active,
        "cluster_id": cluster_id,
        "seen_by": view["seen_by"] if view else None,
    }


# What `up` and `wait` wait for. With one controller, as it has always been: a controller that is
# down does not make the brokers fenced. With a quorum, also a leader of it.
HEALTHY = (
    "all brokers registered and unfenced"
    if len(CONTROLLERS) == 1
    else "a quorum leader and all brokers registered and unfenced"
)


def healthy(base: int, brokers: Iterable[int] = BROKERS) -> bool:
    """True when every broker process is alive and each one reports all `brokers` unfenced;
    with several controllers, also when one of them answers as the quorum's leader."""
    for b in BROKERS:
        if node_pid(b) is None:
            return False
    for b in BROKERS:
        try:
            view = describe_cluster(lab_port(b, base), host=node_host(b, base))
        except (OSError, ValueError):
            return False
        for want in brokers:
            entry = view["nodes"].get(want)
            if entry is None or entry["fenced"]:
                return False
    if len(CONTROLLERS) > 1 and quorum(base)[0] is None:
        return False
    return True


def broker_unfenced(base: int, broker: int) -> bool:
    """True when `broker` is alive and every live broker sees it registered and unfenced."""
    if node_pid(broker) is None:
        return False
    seen = 0
    for b in BROKERS:
        if node_pid(b) is None:
            continue
        try:
            view = describe_cluster(lab_port(b, base), host=node_host(b, base))
            entry = view["nodes"].get(broker)
        except (OSError, ValueError):
            return False
        if entry is None or entry["fenced"]:
            return False
        seen += 1
    return seen > 0


def controller_registered(base: int, controller: int = CONTROLLER) -> bool:
    """True when `controller` answers DescribeCluster, sees itself among the registered
    controllers and knows the active controller (its quorum has a leader); with several
    controllers also when the leader has had a fetch from it (knows its log end offset)."""
    try:
        view = describe_cluster(node_port(controller, base), endpoint_type=2)
    except (OSError, ValueError):
        return False
    if controller not in view["nodes"] or view["controller_id"] < 0:
        return False
    if len(CONTROLLERS) == 1:
        return True
    q = quorum(base)[0]
    return q is not None and any(
        v["id"] == controller and v["log_end_offset"] >= 0 for v in q["voters"]
    )


def print_status(base: int, as_json: bool = False) -> None:
    lab = load_lab()
    snap = snapshot(base)
    settings = lab.get("settings", {})
    if as_json:
        out = {
            "state_dir": str(state_dir()),
            "kafka_version": KAFKA_VERSION,
            "cluster_id": snap["cluster_id"] or lab.get("cluster_id"),
            "port_base": base,
            "bootstrap": bootstrap_servers(base),
            "settings": settings,
            "active_controller": snap["active_controller"],
            "netns": netns_mode(lab),
            "security": lab.get("security", "plaintext"),  # as brought up, whatever the env says
            "client": client_properties(lab.get("security", "plaintext")),
            "nodes": [
                snap["nodes"][n]
                | {
                    "pid_file": str(pid_path(n)),
                    "container_name": container_name(n, base),
                    "address": node_host(n, base, lab),
                    "netns_name": netns_name(n, base) if netns_mode(lab) else None,
                    "fill_dir": str(disk_mount(n)) if netns_mode(lab) else None,
                }
                for n in NODES
            ],
        }
        say(json.dumps(out, indent=2))
        return
    say(f"{'NODE':<5} {'ROLE':<11} {'PID':<8} {'PORT':<6} {'ALIVE':<6} REGISTERED")
    for n in NODES:
        e = snap["nodes"][n]
        if e["registered"] is None:
            reg = "?" if n not in CONTROLLERS or e["alive"] else "-"
            if n not in CONTROLLERS and not any(snap["nodes"][b]["alive"] for b in BROKERS):
                reg = "-"
        elif not e["registered"]:
            reg = "no"
        elif n in CONTROLLERS:
            reg = "yes (active)" if snap["active_controller"] == n else "yes"
        else:
            reg = "yes (fenced)" if e["fenced"] else "yes"
        where = f"  (container {container_name(n, base)})" if e["container"] else ""
        say(
            f"{n:<5} {e['role']:<11} {e['pid'] or '-':<8} {e['port']:<6} "
            f"{('paused' if e['paused'] else 'yes') if e['alive'] else 'no':<6} {reg}{where}"
        )
    extra = ", ".join(f"{k}={v}" for k, v in sorted(settings.items())) or "Kafka defaults"
    cid = snap["cluster_id"] or lab.get("cluster_id") or "-"
    say(f"cluster {cid}; settings: {extra}; state {state_dir()}")


def wait_until(predicate: Callable[[], bool], timeout: float, what: str) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() > deadline:
            raise LabError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(0.25)


def check_controllers(lab: Lab) -> None:
    """A lab formatted for a quorum of three must not be started with one controller, nor the
    other way round: the voters are in every node's configuration and in the metadata log.
    KFAILD_LAB_CONTROLLERS is not remembered, like KFAILD_LAB_BROKERS; this catches the
    variable missing (or set) on a later call."""
    had = lab.get("controllers", 1)
    if "cluster_id" in lab and had != len(CONTROLLERS):
        raise LabError(
            f"this lab was brought up with {had} controller(s) but "
            f"KFAILD_LAB_CONTROLLERS={len(CONTROLLERS)}: set "
            f"KFAILD_LAB_CONTROLLERS={had} for every command on it, or `lab reset` it"
        )


def strays(ids: Iterable[int]) -> tuple[int, ...]:
    """The nodes among `ids` that run from this state dir but are not among this call's NODES (a
    lab started with other KFAILD_LAB_CONTROLLERS or KFAILD_LAB_BROKERS): `down` and `reset`
    stop them too rather than leave them running without their state dir or network."""
    found = tuple(n for n in ids if n not in NODES and node_pid(n) is not None)
    for n in found:
        warn(
            f"node {n} runs but is not one of this call's nodes ({', '.join(map(str, NODES))}; "
            f"KFAILD_LAB_CONTROLLERS, KFAILD_LAB_BROKERS): stopping it too"
        )
    return found

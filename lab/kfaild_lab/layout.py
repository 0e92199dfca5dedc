"""Where a lab's nodes are: ports from the port base (KFAILD_LAB_PORT_BASE), addresses (127.0.0.1,
or each node its own in namespaced mode, KFAILD_LAB_NETNS=1), and the security mode
(KFAILD_LAB_SECURITY). A mode not set in the environment is what the lab was brought up with."""

import os

from .errors import UsageError
from .settings import BROKERS, CONTROLLERS, DEFAULT_PORT_BASE, NODES, is_controller
from .state import Lab, load_lab


def port_base(lab: Lab | None = None) -> int:
    env = os.environ.get("KFAILD_LAB_PORT_BASE")
    if env is not None:
        try:
            base = int(env)
        except ValueError:
            base = -1
        top = 65535 - CONTROLLERS[-1]  # the highest port is the last controller's, base+100..102
        if not 1024 <= base <= top:
            raise UsageError(f"KFAILD_LAB_PORT_BASE={env!r} is not a port number in 1024..{top}")
        return base
    if lab is None:
        lab = load_lab()
    return int(lab.get("port_base", DEFAULT_PORT_BASE))


def node_port(node: int, base: int) -> int:
    """Controllers 100..102 on base+100..102, brokers N on base+90+N."""
    return base + node if is_controller(node) else base + 90 + node


def netns_mode(lab: Lab | None = None) -> bool:
    """KFAILD_LAB_NETNS=1: the nodes run in their own network namespaces. Without the variable,
    what the lab was brought up with (lab.json), so `status`, `kill`, `down` find the nodes."""
    env = os.environ.get("KFAILD_LAB_NETNS")
    if env is not None:
        if env not in ("0", "1", ""):
            raise UsageError(f"KFAILD_LAB_NETNS={env!r} is not 1 or 0")
        return env == "1"
    if lab is None:
        lab = load_lab()
    return bool(lab.get("netns", False))


def net_prefix(base: int) -> str:
    # Interface names have at most 15 characters: "kfl25000-n100h" is 14.
    return f"kfl{base}"


def net_subnet(base: int) -> str:
    """The lab's own /24: 10.77.<base / 1000 % 256>.0, so labs on other port bases differ."""
    return f"10.77.{base // 1000 % 256}"


def bridge_name(base: int) -> str:
    return f"{net_prefix(base)}-br"


def bridge_addr(base: int) -> str:
    return f"{net_subnet(base)}.254"


def netns_name(node: int, base: int) -> str:
    return f"{net_prefix(base)}-n{node}"


def veth_host(node: int, base: int) -> str:
    return f"{net_prefix(base)}-n{node}h"


def node_host(node: int, base: int, lab: Lab | None = None) -> str:
    """The address node N listens on: 127.0.0.1, or its own address in namespaced mode."""
    return f"{net_subnet(base)}.{node}" if netns_mode(lab) else "127.0.0.1"


def bootstrap_servers(base: int) -> str:
    return ",".join(f"{node_host(b, base)}:{node_port(b, base)}" for b in BROKERS)


SECURITY_MODES = ("plaintext", "sasl_ssl", "mtls")


def security_mode(lab: Lab | None = None) -> str:
    """KFAILD_LAB_SECURITY, else what the lab was brought up with (lab.json)."""
    env = os.environ.get("KFAILD_LAB_SECURITY")
    if env is not None and env != "":
        if env not in SECURITY_MODES:
            raise UsageError(
                f"KFAILD_LAB_SECURITY={env!r} is not one of {', '.join(SECURITY_MODES)}"
            )
        return env
    if lab is None:
        lab = load_lab()
    return lab.get("security", "plaintext")


def secured(lab: Lab | None = None) -> bool:
    return security_mode(lab) != "plaintext"


def lab_port(broker: int, base: int, lab: Lab | None = None) -> int:
    """Where `lab` itself asks a broker (DescribeCluster): its client port, or in secured mode a
    PLAINTEXT listener of the lab's own on base+80+N, so that `status` and `wait` need neither
    TLS nor credentials. kfaild is never given it."""
    return base + 80 + broker if secured(lab) else node_port(broker, base)


def host_of_port(port: int) -> str:
    """The address a node's port is on: each node has its own port, so the port says which."""
    base = port_base()
    for n in NODES:
        if node_port(n, base) == port:
            return node_host(n, base)
    return "127.0.0.1"

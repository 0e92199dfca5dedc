"""One function per `lab` verb; each returns its exit code or raises LabError or UsageError."""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

from .cluster import (
    HEALTHY,
    broker_unfenced,
    check_controllers,
    controller_registered,
    healthy,
    print_status,
    quorum,
    strays,
    wait_until,
)
from .config import formatted, new_cluster_id
from .console import now_iso, say, warn
from .containers import container_name, remove_containers
from .errors import LabError, UsageError
from .jars import fetch, make_cds_archive
from .layout import (
    bootstrap_servers,
    lab_port,
    netns_mode,
    node_host,
    port_base,
    secured,
    security_mode,
)
from .netns import net_down
from .nodes import start_nodes, stop_nodes
from .processes import find_java, node_pid, tail
from .secured import LAB_USERS, client_properties, write_client_file
from .settings import (
    ALL_BROKERS,
    ALL_CONTROLLERS,
    BROKERS,
    CONTROLLER,
    CONTROLLERS,
    KAFKA_VERSION,
    NODES,
    TOOLS_LOG4J_CONFIG,
    parse_settings,
)
from .state import Lab, StateLock, libs_dir, load_lab, logs_path, pid_path, save_lab, state_dir


def cmd_fetch(args: argparse.Namespace) -> int:
    fetch(force=args.force)
    make_cds_archive(find_java())
    return 0


def describe_change(
    stored: tuple[dict[str, str], int], requested: tuple[dict[str, str], int]
) -> tuple[str, str]:
    """The running lab's (settings, port base) and the requested ones, as `up` names them."""
    (had, had_base), (settings, base) = stored, requested
    have = ", ".join(f"{k}={v}" for k, v in sorted(had.items())) or "Kafka defaults"
    want = ", ".join(f"{k}={v}" for k, v in sorted(settings.items())) or "Kafka defaults"
    if had_base != base:
        have += f", port base {had_base}"
        want += f", port base {base}"
    return have, want


def record_lab(lab: Lab, base: int, settings: dict[str, str], netns: bool, security: str) -> None:
    """Writes lab.json with what the nodes are about to start with; a new lab gets its cluster
    id, and the SCRAM users when it is secured and not formatted yet."""
    lab.setdefault("cluster_id", new_cluster_id())
    lab["kafka_version"] = KAFKA_VERSION
    lab["port_base"] = base
    lab["settings"] = settings
    lab["netns"] = netns
    lab["security"] = security
    if secured(lab) and not any(formatted(n) for n in NODES):
        lab["scram_users"] = list(LAB_USERS)
    if len(CONTROLLERS) > 1:
        lab["controllers"] = len(CONTROLLERS)
    save_lab(lab)


def cmd_up(args: argparse.Namespace) -> int:
    requested = parse_settings(args.set)
    with StateLock():
        java = find_java()
        fetch(quiet=True)
        lab = load_lab()
        check_controllers(lab)
        base = port_base(lab)
        if args.defaults:
            settings = {}
        elif args.set:
            settings = requested
        else:
            settings = lab.get("settings", {})
        running = [n for n in NODES if node_pid(n) is not None]
        netns = netns_mode(lab)
        if running and netns != bool(lab.get("netns", False)):
            raise LabError(
                f"the running lab is {'' if lab.get('netns') else 'not '}namespaced "
                f"(KFAILD_LAB_NETNS); run `lab down` first to switch"
            )
        security = security_mode(lab)
        if running and security != lab.get("security", "plaintext"):
            raise LabError(
                f"the running lab's security is {lab.get('security', 'plaintext')} "
                f"(KFAILD_LAB_SECURITY); run `lab down` first to switch"
            )
        without_users = lab.get("scram_users") != list(LAB_USERS)
        if secured(lab) and any(formatted(n) for n in NODES) and without_users:
            raise LabError(
                f"this lab was formatted without the SCRAM users secured mode needs "
                f"({', '.join(LAB_USERS)}); `lab reset` it first (or choose another "
                f"KFAILD_LAB_DIR)"
            )
        stored = (lab.get("settings", {}), lab.get("port_base", base))
        if running and stored != (settings, base):
            have, want = describe_change(stored, (settings, base))
            if not args.restart:
                raise LabError(
                    f"the running lab has other settings ({have}) than requested "
                    f"({want}); run `lab up --restart ...` to restart it with the new "
                    f"ones, or `lab down` first"
                )
            say(f"restarting the lab: settings {have} -> {want}")
            stop_nodes(BROKERS, args.stop_timeout)
            stop_nodes(CONTROLLERS, args.stop_timeout)
            running = []
        t0 = time.monotonic()
        if len(running) == len(NODES):
            wait_until(lambda: healthy(base), args.timeout, HEALTHY)
            say("lab already up")
            print_status(base)
            return 0
        record_lab(lab, base, settings, netns, security)
        todo = [n for n in NODES if n not in running]
        start_nodes(todo, base, settings, java, args.timeout, container=args.containers)
        remaining = max(1.0, args.timeout - (time.monotonic() - t0))
        wait_until(lambda: healthy(base), remaining, HEALTHY)
        say(f"lab up in {time.monotonic() - t0:.1f} s; bootstrap {bootstrap_servers(base)}")
        if secured(lab):
            say(
                f"security {security}: client properties in {write_client_file(lab)} (`lab client`)"
            )
        print_status(base)
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    with StateLock():
        stop_nodes(BROKERS + strays(ALL_BROKERS), args.timeout)
        stop_nodes(CONTROLLERS + strays(ALL_CONTROLLERS), args.timeout)
        remove_containers(port_base())
        net_down(port_base())
    say("lab down")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    try:
        check_controllers(load_lab())
    except LabError as e:
        warn(str(e))
    print_status(port_base(), as_json=args.json)
    return 0


def cmd_quorum(args: argparse.Namespace) -> int:
    q, answered_by, tried = quorum(port_base(), timeout=args.timeout)
    if q is None:
        raise LabError(f"no controller answered DescribeQuorum as the quorum's leader: {tried}")
    say(
        json.dumps(
            {
                "leader": q["leader"],
                "epoch": q["epoch"],
                "voters": q["voters"],
                "answered_by": answered_by,
                "high_watermark": q["high_watermark"],
                "observers": q["observers"],
            }
        )
    )
    return 0


def cmd_kill(args: argparse.Namespace) -> int:
    pid = node_pid(args.node)
    if pid is None:
        say(f"node {args.node} is not running")
        return 0
    sent = now_iso()
    os.kill(pid, signal.SIGKILL)
    say(f"node {args.node} (pid {pid}): SIGKILL sent at {sent}")
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    with StateLock():
        stop_nodes((args.node,), args.timeout)
    return 0


def cmd_start(args: argparse.Namespace) -> int:
    t0 = time.monotonic()
    with StateLock():
        lab = load_lab()
        base = port_base(lab)
        node = args.node
        pid = node_pid(node)
        if pid is not None:
            say(f"node {node} is already running (pid {pid})")
        else:
            if "cluster_id" not in lab:
                raise LabError("the lab was never brought up in this state dir; run `lab up`")
            check_controllers(lab)
            java = find_java()
            fetch(quiet=True)
            live = [c for c in CONTROLLERS if node_pid(c) is not None]
            lonely = node not in CONTROLLERS and len(live) <= len(CONTROLLERS) // 2
            if lonely and len(CONTROLLERS) == 1:
                warn(f"controller {CONTROLLER} is not running; broker {node} will wait for it")
            elif lonely:
                warn(
                    f"only {len(live)} of the controllers {', '.join(map(str, CONTROLLERS))} "
                    f"running, no quorum; broker {node} will wait for one"
                )
            start_nodes(
                [node],
                base,
                lab.get("settings", {}),
                java,
                args.timeout,
                wait_listen=not lonely,
                container=args.container,
            )
            if not args.wait:
                return 0
        if args.wait:
            if node in CONTROLLERS:
                wait_until(
                    lambda: controller_registered(base, node),
                    args.timeout,
                    f"controller {node} to be registered",
                )
                say(f"controller {node} registered")
            else:
                wait_until(
                    lambda: broker_unfenced(base, node),
                    args.timeout,
                    f"broker {node} registered and unfenced",
                )
                say(
                    f"broker {node} registered and unfenced {time.monotonic() - t0:.1f} s after "
                    f"`lab start` began"
                )
    return 0


def cmd_logs(args: argparse.Namespace) -> int:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", args.file):
        raise UsageError(f"log file name {args.file!r}: a file name in the node's log dir")
    path = logs_path(args.node) / args.file
    if not path.is_file():
        have = sorted(p.name for p in logs_path(args.node).glob("*") if p.is_file())
        raise LabError(f"no log file {path}" + (f" (there are: {', '.join(have)})" if have else ""))
    if args.lines:
        for line in tail(path, args.lines):
            print(line)
        return 0
    with open(path, "rb") as f:
        shutil.copyfileobj(f, sys.stdout.buffer)
    return 0


def cmd_wait(args: argparse.Namespace) -> int:
    base = port_base()
    t0 = time.monotonic()
    try:
        wait_until(lambda: healthy(base), args.timeout, HEALTHY)
    except LabError:
        print_status(base)
        raise
    say(f"{HEALTHY} (waited {time.monotonic() - t0:.1f} s)")
    return 0


def cmd_reset(args: argparse.Namespace) -> int:
    d = state_dir()
    if d.exists():
        # Everything in a lab's state dir goes (kfaild.db that `scripts/run-lab` keeps there too),
        # but a directory that is no lab's is not deleted because KFAILD_LAB_DIR points at it.
        ours = {"lab.json"} | {f"node{n}" for n in ALL_CONTROLLERS + ALL_BROKERS}
        entries = {p.name for p in d.iterdir()} - {".gitignore", ".lock"}
        if entries and not entries & ours:
            raise LabError(
                f"{d} does not look like a lab state dir (no lab.json, no node dirs); "
                f"not deleting it"
            )
        with StateLock():
            stop_nodes(BROKERS + strays(ALL_BROKERS), args.timeout)
            stop_nodes(CONTROLLERS + strays(ALL_CONTROLLERS), args.timeout)
            remove_containers(port_base())
            net_down(port_base())
        shutil.rmtree(d)
    else:
        net_down(port_base())
    say(f"lab reset: {d} deleted")
    return 0


def cmd_bootstrap(args: argparse.Namespace) -> int:
    say(bootstrap_servers(port_base()))
    return 0


def cmd_client(args: argparse.Namespace) -> int:
    """The client properties of the lab's security mode as JSON (kfaild's `client:` keys)."""
    lab = load_lab()
    if secured(lab):
        write_client_file(lab)
    say(json.dumps(client_properties(security_mode(lab)), indent=2, sort_keys=True))
    return 0


def cmd_acl(args: argparse.Namespace) -> int:
    """Kafka's AclCommand with `args.arguments`, through the lab's own PLAINTEXT listeners (whose
    principal, ANONYMOUS, is a super user in sasl_ssl mode)."""
    lab = load_lab()
    if security_mode(lab) != "sasl_ssl":
        raise UsageError("`lab acl` needs a lab in sasl_ssl mode (the only one with an authorizer)")
    base = lab.get("port_base", port_base())
    servers = ",".join(f"{node_host(b, base)}:{lab_port(b, base, lab)}" for b in BROKERS)
    arguments = args.arguments[1:] if args.arguments[:1] == ["--"] else args.arguments
    cmd = [
        find_java(),
        f"-Dlog4j2.configurationFile={TOOLS_LOG4J_CONFIG}",
        "-Xmx256m",
        "-cp",
        f"{libs_dir()}/*",
        "org.apache.kafka.tools.AclCommand",
        "--bootstrap-server",
        servers,
        *arguments,
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    if r.returncode != 0:
        output = (r.stdout + r.stderr).strip()[-2000:]
        raise LabError(f"AclCommand failed (exit code {r.returncode}): {output}")
    say(r.stdout.strip())
    return 0


def cmd_pidfile(args: argparse.Namespace) -> int:
    say(str(pid_path(args.node)))
    return 0


def cmd_container(args: argparse.Namespace) -> int:
    say(container_name(args.node, port_base()))
    return 0

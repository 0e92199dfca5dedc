"""Namespaced mode (KFAILD_LAB_NETNS=1): each node in its own network namespace on a bridge, its
log dir on its own loop-mounted filesystem (a disk that can really fill up)."""

import os
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

from .console import say
from .errors import LabError
from .layout import bridge_addr, bridge_name, net_subnet, netns_mode, netns_name, veth_host
from .settings import ALL_BROKERS, ALL_CONTROLLERS
from .state import Lab, node_dir


def ip_cmd(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=20)
    if check and r.returncode != 0:
        raise LabError(f"`ip {' '.join(args)}` failed: {r.stderr.strip()}")
    return r


def netns_exists(name: str) -> bool:
    if not shutil.which("ip"):
        return False
    r = ip_cmd("netns", "list", check=False)
    return any(line.split()[0] == name for line in r.stdout.splitlines() if line.strip())


def link_exists(name: str) -> bool:
    if not shutil.which("ip"):
        return False
    return ip_cmd("link", "show", "dev", name, check=False).returncode == 0


def net_up(base: int, nodes: Iterable[int]) -> None:
    """Bridge <prefix>-br with .254/24 in the root namespace, and for each node a namespace
    <prefix>-n<N> with a veth pair: eth0 (address .<N>/24, default route via the bridge) inside,
    <prefix>-n<N>h on the bridge outside. The root namespace reaches the nodes through the
    bridge's connected route, as a client on the same network would. Idempotent."""
    if os.geteuid() != 0:
        raise LabError("KFAILD_LAB_NETNS=1 needs root (network namespaces, veth, loop mounts)")
    if not shutil.which("ip"):
        raise LabError("KFAILD_LAB_NETNS=1 needs `ip` (Debian package iproute2)")
    br = bridge_name(base)
    if not link_exists(br):
        ip_cmd("link", "add", br, "type", "bridge")
    ip_cmd("addr", "replace", f"{bridge_addr(base)}/24", "dev", br)
    ip_cmd("link", "set", br, "up")
    for n in nodes:
        ns, host = netns_name(n, base), veth_host(n, base)
        if not netns_exists(ns):
            ip_cmd("netns", "add", ns)
        if not link_exists(host):
            ip_cmd("link", "add", host, "type", "veth", "peer", "name", "eth0", "netns", ns)
        ip_cmd("link", "set", host, "master", br, "up")
        ip_cmd("-n", ns, "addr", "replace", f"{net_subnet(base)}.{n}/24", "dev", "eth0")
        ip_cmd("-n", ns, "link", "set", "eth0", "up")
        ip_cmd("-n", ns, "link", "set", "lo", "up")
        ip_cmd("-n", ns, "route", "replace", "default", "via", bridge_addr(base))


def net_down(base: int) -> None:
    """Removes the namespaces, veths and the bridge of the lab on `base`, whichever exist, and
    unmounts the nodes' log filesystems. Safe to run twice, and on a lab that never had them."""
    for n in ALL_CONTROLLERS + ALL_BROKERS:
        disk_unmount(n)
        ns = netns_name(n, base)
        if netns_exists(ns):
            ip_cmd("netns", "delete", ns)  # deletes eth0 inside, and with it its peer
        if link_exists(veth_host(n, base)):
            ip_cmd("link", "delete", veth_host(n, base), check=False)
    if link_exists(bridge_name(base)):
        ip_cmd("link", "delete", bridge_name(base))


# Each node's log dir in namespaced mode is on its own ext4 filesystem in a sparse image file,
# loop-mounted: a disk that can really fill up (disk_full), of DISK_MB.
DISK_MB = 512


def disk_image(node: int) -> Path:
    return node_dir(node) / "disk.img"


def disk_mount(node: int) -> Path:
    return node_dir(node) / "disk"


def disk_mounted(node: int) -> bool:
    target = str(disk_mount(node).resolve())
    try:
        with open("/proc/self/mounts") as f:
            return any(line.split()[1] == target for line in f)
    except OSError:
        return False


def disk_up(node: int) -> None:
    """Creates (once) and mounts node N's log filesystem at node<N>/disk; log.dirs is
    node<N>/disk/kafka, so the filesystem's root (lost+found, fillers) is not a log dir."""
    if disk_mounted(node):
        return
    img, mnt = disk_image(node), disk_mount(node)
    mnt.mkdir(parents=True, exist_ok=True)
    if not img.exists():
        with open(img, "wb") as f:
            f.truncate(DISK_MB * 1024 * 1024)
        r = subprocess.run(
            ["mkfs.ext4", "-q", "-F", "-m", "0", str(img)],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if r.returncode != 0:
            img.unlink()
            raise LabError(f"mkfs.ext4 {img} failed: {r.stderr.strip()}")
    r = subprocess.run(
        ["mount", "-o", "loop", str(img), str(mnt)], capture_output=True, text=True, timeout=60
    )
    if r.returncode != 0:
        raise LabError(f"mount -o loop {img} {mnt} failed: {r.stderr.strip()}")
    (mnt / "kafka").mkdir(exist_ok=True)


def remove_fillers(node: int) -> None:
    """Removes kfaild's disk fillers from node N's log filesystem: one whose expiry timer is still
    pending would otherwise stay inside disk.img once it is unmounted (the timer's rm then finds
    nothing), and the next `lab up` would start the broker on a full disk."""
    mnt = disk_mount(node)
    removed = []
    for f in mnt.glob("kfaild_fill_*"):
        if f.is_symlink() or f.is_file():
            f.unlink()
            removed.append(f.name)
    if removed:
        say(f"node {node}: removed disk filler(s) {', '.join(sorted(removed))}")


def disk_unmount(node: int) -> None:
    if disk_mounted(node):
        remove_fillers(node)
        r = subprocess.run(
            ["umount", str(disk_mount(node))], capture_output=True, text=True, timeout=60
        )
        if r.returncode != 0:
            raise LabError(f"umount {disk_mount(node)} failed: {r.stderr.strip()}")


def data_dir(node: int, lab: Lab | None = None) -> Path:
    """log.dirs of node N."""
    return disk_mount(node) / "kafka" if netns_mode(lab) else node_dir(node) / "data"

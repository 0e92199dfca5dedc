"""docs/reproduction-stalls.png: the stalls per drill, drawn with matplotlib in its own venv."""

import os
import subprocess
import sys

from .drills import log
from .results import dur, first, kind, us
from .settings import CHART, ENTRY, ORDER


def make_chart(recs, path):
    """Draws the stalls of `orders` (left) and the outage of `single` (right) into path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [label for label in ORDER if label in recs]
    fig, (ax, ax2) = plt.subplots(
        1, 2, figsize=(13, 4.8), dpi=110, gridspec_kw={"width_ratios": [3, 2]}
    )
    draw_orders(ax, recs, labels)
    draw_single(ax2, recs, labels)
    fig.tight_layout()
    fig.savefig(path)


def draw_orders(ax, recs, labels):
    """Each drill's ack stall per `orders` partition, a bar only where the outcome is a stall."""
    width = 0.26
    colors = ("tab:blue", "tab:orange", "tab:green")
    top = 1.0
    marks = []
    for i in range(3):
        xs, hs = [], []
        for x, label in enumerate(labels):
            P = first(recs[label])[2]
            p = P.get(("orders", i))
            r = kind(p) if p else None
            xi = x + (i - 1) * width
            if r and r["outcome"] == "stall":
                xs.append(xi)
                hs.append(dur(r["stall"]))
                top = max(top, dur(r["stall"]))
            elif r:
                marks.append((xi, "none" if r["outcome"] == "none" else "n/a", r["outcome"]))
        ax.bar(xs, hs, width, color=colors[i], label=f"orders p{i}")
    for xi, text, outcome in marks:
        ax.text(
            xi,
            top * 0.01,
            text,
            rotation=90,
            ha="center",
            va="bottom",
            fontsize=7,
            color="dimgray" if outcome == "none" else "tab:red",
        )
    shade_article_ranges(ax, labels)
    ax.set_xticks(list(range(len(labels))))
    ax.set_xticklabels(labels, rotation=20, fontsize=8)
    ax.set_ylabel("ack stall (s)")
    ax.set_title("orders: ack stall per partition (broker 1 killed / stopped)", fontsize=10)
    ax.legend(fontsize=7, loc="upper right")
    ax.grid(axis="y", alpha=0.3)


def shade_article_ranges(ax, labels):
    """The article's ranges behind the kills (p0, p1/p2) and the graceful stops (p0)."""
    nk = sum(1 for label in labels if label.startswith("kill"))
    if nk:
        frac = nk / len(labels)
        ax.axhspan(
            9.40,
            10.24,
            xmin=0,
            xmax=frac,
            color="tab:blue",
            alpha=0.12,
            label="article: p0, SIGKILL",
        )
        ax.axhspan(
            8.37,
            8.97,
            xmin=0,
            xmax=frac,
            color="tab:orange",
            alpha=0.12,
            label="article: p1/p2, SIGKILL",
        )
        ax.axhspan(
            0.13,
            1.10,
            xmin=frac,
            xmax=1,
            color="tab:blue",
            alpha=0.12,
            label="article: p0, graceful stop",
        )


def draw_single(ax2, recs, labels):
    """`single`'s outage per drill, split into fault → node back and node back → first ack."""
    sl = [label for label in labels if ("single", 0) in first(recs[label])[2]]
    nb_h, rs_h, xs = [], [], []
    for x, label in enumerate(sl):
        s = first(recs[label])[2][("single", 0)]
        r = kind(s)
        if r["outcome"] != "stall":
            ax2.text(
                x,
                1,
                "n/a" if r["outcome"] != "none" else "none",
                ha="center",
                fontsize=8,
                color="tab:red",
            )
            continue
        total = dur(r["stall"])
        nb = us(s["phases"].get("node_back_us"))
        xs.append(x)
        if nb is None:
            nb_h.append(0)
            rs_h.append(total)
        else:
            nb_h.append(min(nb, total))
            rs_h.append(max(total - nb, 0))
    ax2.bar(xs, nb_h, 0.6, color="tab:purple", label="fault → node back")
    ax2.bar(
        xs, rs_h, 0.6, bottom=nb_h, color="tab:pink", label="node back → first ack (stall's rest)"
    )
    ax2.axhline(33.26, color="black", ls="--", lw=1, label="article: 33.26 s (graceful stop)")
    ax2.set_xticks(list(range(len(sl))))
    ax2.set_xticklabels(sl, rotation=20, fontsize=8)
    ax2.set_ylabel("single unavailable (s)")
    ax2.set_title("single (RF 1 on broker 1): outage per drill", fontsize=10)
    ax2.legend(fontsize=7, loc="upper left")
    ax2.grid(axis="y", alpha=0.3)


def chart(args, recs):
    """'ok', or why there is no chart."""
    py = args.chart_python
    if not os.path.exists(py) and not args.no_venv:
        venv = os.path.dirname(os.path.dirname(py))
        log(
            f"no {py}: creating the venv {venv} with matplotlib (python3 -m venv, pip install "
            "matplotlib)"
        )
        try:
            subprocess.run([sys.executable, "-m", "venv", venv], check=True)
            subprocess.run([py, "-m", "pip", "install", "-q", "matplotlib"], check=True)
        except (subprocess.CalledProcessError, OSError) as e:
            log(f"venv not created: {e}")
    try:
        if os.path.exists(py):
            subprocess.run([py, ENTRY, "--chart-only", CHART], check=True)
        else:
            make_chart(recs, CHART)
        return "ok"
    except Exception as e:  # noqa: BLE001 - the report is still useful without the image
        log(f"chart not written: {e}")
        return (
            f"matplotlib could not be had (`{py}` missing and the venv could not be created: {e}); "
            "the figures are in the tables"
        )

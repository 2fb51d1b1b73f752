"""CompiledModel.timeline(): the pipeline schedule as a matplotlib figure.

Ranks are rows (rank 0 on top), time runs left to right; each forward (F),
backward (B; input gradient only when the schedule splits it) and weight
gradient (W) step of a micro-batch is a box labelled with the micro-batch,
colored by kind, lighter for later virtual chunks (interleaved schedules);
optimizer updates (U) are grey boxes.
The times are the compiler's simulation with the partition's stage costs,
the same one the report's bubble fraction comes from.
"""

from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle
import matplotlib.colors as mcolors

#: Box colors per action (Megatron/zero-bubble papers' usual choice).
COLORS = {"F": "#4c72b0", "B": "#55a868", "W": "#c44e52", "U": "#8c8c8c"}
NAMES = {"F": "forward", "B": "backward", "W": "weight gradient",
         "U": "optimizer update"}


def _shade(color, chunk, chunks):
    if chunks <= 1:
        return color
    rgb = mcolors.to_rgb(color)
    mix = 0.55 * chunk / (chunks - 1)
    return tuple(c + (1 - c) * mix for c in rgb)


def plot(model, ax=None, figsize=None, labels=True):
    events = model.schedule_events()
    if not events:
        raise RuntimeError("the schedule was not verified: nothing to draw "
                           "(see model.report['error'])")
    schedule = model.report.get("schedule", {})
    ranks = 1 + max(e["rank"] for e in events)
    chunks = 1 + max(e["chunk"] for e in events)
    end = max(e["end"] for e in events)
    if ax is None:
        if figsize is None:
            figsize = (min(18.0, 4.0 + 0.35 * len(events) / ranks),
                       1.0 + 0.55 * ranks)
        fig = Figure(figsize=figsize, dpi=100, layout="constrained")
        ax = fig.add_subplot()
    else:
        fig = ax.figure
    height = 0.8
    for e in events:
        y = ranks - 1 - e["rank"]
        width = e["end"] - e["start"]
        ax.add_patch(Rectangle((e["start"], y - height / 2), width, height,
                               facecolor=_shade(COLORS.get(e["action"],
                                                           "#8c8c8c"),
                                                e["chunk"], chunks),
                               edgecolor="white", linewidth=0.8))
        if labels and e["action"] in "FBW" and width > end / 150:
            ax.text(e["start"] + width / 2, y, str(e["microbatch"]),
                    ha="center", va="center", fontsize=7, color="white")
    ax.set_xlim(0, end)
    ax.set_ylim(-0.6, ranks - 0.4)
    ax.set_yticks(range(ranks))
    ax.set_yticklabels(["rank %d" % r for r in reversed(range(ranks))])
    ax.set_xlabel("simulated time (µs, stage costs of the cost model)")
    actions = sorted({e["action"] for e in events
                      if e["action"] in COLORS and e["end"] > e["start"]},
                     key="FBWU".index)
    ax.legend(handles=[Patch(color=COLORS[a], label=NAMES[a])
                       for a in actions],
              loc="upper center", bbox_to_anchor=(0.5, -0.35 if ranks < 3
                                                  else -0.18),
              ncol=len(actions), frameon=False, fontsize=8)
    bubble = model.report.get("bubble_fraction")
    title = "%s: K = %s, M = %s, V = %s" % (
        schedule.get("kind", "?"), schedule.get("K", ranks),
        schedule.get("M", "?"), schedule.get("V", chunks))
    if bubble is not None:
        title += ", bubble fraction %.3f" % bubble
    ax.set_title(title, fontsize=10)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return fig

"""Helpers the report scripts share: reading JSON lines, and the recall-QPS axes.

  json_lines(paths)                 every record of the files, blank lines skipped, in order
  recall_qps_axes(ax, title, ylabel)  the log-QPS, recall@10 axes of the vector figures
"""
import json


def json_lines(paths):
    """Yields the JSON record of every non-blank line of every file, in order."""
    for path in paths:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    yield json.loads(line)


def recall_qps_axes(ax, title, ylabel="queries per second", legend_size=8):
    """Log QPS against recall@10, with a grid, the title and a legend."""
    ax.set_yscale("log")
    ax.set_xlabel("recall@10")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=legend_size)

"""The figures' drawing (experiments/drawing.py): a PNG in one draw, cropped to what it
shows, is savefig's tight box (to a few pixels: that box holds the text's extents, not its
ink); a figure wider than its canvas falls back to that box."""
from __future__ import annotations

import matplotlib.image
import pytest

from experiments import drawing


def _line_figure(title: str, legend_in: float = 0.0, outside: bool = False):
    fig = drawing._figure((6.5, 4.2), legend_in=legend_in)
    ax = fig.subplots()
    ax.plot([0, 1, 2], [0, 1, 0.5], label="a routing with a long name (n=22)")
    ax.set_xlabel("iteration CCT (s)")
    ax.set_ylabel("fraction of iterations")
    ax.set_title(title)
    if outside:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    else:
        ax.legend(fontsize=8, loc="lower right")
    return fig


@pytest.mark.parametrize("legend_in, outside", [(0.0, False), (drawing.LEGEND_IN, True)])
def test_one_draw_png_is_the_tight_box_within_four_pixels(tmp_path, legend_in, outside):
    fig = _line_figure("quickstart: CDF of iteration CCT per routing", legend_in, outside)
    assert drawing._save_png(fig, tmp_path / "one.png")
    fig.savefig(tmp_path / "tight.png", dpi=drawing.DPI, bbox_inches="tight")
    one = matplotlib.image.imread(tmp_path / "one.png")
    tight = matplotlib.image.imread(tmp_path / "tight.png")
    assert abs(one.shape[0] - tight.shape[0]) <= 4 and abs(one.shape[1] - tight.shape[1]) <= 4
    assert one.shape[1] < (6.5 + legend_in) * drawing.DPI      # the canvas's blank cut off
    # the margin is blank and something is drawn just inside it, on every side
    pad = drawing.PAD_PX
    inside = one[pad:-pad, pad:-pad]
    assert (one[:pad] == 1).all() and (one[-pad:] == 1).all()
    assert (one[:, :pad] == 1).all() and (one[:, -pad:] == 1).all()
    for edge in (inside[0], inside[-1], inside[:, 0], inside[:, -1]):
        assert (edge != 1).any()


def test_a_title_wider_than_the_canvas_is_saved_by_the_tight_box(tmp_path):
    fig = _line_figure("an experiment with a very long name indeed, " * 3)
    assert not drawing._save_png(fig, tmp_path / "one.png")
    assert not (tmp_path / "one.png").exists()
    drawing._save(fig, tmp_path, ("png",), "wide")
    assert matplotlib.image.imread(tmp_path / "wide.png").shape[1] > 6.5 * drawing.DPI


@pytest.mark.parametrize("n, ticks, first", [(1, 1, 0), (16, 16, 0), (17, 6, 0), (32, 8, 0),
                                             (100, 8, 0)])
def test_heatmap_axes_name_every_switch_up_to_16_then_at_most_8(n, ticks, first):
    names = [f"spine{i}" for i in range(n)]
    at, labels = drawing._named_ticks(names)
    assert len(at) == ticks and at[0] == first and labels == [names[i] for i in at]
    assert len({b - a for a, b in zip(at, at[1:])}) <= 1        # evenly spaced

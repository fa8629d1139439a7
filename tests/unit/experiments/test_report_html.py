"""report.html: self-contained (nothing fetched), its answer table equal to results.csv's
efficiency, written by predict, `report --html` and a sweep; validate and `sweep --dry-run`
on every shipped sweep file; and the page as a person sees it in headless Chromium (where
Chromium is installed)."""
from __future__ import annotations

import json
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from experiments.__main__ import main
from experiments.report import efficiency_table

ROOT = Path(__file__).resolve().parents[3]
QUICK = str(ROOT / "experiments" / "configs" / "quickstart.yaml")
SWEEPS = sorted((ROOT / "experiments" / "configs" / "sweeps").glob("*.yaml"))
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class _Page(HTMLParser):
    """Every tag with its attributes, and each table's rows of cell texts by table id."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.tables: dict[str, list[list[str]]] = {}
        self._table: str | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == "table":
            self._table = a.get("id", "")
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[self._table][-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def parse(path: Path) -> _Page:
    p = _Page()
    p.feed(path.read_text(encoding="utf-8"))
    return p


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    base = tmp_path_factory.mktemp("html")
    assert main(["predict", QUICK, "--out", str(base / "one")]) == 0
    assert main(["predict", QUICK, "--out", str(base / "rep"), "--repeat", "3",
                 "--set", "fabric.spine_link_mbps=10"]) == 0
    assert main(["report", str(base / "one"), str(base / "rep"), "--out",
                 str(base / "r"), "--html"]) == 0
    return base


def test_the_page_fetches_nothing(folders):
    for page in (folders / "one" / "report.html", folders / "r" / "report.html"):
        p = parse(page)
        names = {t for t, _ in p.tags}
        assert "script" not in names and "link" not in names and "iframe" not in names
        urls = [a[k] for _, a in p.tags for k in ("src", "href") if a.get(k)]
        assert urls and all(u.startswith("data:") or u.startswith("#") for u in urls), urls
        imgs = [a["src"] for t, a in p.tags if t == "img"]
        assert len(imgs) == len(list((page.parent / "plots").glob("*.png"))) >= 4
        assert all(u.startswith("data:image/png;base64,") for u in imgs)


def test_the_answer_table_equals_results_csv(folders):
    """Each row of the page's answer table: the efficiency, its interval and the speed-up
    efficiency_table computes from the report's results.csv."""
    eff = efficiency_table(pd.read_csv(folders / "r" / "results.csv").assign(
        run_dir=lambda t: t["run_dir"]))
    table = parse(folders / "r" / "report.html").tables["answer"]
    head, rows = table[0], table[1:]
    assert len(rows) == len(eff) == 4
    at = {h: i for i, h in enumerate(head)}
    for _, e in eff.iterrows():
        mbps = e["fabric.spine_link_mbps"]
        label = "quickstart" if mbps != mbps else f"quickstart, fabric.spine_link_mbps={mbps:g}"
        row = next(r for r in rows if r[at["configuration"]] == label
                   and r[at["routing"]] == e["routing"])
        assert row[at["efficiency"]] == f"{e['efficiency_mean']:.3f}"
        assert row[at["95% interval"]] == (f"{e['efficiency_ci95_low']:.3f} to "
                                           f"{e['efficiency_ci95_high']:.3f}")
        assert row[at["vs ECMP"]] == f"{e['speedup_over_ecmp_mean']:.2f}x"
        assert row[at["runs"]] == str(int(e["runs"]))


def test_a_runs_page_says_who_wins_and_by_how_much(folders):
    text = (folders / "one" / "report.html").read_text()
    doc = json.loads((folders / "one" / "results.json").read_text())
    ecmp, ilp = (next(r for r in doc["runs"] if r["routing"] == n) for n in ("ecmp", "ilp"))
    assert "<b>ilp</b> has the highest efficiency" in text
    assert f"<b>{ecmp['cct_mean_s'] / ilp['cct_mean_s']:.2f}x</b> faster than ECMP" in text
    assert "no emulated run" in text


@pytest.mark.parametrize("sweep", SWEEPS, ids=[p.stem for p in SWEEPS])
def test_validate_and_dry_run_accept_every_shipped_sweep(sweep, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)                  # the default --out must not be created
    assert main(["validate", str(sweep)]) == 0
    out = capsys.readouterr().out
    assert "every point valid" in out
    assert main(["sweep", str(sweep), "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    n = int(lines[0].split(": ")[1].split()[0])
    assert n == len(lines) - 1 > 0
    assert not list(tmp_path.iterdir())


def test_validate_names_a_sweep_point_that_fails(tmp_path, capsys):
    sweep = tmp_path / "bad.yaml"
    sweep.write_text(f"base: {QUICK}\ngrid: {{fabric.spine_link_mbps: [5, -1]}}\n")
    assert main(["validate", str(sweep)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "point spine_link_mbps--1" in err[0]
    assert "spine_link_mbps" in err[0]


def test_validate_says_a_sweep_without_base_needs_one(tmp_path, capsys):
    # it was read as a config: "config.grid: unknown key; allowed keys are demand, ..."
    sweep = tmp_path / "nobase.yaml"
    sweep.write_text("grid: {fabric.spine_link_mbps: [5, 10]}\nseeds: [1, 2]\n")
    assert main(["validate", str(sweep)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "base: required" in err[0], err


def _chromium(args: list[str], profile: Path) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                           "--disable-quic", "--no-first-run", "--disable-background-networking",
                           "--disable-component-update", "--disable-sync",
                           # draw every compositor stage before a screenshot: without it a
                           # loaded machine shot the first figure half decoded (2 of 12)
                           "--run-all-compositor-stages-before-draw",
                           f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=180,
                          stdin=subprocess.DEVNULL)


def _first_screen(shot: Path) -> tuple[int, int]:
    """Pixels of a screenshot in ECMP's blue (its bars) and in the best row's green."""
    import matplotlib.image
    pixels = (matplotlib.image.imread(shot)[:, :, :3] * 255).round().astype(int)
    blue = np.all(np.abs(pixels - [0, 114, 178]) <= 3, axis=2)
    green = np.all(np.abs(pixels - [238, 246, 238]) <= 2, axis=2)
    return int(blue.sum()), int(green.sum())


def _page_requests(netlog: Path) -> list[str]:
    """The URLs a page asked for over the network (http, https, ...) in Chromium's network
    log: requests with an initiator (the browser's own, e.g. its update check, have "not an
    origin"), file: and data: URLs left out."""
    log = json.loads(netlog.read_text())
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return [e["params"]["url"] for e in log["events"] if e["type"] == start
            and "url" in e.get("params", {})
            and e["params"].get("initiator") != "not an origin"
            and not e["params"]["url"].startswith(("file:", "data:"))]


#: Not installed by `make setup`: Debian's chromium is a 113 MB download (414 MB on disk).
NO_CHROMIUM = pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed; "
                                 "apt-get install chromium (113 MB) to check report.html "
                                 "in a browser")


@NO_CHROMIUM
def test_the_network_log_sees_a_page_that_fetches(tmp_path):
    """The check below can fail: a page with an image on 127.0.0.1 is seen asking for it."""
    page = tmp_path / "fetches.html"
    page.write_text('<html><body><img src="http://127.0.0.1:9/x.png"></body></html>')
    netlog = tmp_path / "net.json"
    _chromium([f"--screenshot={tmp_path / 's.png'}", f"--log-net-log={netlog}",
               page.as_uri()], tmp_path / "p")
    assert _page_requests(netlog) == ["http://127.0.0.1:9/x.png"]


@NO_CHROMIUM
def test_the_page_in_chromium_shows_the_answer_and_a_figure_on_its_first_screen(folders,
                                                                                 tmp_path):
    """Chromium loads the page from disk with the network log on: the page asks for
    nothing over the network; every image decodes (the rendered DOM of a
    probe page that frames it); the first screen (1280 x 900) shows the answer table and
    ECMP's blue bars of the first figure."""
    page = folders / "one" / "report.html"
    # Up to 3 shots: beside four busy loops headless Chromium shot the first figure before
    # it was drawn about once in 25 (432 blue pixels of 14,916), whatever the flags; a page
    # without the figure fails all three.
    for attempt in range(3):
        netlog = tmp_path / f"net{attempt}.json"
        shot = tmp_path / f"first-screen{attempt}.png"
        got = _chromium(["--window-size=1280,900", f"--screenshot={shot}",
                         "--virtual-time-budget=10000",    # shot once the page is idle
                         f"--log-net-log={netlog}", page.as_uri()], tmp_path / f"shot-profile{attempt}")
        assert shot.is_file(), got.stderr[-2000:]
        assert _page_requests(netlog) == []
        blue, green = _first_screen(shot)
        if blue > 2000 and green > 2000:
            break
    assert blue > 2000                       # ECMP's bar in the first figure, on screen
    assert green > 2000                      # the best row of the answer table
    probe = tmp_path / "probe.html"
    probe.write_text(f"""<!DOCTYPE html><html><body><iframe id="f" src="{page.as_uri()}"
width="1280" height="900"></iframe><pre id="out">waiting</pre><script>
document.getElementById("f").onload = function () {{
  var d = this.contentDocument, imgs = Array.from(d.images);
  var bad = imgs.filter(function (i) {{ return !i.complete || i.naturalWidth == 0; }});
  var answer = d.getElementById("answer").getBoundingClientRect();
  var fig = d.querySelector("figure").getBoundingClientRect();
  document.getElementById("out").textContent = JSON.stringify({{images: imgs.length,
    broken: bad.length, answer_bottom: answer.bottom, figure_top: fig.top}});
}};
</script></body></html>""")
    got = _chromium(["--allow-file-access-from-files", "--virtual-time-budget=10000",
                     "--dump-dom", probe.as_uri()], tmp_path / "probe-profile")
    dom = got.stdout
    start = dom.index('<pre id="out">') + len('<pre id="out">')
    seen = json.loads(dom[start:dom.index("</pre>", start)].replace("&quot;", '"'))
    assert seen["images"] >= 4 and seen["broken"] == 0, seen
    assert seen["answer_bottom"] < 900 and seen["figure_top"] < 900, seen

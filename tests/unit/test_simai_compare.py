"""The SimAI comparison benchmark reads SimAI's summary row and sizes the fabric as SimAI's
flags say (its GB/s are GiB/s)."""
from __future__ import annotations

import pytest

from experiments.benchmarks.simai_compare import fabric, gibps_to_mbps, simai_summary

ROW = ("File name, Expose DP comm, Expose DP_EP comm, Expose TP comm, Expose_EP_comm, "
       "Expose_PP_comm, bubble time, total comp, total exposed comm, Total time\n"
       "x-, 40332 (0.53%), 1067010 (14.14%), 326686 (4.33%), 1222811 (16.21%), 0 (0.00%), "
       "345984 (4.59%), 4542795 (60.20%), 2656839 (35.21%), 7545619\n")


def test_simai_summary_reads_its_end_to_end_row(tmp_path):
    p = tmp_path / "x-EndToEnd.csv"
    p.write_text("layer_name,Analytical_test,fwd compute\n" + ROW + "grad_gather,x,0\n")
    s = simai_summary(str(p))
    assert s["Total time"] == 7545619 and s["bubble time"] == 345984
    assert s["total comp"] + s["total exposed comm"] + s["bubble time"] == pytest.approx(
        s["Total time"], abs=1)  # SimAI rounds each to the us
    assert simai_summary("1187457") == {"Total time": 1187457.0}


def test_simai_summary_names_a_file_without_the_row(tmp_path):
    p = tmp_path / "empty.csv"
    p.write_text("layer_name\n")
    with pytest.raises(ValueError, match="empty.csv"):
        simai_summary(str(p))


def test_the_fabric_has_simais_rates_and_whole_servers():
    assert gibps_to_mbps(1) == pytest.approx(8589.934592)
    f = fabric(9216, 8, 360, 48.5)
    assert f["host_link_mbps"] == pytest.approx(416611.827712)
    assert f["nvlink_mbps"] == pytest.approx(3092376.45312)
    assert f["servers_per_group"] * f["groups"] * 8 == 9216
    assert "groups" not in fabric(64, 8, 360, 48.5)
    with pytest.raises(ValueError, match="servers"):
        fabric(60, 8, 360, 48.5)

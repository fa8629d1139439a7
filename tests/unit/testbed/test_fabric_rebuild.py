"""The kinds build their own graphs (testbed/topologies/, Topo.build): every fabric below shows
exactly what the flat builder before it showed (graph, names, ports, DPIDs, structure, paths,
planes), digests recorded from that builder. A change here means the model moved: a new
digest needs a reason in the commit."""
import pytest

from testbed.fabric import FabricError, FabricSpec, build_fabric
from testbed.topologies import KINDS, build_graph

from .fabric_digest import SPECS, digest

RECORDED = {
    "leaf-spine": "c5e30f5e68b63d601a77151b1a7be6a67c9630ab05d51e96f94ab1937b3fc0c1",
    "leaf-spine-failed": "0fa8d488601ce31a619417c0264f8ecff4a6e622fbff6047825ce48d5321e7a8",
    "leaf-spine-servers": "48c749e71bffbb79d97c3de115536f5652c2ea5a21867da3cf14b5f9dde23045",
    "leaf-spine-planes": "1ef3996ccad883f1f45424188cfc96a3a2cc32894838ee74d0e081e6b54820a7",
    "leaf-spine-4-planes": "8f9246a1de966dd8f4e70d58eb888b2b3818568e44afd67461441258ddc5c01d",
    "fat-tree-4": "c635f54c8d804224b4ee0b5a629e9f595e19079e6a3089f3adfd29450b9cfbd4",
    "fat-tree-6-failed": "e19e86f30d3f438fd4730156da3156e6ce14db265e30a9e19dcd236f56ec9c09",
    "fat-tree-4-servers": "cf20f77447647f8985bd44a5b2a1398e92a947469ccb86aa481948811edde786",
    "clos3": "3b34068df8585e30e92158d25c74115cc4235f89f1e8bea5e4342daa444122ae",
    "clos3-servers": "077a7df48c0aa078c6d86f91191b0090041885dd661425c3908e94c662a00824",
    "rail-1-group": "838905b9a5e6ae720b0eae9108189640cd6f86c38afc57677a9e1c35c8e375ee",
    "rail-1-group-servers-planes": "401ccc3c5f6fc9e255c74c98307a00e22bd3cc77899ad249b2845265dd64e277",
    "rail-3-groups": "dc472fb704baafa4afa2a8f578a1df59aada96c9daceb3a9d969389c24d7a843",
}


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_kind_builds_what_the_flat_builder_built(name):
    assert digest(build_fabric(SPECS[name])) == RECORDED[name]


def test_structure_is_read_from_the_built_graph():
    g = build_graph(SPECS["clos3"])
    assert g.graph["tiers"] == 3 and g.graph["choice_points"] == (("leaf", 2), ("agg", 3))
    assert g.graph["hosts"] == 12
    g = build_graph(SPECS["leaf-spine-planes"])
    assert g.graph["tiers"] == 2 and g.graph["choice_points"] == (("leaf", 2),)


def test_an_unknown_kind_is_a_one_line_error():
    with pytest.raises(FabricError, match="fabric.topology: unknown 'torus'; one of"):
        build_fabric(FabricSpec(4, 3, 2, 10, 10, topology="torus"))


@pytest.mark.parametrize("name", sorted(KINDS))
def test_planes_on_every_kind_but_the_fat_tree(name):
    assert KINDS[name].has_planes(SPECS["clos3"]) == (name != "fat-tree")

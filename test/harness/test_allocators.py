"""Allocator discovery on a fake file system, and the command per cell."""
import json
import os

import pytest

from bench.harness import allocators as am
from bench.harness.workloads import WORKLOADS, by_name, point_args


def touch(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write("x")


@pytest.fixture
def tree(tmp_path):
    build = tmp_path / "build"
    libs = tmp_path / "libs"
    touch(str(build / "src" / "libtlmalloc.so"))
    touch(str(build / "src" / "libtlmalloc-fast.so"))
    touch(str(build / "src" / "libtlmalloc-secure.so"))
    for prog in ("loop", "loop-musl", "scaling", "scaling_ts", "prodcons",
                 "prodcons-musl-tlmalloc", "loop-linked"):
        touch(str(build / "bench" / prog))
    touch(str(libs / "libjemalloc.so.2"))
    touch(str(libs / "libtbbmalloc.so.2"))          # not the proxy
    touch(str(libs / "libtbbmalloc_proxy.so.2"))
    os.makedirs(str(tmp_path / "other"))
    touch(str(tmp_path / "other" / "libtcmalloc_minimal.so"))
    return tmp_path


def by(allocs):
    return {a.name: a for a in allocs}


def test_discovery_finds_what_is_there(tree):
    found = by(am.discover(tree / "build", [tree / "libs"]))
    assert list(found) == ["tlmalloc", "tlmalloc-fast", "tlmalloc-secure",
                           "tlmalloc-kept", "tlmalloc-lock", "glibc", "jemalloc", "tcmalloc",
                           "mimalloc", "tbbmalloc", "mimalloc3", "snmalloc",
                           "rpmalloc", "hardened_malloc", "musl",
                           "musl-tlmalloc", "tlmalloc-linked"]
    assert found["tlmalloc"].found
    assert found["tlmalloc"].path.endswith("build/src/libtlmalloc.so")
    assert found["tlmalloc"].ts_api is am.TsApi.NOLOCK
    assert found["tlmalloc-fast"].found and found["tlmalloc-fast"].kind is \
        am.Kind.PRELOAD and not found["tlmalloc-fast"].ts_api
    assert found["tlmalloc-fast"].path.endswith(
        "build/src/libtlmalloc-fast.so")
    assert found["tlmalloc-secure"].found and found["tlmalloc-secure"].kind \
        is am.Kind.PRELOAD and not found["tlmalloc-secure"].ts_api
    assert found["tlmalloc-secure"].path.endswith(
        "build/src/libtlmalloc-secure.so")
    assert found["tlmalloc-kept"].found and found["tlmalloc-kept"].path == \
        found["tlmalloc"].path
    assert found["tlmalloc-kept"].run_env() == {
        "TLMALLOC_KEPT_BYTES": "32768",
        "LD_PRELOAD": found["tlmalloc"].path}
    assert found["tlmalloc-lock"].found and found["tlmalloc-lock"].ts_api is am.TsApi.LOCK
    assert found["jemalloc"].path == str(tree / "libs" / "libjemalloc.so.2")
    assert found["tbbmalloc"].path.endswith("libtbbmalloc_proxy.so.2")
    assert found["musl"].found and "loop-musl" in found["musl"].note
    # each build lists its own programs only
    assert "prodcons" not in found["musl"].note
    assert found["musl-tlmalloc"].found
    assert "prodcons-musl-tlmalloc" in found["musl-tlmalloc"].note
    assert "loop-musl" not in found["musl-tlmalloc"].note
    linked = found["tlmalloc-linked"]
    assert linked.found and linked.kind is am.Kind.LINKED
    assert "loop-linked" in linked.note and "loop-musl" not in linked.note


def test_linked_runs_its_own_program_unpreloaded(tree):
    found = by(am.discover(tree / "build", [tree / "libs"]))
    linked = found["tlmalloc-linked"]
    bench = tree / "build" / "bench"
    loop, prod = by_name(["loop", "prodcons"])
    argv, env = am.command_for(loop, loop.quick_points[0], linked, bench,
                               ["--quick"])
    assert argv == [os.path.join(bench, "loop-linked"), "--quick"]
    assert env == {}
    # a workload without its -linked program is missing, not run otherwise
    with pytest.raises(am.Missing):
        am.command_for(prod, prod.quick_points[0], linked, bench,
                       ["--quick"])


def test_linked_missing_without_programs(tmp_path):
    alloc = am.linked_allocator(tmp_path / "bench")
    assert not alloc.found and "-linked" in alloc.note


def test_missing_peers_stay_listed(tree):
    found = by(am.discover(tree / "build", [tree / "libs"]))
    for name in ("tcmalloc", "mimalloc"):
        assert not found[name].found
        assert "not found" in found[name].note
    assert "libtcmalloc-minimal4" in found["tcmalloc"].note


def test_search_order_over_folders(tree):
    dirs = [tree / "libs", tree / "other"]
    found = by(am.discover(tree / "build", dirs))
    assert found["tcmalloc"].found
    assert found["tcmalloc"].path == str(tree / "other" /
                                         "libtcmalloc_minimal.so")


def test_nothing_built(tmp_path):
    found = by(am.discover(tmp_path / "nobuild", [tmp_path]))
    assert not found["tlmalloc"].found and "not built" in found["tlmalloc"].note
    assert not found["tlmalloc-fast"].found
    assert not found["tlmalloc-secure"].found
    assert "not built" in found["tlmalloc-secure"].note
    assert not found["tlmalloc-kept"].found
    assert not found["tlmalloc-lock"].found
    assert not found["musl"].found
    assert not found["musl-tlmalloc"].found
    assert found["glibc"].found


def test_extra_allocators(tree):
    lib = tree / "libs" / "libjemalloc.so.2"
    allocs = by(am.discover(tree / "build", [tree / "libs"],
                            ["mine=%s" % lib, "gone=/no/such/lib.so"]))
    assert allocs["mine"].found and allocs["mine"].path == str(lib)
    assert not allocs["gone"].found and "no such file" in allocs["gone"].note
    with pytest.raises(ValueError):
        am.parse_extra("nopath")
    with pytest.raises(ValueError):
        am.parse_extra("glibc=%s" % lib)


def test_extra_allocator_with_settings(tree):
    """The same library twice, the second with options in its runs' env."""
    lib = tree / "libs" / "libjemalloc.so.2"
    allocs = by(am.discover(tree / "build", [tree / "libs"],
                            ["one=%s" % lib,
                             "two=%s,OPT_A=0,OPT_B=x=y" % lib]))
    one, two = allocs["one"], allocs["two"]
    assert one.env == {} and one.path == str(lib)
    assert two.found and two.path == str(lib)
    assert two.env == {"OPT_A": "0", "OPT_B": "x=y"}
    assert "OPT_A=0 OPT_B=x=y" in two.note
    loop = by_name(["loop"])[0]
    _, env = am.command_for(loop, loop.quick_points[0], two,
                            tree / "build" / "bench", ["--quick"])
    assert env == {"LD_PRELOAD": str(lib), "OPT_A": "0", "OPT_B": "x=y"}
    _, env = am.command_for(loop, loop.quick_points[0], one,
                            tree / "build" / "bench", ["--quick"])
    assert env == {"LD_PRELOAD": str(lib)}
    # kept through runs.json
    assert am.Allocator.from_json(two.to_json()).env == two.env
    for bad in ("x=%s,NOEQUALS" % lib, "x=%s,=1" % lib,
                "x=%s,LD_PRELOAD=/y.so" % lib, "x=,A=1"):
        with pytest.raises(ValueError):
            am.parse_extra(bad)


def test_select(tree):
    allocs = am.discover(tree / "build", [tree / "libs"])
    assert [a.name for a in am.select(allocs, ["musl", "glibc"])] == \
        ["glibc", "musl"]
    with pytest.raises(ValueError):
        am.select(allocs, ["hoard"])


def test_commands_per_kind(tree):
    allocs = by(am.discover(tree / "build", [tree / "libs"]))
    bench = tree / "build" / "bench"
    loop, scaling = by_name(["loop", "scaling"])
    point = loop.quick_points[0]
    args = point_args(point, full=False)
    argv, env = am.command_for(loop, point, allocs["glibc"], bench, args)
    assert argv == [os.path.join(bench, "loop"), "--quick"] and env == {}
    argv, env = am.command_for(loop, point, allocs["jemalloc"], bench, args)
    assert env == {"LD_PRELOAD": allocs["jemalloc"].path}
    argv, env = am.command_for(loop, point, allocs["musl"], bench, args)
    assert argv[0] == os.path.join(bench, "loop-musl")
    prod = by_name(["prodcons"])[0]
    ppoint = prod.quick_points[0]
    argv, env = am.command_for(prod, ppoint, allocs["musl-tlmalloc"], bench,
                               point_args(ppoint, full=False))
    assert argv[0] == os.path.join(bench, "prodcons-musl-tlmalloc")
    assert env == {}
    with pytest.raises(am.Missing) as why:
        am.command_for(loop, point, allocs["musl-tlmalloc"], bench, args)
    assert "loop-musl-tlmalloc not built" in str(why.value)
    with pytest.raises(am.NotApplicable):
        am.command_for(loop, point, allocs["tlmalloc-lock"], bench, args)
    with pytest.raises(am.Missing):
        am.command_for(loop, point, allocs["mimalloc"], bench, args)
    spoint = scaling.quick_points[2]
    sargs = point_args(spoint, full=True)
    argv, env = am.command_for(scaling, spoint, allocs["tlmalloc-lock"],
                               bench, sargs)
    assert argv == [os.path.join(bench, "scaling_ts"), "--threads", "4",
                    "--api", "lock"]
    argv, env = am.command_for(scaling, spoint, allocs["tlmalloc"], bench,
                               sargs)
    assert argv[-2:] == ["--api", "nolock"] and env == {}
    with pytest.raises(am.Missing) as why:
        am.command_for(scaling, spoint, allocs["musl"], bench, sargs)
    assert "scaling-musl not built" in str(why.value)


def test_workload_filter():
    assert [w.name for w in by_name(["scaling", "loop"])] == ["loop",
                                                              "scaling"]
    assert len(by_name([])) == len(WORKLOADS)
    with pytest.raises(ValueError):
        by_name(["nosuch"])


def test_probe_marks_refused_library(tmp_path):
    bogus = tmp_path / "libbogus.so"
    bogus.write_text("not an ELF file")
    alloc = am.Allocator("bogus", am.Kind.PRELOAD, str(bogus))
    am.probe_preload(alloc)
    assert not alloc.found and "refuses" in alloc.note


VERSIONS = {
    "recipe": "0123456789abcdef",
    "peers": {
        "mimalloc3": {"version": "3.3.2", "library": "libmimalloc3.so",
                      "crate": "libmimalloc-sys 0.1.49"},
        "snmalloc": {"version": "0.7.6", "library": "libsnmalloc.so",
                     "crate": "snmalloc-sys 0.7.6"},
        "rpmalloc": "not a mapping",
        "hardened_malloc": {"version": "12",
                            "library": "libhardened_malloc.so",
                            "crate": "hardened_malloc-rs 0.1.2+12"},
    },
}


def built_peers(tree, versions=VERSIONS, libs=("libmimalloc3.so",
                                               "libsnmalloc.so",
                                               "librpmalloc.so",
                                               "libhardened_malloc.so")):
    peers = tree / "build" / "peers"
    for lib in libs:
        touch(str(peers / lib))
    if versions is not None:
        (peers / "VERSIONS.json").write_text(json.dumps(versions))
    return peers


def test_built_peers_found_with_versions(tree):
    peers = built_peers(tree)
    found = by(am.discover(tree / "build", [tree / "libs"]))
    mi3 = found["mimalloc3"]
    assert mi3.found and mi3.kind is am.Kind.PRELOAD
    assert mi3.path == str(peers / "libmimalloc3.so")
    assert mi3.version == "3.3.2"
    assert mi3.package == "libmimalloc-sys 0.1.49 (cargo)"
    assert found["snmalloc"].version == "0.7.6"
    assert found["snmalloc"].path == str(peers / "libsnmalloc.so")
    # found, but its entry is unusable: no version, and the note says so
    rp = found["rpmalloc"]
    assert rp.found and rp.version == "" and "no version" in rp.note
    assert rp.package == "rpmalloc-sys (cargo)"
    hm = found["hardened_malloc"]
    assert hm.found and hm.version == "12"
    assert hm.path == str(peers / "libhardened_malloc.so")
    assert hm.package == "hardened_malloc-rs 0.1.2+12 (cargo)"
    argv, env = am.command_for(by_name(["loop"])[0], by_name(["loop"])[0]
                               .quick_points[0], mi3,
                               tree / "build" / "bench", ["--quick"])
    assert env == {"LD_PRELOAD": mi3.path}


def test_built_peers_missing_with_note(tree):
    built_peers(tree, libs=("libsnmalloc.so",))
    found = by(am.discover(tree / "build", [tree / "libs"]))
    for name in ("mimalloc3", "rpmalloc", "hardened_malloc"):
        assert not found[name].found and found[name].path == ""
        assert "not built: run scripts/build-peers.sh (needs cargo)" in \
            found[name].note
    assert "librpmalloc.so missing" in found["rpmalloc"].note
    assert found["snmalloc"].found
    with pytest.raises(am.Missing) as why:
        loop = by_name(["loop"])[0]
        am.command_for(loop, loop.quick_points[0], found["mimalloc3"],
                       tree / "build" / "bench", ["--quick"])
    assert "build-peers.sh" in str(why.value)


def test_built_peers_not_in_system_dirs(tree):
    """A libsnmalloc.so in a library folder is not taken for the built one."""
    touch(str(tree / "libs" / "libsnmalloc.so"))
    found = by(am.discover(tree / "build", [tree / "libs"]))
    assert not found["snmalloc"].found


def test_built_peers_without_versions_file(tree):
    built_peers(tree, versions=None)
    found = by(am.discover(tree / "build", [tree / "libs"]))
    assert all(found[n].found and found[n].version == ""
               for n in ("mimalloc3", "snmalloc", "rpmalloc",
                         "hardened_malloc"))


def test_read_peer_versions(tmp_path):
    path = tmp_path / "VERSIONS.json"
    assert am.read_peer_versions(path) == {}            # no file
    path.write_text("{not json")
    assert am.read_peer_versions(path) == {}
    path.write_text("[1, 2]")
    assert am.read_peer_versions(path) == {}
    path.write_text(json.dumps({"peers": ["mimalloc3"]}))
    assert am.read_peer_versions(path) == {}
    path.write_text(json.dumps(VERSIONS))
    versions = am.read_peer_versions(path)
    assert sorted(versions) == ["hardened_malloc", "mimalloc3", "snmalloc"]
    assert versions["mimalloc3"]["version"] == "3.3.2"


def test_built_peer_names_are_taken():
    for name in ("mimalloc3", "snmalloc", "rpmalloc", "hardened_malloc"):
        with pytest.raises(ValueError):
            am.parse_extra("%s=/x/lib.so" % name)


def test_add_versions_keeps_a_built_peers_version(tree):
    from bench.harness import machine
    built_peers(tree)
    allocs = am.discover(tree / "build", [tree / "libs"])
    machine.add_versions(allocs, "1.0")
    found = by(allocs)
    assert found["mimalloc3"].version == "3.3.2"
    assert found["mimalloc3"].package == "libmimalloc-sys 0.1.49 (cargo)"

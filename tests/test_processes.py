"""engine/core/processes.start_child: a child forked from the fork server behaves as a
spawned one would for what the engine relies on — its starter's environment as it is when
it starts, not the server's; its own process token; not the starter's __main__."""

import os
import sys

from engine.core.processes import start_child


def _report(path: str) -> None:
    from engine.core import processes

    main = sys.modules["__main__"]
    with open(path, "w") as f:
        f.write("\n".join([os.environ.get("DPSYNTH_TEST_MARK", "-"), processes.OWNER or "-",
                           str(getattr(main, "__file__", None)), str("torch" in sys.modules)]))


def test_a_child_has_the_environment_of_now_its_own_token_and_no_main(tmp_path, monkeypatch):
    first = start_child(_report, (str(tmp_path / "first"),), name="dpsynth-test")
    first.join(120)  # the server now runs, started with this environment
    monkeypatch.setenv("DPSYNTH_TEST_MARK", "set after the server started")
    child = start_child(_report, (str(tmp_path / "second"),), name="dpsynth-test")
    child.join(120)
    assert first.exitcode == child.exitcode == 0
    mark, owner, main, torch = (tmp_path / "second").read_text().split("\n")
    assert mark == "set after the server started"
    assert owner.split(":")[0] == str(child.pid)  # not the server's, nor this process's
    assert main == "None"  # the starter's __main__ (pytest, or a page script) is not run
    assert torch == ("True" if sys.platform.startswith("linux") else "False")  # preloaded

"""The mutation suite (bench/mutants.py) runs in CI: every mutant of every
kind over the examples (duet aside: minutes per verification) is verified
through `netc verify --artifacts DIR INTENT`, and the test fails on any
mutant proven although it breaks an invariant, any mutant whose
counterexample does not cite the edited device, and any false alarm on a
benign edit. It also checks that every kind produced mutants, so a renderer
change that makes a kind's edit match nothing does not pass by vacuity.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import mutants  # noqa: E402

pytestmark = pytest.mark.netc


def test_every_mutant_caught_and_no_false_alarm(netc_bin: str, tmp_path: Path) -> None:
    results = mutants.run(netc_bin, mutants.EXAMPLES, None, tmp_path)
    print(mutants.table(results))
    kinds = {m.kind for m, _ in results}
    assert len(kinds) == len(mutants.KINDS), sorted(kinds)
    assert mutants.failures(results) == []
    # the new fault classes each in more than one example
    for k in ("mcast-bucket-removed", "mcast-replica-removed", "hostlb-bucket-removed"):
        assert len({m.example for m, _ in results if m.kind == k}) >= 2, k

"""``python -m bench``'s throughput point runs end to end on both log systems: every
variant, tablelog's and the raw clients', finishes on a handful of records. Nothing here
is timed (the figures are in docs/performance.md); this is what keeps the benchmarks
runnable between measurements, as a change to a writer's interface once broke them
unnoticed. In a subprocess from the repository's root: the benchmarks are not a package
the test environment installs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_POINT = """
import json
from bench.throughput import measure_point
print(json.dumps(measure_point({system!r}, 2, 100, 3000, 1, log=lambda line: None)))
"""


@pytest.mark.parametrize("system", ["kafka", "pulsar"])
def test_a_throughput_point_runs_every_variant_to_the_end(system: str) -> None:
    done = subprocess.run([sys.executable, "-c", _POINT.format(system=system)], cwd=ROOT, capture_output=True,
                          text=True, timeout=240, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                              [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])})
    assert done.returncode == 0, done.stderr[-3000:]
    point = json.loads(done.stdout.strip().splitlines()[-1])
    assert point["failures"] == []
    rates = {**{f"produce {k}": v for k, v in point["produce"].items()},
             **{f"fetch {k}": v for k, v in point["fetch"].items()}}
    assert all(rate["median"] > 0 for rate in rates.values()), rates
    assert all(ratio["median"] > 0 for ratio in point["ratios"].values()), point["ratios"]

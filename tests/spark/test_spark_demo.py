"""The main job: `tablelog demo` (a PySpark streaming pipeline) runs and ends consistent."""

import shutil
import subprocess
import sys
from pathlib import Path


def test_tablelog_demo_runs_the_spark_pipeline_and_ends_consistent(tmp_path: Path) -> None:
    command = shutil.which("tablelog", path=str(Path(sys.executable).parent)) or "tablelog"
    result = subprocess.run(
        [command, "demo", "--warehouse", str(tmp_path), "--batches", "2", "--rows", "60"],
        capture_output=True, text=True, timeout=280,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "dies after producing and Spark retries it" in result.stdout
    assert "streaming read: " in result.stdout and "changes read" in result.stdout
    assert "consistent: table demo.orders" in result.stdout

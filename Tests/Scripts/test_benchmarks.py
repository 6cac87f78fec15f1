"""scripts/bench*: each entry point still takes the flags docs/PERFORMANCE.md and docs/READS.md
name (the benchmarks live in scripts/benchmarks/, behind thin entry points), and the shared
harness formats figures and ratios as the tables print them. Running a benchmark needs FUSE and
minutes; that is done by hand, never here."""

import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "scripts"))

FLAGS = {
    "bench": "--big --big-entries --big-only --big-remount-runs --big-timeout --bin --build --cat-samples "
             "--change-files --change-folders --change-runs --entries --fill-only --fill-timeout --folders "
             "--guest-halt-poll-ns --json --keep-logs --latency-ms --no-fill --no-remount --off-runs "
             "--off-timeout --remount-only --remounts --runs",
    "bench-ab": "--a --a-label --b --b-label --entries --folders --json --keep-logs --latency-ms --only "
                "--read-mib --report --rounds",
    "bench-read": "--no-build --runs --sha-only --sha-size --size",
    "bench-pin": "--bandwidth-mbps --bin --latency-ms --mib --runs",
    "bench-small-files": "--bin --files --folders --latency-ms --mean-kib --no-off --runs --zip-delay-ms",
    "bench-filemanager": "--bin --debug --file-manager --json --keep-screenshot --latency-ms --max-wait "
                         "--mount-option --only --photos --settle --thumbnail-max --zoom",
}


@pytest.mark.parametrize("script", sorted(FLAGS))
def test_the_entry_point_takes_its_documented_flags(script):
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", script), "--help"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    usage = r.stdout.split("\n\n", 1)[0]  # argparse's usage block lists every option once
    assert sorted(re.findall(r"\[(--[a-z0-9-]+)", usage)) == FLAGS[script].split()


def test_the_harness_formats_seconds_ratios_and_verdicts():
    from benchmarks.harness import fmt_runs, fmt_s, ratio_str, verdict
    assert [fmt_s(v) for v in (0.0123, 0.5, 12.34, 123.4, None)] == ["0.012 s", "0.50 s", "12.3 s", "123 s", "-"]
    assert fmt_runs([1.5, 2.25]) == "1.50 s, 2.25 s"
    assert [ratio_str(3, 1.5), ratio_str(1, 4), ratio_str(300, 10, lower_bound=True)] == ["2.0x", "0.25x", ">30x"]
    assert ratio_str(1, 0) == "-" and ratio_str(None, 1) == "-"
    assert [verdict([True, True]), verdict([False]), verdict([True, False, True]), verdict([])] == \
        ["met", "NOT met", "met in 2/3 runs", "-"]

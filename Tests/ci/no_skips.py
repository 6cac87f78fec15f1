"""pytest plugin for the test command (scripts/test): a skipped test fails the run.

A skip counted as a pass hides a test that did not run. A test that needs what some machine lacks
must say so by name in Tests/ci/allowed-skips.txt (one node id prefix per line, `#` comments),
and is still reported; any other skip (or xfail), at collection or in a test, fails the session.
"""

from pathlib import Path

ALLOWED = Path(__file__).with_name("allowed-skips.txt")


def allowed_prefixes():
    if not ALLOWED.exists():
        return []
    lines = (line.split("#", 1)[0].strip() for line in ALLOWED.read_text().splitlines())
    return [line for line in lines if line]


class NoSkips:
    def __init__(self):
        self.skipped = []

    def note(self, report):
        if report.skipped or hasattr(report, "wasxfail"):
            self.skipped.append((report.nodeid, str(report.longrepr)[-300:]))

    def pytest_runtest_logreport(self, report):
        self.note(report)

    def pytest_collectreport(self, report):
        self.note(report)

    def pytest_sessionfinish(self, session, exitstatus):
        prefixes = allowed_prefixes()
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        refused = 0
        for node, why in self.skipped:
            ok = any(node.startswith(p) for p in prefixes)
            refused += not ok
            if reporter:
                verdict = "allowed (Tests/ci/allowed-skips.txt)" if ok else "NOT ALLOWED"
                reporter.write_line(f"SKIPPED, {verdict}: {node}: {why}")
        if refused and session.exitstatus == 0:
            session.exitstatus = 1


def pytest_configure(config):
    config.pluginmanager.register(NoSkips(), "dropboxfs-no-skips")

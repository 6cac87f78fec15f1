"""faultproxy: a switchable TCP proxy for tests (pass, refuse, reset, blackhole, delay, drip).

Exists so tests can fail one upstream host of the fake Dropbox the way a laptop's network fails.
Library: ``with FaultProxy("127.0.0.1", port) as p: p.set_mode("blackhole")``; command line and
control port: ``python3 -m faultproxy`` (README.md). Standard library only, 127.0.0.1 only.
"""

from .proxy import MODES, FaultProxy, FaultProxyError, ProxyGroup, check_options

__all__ = ["MODES", "FaultProxy", "FaultProxyError", "ProxyGroup", "check_options"]

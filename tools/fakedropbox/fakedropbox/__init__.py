"""fakedropbox: a local, faithful fake of the Dropbox HTTP API v2 (read side).

Exists so dropboxfs tests, demos and benchmarks never talk to the real Dropbox.
Run with ``python3 -m fakedropbox --help``; see README.md next to this package.
"""

__version__ = "1.0"

"""The official Dropbox Python SDK (dropbox==12.2.4) against the fake over TLS.

Exists to prove the fake's replies pass the SDK's strict validation.  The SDK
reads DROPBOX_API_HOST & co. at import, so every scenario runs in a
subprocess (sdk_scenarios.py) with those set to the fake and
REQUESTS_CA_BUNDLE set to the CA made by --make-certs.
"""

import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from fakedropbox.client import FakeDropbox  # noqa: E402

pytest.importorskip("dropbox")


@pytest.fixture(scope="module")
def certdir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("certs"))


def run(fd, scenario):
    env = dict(os.environ)
    for k in ("DROPBOX_API_HOST", "DROPBOX_API_CONTENT_HOST", "DROPBOX_API_NOTIFY_HOST", "DROPBOX_WEB_HOST"):
        env[k] = fd.host
    env["REQUESTS_CA_BUNDLE"] = fd.cafile
    env["CURL_CA_BUNDLE"] = fd.cafile
    env["CONTROL_URL"] = fd.url
    env["CONTROL_CA"] = fd.cafile
    p = subprocess.run([sys.executable, os.path.join(HERE, "sdk_scenarios.py"), scenario],
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.strip().endswith("OK"), \
        "scenario %s failed:\n%s\n%s\nserver log tail:\n%s" % (
            scenario, p.stdout, p.stderr, fd.server_log()[-3000:])


@pytest.fixture
def fake(certdir):
    with FakeDropbox.start("--make-certs", certdir) as f:
        yield f


@pytest.mark.parametrize("scenario", ["continue_after_mutations", "get_metadata", "ranged_download",
                                      "longpoll", "account", "errors", "oauth_refresh",
                                      "thumbnails", "revisions", "shared_links",
                                      "access_levels", "shared_folders"])
def test_sdk_on_empty_account(fake, scenario):
    run(fake, scenario)


def test_sdk_recursive_paged_listing(certdir):
    with FakeDropbox.start("--make-certs", certdir, "--synthetic", "1500", "--seed", "4") as f:
        run(f, "list_recursive_paged")


def test_sdk_team_account(certdir):
    with FakeDropbox.start("--make-certs", certdir, "--team") as f:
        run(f, "account_team")


def test_sdk_sample_account(certdir):
    with FakeDropbox.start("--make-certs", certdir, "--sample-account", "--quiet") as f:
        run(f, "sample_account")
        run(f, "list_recursive_paged")


def test_sdk_synthetic_names(certdir):
    with FakeDropbox.start("--make-certs", certdir, "--synthetic", "2000", "--quiet") as f:
        run(f, "synthetic")

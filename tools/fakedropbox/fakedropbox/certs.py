"""--make-certs: a throw-away CA and a localhost leaf certificate via openssl.

Exists because the official SDK only speaks https (docs/DROPBOX-API.md,
"Clients against a local server"):
tests point REQUESTS_CA_BUNDLE (or URLSession trust) at DIR/ca.pem.
Existing valid files in DIR are reused; a lock file serialises parallel starts.
"""

import fcntl
import os
import subprocess
import tempfile

LEAF_EXT = """basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature, keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid, issuer
"""

FILES = ("ca.pem", "ca.key", "server.pem", "server.key")


def _run(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def make_certs(d):
    """Create (or reuse) DIR/ca.pem, ca.key, server.pem, server.key.
    Returns (cert_path, key_path) for the server."""
    d = os.path.abspath(d)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, ".lock"), "w") as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)
        if not all(os.path.exists(os.path.join(d, f)) for f in FILES):
            with tempfile.TemporaryDirectory(dir=d) as tmp:
                _run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-sha256",
                     "-keyout", "ca.key", "-out", "ca.pem", "-days", "3650",
                     "-subj", "/CN=fakedropbox test CA",
                     "-addext", "basicConstraints=critical,CA:TRUE",
                     "-addext", "keyUsage=critical,keyCertSign,cRLSign",
                     "-addext", "subjectKeyIdentifier=hash", cwd=tmp)
                _run("req", "-newkey", "rsa:2048", "-nodes", "-sha256",
                     "-keyout", "server.key", "-out", "server.csr",
                     "-subj", "/CN=localhost", cwd=tmp)
                with open(os.path.join(tmp, "leaf.ext"), "w") as f:
                    f.write(LEAF_EXT)
                _run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                     "-CAcreateserial", "-out", "server.pem", "-days", "825", "-sha256",
                     "-extfile", "leaf.ext", cwd=tmp)
                for f in FILES:
                    os.replace(os.path.join(tmp, f), os.path.join(d, f))
    return os.path.join(d, "server.pem"), os.path.join(d, "server.key")

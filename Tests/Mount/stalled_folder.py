"""A tiny FUSE file system of the tests' own that serves a few files from memory and, once told to
stall, never answers again: a folder on a disk that stopped answering (NFS whose server is gone, a
stuck USB disk), which no local file system can imitate. It speaks the kernel's FUSE protocol on
/dev/fuse directly (root only: it mounts with mount(2)), so the tests need no FUSE library.

Only what a disk cache folder is asked is served (lookup, getattr, opendir, readdir, open, read,
release, statfs); writes answer EROFS and anything else ENOSYS. `close()` fails every request held
since the stall (EIO) and detaches the mount."""

import ctypes
import errno
import os
import stat
import struct
import threading

IN_HEADER = struct.Struct("<IIQQIIIHH")  # len, opcode, unique, nodeid, uid, gid, pid, extlen, pad
OUT_HEADER = struct.Struct("<IiQ")  # len, error, unique
ATTR = struct.Struct("<QQQQQQIIIIIIIIII")  # ino size blocks atime mtime ctime *nsec mode nlink uid gid rdev blksize flags

LOOKUP, FORGET, GETATTR, OPEN, READ, STATFS, RELEASE, FLUSH, INIT = 1, 2, 3, 14, 15, 17, 18, 25, 26
OPENDIR, READDIR, RELEASEDIR, INTERRUPT, DESTROY, BATCH_FORGET = 27, 28, 29, 36, 38, 42
WRITES = {4, 8, 9, 10, 11, 12, 13, 16, 21, 24, 35, 43, 45}  # setattr mknod mkdir unlink ... create

MNT_DETACH = 2
libc = ctypes.CDLL(None, use_errno=True)


class StalledFolder:
    def __init__(self, path, files):
        """Mounts at `path` (an empty folder) a folder holding `files` (name -> bytes)."""
        self.path = str(path)
        self.names = sorted(files)
        self.files = {name: files[name] for name in self.names}
        self.stalled = threading.Event()
        # Requests received since the stall (their ids), answered EIO at close; guarded by `lock`.
        self.lock = threading.Lock()
        self.held = []
        self.closing = False
        self.asked = 0  # how many were held, once closed
        self.fd = os.open("/dev/fuse", os.O_RDWR)
        options = f"fd={self.fd},rootmode=40000,user_id=0,group_id=0,allow_other".encode()
        if libc.mount(b"stalledfolder", self.path.encode(), b"fuse", 0, options) != 0:
            code = ctypes.get_errno()
            os.close(self.fd)
            raise OSError(code, f"mount {self.path}: {os.strerror(code)}")
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def stall(self):
        """From now on no request is answered."""
        self.stalled.set()

    def close(self):
        """Answers every request held since the stall with EIO (and later ones at once), then
        detaches the mount."""
        with self.lock:
            if self.closing:
                return
            self.closing = True
            held, self.held = self.held, []
        self.asked = len(held)
        for unique in held:
            self._send(unique, -errno.EIO, b"")
        libc.umount2(self.path.encode(), MNT_DETACH)
        self.thread.join(timeout=5)
        try:
            os.close(self.fd)
        except OSError:
            pass

    def _attr(self, ino):
        if ino == 1:
            return ATTR.pack(1, 0, 0, 0, 0, 0, 0, 0, 0, stat.S_IFDIR | 0o700, 2, 0, 0, 0, 4096, 0)
        data = self.files[self.names[ino - 2]]
        return ATTR.pack(ino, len(data), (len(data) + 511) // 512, 0, 0, 0, 0, 0, 0,
                         stat.S_IFREG | 0o600, 1, 0, 0, 0, 4096, 0)

    def _serve(self):
        while True:
            try:
                request = os.read(self.fd, 1 << 20 | 4096)
            except OSError as e:
                if e.errno in (errno.EINTR, errno.EAGAIN):
                    continue
                return  # ENODEV: unmounted; EBADF: closed
            length, opcode, unique, node, _uid, _gid, _pid, _ext, _pad = IN_HEADER.unpack_from(request)
            body = request[IN_HEADER.size:length]
            if opcode in (FORGET, BATCH_FORGET, INTERRUPT):
                continue
            if self.stalled.is_set():
                with self.lock:
                    if not self.closing:
                        self.held.append(unique)
                        continue
                self._send(unique, -errno.EIO, b"")
                continue
            try:
                reply = self._answer(opcode, node, body)
            except OSError as e:
                self._send(unique, -e.errno, b"")
            else:
                self._send(unique, 0, reply)

    def _send(self, unique, error, payload):
        try:
            os.write(self.fd, OUT_HEADER.pack(OUT_HEADER.size + len(payload), error, unique) + payload)
        except OSError:
            pass  # the request was interrupted meanwhile, or the mount is gone

    def _answer(self, opcode, node, body):
        if opcode == INIT:
            major, minor, readahead, _flags = struct.unpack_from("<IIII", body)
            out = struct.pack("<IIIIHHIIHHI", 7, min(minor, 31), readahead, 0, 16, 12, 128 << 10, 1, 32, 0, 0)
            return out + bytes(64 - len(out))
        if opcode == LOOKUP:
            name = body.split(b"\0", 1)[0].decode()
            if node != 1 or name not in self.files:
                raise OSError(errno.ENOENT, name)
            ino = self.names.index(name) + 2
            return struct.pack("<QQQQII", ino, 0, 3600, 3600, 0, 0) + self._attr(ino)
        if opcode == GETATTR:
            return struct.pack("<QII", 3600, 0, 0) + self._attr(node)
        if opcode in (OPEN, OPENDIR):
            return struct.pack("<QII", 0, 0, 0)
        if opcode == READ:
            _fh, offset, size = struct.unpack_from("<QQI", body)
            return self.files[self.names[node - 2]][offset:offset + size]
        if opcode == READDIR:
            _fh, offset, size = struct.unpack_from("<QQI", body)
            entries = [(1, ".", 4), (1, "..", 4)] + [(i + 2, n, 8) for i, n in enumerate(self.names)]
            out = b""
            for index in range(offset, len(entries)):
                ino, name, kind = entries[index]
                raw = name.encode()
                entry = struct.pack("<QQII", ino, index + 1, len(raw), kind) + raw
                entry += bytes(-len(entry) % 8)
                if len(out) + len(entry) > size:
                    break
                out += entry
            return out
        if opcode in (RELEASE, RELEASEDIR, FLUSH, DESTROY):
            return b""
        if opcode == STATFS:
            return struct.pack("<QQQQQIIII", 1000, 0, 0, 100, 0, 4096, 255, 4096, 0) + bytes(24)
        if opcode in WRITES:
            raise OSError(errno.EROFS, "read-only")
        raise OSError(errno.ENOSYS, "not served")

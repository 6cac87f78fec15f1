"""The benchmarks of dropboxfs, one module each, on one shared harness (harness.py: the fake
Dropbox server, mounts of the release binary, tmpfs reference copies, timing, the daemon's RSS and
CPU, the fake's request counts, side-by-side tables).

  metadata.py     scripts/bench: the metadata walks (walk.py), the remount from the stored tree
                  (remount.py), a large change while mounted (changes.py), the parallel fill (fill.py)
  ab.py           scripts/bench-ab: two binaries side by side on the same measurements
  read.py         scripts/bench-read: sequential and random reads, beside curl and tmpfs
  filemanager.py  scripts/bench-filemanager: a real file manager showing a folder of photos

The scripts/bench* files are the entry points; their flags and printed figures are the ones
docs/PERFORMANCE.md and docs/READS.md refer to.
"""

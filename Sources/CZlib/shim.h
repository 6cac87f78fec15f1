// zlib, used only for folder zips: the raw deflate of a zip member is inflated through it (the
// daemon reads the members of a folder fetched as one zip), its crc32 checks each member, and the
// test support deflates through it to write zips for the tests and the in-memory Dropbox.
#ifndef DROPBOXFS_CZLIB_SHIM_H
#define DROPBOXFS_CZLIB_SHIM_H
#include <zlib.h>
#endif

// SQLite's C API, used only by the tree store (Sources/DropboxFS/Store): the metadata tree and its
// change cursor are kept across mounts in one database per account (docs/ARCHITECTURE.md).
#ifndef DROPBOXFS_CSQLITE_SHIM_H
#define DROPBOXFS_CSQLITE_SHIM_H
#include <sqlite3.h>
#endif

// The FUSE API version must be fixed before the header is read, and a target's cSettings never reach
// the Swift importer, so it lives here (docs/SWIFT-FUSE-NOTES.md, "FUSE_USE_VERSION in the module
// header"). 312 makes fuse_session_loop_mt a real function that takes a struct fuse_loop_config.
#ifndef DROPBOXFS_CFUSE_SHIM_H
#define DROPBOXFS_CFUSE_SHIM_H
#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <sys/stat.h>
#include <errno.h>
#endif

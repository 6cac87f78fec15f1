#ifndef DROPBOXFS_CCURL_SHIM_H
#define DROPBOXFS_CCURL_SHIM_H
#include <curl/curl.h>
#endif

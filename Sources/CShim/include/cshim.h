// Wrappers for C functions Swift cannot call: libcurl's variadic curl_easy_setopt, curl_easy_getinfo,
// curl_multi_setopt (one wrapper per argument kind), getxattr, which Glibc's module leaves out, and
// the variadic prctl.
#ifndef DROPBOXFS_CSHIM_H
#define DROPBOXFS_CSHIM_H
#include <curl/curl.h>
#include <sys/types.h>

CURLcode dbx_easy_setopt_long(CURL *handle, CURLoption option, long value);
CURLcode dbx_easy_setopt_off(CURL *handle, CURLoption option, curl_off_t value);
CURLcode dbx_easy_setopt_ptr(CURL *handle, CURLoption option, void *value);
CURLcode dbx_easy_setopt_str(CURL *handle, CURLoption option, const char *value);
CURLcode dbx_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value);
CURLcode dbx_easy_setopt_write_cb(CURL *handle, CURLoption option,
                                  size_t (*cb)(char *, size_t, size_t, void *));
CURLcode dbx_easy_getinfo_long(CURL *handle, CURLINFO info, long *value);
CURLMcode dbx_multi_setopt_long(CURLM *multi, CURLMoption option, long value);

// getxattr(2): <sys/xattr.h> is not part of Swift's Glibc module.
ssize_t dbx_getxattr(const char *path, const char *name, void *value, size_t size);

// mallopt(M_ARENA_MAX, arenas): <malloc.h> is not part of Swift's Glibc module. Returns mallopt's
// result (1 on success).
int dbx_set_malloc_arena_max(int arenas);

// prctl(PR_SET_DUMPABLE, 0): prctl is variadic, so Swift cannot call it. Returns prctl's result.
int dbx_set_not_dumpable(void);

#endif

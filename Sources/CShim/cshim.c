// See cshim.h: typed entry points for libcurl's variadic calls.
#include "cshim.h"
#include <sys/xattr.h>
#include <sys/prctl.h>
#include <malloc.h>

CURLcode dbx_easy_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
CURLcode dbx_easy_setopt_off(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}
CURLcode dbx_easy_setopt_ptr(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}
CURLcode dbx_easy_setopt_str(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}
CURLcode dbx_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}
CURLcode dbx_easy_setopt_write_cb(CURL *handle, CURLoption option,
                                  size_t (*cb)(char *, size_t, size_t, void *)) {
    return curl_easy_setopt(handle, option, cb);
}
CURLcode dbx_easy_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}
CURLMcode dbx_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}
ssize_t dbx_getxattr(const char *path, const char *name, void *value, size_t size) {
    return getxattr(path, name, value, size);
}

int dbx_set_not_dumpable(void) {
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

int dbx_set_malloc_arena_max(int arenas) {
    return mallopt(M_ARENA_MAX, arenas);
}

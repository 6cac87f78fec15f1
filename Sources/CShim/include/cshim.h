// Wrappers for libcurl's variadic functions (curl_easy_setopt, curl_easy_getinfo, curl_multi_setopt),
// which Swift cannot call directly: one wrapper per argument kind. Nothing else belongs here.
#ifndef DROPBOXFS_CSHIM_H
#define DROPBOXFS_CSHIM_H
#include <curl/curl.h>

CURLcode dbx_easy_setopt_long(CURL *handle, CURLoption option, long value);
CURLcode dbx_easy_setopt_off(CURL *handle, CURLoption option, curl_off_t value);
CURLcode dbx_easy_setopt_ptr(CURL *handle, CURLoption option, void *value);
CURLcode dbx_easy_setopt_str(CURL *handle, CURLoption option, const char *value);
CURLcode dbx_easy_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value);
CURLcode dbx_easy_setopt_write_cb(CURL *handle, CURLoption option,
                                  size_t (*cb)(char *, size_t, size_t, void *));
CURLcode dbx_easy_getinfo_long(CURL *handle, CURLINFO info, long *value);
CURLcode dbx_easy_getinfo_ptr(CURL *handle, CURLINFO info, void **value);
CURLMcode dbx_multi_setopt_long(CURLM *multi, CURLMoption option, long value);
CURLSHcode dbx_share_setopt_long(CURLSH *share, CURLSHoption option, long value);

#endif

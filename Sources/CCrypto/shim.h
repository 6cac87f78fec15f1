// OpenSSL's libcrypto, used only for digests: SHA-256 (Dropbox content_hash, PKCE challenge), MD5
// (thumbnail file names, which the freedesktop thumbnail standard defines as the MD5 of the URI) and
// HMAC-SHA256 (the keyed tag that ties a stored tree to a bare access token).
#ifndef DROPBOXFS_CCRYPTO_SHIM_H
#define DROPBOXFS_CCRYPTO_SHIM_H
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <openssl/rand.h>
#include <openssl/hmac.h>
#endif

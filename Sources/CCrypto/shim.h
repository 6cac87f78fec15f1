// OpenSSL's libcrypto, used only for digests: SHA-256 (Dropbox content_hash, PKCE challenge) and MD5
// (thumbnail file names, which the freedesktop thumbnail standard defines as the MD5 of the URI).
#ifndef DROPBOXFS_CCRYPTO_SHIM_H
#define DROPBOXFS_CCRYPTO_SHIM_H
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <openssl/rand.h>
#endif

// OpenSSL's libcrypto, used only for SHA-256 (Dropbox content_hash, PKCE challenge).
#ifndef DROPBOXFS_CCRYPTO_SHIM_H
#define DROPBOXFS_CCRYPTO_SHIM_H
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <openssl/rand.h>
#endif

/*
 * AES-256-GCM for many small values under one key, for @switchboard/crypto (src/native-aead.ts).
 *
 * Node's Cipheriv and Decipheriv cost several microseconds per value before any byte is processed (a JS
 * object, a new OpenSSL context, the key schedule, four calls across the boundary); a page of 1000 records
 * spent most of its CPU there (bench/README.md, "Why the current settings"). Here one OpenSSL context per key and
 * direction keeps the key schedule, and each value is one call: set the nonce, the associated data, encrypt
 * or decrypt, write or check the 16-byte tag. The OpenSSL is Node's own (its exported symbols and headers).
 */
#include <node_api.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NONCE_BYTES 12
#define TAG_BYTES 16
#define MAX_AAD_BYTES 1024

/*
 * A context is made for one direction: `open` refuses a sealing context and `seal` an opening one, so a
 * value can never be "decrypted" by an encryption (GCM's keystream is the same both ways).
 */
typedef struct {
  EVP_CIPHER_CTX *ctx;
  int encrypt;
} context_t;

static void free_context(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  context_t *context = (context_t *)data;
  EVP_CIPHER_CTX_free(context->ctx);
  free(context);
}

static napi_value make_context(napi_env env, napi_callback_info info, int encrypt, const char *name) {
  size_t argc = 1;
  napi_value argv[1];
  void *key = NULL;
  size_t key_length = 0;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 1 ||
      napi_get_buffer_info(env, argv[0], &key, &key_length) != napi_ok || key_length != 32) {
    napi_throw_type_error(env, NULL, encrypt ? "sealContext: a key of 32 bytes is required"
                                             : "keyContext: a key of 32 bytes is required");
    return NULL;
  }
  context_t *context = malloc(sizeof *context);
  EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
  if (context == NULL || ctx == NULL ||
      EVP_CipherInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, NULL, encrypt) != 1) {
    EVP_CIPHER_CTX_free(ctx);
    free(context);
    napi_throw_error(env, NULL, name);
    return NULL;
  }
  context->ctx = ctx;
  context->encrypt = encrypt;
  napi_value external;
  if (napi_create_external(env, context, free_context, NULL, &external) != napi_ok) {
    EVP_CIPHER_CTX_free(ctx);
    free(context);
    napi_throw_error(env, NULL, name);
    return NULL;
  }
  return external;
}

/* keyContext(key: Buffer of 32 bytes): an external holding a decryption context with the key set. */
static napi_value key_context(napi_env env, napi_callback_info info) {
  return make_context(env, info, 0, "keyContext: the cipher could not be set up");
}

/* sealContext(key: Buffer of 32 bytes): the same for encryption. */
static napi_value seal_context(napi_env env, napi_callback_info info) {
  return make_context(env, info, 1, "sealContext: the cipher could not be set up");
}

/* The context in `value`, if it is one made for that direction. */
static EVP_CIPHER_CTX *context_of(napi_env env, napi_value value, int encrypt) {
  context_t *context = NULL;
  if (napi_get_value_external(env, value, (void **)&context) != napi_ok || context == NULL ||
      context->encrypt != encrypt)
    return NULL;
  return context->ctx;
}

/*
 * open(context, source, nonceAt, tagAt, ciphertextAt, ciphertextEnd, aad: string, out: Buffer): the
 * plaintext's length, written at the start of `out`, or -1 when the tag does not match (wrong key,
 * tampered bytes, other associated data). The nonce (12 bytes), the tag (16) and the ciphertext are read
 * from `source` at the given offsets; every range is checked against the buffers' lengths.
 */
static napi_value open_value(napi_env env, napi_callback_info info) {
  size_t argc = 8;
  napi_value argv[8];
  EVP_CIPHER_CTX *ctx = NULL;
  uint8_t *source = NULL, *out = NULL;
  size_t source_length = 0, out_length = 0, aad_length = 0;
  uint32_t nonce_at = 0, tag_at = 0, ciphertext_at = 0, ciphertext_end = 0;
  char aad[MAX_AAD_BYTES];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 8 ||
      (ctx = context_of(env, argv[0], 0)) == NULL ||
      napi_get_buffer_info(env, argv[1], (void **)&source, &source_length) != napi_ok ||
      napi_get_value_uint32(env, argv[2], &nonce_at) != napi_ok ||
      napi_get_value_uint32(env, argv[3], &tag_at) != napi_ok ||
      napi_get_value_uint32(env, argv[4], &ciphertext_at) != napi_ok ||
      napi_get_value_uint32(env, argv[5], &ciphertext_end) != napi_ok ||
      napi_get_value_string_utf8(env, argv[6], aad, sizeof aad, &aad_length) != napi_ok ||
      napi_get_buffer_info(env, argv[7], (void **)&out, &out_length) != napi_ok) {
    napi_throw_type_error(env, NULL, "open: invalid arguments");
    return NULL;
  }
  /* A string that filled the buffer may have been cut short: refused, never used truncated. */
  if (aad_length >= sizeof aad - 1) {
    napi_throw_range_error(env, NULL, "open: associated data too long");
    return NULL;
  }
  if ((uint64_t)nonce_at + NONCE_BYTES > source_length || (uint64_t)tag_at + TAG_BYTES > source_length ||
      ciphertext_at > ciphertext_end || ciphertext_end > source_length ||
      ciphertext_end - ciphertext_at > out_length || ciphertext_end - ciphertext_at > INT32_MAX) {
    napi_throw_range_error(env, NULL, "open: offsets out of bounds");
    return NULL;
  }
  int length = 0, last = 0;
  int ok = EVP_DecryptInit_ex(ctx, NULL, NULL, NULL, source + nonce_at) == 1 &&
           EVP_DecryptUpdate(ctx, NULL, &length, (const uint8_t *)aad, (int)aad_length) == 1 &&
           EVP_DecryptUpdate(ctx, out, &length, source + ciphertext_at, (int)(ciphertext_end - ciphertext_at)) == 1 &&
           EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, TAG_BYTES, source + tag_at) == 1 &&
           EVP_DecryptFinal_ex(ctx, out + length, &last) == 1;
  /* What was decrypted before the tag failed is not authentic: it is not left in the caller's buffer. */
  if (!ok) memset(out, 0, ciphertext_end - ciphertext_at);
  napi_value result;
  napi_create_int32(env, ok ? length + last : -1, &result);
  return result;
}

/*
 * seal(context, buffer, nonceAt, tagAt, dataAt, dataEnd, aad: string): encrypts `buffer[dataAt, dataEnd)`
 * in place with the 12-byte nonce at `nonceAt` and writes the 16-byte tag at `tagAt`. The three ranges must
 * lie within the buffer and not overlap. Throws if OpenSSL fails (it does not for valid input).
 */
static napi_value seal_value(napi_env env, napi_callback_info info) {
  size_t argc = 7;
  napi_value argv[7];
  EVP_CIPHER_CTX *ctx = NULL;
  uint8_t *buffer = NULL;
  size_t buffer_length = 0, aad_length = 0;
  uint32_t nonce_at = 0, tag_at = 0, data_at = 0, data_end = 0;
  char aad[MAX_AAD_BYTES];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 7 ||
      (ctx = context_of(env, argv[0], 1)) == NULL ||
      napi_get_buffer_info(env, argv[1], (void **)&buffer, &buffer_length) != napi_ok ||
      napi_get_value_uint32(env, argv[2], &nonce_at) != napi_ok ||
      napi_get_value_uint32(env, argv[3], &tag_at) != napi_ok ||
      napi_get_value_uint32(env, argv[4], &data_at) != napi_ok ||
      napi_get_value_uint32(env, argv[5], &data_end) != napi_ok ||
      napi_get_value_string_utf8(env, argv[6], aad, sizeof aad, &aad_length) != napi_ok) {
    napi_throw_type_error(env, NULL, "seal: invalid arguments");
    return NULL;
  }
  if (aad_length >= sizeof aad - 1) {
    napi_throw_range_error(env, NULL, "seal: associated data too long");
    return NULL;
  }
  uint64_t nonce_end = (uint64_t)nonce_at + NONCE_BYTES, tag_end = (uint64_t)tag_at + TAG_BYTES;
  if (nonce_end > buffer_length || tag_end > buffer_length || data_at > data_end || data_end > buffer_length ||
      data_end - data_at > INT32_MAX ||
      /* No two of nonce, tag and data overlap (an empty data range overlaps nothing). */
      (nonce_at < tag_end && tag_at < nonce_end) ||
      (data_at < data_end && ((data_at < nonce_end && nonce_at < data_end) || (data_at < tag_end && tag_at < data_end)))) {
    napi_throw_range_error(env, NULL, "seal: offsets out of bounds");
    return NULL;
  }
  int length = 0, last = 0;
  uint8_t *data = buffer + data_at;
  int ok = EVP_EncryptInit_ex(ctx, NULL, NULL, NULL, buffer + nonce_at) == 1 &&
           EVP_EncryptUpdate(ctx, NULL, &length, (const uint8_t *)aad, (int)aad_length) == 1 &&
           EVP_EncryptUpdate(ctx, data, &length, data, (int)(data_end - data_at)) == 1 &&
           EVP_EncryptFinal_ex(ctx, data + length, &last) == 1 &&
           EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, TAG_BYTES, buffer + tag_at) == 1;
  if (!ok) {
    napi_throw_error(env, NULL, "seal: encryption failed");
    return NULL;
  }
  return NULL;
}

NAPI_MODULE_INIT() {
  napi_value fn;
  napi_create_function(env, "keyContext", NAPI_AUTO_LENGTH, key_context, NULL, &fn);
  napi_set_named_property(env, exports, "keyContext", fn);
  napi_create_function(env, "open", NAPI_AUTO_LENGTH, open_value, NULL, &fn);
  napi_set_named_property(env, exports, "open", fn);
  napi_create_function(env, "sealContext", NAPI_AUTO_LENGTH, seal_context, NULL, &fn);
  napi_set_named_property(env, exports, "sealContext", fn);
  napi_create_function(env, "seal", NAPI_AUTO_LENGTH, seal_value, NULL, &fn);
  napi_set_named_property(env, exports, "seal", fn);
  return exports;
}

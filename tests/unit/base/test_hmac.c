/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for HMAC-SHA256: the seven test cases of RFC 4231, a message
 * given in parts, and keys that differ in one bit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "datagate/base.h"

typedef struct vector {
  unsigned char key[131];
  size_t key_len;
  const char *data; /* NULL: data_byte repeated data_len times */
  unsigned char data_byte;
  size_t data_len;
  const char *mac_hex; /* case 5 gives only the first 128 bits */
} vector_t;

static void hex(const unsigned char *b, size_t n, char *out) {
  for (size_t i = 0; i < n; i++)
    snprintf(out + 2 * i, 3, "%02x", b[i]);
}

static void fill(unsigned char *p, unsigned char byte, size_t n) {
  memset(p, byte, n);
}

static void check(const vector_t *v) {
  unsigned char data[200];
  const void *msg = v->data;
  size_t len = v->data != NULL ? strlen(v->data) : v->data_len;
  if (v->data == NULL) {
    fill(data, v->data_byte, v->data_len);
    msg = data;
  }
  unsigned char mac[32];
  dg_bytes_t part = {msg, len};
  dg_hmac_sha256(v->key, v->key_len, &part, 1, mac);
  char got[65];
  hex(mac, 32, got);
  got[strlen(v->mac_hex)] = '\0';
  assert_string_equal(got, v->mac_hex);
}

static void test_rfc4231(void **state) {
  static vector_t v[7];
  fill(v[0].key, 0x0b, v[0].key_len = 20);
  v[0].data = "Hi There";
  v[0].mac_hex = "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7";
  memcpy(v[1].key, "Jefe", v[1].key_len = 4);
  v[1].data = "what do ya want for nothing?";
  v[1].mac_hex = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";
  fill(v[2].key, 0xaa, v[2].key_len = 20);
  v[2].data_byte = 0xdd;
  v[2].data_len = 50;
  v[2].mac_hex = "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe";
  for (v[3].key_len = 0; v[3].key_len < 25; v[3].key_len++)
    v[3].key[v[3].key_len] = (unsigned char)(v[3].key_len + 1);
  v[3].data_byte = 0xcd;
  v[3].data_len = 50;
  v[3].mac_hex = "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b";
  fill(v[4].key, 0x0c, v[4].key_len = 20);
  v[4].data = "Test With Truncation";
  v[4].mac_hex = "a3b6167473100ee06e0c796c2955552b";
  fill(v[5].key, 0xaa, v[5].key_len = 131);
  v[5].data = "Test Using Larger Than Block-Size Key - Hash Key First";
  v[5].mac_hex = "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54";
  fill(v[6].key, 0xaa, v[6].key_len = 131);
  v[6].data = "This is a test using a larger than block-size key and a larger than block-size "
              "data. The key needs to be hashed before being used by the HMAC algorithm.";
  v[6].mac_hex = "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2";
  for (size_t i = 0; i < 7; i++)
    check(&v[i]);
}

/* Hashing a message in parts gives the MAC of the whole, wherever it is cut. */
static void test_parts(void **state) {
  static const char msg[] = "what do ya want for nothing?";
  size_t len = strlen(msg);
  unsigned char whole[32], cut[32];
  dg_bytes_t one = {msg, len};
  dg_hmac_sha256("Jefe", 4, &one, 1, whole);
  for (size_t at = 0; at <= len; at++) {
    dg_bytes_t parts[3] = {{msg, at}, {"", 0}, {msg + at, len - at}};
    dg_hmac_sha256("Jefe", 4, parts, 3, cut);
    assert_memory_equal(whole, cut, 32);
  }
  dg_hmac_sha256("Jefe", 4, NULL, 0, cut);
  assert_memory_not_equal(whole, cut, 32);
}

/* Every bit of the key matters, including past the first block. */
static void test_key_bits(void **state) {
  unsigned char key[100], a[32], b[32];
  memset(key, 0x5a, sizeof(key));
  dg_bytes_t part = {"message", 7};
  for (size_t len = 1; len <= sizeof(key); len += 33) {
    dg_hmac_sha256(key, len, &part, 1, a);
    for (size_t i = 0; i < len; i++) {
      key[i] ^= 1;
      dg_hmac_sha256(key, len, &part, 1, b);
      key[i] ^= 1;
      assert_memory_not_equal(a, b, 32);
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rfc4231),
      cmocka_unit_test(test_parts),
      cmocka_unit_test(test_key_bits),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}

/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Differential fuzzing of the JSON parser against jansson: for every input
 * both must accept or both refuse, and what both accept must be the same
 * value, down to member order and the sign of zero (compared as jansson
 * writes them back). The one accepted difference is a NUL byte right after
 * a number or literal, which jansson drops and dg_json_parse refuses; such
 * an input is compared again without that byte. Any other difference
 * aborts.
 *
 * What both accept is also written back by dg_json_write, which must give
 * jansson's compact text byte for byte when the value holds no real (its
 * reals keep 15 significant digits where jansson writes 17). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "datagate/base.h"

static bool same_value(const json_t *a, const json_t *b) {
  if (!json_equal(a, b))
    return false;
  size_t flags = JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(17);
  char *ta = json_dumps(a, flags), *tb = json_dumps(b, flags);
  if (ta == NULL || tb == NULL)
    abort();
  bool same = strcmp(ta, tb) == 0;
  free(ta);
  free(tb);
  return same;
}

static bool has_real(const json_t *v) {
  const char *key;
  size_t i;
  json_t *item;
  if (json_is_real(v))
    return true;
  json_object_foreach((json_t *)v, key, item) {
    if (has_real(item))
      return true;
  }
  json_array_foreach(v, i, item) {
    if (has_real(item))
      return true;
  }
  return false;
}

static void check_written(const json_t *v) {
  if (has_real(v))
    return;
  char *want = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
  dg_buf_t out;
  dg_buf_init(&out, SIZE_MAX - 1);
  if (want == NULL || dg_json_write(v, &out) != 0 || strlen(want) != out.len ||
      memcmp(want, out.data, out.len) != 0)
    abort();
  dg_buf_free(&out);
  free(want);
}

/* True for the byte jansson drops: a NUL right after the last byte of a
 * number or literal. */
static bool dropped_by_jansson(const uint8_t *data, size_t offset) {
  if (offset == 0 || data[offset] != '\0')
    return false;
  uint8_t before = data[offset - 1];
  return (before >= '0' && before <= '9') || (before >= 'a' && before <= 'z') ||
         (before >= 'A' && before <= 'Z');
}

static void compare(const uint8_t *data, size_t size) {
  dg_json_parse_error_t err;
  json_t *ours = dg_json_parse((const char *)data, size, &err);
  json_error_t jerr;
  json_t *theirs = json_loadb((const char *)data, size, JSON_DECODE_ANY, &jerr);
  if (ours != NULL) {
    if (theirs == NULL || !same_value(ours, theirs))
      abort();
    check_written(ours);
  } else if (err.offset > size || err.message[0] == '\0') {
    abort();
  } else if (theirs != NULL) {
    if (!dropped_by_jansson(data, err.offset))
      abort();
    uint8_t *without = malloc(size);
    if (without == NULL)
      abort();
    memcpy(without, data, err.offset);
    memcpy(without + err.offset, data + err.offset + 1, size - err.offset - 1);
    compare(without, size - 1);
    free(without);
  }
  json_decref(ours);
  json_decref(theirs);
}

/* dg_json_parse_message reads what dg_json_parse reads when the text has
 * no repeated key, and otherwise either refuses the text or returns a value
 * with the problem recorded. */
static void compare_message(const uint8_t *data, size_t size) {
  dg_json_parse_error_t err, merr;
  json_t *plain = dg_json_parse((const char *)data, size, &err);
  json_t *msg = dg_json_parse_message((const char *)data, size, &merr);
  json_error_t jerr;
  json_t *strict =
      json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
  if (msg == NULL && (merr.message[0] == '\0' || merr.offset > size))
    abort();
  if (msg != NULL && merr.message[0] != '\0' && merr.kind == DG_JSON_SYNTAX)
    abort();
  if (msg != NULL && merr.message[0] == '\0' && (plain == NULL || !same_value(plain, msg)))
    abort();
  if (plain != NULL && strict != NULL && (msg == NULL || merr.message[0] != '\0'))
    abort();
  json_decref(plain);
  json_decref(msg);
  json_decref(strict);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  compare(data, size);
  compare_message(data, size);
  return 0;
}

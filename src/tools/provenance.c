/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Where text that reaches the assistant came from. Documents, stored data
 * and external APIs may carry instructions aimed at the assistant: results
 * of get_file_text and execute_saved_query name their source in
 * structuredContent ("provenance"), and the text item of a document chunk
 * fences the document's text between markers that name the source and
 * carry a random tag, so that text inside cannot fake the end marker. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/internal.h"

#define FENCE_TAG_CHARS 12

/* The envelope (the result without its text, provenance included) and the
 * two markers with their URL take well under this. */
#define DOCUMENT_ENVELOPE 1024
#define URL_MAX 2048

size_t dg__tools_document_room(size_t budget) {
  size_t overhead = DOCUMENT_ENVELOPE + 3 * URL_MAX;
  return budget > overhead + 256 ? budget - overhead : 256;
}

void dg__tools_reply_document(dg_mcp_tool_call_t *call, json_t *result, const char *source,
                              const char *source_name) {
  if (result == NULL) {
    dg__tools_reply(call, NULL, "The document's text could not be returned");
    return;
  }
  json_t *offset = json_object_get(result, "offset");
  json_t *next = json_object_get(result, "nextOffset");
  json_int_t end = json_is_integer(next)
                       ? json_integer_value(next)
                       : json_integer_value(json_object_get(result, "totalChars"));
  json_object_set_new(result, "provenance",
                      json_pack("{s:s,s:s,s:s?,s:O,s:I,s:b}", "kind", "document", "source", source,
                                "sourceName", source_name, "offset", offset, "endOffset", end,
                                "untrusted", 1));
  /* The text item: the result without its text, then the fenced text. */
  json_t *text = json_incref(json_object_get(result, "text"));
  json_object_del(result, "text");
  char uuid[DG_UUID_LEN + 1], tag[FENCE_TAG_CHARS + 1];
  dg_uuid_v4(uuid);
  for (size_t i = 0, n = 0; n < FENCE_TAG_CHARS; i++) {
    if (uuid[i] != '-')
      tag[n++] = uuid[i];
  }
  tag[FENCE_TAG_CHARS] = '\0';
  dg_buf_t out;
  dg_buf_init(&out, dg_mcp_tool_call_result_limit(call) + 1);
  char *head = json_dumps(result, JSON_COMPACT);
  int rc = head != NULL ? dg_buf_appendf(&out,
                                         "%s\n-----BEGIN UNTRUSTED DOCUMENT TEXT %s from %s, "
                                         "characters %lld to %lld-----\n",
                                         head, tag, source, (long long)json_integer_value(offset),
                                         (long long)end)
                        : DG_ENOMEM;
  if (rc == 0)
    rc = dg_buf_append(&out, json_string_value(text), json_string_length(text));
  if (rc == 0)
    rc = dg_buf_appendf(&out, "\n-----END UNTRUSTED DOCUMENT TEXT %s-----", tag);
  free(head);
  json_object_set_new(result, "text", text);
  /* Over the limit: the plain result, which the MCP layer then refuses. */
  if (rc == 0)
    dg_mcp_tool_call_succeed_text(call, result, out.data, out.len);
  else
    dg__tools_reply(call, result, "The document's text could not be returned");
  dg_buf_free(&out);
}

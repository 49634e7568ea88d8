/* examples/server's request parsing: the first byte picks completions or chat, the rest is the
   body; its UTF-8 repair on the same bytes, which must give a string jansson accepts; and the
   same bytes read as a model's reply for tool calls in each format. */
#include "fuzz.h"
#include "../../examples/server_request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    request_limits limits = {512, 8};
    completion_request request;
    char error[512];
    if (parse_completion_request((const char *)data + 1, size - 1, data[0] & 1, &limits, &request, error, sizeof error) == 0) {
        if ((!request.prompt && !request.num_prompt_ids) || (request.prompt && request.num_prompt_ids) ||
            request.max_tokens < 1 || request.max_tokens > 512 || request.n < 1 || request.n > 8) abort();
        completion_request_free(&request);
    }
    for (int format = TOOL_FORMAT_HERMES; format <= TOOL_FORMAT_MISTRAL; format++) { /* the bytes as a model's reply */
        size_t content = 0;
        int begun = 0;
        json_decref(tool_calls_in_text((tool_format)format, (const char *)data, size, &content, 1));
        if (content > size || tool_text_ready((tool_format)format, (const char *)data, size, &begun) > size) abort();
    }
    json_t *text = json_text((const char *)data, size);
    if (!text) abort(); /* the repaired text must be valid UTF-8 */
    char *dumped = json_dumps(text, JSON_ENCODE_ANY);
    if (!dumped) abort();
    free(dumped);
    json_decref(text);
    return 0;
}

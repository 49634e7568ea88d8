/* A chat template (the fuzzed bytes) rendered on a fixed conversation: pf_apply_chat_template
   must refuse or render, within its limits on nesting, steps, memory and output. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const pf_chat_message messages[] = {
        {"system", "Be brief."}, {"user", "Hello \xc3\xa9 {{ x }}"}, {"assistant", " Hi! "}, {"user", ""}, {"tool", NULL}};
    char *template_text = (char *)malloc(size + 1), *text = NULL, error[256];
    if (!template_text) return 0;
    memcpy(template_text, data, size);
    template_text[size] = 0; /* a NUL inside ends the template early: fine */
    pf_chat_options options = pf_chat_options_init();
    options.chat_template = template_text;
    options.date = "2025-03-05 14:07:09";
    options.bos_token = "<s>";
    options.eos_token = "</s>";
    options.enable_thinking = (int)(size % 3) - 1; /* undefined, false or true, by the input's length */
    if (pf_apply_chat_template(NULL, messages, 5, &options, &text, error, sizeof error) == PF_OK) pf_string_free(text);
    free(template_text);
    return 0;
}

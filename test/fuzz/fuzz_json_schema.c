/* The JSON schema compiler (src/json_schema.c): a fuzzed schema through pf_json_constraint_new on
   a tiny model (gpt2-tiny, loaded once); a schema it accepts then drives a short greedy generation,
   so that the automaton it compiled also masks and advances over the vocabulary. Any pf_result is
   fine; a crash, a hang, a leak or a sanitizer report is a finding. */
#include "fuzz.h"

static pf_model *tiny_model(void) {
    static pf_model *model;
    if (!model) {
        pf_load_options options = pf_load_options_init();
        if (pf_load(FUZZ_FIXTURES "/gpt2-tiny", &options, &model) != PF_OK) abort();
    }
    return model;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    pf_model *model = tiny_model();
    char *schema = (char *)malloc(size + 1);
    pf_json_constraint *constraint = NULL;
    if (!schema) return 0;
    memcpy(schema, data, size);
    schema[size] = 0; /* a NUL inside ends the schema early: fine */
    if (pf_json_constraint_new(model, schema, &constraint) == PF_OK) {
        static const int32_t prompt[] = {1, 2, 3};
        const int32_t *prompts[1] = {prompt};
        int length = 3;
        pf_generate_options options = pf_generate_options_init();
        pf_generation result;
        memset(&result, 0, sizeof result);
        options.max_new_tokens = 6;
        options.json_constraint = constraint;
        if (pf_generate_batch(model, prompts, &length, 1, &options, &result) == PF_OK) pf_generation_free(&result);
        pf_json_constraint_free(constraint);
    }
    free(schema);
    return 0;
}

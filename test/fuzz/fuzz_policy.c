/* A policy's JSON (pf_register_policy_json). One that registers then loads the my-llama
   fixture's config and weights through it when its model_type is "my-llama" (mutations of
   test/fixtures/my-llama/policy.json mostly are), and is unregistered again. */
#include "fuzz.h"

/* The model_type just registered, from the refusal of registering it twice:
   policy "NAME": model_type "NAME" is registered already. */
static int registered_name(const uint8_t *data, size_t size, char *name, size_t cap) {
    static const char head[] = "policy \"", middle[] = "\": model_type \"", tail[] = "\" is registered already";
    char error[512];
    if (pf_register_policy_json((const char *)data, size, error, sizeof error) != PF_ERROR_INVALID_ARGUMENT) return 0;
    size_t len = strlen(error), fixed = sizeof head - 1 + sizeof middle - 1 + sizeof tail - 1;
    if (len < fixed || strncmp(error, head, sizeof head - 1) || strcmp(error + len - (sizeof tail - 1), tail)) return 0;
    size_t n = (len - fixed) / 2;
    if (n + 1 > cap) return 0;
    memcpy(name, error + sizeof head - 1, n);
    name[n] = 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char error[512], name[128];
    if (pf_register_policy_json((const char *)data, size, error, sizeof error) != PF_OK) return 0;
    if (!registered_name(data, size, name, sizeof name)) abort(); /* registered, yet not refused a second time */
    if (!strcmp(name, "my-llama")) {
        fuzz_link_fixture("my-llama", "config.json");
        fuzz_link_fixture("my-llama", "model.safetensors");
        fuzz_load(0);
    }
    if (pf_unregister_policy(name, error, sizeof error) != PF_OK) abort(); /* no model is left holding it */
    return 0;
}

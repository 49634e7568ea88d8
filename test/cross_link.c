/* A program that links the library for `make check-cross` (Windows x86-64 under mingw-w64): it
   loads the model directory it is given (a real load would map its files) and says what came of
   it, so that every symbol the library needs from the system (threads, file mappings, memory)
   must resolve. Not run here: there is no Windows to run it on. */
#include <stdio.h>

#include "../parallelformers.h"

int main(int argc, char **argv) {
    pf_model *model = NULL;
    pf_result r = pf_load(argc > 1 ? argv[1] : ".", NULL, &model);
    printf("parallelformers %s: %s\n", pf_version_string(), r ? pf_error_message(model) : "loaded");
    pf_free(model);
    return r ? 1 : 0;
}

/* The examples' readers (examples/media.c) on the same bytes: a binary PPM and a WAV file. Every
   pixel and sample they give is read, so that one past the input shows under AddressSanitizer. */
#include "fuzz.h"
#include "../../examples/media.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int width = 0, height = 0, count = 0, rate = 0;
    const char *why = NULL;
    const unsigned char *rgb = media_ppm_pixels(data, size, &width, &height);
    volatile unsigned sum = 0;
    for (size_t i = 0; rgb && i < (size_t)width * (size_t)height * 3; i++) sum += rgb[i];
    float *samples = media_wav_samples(data, size, &count, &rate, &why);
    volatile float total = 0;
    for (int i = 0; samples && i < count; i++) total += samples[i];
    if (!samples && !why) abort(); /* a refusal always says why */
    free(samples);
    return 0;
}

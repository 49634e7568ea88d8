/* media: the files the examples read; PPM and WAV from memory (media.h). */
#include "media.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

unsigned char *media_read_file(const char *path, size_t max_bytes, size_t *size) {
    FILE *f = fopen(path, "rb");
    unsigned char *data = NULL;
    size_t cap = 0, n = 0;
    if (!f) return NULL;
    for (;;) {
        if (n == cap) { /* grown as it comes: the size of a pipe or a special file is not known */
            size_t grown = cap ? 2 * cap : 65536;
            if (grown > max_bytes + 1) grown = max_bytes + 1; /* one byte more shows a file too large */
            unsigned char *p = cap > max_bytes ? NULL : (unsigned char *)realloc(data, grown);
            if (!p) {
                free(data);
                fclose(f);
                return NULL;
            }
            data = p, cap = grown;
        }
        size_t got = fread(data + n, 1, cap - n, f);
        n += got;
        if (got == 0) break;
    }
    fclose(f);
    if (n > max_bytes) {
        free(data);
        return NULL;
    }
    *size = n;
    return data;
}

char *media_read_text(const char *path, size_t max_bytes) {
    size_t size = 0;
    unsigned char *data = media_read_file(path, max_bytes, &size);
    unsigned char *text = data ? (unsigned char *)realloc(data, size + 1) : NULL;
    if (!text) {
        free(data);
        return NULL;
    }
    text[size] = 0;
    return (char *)text;
}

static int media_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

const unsigned char *media_ppm_pixels(const unsigned char *data, size_t size, int *width, int *height) {
    size_t at = 0;
    long fields[3];
    while (at < size && media_space(data[at])) at++;
    if (size - at < 2 || data[at] != 'P' || data[at + 1] != '6') return NULL;
    at += 2;
    for (int got = 0; got < 3;) { /* width, height, maxval: whitespace and comments between them */
        if (at == size) return NULL;
        if (data[at] == '#') {
            while (at < size && data[at] != '\n') at++;
        } else if (media_space(data[at])) {
            at++;
        } else if (data[at] >= '0' && data[at] <= '9') {
            long v = 0;
            while (at < size && data[at] >= '0' && data[at] <= '9' && v <= 1000000) v = v * 10 + (data[at++] - '0');
            if (v > 1000000) return NULL;
            fields[got++] = v;
        } else {
            return NULL;
        }
    }
    /* one whitespace byte ends the header; then the rows of RGB */
    if (at == size || !media_space(data[at]) || fields[2] != 255 || fields[0] < 1 || fields[1] < 1 || fields[0] > 32768 ||
        fields[1] > 32768)
        return NULL;
    at++;
    if ((size - at) / 3 / (size_t)fields[0] < (size_t)fields[1]) return NULL; /* fewer bytes than the pixels */
    *width = (int)fields[0], *height = (int)fields[1];
    return data + at;
}

static uint32_t media_le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint16_t media_le16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }

float *media_wav_samples(const unsigned char *file, size_t size, int *num_samples, int *rate, const char **why) {
    const unsigned char *data = NULL;
    size_t data_bytes = 0;
    int format = 0, channels = 0, bits = 0;
    float *samples = NULL;
    *why = "is not a RIFF/WAVE file";
    if (size < 12 || memcmp(file, "RIFF", 4) || memcmp(file + 8, "WAVE", 4)) return NULL;
    *why = "has no fmt and data chunks";
    for (size_t at = 12; at + 8 <= size;) {
        size_t chunk = media_le32(file + at + 4), body = at + 8;
        if (chunk > size - body) chunk = size - body; /* a data chunk cut short: what is there */
        if (!memcmp(file + at, "fmt ", 4) && chunk >= 16) {
            format = media_le16(file + body), channels = media_le16(file + body + 2), bits = media_le16(file + body + 14);
            *rate = (int)(media_le32(file + body + 4) & 0x7fffffff);
            if (format == 0xFFFE && chunk >= 26) format = media_le16(file + body + 24); /* extensible: its subformat */
        } else if (!memcmp(file + at, "data", 4)) {
            data = file + body;
            data_bytes = chunk;
        }
        at = body + chunk + (chunk & 1); /* chunks are padded to even sizes */
    }
    if (!data || !format) return NULL;
    int pcm16 = format == 1 && bits == 16, float32 = format == 3 && bits == 32;
    size_t width = pcm16 ? 2 : 4, count = data_bytes / width;
    if (channels != 1 || !(pcm16 || float32)) {
        *why = "is not mono 16-bit PCM or 32-bit float";
        return NULL;
    }
    if (count == 0 || count > 0x7fffffff) {
        *why = "has no samples (or too many)";
        return NULL;
    }
    if (!(samples = (float *)malloc(count * sizeof(float)))) {
        *why = "is too large for memory";
        return NULL;
    }
    for (size_t i = 0; i < count; i++) {
        const unsigned char *p = data + i * width;
        if (pcm16) {
            samples[i] = (float)(int16_t)media_le16(p) / 32768.0f;
        } else {
            uint32_t bitsv = media_le32(p);
            memcpy(&samples[i], &bitsv, sizeof bitsv);
        }
    }
    *num_samples = (int)count;
    return samples;
}

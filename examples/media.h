/* media: the files the examples read: whole files and texts (prompts, batch files), and the image
   and audio files (binary PPM for classify_image, mono PCM WAV for transcribe), parsed from
   memory. Kept apart from the examples so that a fuzz target (test/fuzz/fuzz_media.c) can feed the
   parsers arbitrary bytes. */
#ifndef MEDIA_H
#define MEDIA_H

#include <stddef.h>

/* Larger files than this are refused rather than read into memory (about 5.5 hours of 16 kHz
   16-bit audio; a PPM of 18,000 x 18,000 pixels). */
#define MEDIA_MAX_FILE_BYTES ((size_t)1 << 30)

/* The whole file (malloc'd) and its size, or NULL: unreadable, or more than max_bytes. */
unsigned char *media_read_file(const char *path, size_t max_bytes, size_t *size);

/* The whole file as a NUL-terminated string (malloc'd), or NULL: unreadable, or more than
   max_bytes. A NUL byte inside ends the text where C reads it. */
char *media_read_text(const char *path, size_t max_bytes);

/* A binary PPM (P6, maxval 255; comments allowed between the header's fields, sides 1 .. 32768):
   a pointer into data at its width x height x 3 bytes of RGB, which the data must hold; NULL when
   it is not one we read. */
const unsigned char *media_ppm_pixels(const unsigned char *data, size_t size, int *width, int *height);

/* The samples of a mono PCM WAV file (16-bit integers or 32-bit floats) as floats, 16-bit ones
   scaled to [-1, 1] (malloc'd), its sample rate into *rate; NULL with *why set (a phrase that
   follows the file's name). Every chunk's size is checked against the bytes left before it is
   read; a data chunk cut short gives the samples there are. */
float *media_wav_samples(const unsigned char *data, size_t size, int *num_samples, int *rate, const char **why);

#endif

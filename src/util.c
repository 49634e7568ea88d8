#include "internal.h"
/* =============================================================================================== */
/* utilities and errors                                                                            */
/* =============================================================================================== */

const char *pf_result_string(pf_result result) {
    switch (result) {
    case PF_OK: return "ok";
    case PF_ERROR_INVALID_ARGUMENT: return "invalid argument";
    case PF_ERROR_IO: return "I/O error";
    case PF_ERROR_FORMAT: return "malformed file";
    case PF_ERROR_UNSUPPORTED: return "unsupported";
    case PF_ERROR_OUT_OF_MEMORY: return "out of memory";
    case PF_ERROR_DEVICE: return "device error";
    case PF_ERROR_BUFFER_TOO_SMALL: return "buffer too small";
    case PF_ERROR_BUSY: return "busy";
    case PF_ERROR_CANCELLED: return "cancelled";
    }
    return "unknown result";
}

/* The message of the calling thread's last failure, and the model it concerns. */
PF_PRIVATE PF__THREAD_LOCAL const void *pf__error_model;
PF_PRIVATE PF__THREAD_LOCAL char pf__error_text[PF__MESSAGE_SIZE];
PF_PRIVATE PF__THREAD_LOCAL const void *pf__lock_holder; /* the model whose request lock this thread holds */

/* The buffer a failure on `model` is written into (cleared). */
PF_PRIVATE char *pf__error_buffer(const void *model) {
    pf__error_model = model;
    pf__error_text[0] = 0;
    return pf__error_text;
}

/* snprintf into a message buffer, returning the code so callers can `return pf__error(...)`. */
PF_PRIVATE pf_result pf__format(char *message, size_t size, pf_result code, const char *fmt, ...) {
    if (message && size) {
        va_list args;
        va_start(args, fmt);
        vsnprintf(message, size, fmt, args);
        va_end(args);
    }
    return code;
}

PF_PRIVATE int pf__path_join(char *out, size_t cap, const char *dir, const char *name) {
    int n = snprintf(out, cap, "%s/%s", dir, name);
    return (n < 0 || (size_t)n >= cap) ? -1 : 0;
}

/* Whether something is at path, of any type: a FIFO or a device where a file should be is then
   refused by pf__open_regular with a message saying what it is, rather than taken as missing. */
PF_PRIVATE int pf__file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* Opens path for reading if it is a regular file, *fd and its size out. O_NONBLOCK so that
   opening a FIFO does not wait for a writer that never comes; fstat then refuses FIFOs, devices
   (/dev/zero never ends) and directories; reads block again afterwards. */
PF_PRIVATE pf_result pf__open_regular(const char *path, int *fd, size_t *file_size, char *message, size_t size) {
    *fd = -1;
    *file_size = 0;
#ifdef _WIN32 /* no FIFOs to wait on; bytes as they are (no text mode), not inherited */
    int f = open(path, O_RDONLY | O_BINARY | O_NOINHERIT);
#else
    int f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
#endif
    if (f < 0) return pf__format(message, size, PF_ERROR_IO, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(f, &st) != 0) {
        pf_result r = pf__format(message, size, PF_ERROR_IO, "%s: %s", path, strerror(errno));
        close(f);
        return r;
    }
    if (!S_ISREG(st.st_mode)) {
        const char *kind = S_ISFIFO(st.st_mode)  ? "a FIFO"
                           : S_ISCHR(st.st_mode) ? "a character device"
                           : S_ISBLK(st.st_mode) ? "a block device"
                           : S_ISDIR(st.st_mode) ? "a directory"
                                                 : "a special file";
        close(f);
        return pf__format(message, size, PF_ERROR_IO, "%s: not a regular file (%s)", path, kind);
    }
#ifndef _WIN32
    int flags = fcntl(f, F_GETFL);
    if (flags < 0 || fcntl(f, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        pf_result r = pf__format(message, size, PF_ERROR_IO, "%s: %s", path, strerror(errno));
        close(f);
        return r;
    }
#endif
    *fd = f;
    *file_size = (size_t)st.st_size;
    return PF_OK;
}

/* Reads a whole regular file of at most max_bytes into *data (NUL-terminated; free it); on failure
   writes "FILE: what" into message. The bound also holds for a file that grows while read. */
PF_PRIVATE pf_result pf__read_file(const char *path, size_t max_bytes, char **data, size_t *len, char *message, size_t size) {
    int fd;
    size_t file_size, used = 0;
    *data = NULL;
    *len = 0;
    pf_result r = pf__open_regular(path, &fd, &file_size, message, size);
    if (r) return r;
    if (file_size > max_bytes) {
        close(fd);
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: %zu bytes, more than the %zu such a file may hold", path,
                          file_size, max_bytes);
    }
    size_t cap = file_size + 4096 < max_bytes + 1 ? file_size + 4096 : max_bytes + 1; /* room to see the end */
    char *buf = (char *)malloc(cap + 1);
    if (!buf) {
        close(fd);
        return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    for (;;) {
        if (used == cap) { /* the file grew: read on, up to one byte past the bound */
            size_t grown_cap = cap * 2 < max_bytes + 1 ? cap * 2 : max_bytes + 1;
            char *grown = grown_cap > cap ? (char *)realloc(buf, grown_cap + 1) : NULL;
            if (!grown) {
                r = grown_cap > cap ? pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "%s: out of memory", path)
                                    : pf__format(message, size, PF_ERROR_FORMAT, "%s: more than the %zu bytes such a file may hold",
                                                 path, max_bytes);
                break;
            }
            buf = grown;
            cap = grown_cap;
        }
        ssize_t got = read(fd, buf + used, cap - used);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            r = pf__format(message, size, PF_ERROR_IO, "%s: %s", path, strerror(errno));
            break;
        }
        if (got == 0) break;
        used += (size_t)got;
    }
    close(fd);
    if (r) {
        free(buf);
        return r;
    }
    buf[used] = 0;
    *data = buf;
    *len = used;
    return PF_OK;
}

/* Overflow-checked size arithmetic for anything derived from a file. */
PF_PRIVATE int pf__mul_size(size_t a, size_t b, size_t *out) {
    if (a && b > SIZE_MAX / a) return -1;
    *out = a * b;
    return 0;
}

/* ---- fp16 / bf16 conversions (storage formats; compute is fp32 on the CPU) ---- */

PF_PRIVATE float pf__f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
    if (exp == 0) {
        if (mant == 0) {
            bits = sign;
        } else { /* subnormal: renormalise */
            exp = 127 - 15 + 1;
            while (!(mant & 0x400)) {
                mant <<= 1;
                exp--;
            }
            bits = sign | (exp << 23) | ((mant & 0x3ff) << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7f800000u | (mant << 13);
    } else {
        bits = sign | ((exp - 15 + 127) << 23) | (mant << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

PF_PRIVATE float pf__bf16_to_f32(uint16_t b) {
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* Round to nearest even, as torch's .half() and .bfloat16() do. */
PF_PRIVATE uint16_t pf__f32_to_f16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    uint32_t sign = (x >> 16) & 0x8000, abs = x & 0x7fffffff;
    if (abs >= 0x7f800000) return (uint16_t)(sign | 0x7c00 | (abs > 0x7f800000 ? 0x200 : 0)); /* inf, nan */
    if (abs >= 0x477ff000) return (uint16_t)(sign | 0x7c00);                                  /* overflow */
    if (abs < 0x38800000) { /* subnormal or zero in fp16: scale into integer units of 2^-24 */
        float a;
        memcpy(&a, &abs, 4);
        return (uint16_t)(sign | (uint32_t)lrintf(a * 16777216.0f));
    }
    uint32_t mant = abs + 0xfff + ((abs >> 13) & 1); /* round the 13 dropped bits to even */
    return (uint16_t)(sign | ((mant - 0x38000000) >> 13));
}

PF_PRIVATE uint16_t pf__f32_to_bf16(float f) {
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 0x40); /* quiet nan */
    return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}


/* The processor cores the system has online (at least 1). */
PF_PRIVATE int pf__online_cpus(void) {
#ifdef _WIN32
    SYSTEM_INFO info;
    GetSystemInfo(&info);
    return info.dwNumberOfProcessors > 0 ? (int)info.dwNumberOfProcessors : 1;
#else
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > INT_MAX ? INT_MAX : (int)n;
#endif
}

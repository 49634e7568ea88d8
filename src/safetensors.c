#include "internal.h"
/* =============================================================================================== */
/* safetensors (memory-mapped)                                                                     */
/* =============================================================================================== */

/* A header larger than this is a lie or an attack; real checkpoints stay far below it. */
#define PF__MAX_HEADER (100u * 1024 * 1024)

PF_PRIVATE size_t pf__dtype_size(pf__dtype t) { return t == PF__DTYPE_F32 ? 4 : 2; }

/* A Q8 or Q4 block's scale (its first two bytes, fp16). */
PF_PRIVATE float pf__q8_scale(const unsigned char *block) {
    uint16_t d;
    memcpy(&d, block, 2);
    return pf__f16_to_f32(d);
}

/* Bytes of a [rows][cols] weight stored as t (Q8: cols a multiple of PF__Q8_BLOCK). */
PF_PRIVATE size_t pf__weight_bytes(pf__dtype t, size_t rows, size_t cols) {
    if (PF__BLOCKED(t)) return rows * (cols / pf__block_values(t)) * pf__block_bytes(t);
    return rows * cols * pf__dtype_size(t);
}

/* A file's modification time, to the nanosecond where the system keeps it. */
static void pf__file_mtime(const struct stat *st, long long *seconds, long long *nanoseconds) {
    *seconds = (long long)st->st_mtime;
#if defined(__APPLE__)
    *nanoseconds = (long long)st->st_mtimespec.tv_nsec;
#elif defined(__linux__) || defined(__FreeBSD__) || defined(__NetBSD__) || defined(__OpenBSD__)
    *nanoseconds = (long long)st->st_mtim.tv_nsec;
#else
    *nanoseconds = 0;
#endif
}

/* A read-only private view of a file's first `bytes` (NULL with errno set on failure), and its end:
   mmap, or on Windows a file mapping's view (the view keeps the mapping object alive). */
static const void *pf__map_view(int fd, size_t bytes) {
#ifdef _WIN32
    HANDLE mapping = CreateFileMappingA((HANDLE)_get_osfhandle(fd), NULL, PAGE_READONLY, 0, 0, NULL);
    void *p = mapping ? MapViewOfFile(mapping, FILE_MAP_READ, 0, 0, bytes) : NULL;
    if (!p) errno = GetLastError() == ERROR_NOT_ENOUGH_MEMORY ? ENOMEM : EIO;
    if (mapping) CloseHandle(mapping);
    return p;
#else
    void *p = mmap(NULL, bytes, PROT_READ, MAP_PRIVATE, fd, 0);
    return p == MAP_FAILED ? NULL : p;
#endif
}

static void pf__unmap_view(const void *p, size_t bytes) {
#ifdef _WIN32
    (void)bytes;
    UnmapViewOfFile(p);
#else
    munmap((void *)p, bytes);
#endif
}

/* Maps path read-only and keeps its descriptor, so that a later split can tell whether the file
   was truncated (reading the map past its end raises SIGBUS) or rewritten in place (the map would
   show the new bytes) since: pf__maps_unchanged. */
PF_PRIVATE pf_result pf__map_file(const char *path, pf__file_map *map, char *message, size_t size) {
    memset(map, 0, sizeof *map);
    map->fd = -1;
    int fd;
    pf_result r = pf__open_regular(path, &fd, &map->size, message, size);
    if (r) return r;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        r = pf__format(message, size, PF_ERROR_IO, "%s: %s", path, strerror(errno));
        close(fd);
        return r;
    }
    pf__file_mtime(&st, &map->mtime_s, &map->mtime_ns);
    if (map->size > 0) {
        const void *p = pf__map_view(fd, map->size);
        if (!p) {
            close(fd);
            return pf__format(message, size, PF_ERROR_IO, "%s: mmap: %s", path, strerror(errno));
        }
        map->data = (const uint8_t *)p;
    }
    map->fd = fd;
    map->path = strdup(path);
    if (!map->path) {
        if (map->data) pf__unmap_view(map->data, map->size);
        close(fd);
        map->data = NULL;
        map->fd = -1;
        return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    return PF_OK;
}

PF_PRIVATE void pf__unmap_file(pf__file_map *map) {
    if (map->data) pf__unmap_view(map->data, map->size);
    if (map->fd >= 0) close(map->fd);
    free(map->path);
    memset(map, 0, sizeof *map);
    map->fd = -1;
}

/* PF_ERROR_IO when a mapped file's size or modification time is not what it was at pf_load: the
   weights a split would read are gone (truncated) or not the ones loaded (rewritten in place).
   A file replaced by a new one (renamed over it) keeps its old contents in the map: no error. */
PF_PRIVATE pf_result pf__maps_unchanged(const pf__st_index *index, char *message, size_t size) {
    for (int i = 0; i < index->num_files; i++) {
        const pf__file_map *map = &index->files[i];
        struct stat st;
        if (map->fd < 0) continue;
        if (fstat(map->fd, &st) != 0)
            return pf__format(message, size, PF_ERROR_IO, "%s: %s", map->path, strerror(errno));
        long long seconds, nanoseconds;
        pf__file_mtime(&st, &seconds, &nanoseconds);
        if ((size_t)st.st_size != map->size)
            return pf__format(message, size, PF_ERROR_IO,
                              "%s changed since pf_load (%zu bytes then, %lld now): load the model again", map->path,
                              map->size, (long long)st.st_size);
        if (seconds != map->mtime_s || nanoseconds != map->mtime_ns)
            return pf__format(message, size, PF_ERROR_IO,
                              "%s was modified since pf_load: load the model again", map->path);
    }
    return PF_OK;
}

/* Keeps p (malloc'd) until the index closes; -1 when out of memory (p is then freed). */
PF_PRIVATE int pf__st_own(pf__st_index *index, void *p) {
    void **grown = (void **)realloc(index->owned, (index->num_owned + 1) * sizeof *grown);
    if (!grown) {
        free(p);
        return -1;
    }
    index->owned = grown;
    index->owned[index->num_owned++] = p;
    return 0;
}

/* Bytes per element of a safetensors dtype we read (plain, or in a quantized checkpoint: see
   src/quantized.c); 0 for the others, whose tensors are refused where a slot needs them. */
PF_PRIVATE size_t pf__st_file_dtype_size(const char *dtype) {
    static const struct { const char *name; size_t size; } sizes[] = {
        {"F32", 4}, {"F16", 2}, {"BF16", 2}, {"I32", 4}, {"U8", 1}, {"F8_E4M3", 1}, {"F8_E8M0", 1},
        {"I8", 1}, {"I64", 8}, /* compressed-tensors' naive int8 weights and weight_shape */
    };
    for (size_t i = 0; i < PF__COUNT(sizes); i++)
        if (!strcmp(dtype, sizes[i].name)) return sizes[i].size;
    return 0;
}

PF_PRIVATE int pf__tensor_cmp(const void *a, const void *b) {
    return strcmp(((const pf__st_tensor *)a)->name, ((const pf__st_tensor *)b)->name);
}

static int pf__tensor_offset_cmp(const void *a, const void *b) {
    const pf__st_tensor *x = *(const pf__st_tensor *const *)a, *y = *(const pf__st_tensor *const *)b;
    return x->data < y->data ? -1 : x->data > y->data;
}

/* Reads one file's header and appends its tensors, validating every field against the file:
   header length, JSON, dtype, shape, offsets inside the data section, size = dtype x shape,
   no two tensors overlapping. */
static pf_result pf__st_read_header(pf__st_index *index, int file_index, char *message, size_t size) {
    const pf__file_map *map = &index->files[file_index];
    const char *path = map->path;
    if (map->size < 8)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: too short for a safetensors header (%zu bytes)", path, map->size);
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; i--) header_len = (header_len << 8) | map->data[i];
    if (header_len > map->size - 8 || header_len > PF__MAX_HEADER)
        return pf__format(message, size, PF_ERROR_FORMAT,
                          "%s: header length %llu runs past the end of the file (%zu bytes)", path,
                          (unsigned long long)header_len, map->size);
    char err[256];
    pf__json *header = pf__json_parse((const char *)map->data + 8, (size_t)header_len, err, sizeof err);
    if (!header) return pf__format(message, size, PF_ERROR_FORMAT, "%s: header JSON: %s", path, err);
    index->headers[file_index] = header;
    if (header->type != PF__JSON_OBJECT)
        return pf__format(message, size, PF_ERROR_FORMAT, "%s: header is not a JSON object", path);

    const uint8_t *data_start = map->data + 8 + header_len;
    size_t data_size = map->size - 8 - (size_t)header_len;
    pf__st_tensor *grown = (pf__st_tensor *)realloc(index->tensors, (index->num_tensors + header->count) * sizeof(pf__st_tensor));
    if (!grown) return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    index->tensors = grown;
    size_t first = index->num_tensors;

    for (const pf__json *e = header->first; e; e = e->next) {
        if (strcmp(e->key, "__metadata__") == 0) continue;
        const char *name = e->key;
        const pf__json *dtype = pf__json_get(e, "dtype"), *shape = pf__json_get(e, "shape"),
                       *offsets = pf__json_get(e, "data_offsets");
        if (!dtype || dtype->type != PF__JSON_STRING || !shape || shape->type != PF__JSON_ARRAY ||
            !offsets || offsets->type != PF__JSON_ARRAY || offsets->count != 2)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%s' lacks dtype, shape or data_offsets", path, name);
        pf__st_tensor t;
        memset(&t, 0, sizeof t);
        t.name = name;
        t.file = map;
        if (strcmp(dtype->string, "F32") == 0) t.dtype = PF__DTYPE_F32;
        else if (strcmp(dtype->string, "F16") == 0) t.dtype = PF__DTYPE_F16;
        else if (strcmp(dtype->string, "BF16") == 0) t.dtype = PF__DTYPE_BF16;
        else t.dtype = PF__DTYPE_OTHER; /* fine unless the model needs it: checked at use */
        if (shape->count > PF__MAX_DIMS)
            return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%s' has %zu dimensions", path, name, shape->count);
        t.numel = 1;
        for (const pf__json *d = shape->first; d; d = d->next) {
            if (d->type != PF__JSON_NUMBER || d->number < 0 || d->number != floor(d->number) || d->number > 1e15 ||
                pf__mul_size(t.numel, (size_t)d->number, &t.numel))
                return pf__format(message, size, PF_ERROR_FORMAT, "%s: tensor '%s' has a bad shape", path, name);
            t.shape[t.ndim++] = (size_t)d->number;
        }
        const pf__json *b = offsets->first, *en = b->next;
        if (b->type != PF__JSON_NUMBER || en->type != PF__JSON_NUMBER || b->number < 0 ||
            en->number < b->number || b->number != floor(b->number) || en->number != floor(en->number) ||
            en->number > (double)data_size)
            return pf__format(message, size, PF_ERROR_FORMAT,
                              "%s: tensor '%s' has data_offsets outside the data section (%zu bytes)", path, name, data_size);
        t.data = data_start + (size_t)b->number;
        t.bytes = (size_t)en->number - (size_t)b->number;
        t.file_dtype = dtype->string;
        size_t element = pf__st_file_dtype_size(dtype->string);
        if (element) {
            size_t expect = 0;
            if (pf__mul_size(t.numel, element, &expect) || expect != t.bytes)
                return pf__format(message, size, PF_ERROR_FORMAT,
                                  "%s: tensor '%s' holds %zu bytes but %s x its shape needs %zu", path, name,
                                  t.bytes, dtype->string, expect);
        }
        index->tensors[index->num_tensors++] = t;
    }

    /* No overlap: sort this file's tensors by offset and compare neighbours. */
    size_t n = index->num_tensors - first;
    if (n > 1) {
        const pf__st_tensor **order = (const pf__st_tensor **)malloc(n * sizeof *order);
        if (!order) return pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        for (size_t i = 0; i < n; i++) order[i] = &index->tensors[first + i];
        qsort(order, n, sizeof *order, pf__tensor_offset_cmp);
        for (size_t i = 1; i < n; i++) {
            if (order[i - 1]->data + order[i - 1]->bytes > order[i]->data) {
                pf_result r = pf__format(message, size, PF_ERROR_FORMAT, "%s: tensors '%s' and '%s' overlap",
                                         path, order[i - 1]->name, order[i]->name);
                free(order);
                return r;
            }
        }
        free(order);
    }
    return PF_OK;
}

PF_PRIVATE void pf__st_close(pf__st_index *index) {
    for (int i = 0; i < index->num_files; i++) {
        pf__unmap_file(&index->files[i]);
        if (index->headers) pf__json_free(index->headers[i]);
    }
    for (size_t i = 0; i < index->num_owned; i++) free(index->owned[i]);
    free(index->owned);
    free(index->files);
    free(index->headers);
    free(index->tensors);
    memset(index, 0, sizeof *index);
}

PF_PRIVATE const pf__st_tensor *pf__st_find(const pf__st_index *index, const char *name) {
    pf__st_tensor key;
    key.name = name;
    return (const pf__st_tensor *)bsearch(&key, index->tensors, index->num_tensors, sizeof key, pf__tensor_cmp);
}

/* pf__st_find, marking the tensor as consumed. */
PF_PRIVATE const pf__st_tensor *pf__st_take(pf__st_index *index, const char *name) {
    pf__st_tensor *t = (pf__st_tensor *)pf__st_find(index, name);
    if (t) t->used = 1;
    return t;
}

/* Without model.safetensors: a directory holding weights in another format gets a message that
   says which, and how to convert. PyTorch pickles are not read: unpickling runs code from the file,
   and a reader restricted to tensor storages would be a second parser to keep safe for a format the
   hub has replaced (nearly every checkpoint there has safetensors). */
static pf_result pf__st_other_formats(const char *dir, const char *class_name, char *message, size_t size) {
    static const struct { const char *file, *format; } others[] = {
        {"pytorch_model.bin", "a PyTorch pickle"}, {"pytorch_model.bin.index.json", "sharded PyTorch pickles"},
        {"model.pt", "a PyTorch pickle"}, {"tf_model.h5", "TensorFlow HDF5"}, {"flax_model.msgpack", "Flax msgpack"},
    };
    char path[PF__PATH_SIZE];
    if (pf__path_join(path, sizeof path, dir, "model.safetensors") == 0 && pf__file_exists(path)) return PF_OK;
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        if (pf__path_join(path, sizeof path, dir, others[i].file) == 0 && pf__file_exists(path))
            return pf__format(message, size, PF_ERROR_UNSUPPORTED,
                              "%s holds %s (%s), which parallelformers does not read; it reads safetensors. Convert "
                              "once with transformers: python -c \"import transformers as t; "
                              "t.%s.from_pretrained('%s').save_pretrained('%s')\" (writes model.safetensors)",
                              dir, others[i].file, others[i].format, class_name && *class_name ? class_name : "AutoModel",
                              dir, dir);
    return PF_OK;
}

/* Opens model.safetensors, or the shards listed by model.safetensors.index.json; class_name (or
   NULL) is the transformers class a hint to convert other formats names. */
PF_PRIVATE pf_result pf__st_open(const char *dir, const char *class_name, pf__st_index *index, char *message, size_t size) {
    memset(index, 0, sizeof *index);
    char path[PF__PATH_SIZE];
    const char **names = NULL; /* distinct shard file names */
    int num_names = 0;
    pf__json *json_index = NULL;
    pf_result r = PF_OK;
    const char *single = "model.safetensors";

    if (pf__path_join(path, sizeof path, dir, "model.safetensors.index.json"))
        return pf__format(message, size, PF_ERROR_INVALID_ARGUMENT, "path too long: %s", dir);
    if (pf__file_exists(path)) {
        if ((r = pf__json_load(path, &json_index, message, size))) return r;
        const pf__json *map = pf__json_get(json_index, "weight_map");
        if (!map || map->type != PF__JSON_OBJECT || map->count == 0) {
            r = pf__format(message, size, PF_ERROR_FORMAT, "%s: no weight_map object", path);
            goto done;
        }
        names = (const char **)calloc(map->count, sizeof *names);
        if (!names) {
            r = pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
            goto done;
        }
        for (const pf__json *e = map->first; e; e = e->next) {
            if (e->type != PF__JSON_STRING || strchr(e->string, '/') || strcmp(e->string, "..") == 0) {
                r = pf__format(message, size, PF_ERROR_FORMAT, "%s: bad file name for tensor '%s'", path, e->key);
                goto done;
            }
            int seen = 0;
            for (int i = 0; i < num_names && !seen; i++) seen = strcmp(names[i], e->string) == 0;
            if (!seen) names[num_names++] = e->string;
        }
    } else {
        if ((r = pf__st_other_formats(dir, class_name, message, size))) return r;
        names = &single;
        num_names = 1;
    }

    index->files = (pf__file_map *)calloc((size_t)num_names, sizeof *index->files);
    index->headers = (pf__json **)calloc((size_t)num_names, sizeof *index->headers);
    if (!index->files || !index->headers) {
        r = pf__format(message, size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (int i = 0; i < num_names; i++) {
        if (pf__path_join(path, sizeof path, dir, names[i])) {
            r = pf__format(message, size, PF_ERROR_INVALID_ARGUMENT, "path too long: %s", dir);
            goto done;
        }
        if ((r = pf__map_file(path, &index->files[i], message, size))) goto done;
        index->num_files = i + 1;
        if ((r = pf__st_read_header(index, i, message, size))) goto done;
    }
    qsort(index->tensors, index->num_tensors, sizeof *index->tensors, pf__tensor_cmp);
    for (size_t i = 1; i < index->num_tensors; i++)
        if (strcmp(index->tensors[i - 1].name, index->tensors[i].name) == 0) {
            r = pf__format(message, size, PF_ERROR_FORMAT, "tensor '%s' appears twice (in %s and %s)",
                           index->tensors[i].name, index->tensors[i - 1].file->path, index->tensors[i].file->path);
            goto done;
        }
    /* A sharded index that names a tensor missing from its file is lying. */
    if (json_index) {
        const pf__json *map = pf__json_get(json_index, "weight_map");
        for (const pf__json *e = map->first; e; e = e->next) {
            const pf__st_tensor *t = pf__st_find(index, e->key);
            const char *base = t ? strrchr(t->file->path, '/') : NULL;
            if (!t || strcmp(base ? base + 1 : t->file->path, e->string) != 0) {
                r = pf__format(message, size, PF_ERROR_FORMAT, "model.safetensors.index.json names tensor '%s' in %s, which does not hold it",
                               e->key, e->string);
                goto done;
            }
        }
    }
done:
    if (names != &single) free(names);
    pf__json_free(json_index);
    if (r) pf__st_close(index);
    return r;
}


/* trainprof.trace._scan: Kineto events (one `[ev, ev, ...]` batch of JSON) into fixed records.
 *
 * Why C: the pure-Python reader spends ~1.8 us per event turning msgspec-decoded objects into
 * numpy columns (decode ~0.6 us, ~25 C-level passes over the objects, freeing them). This
 * scanner reads the JSON once and writes one fixed 264-byte record per event, which numpy
 * views as a structured array (scanned.py, ScanBuilder): no Python object per event.
 *
 * It accepts a deliberately NARROW grammar: strict JSON (RFC 8259), every known field of the
 * schema (schema.py: Event, Args) with exactly the types msgspec accepts there without lax
 * coercion (one lax form excepted: a plain integer in quotes for an int field, as ROCm writes
 * args.bytes), no duplicate known keys, ints within int64, nesting under MAX_DEPTH. Anything else
 * (a numeric string where a number is expected, a float in an int field, a lone surrogate anywhere, a
 * control character, a truncated batch...) makes scan() return False and leaves the records
 * as they were; the reader then asks msgspec what the batch holds and, for anything but a
 * wrong cut, reads the whole file with the pure-Python path (reader.py). So this file never
 * has to reproduce msgspec's error messages or its lax conversions, only its accepted values.
 *
 * Strings are not turned into Python objects per event: each distinct raw spelling gets a
 * local id (a hash table here), and its str is made once, on first sight, appended to
 * `strings` (index 0 is None: an absent or null string; 1..5 are "", "X", "s", "t", "f").
 * Raw JSON values of the shape fields ("Input Dims", ...) are kept as bytes in `values`,
 * keyed by their exact bytes, as the Python path interns msgspec.Raw slices.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define MAX_DEPTH 200 /* deeper values are left to msgspec (reader.py reports "nested too deep") */

/* ----------------------------------------------------------------------- the record */
enum { F_TS, F_DUR, F_OCCUPANCY, F_BANDWIDTH, N_F64 };
enum {
    I_PID, I_TID, I_ID, I_CORRELATION, I_EXTERNAL_ID, I_EXTERNAL_ID_LEGACY, I_STREAM, I_DEVICE,
    I_PYTHON_ID, I_PYTHON_PARENT_ID, I_EV_IDX, I_IN_NELEMS, I_OUT_NELEMS, I_GROUP_SIZE, I_BYTES,
    I_SHARED_MEMORY, I_REGISTERS, I_SEQ, N_I64
};
enum {
    S_PH, S_CAT, S_NAME, S_COLLECTIVE, S_PROCESS_GROUP, S_DTYPE, S_PID, S_TID, S_ID, S_STREAM,
    S_DEVICE, V_DIMS, V_TYPES, V_STRIDES, V_CONCRETE, V_DIMS_LEGACY, G_GRID, G_GRID1, G_GRID2,
    G_BLOCK, G_BLOCK1, G_BLOCK2, N_I32
};
/* The names, in this order, are the numpy dtype columns.py builds (checked at import). */
static const char *F64_NAMES[N_F64] = {"ts", "dur", "occupancy_pct", "bandwidth_gbs"};
static const char *I64_NAMES[N_I64] = {
    "pid", "tid", "id", "correlation", "external_id", "external_id_legacy", "stream", "device",
    "python_id", "python_parent_id", "ev_idx", "in_nelems", "out_nelems", "group_size", "bytes",
    "shared_memory", "registers_per_thread", "seq"};
static const char *I32_NAMES[N_I32] = {
    "ph", "cat", "name", "collective", "process_group", "dtype", "pid_s", "tid_s", "id_s",
    "stream_s", "device_s", "dims", "types", "strides", "concrete", "dims_legacy", "grid0",
    "grid1", "grid2", "block0", "block1", "block2"};

typedef struct {
    double f[N_F64];
    int64_t i[N_I64];
    int32_t s[N_I32];
} Rec;
_Static_assert(sizeof(Rec) == 8 * N_F64 + 8 * N_I64 + 4 * N_I32, "no padding: numpy's packed dtype matches");

#define ID_NONE 0
#define ID_EMPTY 1

/* ----------------------------------------------------------------------- growing arrays */
/* buf (item bytes each, *cap of them) reallocated to hold at least `need`: twice the capacity
 * plus `extra`. NULL with MemoryError set, buf and *cap untouched. The one growth rule of the
 * string arena, the record buffers and the phase ids. */
static void *grow(void *buf, Py_ssize_t *cap, Py_ssize_t need, size_t item, Py_ssize_t extra) {
    Py_ssize_t c = *cap * 2 + extra;
    if (c < need) c = need;
    void *m = PyMem_Realloc(buf, (size_t)c * item);
    if (!m) { PyErr_NoMemory(); return NULL; }
    *cap = c;
    return m;
}

/* ----------------------------------------------------------------------- intern table */
typedef struct {
    uint64_t *hash;    /* 0 = empty slot */
    int32_t *id;       /* local id of the slot */
    Py_ssize_t *start; /* key bytes in arena */
    Py_ssize_t *len;
    Py_ssize_t cap, used;
    char *arena;
    Py_ssize_t arena_len, arena_cap;
    PyObject *objects; /* list: id -> str / bytes / None */
} Table;

/* Eight bytes a step, then a finaliser (murmur3's): kernel names run to hundreds of bytes,
 * and byte-at-a-time FNV-1a was 8.5M of the scanner's 223M instructions on 40 batches of the
 * 200 MB synthetic trace (callgrind). Ids do not depend on the hash (first seen, first id). */
static uint64_t hash_bytes(const char *p, Py_ssize_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n;
    for (; n >= 8; p += 8, n -= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
    }
    if (n) {
        uint64_t w = 0;
        memcpy(&w, p, (size_t)n);
        h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
    }
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h | 1;
}

static int table_init(Table *t) {
    memset(t, 0, sizeof(*t));
    t->cap = 1024;
    t->hash = PyMem_Calloc(t->cap, sizeof(uint64_t));
    t->id = PyMem_Malloc(t->cap * sizeof(int32_t));
    t->start = PyMem_Malloc(t->cap * sizeof(Py_ssize_t));
    t->len = PyMem_Malloc(t->cap * sizeof(Py_ssize_t));
    t->objects = PyList_New(0);
    t->arena_cap = 4096; /* never NULL: memcpy/memcmp of 0 bytes still want a valid pointer */
    t->arena = PyMem_Malloc(t->arena_cap);
    if (!t->hash || !t->id || !t->start || !t->len || !t->objects || !t->arena) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

static void table_free(Table *t) {
    PyMem_Free(t->hash);
    PyMem_Free(t->id);
    PyMem_Free(t->start);
    PyMem_Free(t->len);
    PyMem_Free(t->arena);
    Py_CLEAR(t->objects);
}

static int table_grow(Table *t) {
    Py_ssize_t cap = t->cap * 2;
    uint64_t *hash = PyMem_Calloc(cap, sizeof(uint64_t));
    int32_t *id = PyMem_Malloc(cap * sizeof(int32_t));
    Py_ssize_t *start = PyMem_Malloc(cap * sizeof(Py_ssize_t));
    Py_ssize_t *len = PyMem_Malloc(cap * sizeof(Py_ssize_t));
    if (!hash || !id || !start || !len) {
        PyMem_Free(hash); PyMem_Free(id); PyMem_Free(start); PyMem_Free(len);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t k = 0; k < t->cap; k++) {
        if (!t->hash[k]) continue;
        Py_ssize_t j = (Py_ssize_t)(t->hash[k] & (uint64_t)(cap - 1));
        while (hash[j]) j = (j + 1) & (cap - 1);
        hash[j] = t->hash[k]; id[j] = t->id[k]; start[j] = t->start[k]; len[j] = t->len[k];
    }
    PyMem_Free(t->hash); PyMem_Free(t->id); PyMem_Free(t->start); PyMem_Free(t->len);
    t->hash = hash; t->id = id; t->start = start; t->len = len; t->cap = cap;
    return 0;
}

/* Local id of the key p[0:n]; `make` builds its object on first sight (NULL: error set;
 * Py_None with no error: the key is not acceptable, return -2). -1: error set. */
typedef PyObject *(*MakeFn)(const char *p, Py_ssize_t n);

static int32_t table_get(Table *t, const char *p, Py_ssize_t n, MakeFn make) {
    uint64_t h = hash_bytes(p, n);
    Py_ssize_t j = (Py_ssize_t)(h & (uint64_t)(t->cap - 1));
    while (t->hash[j]) {
        if (t->hash[j] == h && t->len[j] == n && memcmp(t->arena + t->start[j], p, n) == 0) return t->id[j];
        j = (j + 1) & (t->cap - 1);
    }
    PyObject *obj = make(p, n);
    if (obj == NULL) return -1;
    if (obj == Py_None) { Py_DECREF(obj); return -2; }
    Py_ssize_t new_id = PyList_GET_SIZE(t->objects);
    if (new_id >= INT32_MAX || PyList_Append(t->objects, obj) < 0) {
        Py_DECREF(obj);
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_OverflowError, "too many distinct strings");
        return -1;
    }
    Py_DECREF(obj);
    if (t->arena_len + n > t->arena_cap) {
        char *a = grow(t->arena, &t->arena_cap, t->arena_len + n, 1, 4096);
        if (!a) return -1;
        t->arena = a;
    }
    memcpy(t->arena + t->arena_len, p, n);
    t->hash[j] = h; t->id[j] = (int32_t)new_id; t->start[j] = t->arena_len; t->len[j] = n;
    t->arena_len += n;
    if (++t->used * 2 > t->cap && table_grow(t) < 0) return -1;
    return (int32_t)new_id;
}

/* ----------------------------------------------------------------------- JSON strings */
static int hexval(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int read_u4(const char *p) {
    int v = 0;
    for (int k = 0; k < 4; k++) {
        int h = hexval((unsigned char)p[k]);
        if (h < 0) return -1;
        v = v * 16 + h;
    }
    return v;
}

/* str of a JSON string's raw content (between the quotes), escapes decoded; Py_None (new
 * ref) for a spelling we leave to msgspec (lone surrogates, invalid UTF-8). */
static PyObject *make_str(const char *p, Py_ssize_t n) {
    if (memchr(p, '\\', n) == NULL) {
        PyObject *s = PyUnicode_DecodeUTF8(p, n, NULL);
        if (s == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) { PyErr_Clear(); Py_RETURN_NONE; }
        return s;
    }
    char *out = PyMem_Malloc(n + 1); /* decoded UTF-8 is never longer than the escaped text */
    if (!out) return PyErr_NoMemory();
    Py_ssize_t o = 0;
    for (Py_ssize_t k = 0; k < n;) {
        unsigned char c = (unsigned char)p[k];
        if (c != '\\') { out[o++] = (char)c; k++; continue; }
        char e = p[k + 1];
        k += 2;
        switch (e) {
        case '"': out[o++] = '"'; break;
        case '\\': out[o++] = '\\'; break;
        case '/': out[o++] = '/'; break;
        case 'b': out[o++] = '\b'; break;
        case 'f': out[o++] = '\f'; break;
        case 'n': out[o++] = '\n'; break;
        case 'r': out[o++] = '\r'; break;
        case 't': out[o++] = '\t'; break;
        case 'u': {
            long cp = read_u4(p + k);
            k += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                long lo = (k + 6 <= n && p[k] == '\\' && p[k + 1] == 'u') ? read_u4(p + k + 2) : -1;
                if (lo < 0xDC00 || lo > 0xDFFF) { PyMem_Free(out); Py_RETURN_NONE; }
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                k += 6;
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                PyMem_Free(out);
                Py_RETURN_NONE;
            }
            if (cp < 0x80) out[o++] = (char)cp;
            else if (cp < 0x800) { out[o++] = (char)(0xC0 | (cp >> 6)); out[o++] = (char)(0x80 | (cp & 0x3F)); }
            else if (cp < 0x10000) {
                out[o++] = (char)(0xE0 | (cp >> 12)); out[o++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                out[o++] = (char)(0x80 | (cp & 0x3F));
            } else {
                out[o++] = (char)(0xF0 | (cp >> 18)); out[o++] = (char)(0x80 | ((cp >> 12) & 0x3F));
                out[o++] = (char)(0x80 | ((cp >> 6) & 0x3F)); out[o++] = (char)(0x80 | (cp & 0x3F));
            }
            break;
        }
        default: PyMem_Free(out); Py_RETURN_NONE; /* scan_string let it through: cannot happen */
        }
    }
    PyObject *s = PyUnicode_DecodeUTF8(out, o, NULL);
    PyMem_Free(out);
    if (s == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) { PyErr_Clear(); Py_RETURN_NONE; }
    return s;
}

static PyObject *make_bytes(const char *p, Py_ssize_t n) { return PyBytes_FromStringAndSize(p, n); }

/* ----------------------------------------------------------------------- the scanner */
typedef struct {
    const char *p, *end;
    int fail;  /* 1: not for us (or not JSON); 2: a Python error is set */
    int esc;   /* the last string scan_string passed held a backslash */
} Cur;

/* JSON whitespace: one table load per byte instead of four compares (callgrind: whitespace
 * was the largest single cost, Kineto indents every line). */
static unsigned char IS_WS[256];    /* filled by init_tables() */

static inline void ws(Cur *c) {
    const char *p = c->p, *e = c->end;
    while (p < e && IS_WS[(unsigned char)*p]) p++;
    c->p = p;
}

/* Bytes that end the plain run of a JSON string: quote, backslash, control characters. */
static unsigned char STR_STOP[256]; /* filled by init_tables() */

/* The first byte of q[0:8] (little-endian load w) that is '"', '\\' or a control character,
 * as a mask whose lowest set bit is exact (borrows only run upward from a true hit), 0 if none.
 * Bytes >= 0x80 (UTF-8) never match. Eight bytes a step: the byte loop was 34M of the
 * scanner's 223M instructions on 40 batches of the 200 MB synthetic trace (callgrind). */
#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
static inline uint64_t stop_mask(uint64_t w) {
    uint64_t q = w ^ (ONES * '"'), b = w ^ (ONES * '\\');
    return (((q - ONES) & ~q) | ((b - ONES) & ~b) | ((w - ONES * 0x20) & ~w)) & HIGHS;
}

static inline const char *string_run(const char *q, const char *end) { /* first STR_STOP byte, or end */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    for (; end - q >= 8; q += 8) {
        uint64_t w;
        memcpy(&w, q, 8);
        uint64_t m = stop_mask(w);
        if (m) return q + (__builtin_ctzll(m) >> 3);
    }
#endif
    while (q < end && !STR_STOP[(unsigned char)*q]) q++;
    return q;
}

/* At a '"': moves past the closing quote; [*s, *s+*n) is the raw content; c->esc says
 * whether it held an escape. */
static int scan_string(Cur *c, const char **s, Py_ssize_t *n) {
    const char *p = c->p + 1;
    *s = p;
    c->esc = 0;
    for (;;) {
        const char *q = string_run(p, c->end);
        if (q >= c->end || (unsigned char)*q < 0x20) { c->fail = 1; return -1; }
        if (*q == '"') { *n = q - *s; c->p = q + 1; return 0; }
        /* backslash */
        c->esc = 1;
        if (q + 1 >= c->end) { c->fail = 1; return -1; }
        char e = q[1];
        if (e == 'u') {
            int cp = q + 6 <= c->end ? read_u4(q + 2) : -1;
            if (cp < 0 || (cp >= 0xDC00 && cp <= 0xDFFF)) { c->fail = 1; return -1; }
            p = q + 6;
            if (cp >= 0xD800 && cp <= 0xDBFF) { /* a lone surrogate, even in a value we skip: the
                 * reader replaces it (limits.fix_surrogates) and counts it, the same on both paths */
                int lo = (p + 6 <= c->end && p[0] == '\\' && p[1] == 'u') ? read_u4(p + 2) : -1;
                if (lo < 0xDC00 || lo > 0xDFFF) { c->fail = 1; return -1; }
                p += 6;
            }
        } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
            p = q + 2;
        } else { c->fail = 1; return -1; }
    }
}

typedef struct {
    const char *s; Py_ssize_t n;
    int is_int; /* no fraction, no exponent */
} Num;

static int scan_number(Cur *c, Num *num) {
    const char *p = c->p, *e = c->end;
    num->s = p;
    if (p < e && *p == '-') p++;
    if (p >= e) { c->fail = 1; return -1; }
    if (*p == '0') p++;
    else if (*p >= '1' && *p <= '9') { while (p < e && *p >= '0' && *p <= '9') p++; }
    else { c->fail = 1; return -1; }
    num->is_int = 1;
    if (p < e && *p == '.') {
        p++;
        if (p >= e || *p < '0' || *p > '9') { c->fail = 1; return -1; }
        while (p < e && *p >= '0' && *p <= '9') p++;
        num->is_int = 0;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < e && (*p == '+' || *p == '-')) p++;
        if (p >= e || *p < '0' || *p > '9') { c->fail = 1; return -1; }
        while (p < e && *p >= '0' && *p <= '9') p++;
        num->is_int = 0;
    }
    num->n = p - num->s;
    c->p = p;
    return 0;
}

/* An int token within int64 (else not ours: msgspec keeps big ints, the builder maps them). */
static int num_int64(Cur *c, const Num *num, int64_t *out) {
    const char *p = num->s, *e = num->s + num->n;
    int neg = 0;
    if (*p == '-') { neg = 1; p++; }
    uint64_t v = 0;
    for (; p < e; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10) { c->fail = 1; return -1; }
        v = v * 10 + d;
    }
    if (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX) { c->fail = 1; return -1; }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}

static const double POW10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* A uint128 plus a "something below it" bit, correctly rounded (nearest, ties to even) to a
 * double times 2^-shift. */
static double round_u128(unsigned __int128 q, int sticky, int shift) {
    int bits = 0;
    for (unsigned __int128 t = q; t; t >>= 1) bits++;
    if (bits <= 53) return ldexp((double)(uint64_t)q, -shift); /* callers make sticky 0 here */
    int drop = bits - 53;
    uint64_t top = (uint64_t)(q >> drop);
    unsigned __int128 rest = q & (((unsigned __int128)1 << drop) - 1);
    unsigned __int128 half = (unsigned __int128)1 << (drop - 1);
    if (rest > half || (rest == half && (sticky || (top & 1)))) top++;
    return ldexp((double)top, drop - shift);
}

/* m * 10^exp10 (m > 0) correctly rounded into *out; 0 where the exponent is out of the
 * ranges the 128-bit arithmetic covers. */
static int exact_double(uint64_t m, int exp10, double *out) {
    if (m <= (1ULL << 53) && exp10 >= -22 && exp10 <= 22) {
        *out = exp10 >= 0 ? (double)m * POW10[exp10] : (double)m / POW10[-exp10]; /* both exact inputs */
    } else if (exp10 >= 0 && exp10 <= 19) {
        unsigned __int128 q = (unsigned __int128)m;
        for (int k = 0; k < exp10; k++) q *= 10; /* < 2^64 * 10^19 < 2^128 */
        *out = round_u128(q, 0, 0);
    } else if (exp10 < 0 && exp10 >= -21) {
        unsigned __int128 d = 1;
        for (int k = 0; k < -exp10; k++) d *= 10;
        int mbits = 64 - __builtin_clzll(m);
        int shift = 127 - mbits; /* m << shift < 2^127; q >= 2^(126 - 70) = 2^56 */
        unsigned __int128 num128 = (unsigned __int128)m << shift;
        unsigned __int128 q = num128 / d, r = num128 % d;
        *out = round_u128(q, r != 0, shift);
    } else return 0;
    return 1;
}

/* Decimal text -> the double nearest to it, as Python's float() gives. Exact integer
 * arithmetic for <= 19 significant digits and exponents the 128-bit arithmetic covers
 * (every Kineto timestamp: 1712195495519689.047 has 19); Python's own dtoa otherwise. */
static double num_double(Cur *c, const Num *num) {
    const char *p = num->s, *e = num->s + num->n;
    int neg = 0, digits = 0, exp10 = 0;
    uint64_t m = 0;
    if (*p == '-') { neg = 1; p++; }
    for (; p < e && *p >= '0' && *p <= '9'; p++) {
        if (m == 0 && *p == '0') continue;
        if (++digits > 19) goto slow;
        m = m * 10 + (uint64_t)(*p - '0');
    }
    if (p < e && *p == '.') {
        for (p++; p < e && *p >= '0' && *p <= '9'; p++) {
            exp10--;
            if (m == 0 && *p == '0') continue;
            if (++digits > 19) goto slow;
            m = m * 10 + (uint64_t)(*p - '0');
        }
    }
    if (p < e) { /* exponent */
        p++;
        int eneg = 0, ev = 0;
        if (*p == '+' || *p == '-') { eneg = *p == '-'; p++; }
        for (; p < e; p++) {
            if (ev > 10000) goto slow;
            ev = ev * 10 + (*p - '0');
        }
        exp10 += eneg ? -ev : ev;
    }
    double v;
    if (m == 0) return num->is_int ? 0.0 : (neg ? -0.0 : 0.0); /* msgspec reads "-0" as the int 0 */
    if (exact_double(m, exp10, &v)) return neg ? -v : v;
slow: {
        char buf[128];
        char *endp;
        if (num->n >= (Py_ssize_t)sizeof(buf)) { c->fail = 1; return 0; }
        memcpy(buf, num->s, num->n);
        buf[num->n] = 0;
        double r = PyOS_string_to_double(buf, &endp, NULL);
        if (r == -1.0 && PyErr_Occurred()) { c->fail = 2; return 0; }
        if (isinf(r)) { c->fail = 1; return 0; } /* msgspec: "Number out of range" */
        return r;
    }
}

/* Every object and array below is walked with these three, the one container shape:
 *   int more = open_container(c, '{', '}');
 *   while (more > 0) { [member_key(...);] read the value; more = next_member(c, '}'); }
 *   return more;  (0: closed, -1: c->fail set) */
static inline int open_container(Cur *c, char open, char close) { /* 1: a member follows; 0: empty */
    if (c->p >= c->end || *c->p != open) { c->fail = 1; return -1; }
    c->p++;
    ws(c);
    if (c->p < c->end && *c->p == close) { c->p++; return 0; }
    return 1;
}

static inline int member_key(Cur *c, const char **k, Py_ssize_t *n) { /* `"key" :`, cursor on the value */
    if (c->p >= c->end || *c->p != '"' || scan_string(c, k, n) < 0) { c->fail = 1; return -1; }
    ws(c);
    if (c->p >= c->end || *c->p != ':') { c->fail = 1; return -1; }
    c->p++;
    ws(c);
    return 0;
}

static inline int next_member(Cur *c, char close) { /* after a value: 1 a ',' (another follows), 0 closed */
    ws(c);
    if (c->p < c->end && *c->p == ',') { c->p++; ws(c); return 1; }
    if (c->p < c->end && *c->p == close) { c->p++; return 0; }
    c->fail = 1;
    return -1;
}

static int skip_value(Cur *c, int depth);

static int skip_container(Cur *c, int depth, char close) {
    if (depth > MAX_DEPTH) { c->fail = 1; return -1; }
    int more = open_container(c, *c->p, close);
    while (more > 0) {
        const char *k; Py_ssize_t n;
        if (close == '}' && member_key(c, &k, &n) < 0) return -1;
        if (skip_value(c, depth + 1) < 0) return -1;
        more = next_member(c, close);
    }
    return more;
}

static int literal(Cur *c, const char *word, Py_ssize_t n) {
    if (c->end - c->p < n || memcmp(c->p, word, n) != 0) { c->fail = 1; return -1; }
    c->p += n;
    return 0;
}

static int skip_value(Cur *c, int depth) {
    if (c->p >= c->end) { c->fail = 1; return -1; }
    const char *s; Py_ssize_t n; Num num;
    switch (*c->p) {
    case '{': return skip_container(c, depth, '}');
    case '[': return skip_container(c, depth, ']');
    case '"': return scan_string(c, &s, &n);
    case 't': return literal(c, "true", 4);
    case 'f': return literal(c, "false", 5);
    case 'n': return literal(c, "null", 4);
    default: return scan_number(c, &num);
    }
}

/* Records of X events and of flow events (s/t/f) in two arrays; every event's phase id in a
 * third, which is what take() uses to hand over whole windows of the file. */
typedef struct {
    Rec *r;
    Py_ssize_t n, cap;
} Recs;

typedef struct {
    PyObject_HEAD
    Table strings, values;
    Recs x, flows;
    int32_t *ph;
    Py_ssize_t n, cap; /* events pending (every phase) */
} Scanner;

#define ID_X 2 /* fixed ids (Scanner_new); a phase spelled with an escape is left to msgspec */
#define ID_FLOW_FIRST 3
#define ID_FLOW_LAST 5

/* Typed field readers: each consumes one value or fails. */
static int is_null(Cur *c) {
    if (c->p < c->end && *c->p == 'n') return literal(c, "null", 4) < 0 ? -1 : 1;
    return 0;
}

static int read_str(Scanner *sc, Cur *c, int32_t *out, int nullable) {
    int nl = is_null(c);
    if (nl) { if (nl < 0 || !nullable) { c->fail = 1; return -1; } *out = ID_NONE; return 0; }
    const char *s; Py_ssize_t n;
    if (c->p >= c->end || *c->p != '"' || scan_string(c, &s, &n) < 0) { c->fail = 1; return -1; }
    int32_t id = table_get(&sc->strings, s, n, make_str);
    if (id < 0) { c->fail = id == -1 ? 2 : 1; return -1; }
    *out = id;
    return 0;
}

/* Bytes that may continue a JSON number after its integer digits. */
static unsigned char NUM_MORE[256]; /* filled by init_tables() */

/* The common number, "-?[1-9][0-9]{0,16}" or "0", read in one pass; 0 when it is not that
 * (the general path then reads it). */
static inline int plain_int(Cur *c, int64_t *out) {
    const char *p = c->p, *e = c->end;
    int neg = p < e && *p == '-';
    const char *d = p + neg, *q = d;
    uint64_t v = 0;
    while (q < e && q - d < 18 && (unsigned)(*q - '0') < 10) v = v * 10 + (unsigned)(*q++ - '0');
    if (q == d || q - d >= 18 || (*d == '0' && q - d > 1) || (q < e && NUM_MORE[(unsigned char)*q])) return 0;
    c->p = q;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return 1;
}

static int read_int(Cur *c, int64_t *out) { /* Optional[int]: null -> -1 */
    if (plain_int(c, out)) return 0;
    int nl = is_null(c);
    if (nl) { if (nl < 0) return -1; *out = -1; return 0; }
    Num num;
    if (c->p < c->end && *c->p == '"') {
        /* msgspec's lax mode (strict=False) reads "128" as 128: ROCm writes args.bytes so.
         * Only a plain JSON integer inside the quotes is taken here ("1e3", "1.0", "null"
         * are lax too, but left to msgspec). */
        const char *s; Py_ssize_t n;
        if (scan_string(c, &s, &n) < 0) return -1;
        Cur in = {s, s + n, 0, 0};
        if (n == 0 || scan_number(&in, &num) < 0 || in.p != in.end || !num.is_int) { c->fail = 1; return -1; }
        return num_int64(c, &num, out);
    }
    if (c->p >= c->end || !((*c->p >= '0' && *c->p <= '9') || *c->p == '-')) { c->fail = 1; return -1; }
    if (scan_number(c, &num) < 0) return -1;
    if (!num.is_int) { c->fail = 1; return -1; }
    return num_int64(c, &num, out);
}

/* "-?digits(.digits)?" with at most 19 significant digits, converted exactly; 0: not that. */
static inline int plain_float(Cur *c, double *out) {
    const char *p = c->p, *e = c->end;
    int neg = p < e && *p == '-';
    const char *d = p + neg, *q = d;
    uint64_t m = 0;
    int digits = 0, exp10 = 0, is_int = 1;
    while (q < e && (unsigned)(*q - '0') < 10) {
        if (m || *q != '0') { if (++digits > 19) return 0; m = m * 10 + (unsigned)(*q - '0'); }
        q++;
    }
    if (q == d || (*d == '0' && q - d > 1)) return 0;
    if (q < e && *q == '.') {
        const char *f = ++q;
        while (q < e && (unsigned)(*q - '0') < 10) {
            exp10--;
            if (m || *q != '0') { if (++digits > 19) return 0; m = m * 10 + (unsigned)(*q - '0'); }
            q++;
        }
        if (q == f) return 0;
        is_int = 0;
    }
    if (q < e && NUM_MORE[(unsigned char)*q]) return 0; /* an exponent: the general path */
    double v;
    if (m == 0) v = (neg && !is_int) ? -0.0 : 0.0; /* msgspec reads "-0" as the int 0 */
    else if (exact_double(m, exp10, &v)) v = neg ? -v : v;
    else return 0;
    c->p = q;
    *out = v;
    return 1;
}

static int read_float(Cur *c, double *out) { /* Optional[float]: null -> NaN */
    if (plain_float(c, out)) return 0;
    int nl = is_null(c);
    if (nl) { if (nl < 0) return -1; *out = NAN; return 0; }
    Num num;
    if (c->p >= c->end || !((*c->p >= '0' && *c->p <= '9') || *c->p == '-')) { c->fail = 1; return -1; }
    if (scan_number(c, &num) < 0) return -1;
    *out = num_double(c, &num);
    return c->fail ? -1 : 0;
}

/* int | str | None: an int goes to *v, a string's local id to *sid (the builder parses it). */
static int read_int_or_str(Scanner *sc, Cur *c, int64_t *v, int32_t *sid) {
    if (c->p < c->end && *c->p == '"') { *v = -1; return read_str(sc, c, sid, 0); }
    *sid = -1;
    return read_int(c, v);
}

static int read_raw(Scanner *sc, Cur *c, int32_t *out, int depth) {
    const char *s = c->p;
    if (skip_value(c, depth) < 0) return -1;
    int32_t id = table_get(&sc->values, s, c->p - s, make_bytes);
    if (id < 0) { c->fail = 2; return -1; }
    *out = id;
    return 0;
}

/* grid/block: list[int] | str | None; a list of three int32 values is kept, anything else
 * acceptable is -1s (what columns._triples makes of it). */
static int read_triple(Scanner *sc, Cur *c, int32_t *out) {
    int32_t sid;
    if (c->p < c->end && *c->p == '"') return read_str(sc, c, &sid, 0);
    int nl = is_null(c);
    if (nl) return nl < 0 ? -1 : 0;
    int64_t v[3];
    int count = 0, fits = 1;
    int more = open_container(c, '[', ']');
    while (more > 0) {
        int64_t x;
        if (c->p < c->end && *c->p == 'n') { c->fail = 1; return -1; } /* null is not an int */
        if (read_int(c, &x) < 0) return -1;
        if (count < 3) v[count] = x;
        if (x < INT32_MIN || x > INT32_MAX) fits = 0;
        count++;
        more = next_member(c, ']');
    }
    if (more < 0) return -1;
    if (count == 3 && fits) { out[0] = (int32_t)v[0]; out[1] = (int32_t)v[1]; out[2] = (int32_t)v[2]; }
    return 0;
}

typedef struct { const char *name; Py_ssize_t len; } Key;
#define KEY(s) {s, sizeof(s) - 1}

/* Keys grouped by length (at most MAX_SAME of one length), so a key that is not ours, as most
 * of a trace's are, costs a length lookup and rarely a compare; a key's first 8 bytes are
 * compared as one word (a memcmp call per key was 24.6M of the scanner's 223M instructions on
 * 40 batches of the 200 MB synthetic trace, callgrind). */
#define MAX_KEY_LEN 32
#define MAX_SAME 4
#define MAX_KEYS 64
typedef struct {
    const Key *keys;
    int count;
    uint64_t head[MAX_KEYS]; /* the key's first min(8, len) bytes, zero-padded (a native load) */
    signed char by_len[MAX_KEY_LEN + 1][MAX_SAME + 1]; /* key indices, -1 terminated */
} KeySet;

static inline uint64_t head_word(const char *k, Py_ssize_t n, const char *end) { /* k[0:min(8, n)] */
    uint64_t w = 0;
    if (n >= 8 || end - k < 8) {
        memcpy(&w, k, n < 8 ? (size_t)n : 8);
        return w;
    }
    memcpy(&w, k, 8); /* readable: the buffer goes on past the key; keep its first n bytes */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return w & ((1ULL << (8 * n)) - 1);
#else
    w = 0;
    memcpy(&w, k, (size_t)n);
    return w;
#endif
}

static int keyset_init(KeySet *ks, const Key *keys, int count) {
    ks->keys = keys;
    ks->count = count;
    memset(ks->by_len, -1, sizeof(ks->by_len));
    if (count > MAX_KEYS) return -1;
    for (int j = 0; j < count; j++) {
        if (keys[j].len > MAX_KEY_LEN) return -1;
        ks->head[j] = head_word(keys[j].name, keys[j].len, keys[j].name + keys[j].len);
        signed char *slot = ks->by_len[keys[j].len];
        int k = 0;
        while (slot[k] >= 0) k++;
        if (k >= MAX_SAME) return -1;
        slot[k] = (signed char)j;
    }
    return 0;
}

/* Index of k[0:n] in the set, or -1 (`end`: where the readable buffer ends). */
static inline int key_index(const KeySet *ks, const char *k, Py_ssize_t n, const char *end) {
    if (n <= 0 || n > MAX_KEY_LEN || ks->by_len[n][0] < 0) return -1;
    uint64_t w = head_word(k, n, end);
    for (const signed char *j = ks->by_len[n]; *j >= 0; j++)
        if (ks->head[*j] == w && (n <= 8 || memcmp(ks->keys[*j].name + 8, k + 8, (size_t)(n - 8)) == 0)) return *j;
    return -1;
}

static const Key ARGS_KEYS[] = {
    KEY("External id"), KEY("Ev Idx"), KEY("correlation"), KEY("external id"), KEY("stream"), KEY("device"),
    KEY("Python id"), KEY("Python parent id"), KEY("Input Dims"), KEY("Input dims"), KEY("Input type"),
    KEY("Input Strides"), KEY("Concrete Inputs"), KEY("Collective name"), KEY("Process Group Name"),
    KEY("In msg nelems"), KEY("Out msg nelems"), KEY("dtype"), KEY("Group size"), KEY("bytes"),
    KEY("memory bandwidth (GB/s)"), KEY("grid"), KEY("block"), KEY("registers per thread"), KEY("shared memory"),
    KEY("est. achieved occupancy %"), KEY("Seq")};
static const Key EVENT_KEYS[] = {KEY("ph"), KEY("cat"), KEY("name"), KEY("pid"), KEY("tid"), KEY("ts"), KEY("dur"),
                                 KEY("id"), KEY("bp"), KEY("args")};
static KeySet ARGS_SET, EVENT_SET;

static int init_tables(void) {
    for (int b = 0; b < 0x20; b++) STR_STOP[b] = 1;
    STR_STOP['"'] = STR_STOP['\\'] = 1;
    IS_WS[' '] = IS_WS['\n'] = IS_WS['\r'] = IS_WS['\t'] = 1;
    for (int b = '0'; b <= '9'; b++) NUM_MORE[b] = 1;
    NUM_MORE['.'] = NUM_MORE['e'] = NUM_MORE['E'] = 1;
    if (keyset_init(&ARGS_SET, ARGS_KEYS, sizeof(ARGS_KEYS) / sizeof(Key)) < 0 ||
        keyset_init(&EVENT_SET, EVENT_KEYS, sizeof(EVENT_KEYS) / sizeof(Key)) < 0) {
        PyErr_SetString(PyExc_SystemError, "_scan: key tables too small");
        return -1;
    }
    return 0;
}

#define ONCE(bit) do { if (seen & (1ULL << (bit))) { c->fail = 1; return -1; } seen |= 1ULL << (bit); } while (0)

static int read_args(Scanner *sc, Cur *c, Rec *r) {
    int nl = is_null(c);
    if (nl) return nl < 0 ? -1 : 0;
    uint64_t seen = 0;
    int more = open_container(c, '{', '}');
    while (more > 0) {
        const char *k; Py_ssize_t n;
        if (member_key(c, &k, &n) < 0) return -1;
        if (c->esc) { c->fail = 1; return -1; } /* an escaped spelling of a key: msgspec's call */
        int rc;
        int64_t *I = r->i;
        int32_t *S = r->s;
        switch (key_index(&ARGS_SET, k, n, c->end)) {
        case 0: ONCE(0); rc = read_int(c, &I[I_EXTERNAL_ID]); break;
        case 1: ONCE(1); rc = read_int(c, &I[I_EV_IDX]); break;
        case 2: ONCE(2); rc = read_int(c, &I[I_CORRELATION]); break;
        case 3: ONCE(3); rc = read_int(c, &I[I_EXTERNAL_ID_LEGACY]); break;
        case 4: ONCE(4); rc = read_int_or_str(sc, c, &I[I_STREAM], &S[S_STREAM]); break;
        case 5: ONCE(5); rc = read_int_or_str(sc, c, &I[I_DEVICE], &S[S_DEVICE]); break;
        case 6: ONCE(6); rc = read_int(c, &I[I_PYTHON_ID]); break;
        case 7: ONCE(7); rc = read_int(c, &I[I_PYTHON_PARENT_ID]); break;
        case 8: ONCE(8); rc = read_raw(sc, c, &S[V_DIMS], 2); break;
        case 9: ONCE(9); rc = read_raw(sc, c, &S[V_DIMS_LEGACY], 2); break;
        case 10: ONCE(10); rc = read_raw(sc, c, &S[V_TYPES], 2); break;
        case 11: ONCE(11); rc = read_raw(sc, c, &S[V_STRIDES], 2); break;
        case 12: ONCE(12); rc = read_raw(sc, c, &S[V_CONCRETE], 2); break;
        case 13: ONCE(13); rc = read_str(sc, c, &S[S_COLLECTIVE], 1); break;
        case 14: ONCE(14); rc = read_str(sc, c, &S[S_PROCESS_GROUP], 1); break;
        case 15: ONCE(15); rc = read_int(c, &I[I_IN_NELEMS]); break;
        case 16: ONCE(16); rc = read_int(c, &I[I_OUT_NELEMS]); break;
        case 17: ONCE(17); rc = read_str(sc, c, &S[S_DTYPE], 1); break;
        case 18: ONCE(18); rc = read_int(c, &I[I_GROUP_SIZE]); break;
        case 19: ONCE(19); rc = read_int(c, &I[I_BYTES]); break;
        case 20: ONCE(20); rc = read_float(c, &r->f[F_BANDWIDTH]); break;
        case 21: ONCE(21); rc = read_triple(sc, c, &S[G_GRID]); break;
        case 22: ONCE(22); rc = read_triple(sc, c, &S[G_BLOCK]); break;
        case 23:
            ONCE(23);
            rc = read_int(c, &I[I_REGISTERS]);
            /* the builder keeps it as int32; anything wider is left to the Python path */
            if (rc == 0 && (I[I_REGISTERS] < INT32_MIN || I[I_REGISTERS] > INT32_MAX)) { c->fail = 1; rc = -1; }
            break;
        case 24: ONCE(24); rc = read_int(c, &I[I_SHARED_MEMORY]); break;
        case 25: ONCE(25); rc = read_float(c, &r->f[F_OCCUPANCY]); break;
        case 26: ONCE(26); rc = read_int(c, &I[I_SEQ]); break;
        default: rc = skip_value(c, 2);
        }
        if (rc < 0) return -1;
        more = next_member(c, '}');
    }
    return more;
}

static void rec_defaults(Rec *r) {
    r->f[F_TS] = r->f[F_DUR] = r->f[F_OCCUPANCY] = r->f[F_BANDWIDTH] = NAN;
    for (int k = 0; k < N_I64; k++) r->i[k] = -1;
    for (int k = 0; k < N_I32; k++) r->s[k] = -1;
    r->s[S_PH] = ID_EMPTY;
    r->s[S_CAT] = r->s[S_NAME] = r->s[S_COLLECTIVE] = r->s[S_PROCESS_GROUP] = r->s[S_DTYPE] = ID_NONE;
}

static int read_event(Scanner *sc, Cur *c, Rec *r) {
    rec_defaults(r);
    uint64_t seen = 0;
    int32_t bp;
    int more = open_container(c, '{', '}');
    while (more > 0) {
        const char *k; Py_ssize_t n;
        if (member_key(c, &k, &n) < 0) return -1;
        if (c->esc) { c->fail = 1; return -1; } /* (member_key's scan_string set it) */
        int rc;
        switch (key_index(&EVENT_SET, k, n, c->end)) {
        case 0:
            ONCE(0);
            rc = (c->p < c->end && *c->p == '"' && c->p + 1 < c->end && c->p[1] != '\\') ? read_str(sc, c, &r->s[S_PH], 0) : -1;
            if (rc < 0 && !c->fail) c->fail = 1; /* null, or an escaped spelling (ID_X) */
            break;
        case 1: ONCE(1); rc = read_str(sc, c, &r->s[S_CAT], 1); break;
        case 2: ONCE(2); rc = read_str(sc, c, &r->s[S_NAME], 1); break;
        case 3: ONCE(3); rc = read_int_or_str(sc, c, &r->i[I_PID], &r->s[S_PID]); break;
        case 4: ONCE(4); rc = read_int_or_str(sc, c, &r->i[I_TID], &r->s[S_TID]); break;
        case 5: ONCE(5); rc = read_float(c, &r->f[F_TS]); break;
        case 6: ONCE(6); rc = read_float(c, &r->f[F_DUR]); break;
        case 7: ONCE(7); rc = read_int_or_str(sc, c, &r->i[I_ID], &r->s[S_ID]); break;
        case 8: ONCE(8); rc = read_str(sc, c, &bp, 1); break;
        case 9: ONCE(9); rc = read_args(sc, c, r); break;
        default: rc = skip_value(c, 1);
        }
        if (rc < 0) return -1;
        more = next_member(c, '}');
    }
    return more;
}

static int recs_push(Recs *rs, const Rec *r) {
    if (rs->n == rs->cap) {
        Rec *m = grow(rs->r, &rs->cap, rs->n + 1, sizeof(Rec), 1024);
        if (!m) return -1;
        rs->r = m;
    }
    rs->r[rs->n++] = *r;
    return 0;
}

static int push_event(Scanner *sc, const Rec *r) {
    if (sc->n == sc->cap) {
        int32_t *m = grow(sc->ph, &sc->cap, sc->n + 1, sizeof(int32_t), 4096);
        if (!m) return -1;
        sc->ph = m;
    }
    int32_t ph = r->s[S_PH];
    if (ph == ID_X && recs_push(&sc->x, r) < 0) return -1;
    if (ph >= ID_FLOW_FIRST && ph <= ID_FLOW_LAST && recs_push(&sc->flows, r) < 0) return -1;
    sc->ph[sc->n++] = ph;
    return 0;
}

/* scan(batch) -> bool: True when every event of `[ev, ...]` was read (records appended);
 * False when the batch is not for this scanner (nothing appended). */
static PyObject *Scanner_scan(Scanner *sc, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    Cur c = {(const char *)view.buf, (const char *)view.buf + view.len, 0, 0};
    Py_ssize_t n0 = sc->n, x0 = sc->x.n, f0 = sc->flows.n;
    Rec r;
    ws(&c);
    int more = open_container(&c, '[', ']');
    while (more > 0) {
        if (read_event(sc, &c, &r) < 0) break;
        if (push_event(sc, &r) < 0) { c.fail = 2; break; }
        more = next_member(&c, ']');
    }
    ws(&c);
    if (!c.fail && c.p != c.end) c.fail = 1;
    PyBuffer_Release(&view);
    if (c.fail) { sc->n = n0; sc->x.n = x0; sc->flows.n = f0; }
    if (c.fail == 2) return NULL;
    return PyBool_FromLong(c.fail == 0);
}

static PyObject *recs_take(Recs *rs, Py_ssize_t k) {
    PyObject *out = PyBytes_FromStringAndSize(k ? (const char *)rs->r : "", k * (Py_ssize_t)sizeof(Rec));
    if (!out) return NULL;
    if (rs->n > k) memmove(rs->r, rs->r + k, (rs->n - k) * sizeof(Rec)); /* (r is NULL before any record) */
    rs->n -= k;
    return out;
}

/* take(k) -> (phase ids, X records, flow records) of the first k pending events, as bytes;
 * they leave the scanner. */
static PyObject *Scanner_take(Scanner *sc, PyObject *arg) {
    Py_ssize_t k = PyLong_AsSsize_t(arg);
    if (k == -1 && PyErr_Occurred()) return NULL;
    if (k < 0 || k > sc->n) { PyErr_SetString(PyExc_ValueError, "take: k out of range"); return NULL; }
    Py_ssize_t nx = 0, nf = 0;
    for (Py_ssize_t j = 0; j < k; j++) {
        nx += sc->ph[j] == ID_X;
        nf += sc->ph[j] >= ID_FLOW_FIRST && sc->ph[j] <= ID_FLOW_LAST;
    }
    PyObject *ph = PyBytes_FromStringAndSize(k ? (const char *)sc->ph : "", k * (Py_ssize_t)sizeof(int32_t));
    if (!ph) return NULL;
    if (sc->n > k) memmove(sc->ph, sc->ph + k, (sc->n - k) * sizeof(int32_t));
    sc->n -= k;
    PyObject *x = recs_take(&sc->x, nx);
    PyObject *f = x ? recs_take(&sc->flows, nf) : NULL;
    if (!f) { Py_DECREF(ph); Py_XDECREF(x); return NULL; }
    return Py_BuildValue("(NNN)", ph, x, f);
}

static Py_ssize_t Scanner_len(Scanner *sc) { return sc->n; }

static PyObject *Scanner_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
    if (PyTuple_GET_SIZE(args) || (kw && PyDict_GET_SIZE(kw))) {
        PyErr_SetString(PyExc_TypeError, "Scanner() takes no arguments");
        return NULL;
    }
    Scanner *sc = (Scanner *)type->tp_alloc(type, 0);
    if (!sc) return NULL;
    if (table_init(&sc->strings) < 0 || table_init(&sc->values) < 0) { Py_DECREF(sc); return NULL; }
    /* fixed ids: 0 None (absent/null string), 1 "", 2-5 the phases the builder tests */
    if (PyList_Append(sc->strings.objects, Py_None) < 0) { Py_DECREF(sc); return NULL; }
    static const char *fixed[] = {"", "X", "s", "t", "f"};
    for (int k = 0; k < 5; k++) {
        if (table_get(&sc->strings, fixed[k], (Py_ssize_t)strlen(fixed[k]), make_str) != k + 1) {
            Py_DECREF(sc);
            return NULL;
        }
    }
    return (PyObject *)sc;
}

static void Scanner_dealloc(Scanner *sc) {
    table_free(&sc->strings);
    table_free(&sc->values);
    PyMem_Free(sc->x.r);
    PyMem_Free(sc->flows.r);
    PyMem_Free(sc->ph);
    Py_TYPE(sc)->tp_free((PyObject *)sc);
}

static PyObject *Scanner_get_strings(Scanner *sc, void *Py_UNUSED(u)) { return Py_NewRef(sc->strings.objects); }
static PyObject *Scanner_get_values(Scanner *sc, void *Py_UNUSED(u)) { return Py_NewRef(sc->values.objects); }

static PyMethodDef Scanner_methods[] = {
    {"scan", (PyCFunction)Scanner_scan, METH_O, "scan(batch: bytes) -> bool: append the events of one `[...]` batch"},
    {"take", (PyCFunction)Scanner_take, METH_O, "take(k) -> (phase ids, X records, flow records) of the first k events, removed"},
    {NULL}};

static PyGetSetDef Scanner_getset[] = {
    {"strings", (getter)Scanner_get_strings, NULL, "local string id -> str (0: None)", NULL},
    {"values", (getter)Scanner_get_values, NULL, "local value id -> raw JSON bytes", NULL},
    {NULL}};

static PySequenceMethods Scanner_seq = {.sq_length = (lenfunc)Scanner_len};

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "trainprof.trace._scan.Scanner",
    .tp_basicsize = sizeof(Scanner),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Kineto event batches -> fixed records (see the module docstring)",
    .tp_new = Scanner_new,
    .tp_dealloc = (destructor)Scanner_dealloc,
    .tp_methods = Scanner_methods,
    .tp_getset = Scanner_getset,
    .tp_as_sequence = &Scanner_seq,
};

static PyObject *names_tuple(const char **names, int n) {
    PyObject *t = PyTuple_New(n);
    if (!t) return NULL;
    for (int k = 0; k < n; k++) {
        PyObject *s = PyUnicode_FromString(names[k]);
        if (!s) { Py_DECREF(t); return NULL; }
        PyTuple_SET_ITEM(t, k, s);
    }
    return t;
}

static struct PyModuleDef scan_module = {PyModuleDef_HEAD_INIT, .m_name = "_scan", .m_size = -1};

PyMODINIT_FUNC PyInit__scan(void) {
    if (init_tables() < 0 || PyType_Ready(&ScannerType) < 0) return NULL;
    PyObject *m = PyModule_Create(&scan_module);
    if (!m) return NULL;
    if (PyModule_AddObjectRef(m, "Scanner", (PyObject *)&ScannerType) < 0 ||
        PyModule_AddObject(m, "F64", names_tuple(F64_NAMES, N_F64)) < 0 ||
        PyModule_AddObject(m, "I64", names_tuple(I64_NAMES, N_I64)) < 0 ||
        PyModule_AddObject(m, "I32", names_tuple(I32_NAMES, N_I32)) < 0 ||
        PyModule_AddIntConstant(m, "RECORD_SIZE", (long)sizeof(Rec)) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

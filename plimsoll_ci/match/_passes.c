/* The matching engine's passes over every byte of a buffer, compiled (`match/`'s one C part, with
   _numbers.c and _texts.c).

   numpy needs several passes over the whole buffer for each of these (a mask, a compare, a
   nonzero, an erosion); here each is one. It is optional: without it (no compiler when the
   package was installed) numpy's passes run and give the same results (tests compare the two).

   runs(classes, bit, minimum, with_bits=False) -> (pairs, bits)
     the maximal runs of class `bit` in a buffer of class bytes, `minimum` or more long, as int32
     (start, end) pairs; with `with_bits`, the OR of each run's class bytes (else None).
   base64_runs(classes, text, bit, both) -> (pairs, keep): the base64 runs and which look encoded.
   base64_kept(classes, text, bit, both) -> (pairs, nexts): only those kept, and what follows each.
   hex_runs(classes, text, bit, letters, digit) -> (pairs, keep): the hex runs and which may be
     hex-encoded text.
   b64_runs(text, starts, ends) -> (out, good): base64 runs decoded, joined.
   classify(text, table, out): a buffer's class bytes.
   number_candidates(text, classes, stop, luts, params): the digit runs a number token could
     start at, and what kind of token (its source is _numbers.c).
   word_windows(classes, text, bit, limit, tables, multiplier, tag_bits, k): the word runs a
     text entry could start at, from a buffer's class bytes in one call, with the window of k
     word runs of each.
   escape_lines(classes, text, bit): the lines that hold an escape or an entity, and where.
   wrapped_lines(text, a, b, limit): the lines of a line-wrapped base64 block.
     (These three are in _texts.c.)
   base64_bounds(text, pairs, nexts, max_region, at_end, lo, hi): base64_kept's runs with
     their padding, and which are decoded one by one.
   b64_join(data, starts, ends, take, sep): the decoded bytes of some runs joined.
     (These two are in _b64.c.)
   Each function's comment below says more; none holds a value: they read bytes and return
   offsets, flags and decoded bytes.

   What every function keeps to (its hostile-buffer tests are in tests/match, run under
   AddressSanitizer and UndefinedBehaviorSanitizer by .ci/sanitize): each length it is given is
   checked against MAX_LEN (int32 places) before anything else; the runs and flags it follows
   (starts, ends, pairs, take) are `bytes`, immutable, checked before the interpreter lock is
   released and never changed after; a text or classes buffer is read through const pointers,
   and every place read from it is bounded by the length taken with it, so another thread that
   changes a bytearray meanwhile changes the answer, never where the pass reads. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_passes.h"
/* SSE2 where the compiler has it (every x86-64); else eight bytes at a time in plain C (the
   tests build that path too, with PLIMSOLL_PASSES_PORTABLE defined). */
#if defined(__SSE2__) && !defined(PLIMSOLL_PASSES_PORTABLE)
#define RUNS_SSE2 1
#include <emmintrin.h>
#endif

/* Which of 64 class bytes have `bit`: bit j of the result for c[j]. */
static inline uint64_t mask64(const uint8_t *c, uint8_t bit) {
#ifdef RUNS_SSE2
    const __m128i b = _mm_set1_epi8((char)bit), zero = _mm_setzero_si128();
    uint64_t m = 0;
    for (int j = 0; j < 4; j++) {
        __m128i v = _mm_loadu_si128((const __m128i *)(c + 16 * j));
        unsigned out = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_and_si128(v, b), zero));
        m |= (uint64_t)(~out & 0xffffu) << (16 * j);
    }
    return m;
#else
    const uint64_t rep = 0x0101010101010101ULL * bit, high = 0x8080808080808080ULL;
    uint64_t m = 0;
    for (int j = 0; j < 8; j++) {
        uint64_t w;
        memcpy(&w, c + 8 * j, 8);
        w &= rep;  /* each byte 0 or `bit` (at most 0x80): adding 0x7f sets its high bit or not */
        w = ((w + (rep / bit) * 0x7f) | w) & high;
        m |= ((w >> 7) * 0x0102040810204080ULL >> 56) << (8 * j);
    }
    return m;
#endif
}

static inline uint64_t block_mask(const uint8_t *c, Py_ssize_t n, Py_ssize_t base,
                                  uint8_t bit) {
    if (base >= n) return 0;
    if (base + 64 <= n) return mask64(c + base, bit);
    uint8_t tail[64] = {0};  /* the tail, zero-padded: a run that reaches the end ends at n */
    memcpy(tail, c + base, (size_t)(n - base));
    return mask64(tail, bit);
}

uint64_t class_mask(const uint8_t *c, Py_ssize_t n, Py_ssize_t base, uint8_t bit) {
    return block_mask(c, n, base, bit);
}

/* The boundaries of the runs of class `bit` in c[0:n] that are `w` + 1 (1..64) or more long:
   t[k] = i wherever such a run starts or stops, so runs are (t[0], t[1]), (t[2], t[3]), ...;
   t holds n + 1 entries. 64 bytes make one mask; it is eroded (bit i stays when bytes i..i+w
   all are in the class: the next block's mask supplies the bits past this one), and the edges
   of what remains are the long runs' starts and, w bytes before them, their ends. Short runs
   (most words, for the base64 and hex candidates) never cost an edge. */
static Py_ssize_t edges(const uint8_t *c, Py_ssize_t n, uint8_t bit, int w, int32_t *t) {
    Py_ssize_t k = 0;
    uint64_t carry = 0;  /* whether the eroded bit before this block is set */
    uint64_t m = block_mask(c, n, 0, bit);
    for (Py_ssize_t base = 0; base < n; base += 64) {
        uint64_t next = block_mask(c, n, base + 64, bit), e = m;
        for (int j = 1; j <= w; j++) e &= (m >> j) | (next << (64 - j));
        uint64_t edge = e ^ ((e << 1) | carry);
        carry = e >> 63;
        while (edge) {  /* a start at an even k, an end (moved by w) at an odd one */
            t[k] = (int32_t)(base + __builtin_ctzll(edge) + (k & 1) * w);
            k++;
            edge &= edge - 1;
        }
        m = next;
    }
    if (carry) t[k++] = (int32_t)n;  /* (only when w is 0: bytes past n are in no class) */
    return k;
}

Py_ssize_t runs_of(const uint8_t *c, Py_ssize_t n, uint8_t bit, int32_t *t) {
    return edges(c, n, bit, 0, t) / 2;
}

/* Keeps the runs `minimum` or more long, in place; their count. */
static Py_ssize_t keep_long(int32_t *t, Py_ssize_t runs, Py_ssize_t minimum) {
    if (minimum <= 1) return runs;
    Py_ssize_t j = 0;
    for (Py_ssize_t r = 0; r < runs; r++) {
        int32_t a = t[2 * r], b = t[2 * r + 1];
        t[2 * j] = a;
        t[2 * j + 1] = b;
        j += (b - a) >= minimum;
    }
    return j;
}

static PyObject *runs(PyObject *self, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"classes", "bit", "minimum", "with_bits", NULL};
    Py_buffer view;
    int bit;
    Py_ssize_t minimum;
    int with_bits = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*in|p", names, &view, &bit, &minimum,
                                     &with_bits))
        return NULL;
    if (too_long("runs", "classes", view.len)) {
        PyBuffer_Release(&view);
        return NULL;
    }
    if (bit < 1 || bit > 255 || minimum < 1) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "runs: bit must be 1..255 and minimum >= 1");
        return NULL;
    }
    const uint8_t *c = (const uint8_t *)view.buf;
    Py_ssize_t n = view.len, count = 0;
    int32_t *t = malloc((size_t)(n + 1) * sizeof(int32_t));
    uint8_t *bits = with_bits ? malloc((size_t)(n / 2 + 1)) : NULL;
    if (t == NULL || (with_bits && bits == NULL)) {
        free(t);
        free(bits);
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    Py_BEGIN_ALLOW_THREADS
    int w = minimum < 64 ? (int)minimum - 1 : 63;
    count = keep_long(t, edges(c, n, (uint8_t)bit, w, t) / 2, minimum > 64 ? minimum : 1);
    for (Py_ssize_t r = 0; with_bits && r < count; r++) {
        uint8_t acc = 0;
        for (int32_t i = t[2 * r]; i < t[2 * r + 1]; i++) acc |= c[i];
        bits[r] = acc;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    PyObject *result = NULL;
    PyObject *pairs = PyBytes_FromStringAndSize((const char *)t,
                                                count * 2 * (Py_ssize_t)sizeof(int32_t));
    PyObject *ors = with_bits ? PyBytes_FromStringAndSize((const char *)bits, count)
                              : Py_NewRef(Py_None);
    if (pairs != NULL && ors != NULL) result = PyTuple_Pack(2, pairs, ors);
    Py_XDECREF(pairs);
    Py_XDECREF(ors);
    free(t);
    free(bits);
    return result;
}

/* Whether the sorted keys[0:n] hold k (the three-length keys of word_windows' tables). */
int has_key(const int64_t *keys, Py_ssize_t n, int64_t k) {
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (keys[mid] < k) lo = mid + 1; else hi = mid;
    }
    return lo < n && keys[lo] == k;
}

/* classify(text, table, out): out[i] = table[text[i]] for every byte of `text` (`table` 256
   bytes, `out` writable and as long as `text`): a buffer's class bytes, in one pass. */
/* The engine's table (`classes._cls_lut`), built here too: when `classify` is given this very
   table, sixteen bytes are classed at once from compares (SSE2), else one at a time from it. */
enum { UPPER = 1, LOWER = 2, DIGIT = 4, HEX = 8, B64P = 16, WORD = 32, B64 = 64, ESC = 128 };
static uint8_t CLASSES[256];

static void class_table(void) {
    for (int c = 0; c < 256; c++) {
        int v = 0;
        if (c >= 'A' && c <= 'Z') v = UPPER | WORD | B64 | (c <= 'F' ? HEX : 0);
        else if (c >= 'a' && c <= 'z') v = LOWER | WORD | B64 | (c <= 'f' ? HEX : 0);
        else if (c >= '0' && c <= '9') v = DIGIT | WORD | B64 | HEX;
        else if (c == '+' || c == '/' || c == '_' || c == '-') v = B64P | B64;
        else if (c >= 0x80) v = WORD;
        else if (c == '%' || c == '\\' || c == '&') v = ESC;
        CLASSES[c] = (uint8_t)v;
    }
}

#ifdef RUNS_SSE2
static inline __m128i in_range(__m128i v, uint8_t lo, uint8_t hi) {  /* lo <= v <= hi, unsigned */
    __m128i d = _mm_sub_epi8(v, _mm_set1_epi8((char)lo));
    return _mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8((char)(hi - lo))), d);
}

static inline __m128i is_byte(__m128i v, char c) { return _mm_cmpeq_epi8(v, _mm_set1_epi8(c)); }

static inline __m128i bits(__m128i mask, uint8_t b) {
    return _mm_and_si128(mask, _mm_set1_epi8((char)b));
}

/* The classes of 16 bytes, as CLASSES gives them. */
static inline __m128i classes16(__m128i v) {
    __m128i upper = in_range(v, 'A', 'Z'), lower = in_range(v, 'a', 'z');
    __m128i digit = in_range(v, '0', '9');
    __m128i hex = _mm_or_si128(digit, in_range(_mm_or_si128(v, _mm_set1_epi8(0x20)), 'a', 'f'));
    __m128i high = _mm_cmplt_epi8(v, _mm_setzero_si128());
    __m128i punct = _mm_or_si128(_mm_or_si128(is_byte(v, '+'), is_byte(v, '/')),
                                 _mm_or_si128(is_byte(v, '_'), is_byte(v, '-')));
    __m128i esc = _mm_or_si128(_mm_or_si128(is_byte(v, '%'), is_byte(v, '\\')), is_byte(v, '&'));
    __m128i alnum = _mm_or_si128(_mm_or_si128(upper, lower), digit);
    __m128i out = _mm_or_si128(bits(upper, UPPER), bits(lower, LOWER));
    out = _mm_or_si128(out, _mm_or_si128(bits(digit, DIGIT), bits(hex, HEX)));
    out = _mm_or_si128(out, _mm_or_si128(bits(punct, B64P), bits(_mm_or_si128(alnum, high), WORD)));
    out = _mm_or_si128(out, _mm_or_si128(bits(_mm_or_si128(alnum, punct), B64), bits(esc, ESC)));
    return out;
}
#endif

static PyObject *classify(PyObject *self, PyObject *args) {
    Py_buffer text, table, out;
    if (!PyArg_ParseTuple(args, "y*y*w*", &text, &table, &out)) return NULL;
    PyObject *result = NULL;
    if (too_long("classify", "the text", text.len)) {
        /* (the error is set) */
    } else if (table.len != 256 || out.len != text.len) {
        PyErr_SetString(PyExc_ValueError, "classify: a 256-byte table, and out as long as text");
    } else {
        const uint8_t *t = (const uint8_t *)table.buf, *c = (const uint8_t *)text.buf;
        uint8_t *o = (uint8_t *)out.buf;
        Py_ssize_t n = text.len, i = 0;
        Py_BEGIN_ALLOW_THREADS
#ifdef RUNS_SSE2
        if (memcmp(t, CLASSES, 256) == 0) {
            for (; i + 16 <= n; i += 16)
                _mm_storeu_si128((__m128i *)(o + i),
                                 classes16(_mm_loadu_si128((const __m128i *)(c + i))));
        }
#endif
        for (; i < n; i++) o[i] = t[c[i]];
        Py_END_ALLOW_THREADS
        result = Py_NewRef(Py_None);
    }
    PyBuffer_Release(&text);
    PyBuffer_Release(&table);
    PyBuffer_Release(&out);
    return result;
}

/* b64_runs(text, starts, ends) -> (out, good): each run text[s:e] of the base64 alphabets
   (`starts`, `ends`: int32, its padding left out) decoded as `b64.decode_arrays` decodes it:
   every four characters make three bytes, a short last quad is filled with zeros, the runs'
   bytes joined in order (run r's at 3 * (the quads before it)); good[r] is 1 unless the run's
   length is 4k+1 or it mixes both alphabets (`-_` with `+/`). */
static int8_t B64_VALUE[256], B64_KIND[256];

static void b64_tables(void) {
    static const char *alpha =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (int i = 0; i < 64; i++) B64_VALUE[(uint8_t)alpha[i]] = (int8_t)i;
    B64_VALUE['-'] = 62;
    B64_VALUE['_'] = 63;
    B64_KIND['-'] = B64_KIND['_'] = 1;
    B64_KIND['+'] = B64_KIND['/'] = 2;
}

static PyObject *b64_runs(PyObject *self, PyObject *args) {
    Py_buffer text;
    PyObject *starts, *ends;
    if (!PyArg_ParseTuple(args, "y*OO", &text, &starts, &ends)) return NULL;
    PyObject *result = NULL, *out = NULL, *good = NULL;
    const int32_t *st = (const int32_t *)immutable(starts, "b64_runs", "starts");
    const int32_t *en = st ? (const int32_t *)immutable(ends, "b64_runs", "ends") : NULL;
    if (en == NULL || too_long("b64_runs", "the text", text.len)
        || too_long("b64_runs", "starts", PyBytes_GET_SIZE(starts))) goto done;
    Py_ssize_t n = PyBytes_GET_SIZE(starts) / 4, total = 0;
    const uint8_t *c = (const uint8_t *)text.buf;
    if (PyBytes_GET_SIZE(starts) != PyBytes_GET_SIZE(ends) || PyBytes_GET_SIZE(starts) % 4)
        goto bad;
    for (Py_ssize_t r = 0; r < n; r++) {
        if (st[r] < 0 || en[r] < st[r] || en[r] > text.len) goto bad;
        total += (en[r] - st[r] + 3) / 4 * 3;
    }
    out = PyBytes_FromStringAndSize(NULL, total);
    good = PyBytes_FromStringAndSize(NULL, n);
    if (out == NULL || good == NULL) goto done;
    uint8_t *o = (uint8_t *)PyBytes_AS_STRING(out), *g = (uint8_t *)PyBytes_AS_STRING(good);
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; r < n; r++) {
        int32_t s = st[r], e = en[r];
        unsigned kind = 0;
        for (int32_t i = s; i < e; i += 4) {
            unsigned v[4] = {0, 0, 0, 0};
            for (int j = 0; j < 4 && i + j < e; j++) {
                v[j] = (unsigned)B64_VALUE[c[i + j]];
                kind |= (unsigned)B64_KIND[c[i + j]];
            }
            *o++ = (uint8_t)((v[0] << 2) | (v[1] >> 4));
            *o++ = (uint8_t)((v[1] << 4) | (v[2] >> 2));
            *o++ = (uint8_t)((v[2] << 6) | v[3]);
        }
        g[r] = (e - s) % 4 != 1 && kind != 3;
    }
    Py_END_ALLOW_THREADS
    result = PyTuple_Pack(2, out, good);
    goto done;
bad:
    PyErr_SetString(PyExc_ValueError, "b64_runs: int32 starts and ends of runs inside the text");
done:
    Py_XDECREF(out);
    Py_XDECREF(good);
    PyBuffer_Release(&text);
    return result;
}

typedef void (*Pick)(const uint8_t *c, const uint8_t *x, Py_ssize_t n, const int32_t *t,
                     Py_ssize_t count, uint8_t *keep, const int *bits);

/* The runs of class `bit` in `view` (class bytes of `text`) w + 1 or more long, and which of
   them `pick` keeps, as (pairs, keep); `bits` are the caller's class bits for `pick`. */
static PyObject *picked_runs(Py_buffer *view, Py_buffer *text, uint8_t bit, int w, Pick pick,
                             const int *bits) {
    Py_ssize_t n = view->len, count;
    int32_t *t = malloc((size_t)(n + 1) * sizeof(int32_t));
    if (t == NULL) return PyErr_NoMemory();
    const uint8_t *c = (const uint8_t *)view->buf, *x = (const uint8_t *)text->buf;
    Py_BEGIN_ALLOW_THREADS
    count = edges(c, n, bit, w, t) / 2;
    Py_END_ALLOW_THREADS
    PyObject *result = NULL;
    PyObject *pairs = PyBytes_FromStringAndSize((const char *)t,
                                                count * 2 * (Py_ssize_t)sizeof(int32_t));
    PyObject *keep = PyBytes_FromStringAndSize(NULL, count);
    if (pairs != NULL && keep != NULL) {
        uint8_t *k = (uint8_t *)PyBytes_AS_STRING(keep);
        Py_BEGIN_ALLOW_THREADS
        pick(c, x, n, t, count, k, bits);
        Py_END_ALLOW_THREADS
        result = PyTuple_Pack(2, pairs, keep);
    }
    free(t);
    Py_XDECREF(pairs);
    Py_XDECREF(keep);
    return result;
}

/* base64_runs(classes, text, bit, both) -> (pairs, keep): the runs of class `bit` (the
   base64 alphabet) 6 or more long, as `runs` gives them, and keep[r] = 1 for those that look
   like base64 (`candidates.kept_runs`): followed by `=` in `text`, or 12+ long with every bit of
   `both` (upper and lower case) among their class bytes (bits[0] to the pick below). */
static void pick_base64(const uint8_t *c, const uint8_t *x, Py_ssize_t n, const int32_t *t,
                        Py_ssize_t count, uint8_t *k, const int *bits) {
    const uint8_t both = (uint8_t)bits[0];
    for (Py_ssize_t r = 0; r < count; r++) {
        int32_t a = t[2 * r], e = t[2 * r + 1];
        int ok = e < n && x[e] == '=';
        if (!ok && e - a >= 12) {  /* eight class bytes ORed at a time, then the rest */
            uint64_t wide = 0;
            int32_t i = a;
            for (; i + 8 <= e; i += 8) {
                uint64_t w;
                memcpy(&w, c + i, 8);
                wide |= w;
            }
            wide |= wide >> 32;
            wide |= wide >> 16;
            uint8_t acc = (uint8_t)(wide | (wide >> 8));
            for (; i < e; i++) acc |= c[i];
            ok = (acc & both) == both;
        }
        k[r] = (uint8_t)ok;
    }
}

static PyObject *base64_runs(PyObject *self, PyObject *args) {
    Py_buffer view, text;
    int bit, both;
    if (!PyArg_ParseTuple(args, "y*y*ii", &view, &text, &bit, &both)) return NULL;
    PyObject *result = NULL;
    int bad = bit < 1 || bit > 255 || both < 1 || both > 255 || view.len != text.len;
    if (too_long("base64_runs", "the text", text.len)) {
        /* (the error is set) */
    } else if (bad) {
        PyErr_SetString(PyExc_ValueError, "base64_runs: classes as long as the text, bits 1..255");
    } else
        result = picked_runs(&view, &text, (uint8_t)bit, 5, pick_base64, &both);
    PyBuffer_Release(&view);
    PyBuffer_Release(&text);
    return result;
}

/* base64_kept(classes, text, bit, both) -> (pairs, nexts): the runs `base64_runs` keeps, only
   them, as int32 (start, end) pairs, and for each the length of the run of 6 or more that
   follows it (int32; 0 when none does): all `candidates.may_wrap` reads of the runs it does not
   keep. A buffer of source has a dozen runs for each one kept. */
static PyObject *base64_kept(PyObject *self, PyObject *args) {
    Py_buffer view, text;
    int bit, both;
    if (!PyArg_ParseTuple(args, "y*y*ii", &view, &text, &bit, &both)) return NULL;
    PyObject *result = NULL, *pairs = NULL, *nexts = NULL;
    int32_t *t = NULL, *nx = NULL;
    uint8_t *keep = NULL;
    Py_ssize_t n = view.len, count = 0, kept = 0;
    if (too_long("base64_kept", "the text", text.len)) goto done;
    if (bit < 1 || bit > 255 || both < 1 || both > 255 || view.len != text.len) {
        PyErr_SetString(PyExc_ValueError, "base64_kept: classes as long as the text, bits 1..255");
        goto done;
    }
    const uint8_t *c = (const uint8_t *)view.buf, *x = (const uint8_t *)text.buf;
    t = malloc((size_t)(n + 1) * sizeof(int32_t));
    keep = malloc((size_t)(n / 2 + 1));
    nx = malloc((size_t)(n / 2 + 1) * sizeof(int32_t));
    if (t == NULL || keep == NULL || nx == NULL) { PyErr_NoMemory(); goto done; }
    Py_BEGIN_ALLOW_THREADS
    count = edges(c, n, (uint8_t)bit, 5, t) / 2;
    pick_base64(c, x, n, t, count, keep, &both);
    for (Py_ssize_t r = 0; r < count; r++) {  /* (in place: a kept run moves back, never ahead) */
        if (!keep[r]) continue;
        nx[kept] = r + 1 < count ? t[2 * r + 3] - t[2 * r + 2] : 0;
        t[2 * kept] = t[2 * r];
        t[2 * kept + 1] = t[2 * r + 1];
        kept++;
    }
    Py_END_ALLOW_THREADS
    pairs = PyBytes_FromStringAndSize((const char *)t, kept * 2 * (Py_ssize_t)sizeof(int32_t));
    nexts = PyBytes_FromStringAndSize((const char *)nx, kept * (Py_ssize_t)sizeof(int32_t));
    if (pairs != NULL && nexts != NULL) result = PyTuple_Pack(2, pairs, nexts);
done:
    free(t);
    free(keep);
    free(nx);
    Py_XDECREF(pairs);
    Py_XDECREF(nexts);
    PyBuffer_Release(&view);
    PyBuffer_Release(&text);
    return result;
}

/* hex_runs(classes, text, bit, letters, digit) -> (pairs, keep): the runs of class `bit` (hex
   characters) 8 or more long, as `runs` gives them, and keep[r] = 1 for those that may be hex-
   encoded text (`candidates.kept_runs`): of even length; when they are digits only (no class bit
   of `letters` among their class bytes, `digit` in all), 16 or more long and every high nibble
   (the bytes at even offsets) '2'..'7'; else at most one in five high nibbles outside it. */
static void pick_hex(const uint8_t *c, const uint8_t *x, Py_ssize_t n, const int32_t *t,
                     Py_ssize_t count, uint8_t *k, const int *bits) {
    const uint8_t kinds = (uint8_t)(bits[0] | bits[1]), digit = (uint8_t)bits[1];
    (void)n;
    for (Py_ssize_t r = 0; r < count; r++) {
        int32_t a = t[2 * r], e = t[2 * r + 1], len = e - a;
        if (len % 2) { k[r] = 0; continue; }
        uint8_t acc = 0;
        int32_t bad = 0;
        for (int32_t i = a; i < e; i += 2) {
            acc |= c[i] | c[i + 1];
            bad += (uint8_t)(x[i] - '2') > 5;
        }
        int digits_only = (acc & kinds) == digit;
        k[r] = (uint8_t)(digits_only ? len >= 16 && bad == 0 : bad * 5 <= len / 2);
    }
}

static PyObject *hex_runs(PyObject *self, PyObject *args) {
    Py_buffer view, text;
    int bit, bits[2];
    if (!PyArg_ParseTuple(args, "y*y*iii", &view, &text, &bit, &bits[0], &bits[1])) return NULL;
    PyObject *result = NULL;
    int bad = bit < 1 || bit > 255 || bits[0] < 1 || bits[0] > 255 || bits[1] < 1 || bits[1] > 255
              || view.len != text.len;
    if (too_long("hex_runs", "the text", text.len)) {
        /* (the error is set) */
    } else if (bad)
        PyErr_SetString(PyExc_ValueError, "hex_runs: classes as long as the text, bits 1..255");
    else
        result = picked_runs(&view, &text, (uint8_t)bit, 7, pick_hex, bits);
    PyBuffer_Release(&view);
    PyBuffer_Release(&text);
    return result;
}

static PyMethodDef methods[] = {
    {"runs", (PyCFunction)(void (*)(void))runs, METH_VARARGS | METH_KEYWORDS,
     "runs(classes, bit, minimum, with_bits=False) -> (pairs, bits): the maximal runs of bytes "
     "with class `bit`, `minimum` or more long, as int32 (start, end) pairs; with_bits, the OR "
     "of each run's class bytes."},
    {"base64_runs", base64_runs, METH_VARARGS,
     "base64_runs(classes, text, bit, both) -> (pairs, keep): base64 candidate runs (see the "
     "source)."},
    {"base64_kept", base64_kept, METH_VARARGS,
     "base64_kept(classes, text, bit, both) -> (pairs, nexts): the base64 candidate runs kept, "
     "and the length of the run after each (see the source)."},
    {"hex_runs", hex_runs, METH_VARARGS,
     "hex_runs(classes, text, bit, letters, digit) -> (pairs, keep): hex candidate runs (see "
     "the source)."},
    {"b64_runs", b64_runs, METH_VARARGS,
     "b64_runs(text, starts, ends) -> (out, good): base64 runs decoded, joined (see the source)."},
    {"word_windows", word_windows, METH_VARARGS,
     "word_windows(classes, text, bit, limit, tables, multiplier, tag_bits, k) -> int32 bytes: "
     "the text candidates of a buffer's word runs and each one's window of k runs (see the "
     "source)."},
    {"escape_lines", escape_lines, METH_VARARGS,
     "escape_lines(classes, text, bit) -> int32 triples (line start, line end, hit): the lines "
     "that hold an escape or an entity (see the source)."},
    {"wrapped_lines", wrapped_lines, METH_VARARGS,
     "wrapped_lines(text, a, b, limit) -> int32 (start, end) pairs or None: the lines of the "
     "wrapped base64 block that text[a:b] starts (see the source)."},
    {"base64_bounds", base64_bounds, METH_VARARGS,
     "base64_bounds(text, pairs, nexts, max_region, at_end, lo, hi) -> (starts, run_ends, "
     "ends, slow): kept base64 runs with their padding, and which are decoded alone (see "
     "_b64.c)."},
    {"b64_join", b64_join, METH_VARARGS,
     "b64_join(data, starts, ends, take, sep) -> (joined, offsets, places): the decoded bytes "
     "of the runs taken, joined with sep between them (see _b64.c)."},
    {"classify", classify, METH_VARARGS,
     "classify(text, table, out): out[i] = table[text[i]], in one pass."},
    {"number_candidates", number_candidates, METH_VARARGS,
     "number_candidates(text, classes, stop, luts, params) -> int32 triples (kind, start, end): "
     "the digit runs a number token could start at (see _numbers.c)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_passes", "The matching engine's passes over every byte of a buffer, compiled.", -1, methods,
};

PyMODINIT_FUNC PyInit__passes(void) {
    b64_tables();
    class_table();
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddIntConstant(m, "MAX_LEN", (long)PASSES_MAX_LEN) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

/* The maximal runs of a byte class in a buffer of class bits, found in one pass.

   `classes.ByteClasses.runs` and `decode._runs_np` find the same runs with numpy, in several
   passes over the whole buffer (a mask, a compare, a nonzero, and for base64 and hex an
   erosion); this module does it in one: 64 class bytes make a 64-bit mask, and the mask's edges
   (where it differs from itself shifted by one) are the runs' starts and ends. It is optional: without it (no compiler when the package was installed) the numpy
   passes run, and give the same runs (tests compare the two).

   runs(classes, bit, minimum, with_bits=False) -> (pairs, bits)
     classes: a buffer of class bytes (uint8), one per byte of the text;
     bit: the class bit (1..255) a run's bytes all have;
     minimum: the shortest run kept (1 keeps every run);
     pairs: bytes of int32 (start, end) pairs, end exclusive, in order;
     bits: with_bits, bytes holding the OR of each kept run's class bytes; else None. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
/* SSE2 where the compiler has it (every x86-64); else eight bytes at a time in plain C (the
   tests build that path too, with PLIMSOLL_RUNS_PORTABLE defined). */
#if defined(__SSE2__) && !defined(PLIMSOLL_RUNS_PORTABLE)
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

/* The run boundaries of class `bit` in c[0:n]: t[k] = i wherever the class starts or stops, so
   runs are (t[0], t[1]), (t[2], t[3]), ...; t holds n + 1 entries. 64 bytes make one mask, and
   its edges are the bits where it differs from itself shifted by one. */
static Py_ssize_t edges(const uint8_t *c, Py_ssize_t n, uint8_t bit, int32_t *t) {
    Py_ssize_t k = 0;
    uint64_t carry = 0;  /* whether the byte before this block is in the class */
    for (Py_ssize_t base = 0; base < n; base += 64) {
        uint64_t m;
        if (base + 64 <= n) {
            m = mask64(c + base, bit);
        } else {  /* the tail, zero-padded: a run that reaches the end ends at n */
            uint8_t tail[64] = {0};
            memcpy(tail, c + base, (size_t)(n - base));
            m = mask64(tail, bit);
        }
        uint64_t edge = m ^ ((m << 1) | carry);
        carry = m >> 63;
        while (edge) {
            t[k++] = (int32_t)(base + __builtin_ctzll(edge));
            edge &= edge - 1;
        }
    }
    if (carry) t[k++] = (int32_t)n;
    return k;
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
    if (bit < 1 || bit > 255 || minimum < 1 || view.len > INT32_MAX - 16) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError,
                        "runs: bit must be 1..255, minimum >= 1, and the buffer under 2 GiB");
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
    count = keep_long(t, edges(c, n, (uint8_t)bit, t) / 2, minimum);
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

static PyMethodDef methods[] = {
    {"runs", (PyCFunction)(void (*)(void))runs, METH_VARARGS | METH_KEYWORDS,
     "runs(classes, bit, minimum, with_bits=False) -> (pairs, bits): the maximal runs of bytes "
     "with class `bit`, `minimum` or more long, as int32 (start, end) pairs; with_bits, the OR "
     "of each run's class bytes."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_runs", "The runs of a byte class, in one pass.", -1, methods,
};

PyMODINIT_FUNC PyInit__runs(void) { return PyModule_Create(&module); }

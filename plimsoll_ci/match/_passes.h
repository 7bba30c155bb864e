/* What the sources of `match._passes` share: _passes.c has the module and the runs of a class,
   _numbers.c the number candidates, _texts.c words and lines, _b64.c base64 regions. */
#ifndef PLIMSOLL_PASSES_H
#define PLIMSOLL_PASSES_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* The longest buffer a pass takes: places are int32, and 16 bytes are spare for the SSE2 tails.
   (`MAX_LEN` in the module: the Python side reads the same bound.) */
#define PASSES_MAX_LEN ((Py_ssize_t)INT32_MAX - 16)

/* Whether `n` bytes are over PASSES_MAX_LEN: then a ValueError naming `fn` and the bound is set
   (every pass checks each length it takes before anything else). */
static inline int too_long(const char *fn, const char *what, Py_ssize_t n) {
    if (n <= PASSES_MAX_LEN) return 0;
    PyErr_Format(PyExc_ValueError,
                 "%s: %s of %zd bytes is over the %zd-byte bound of the compiled passes "
                 "(their places are int32); the pure-Python passes take it", fn, what, n,
                 PASSES_MAX_LEN);
    return 1;
}

/* Places (int32 runs, flags) that a pass follows after it releases the interpreter lock come
   as `bytes` only: immutable, so what was checked is what is read. A writable buffer (a
   bytearray, an array, a memoryview of one) could be changed by another thread meanwhile and
   send the pass outside its buffers; it is refused with a TypeError naming `fn` and `what`. */
static inline const char *immutable(PyObject *obj, const char *fn, const char *what) {
    if (!PyBytes_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s: %s must be bytes (immutable), not %.100s", fn, what,
                     Py_TYPE(obj)->tp_name);
        return NULL;
    }
    return PyBytes_AS_STRING(obj);
}

/* The maximal runs of class `bit` in the class bytes c[0:n], as (start, end) int32 pairs into
   t (n + 1 entries); their count. */
Py_ssize_t runs_of(const uint8_t *c, Py_ssize_t n, uint8_t bit, int32_t *t);

/* Which of the 64 class bytes from c[base] (zero past n) have `bit`: bit j for c[base + j]. */
uint64_t class_mask(const uint8_t *c, Py_ssize_t n, Py_ssize_t base, uint8_t bit);

/* Whether the sorted keys[0:n] hold k. */
int has_key(const int64_t *keys, Py_ssize_t n, int64_t k);

PyObject *number_candidates(PyObject *self, PyObject *args);

/* _texts.c */
PyObject *word_windows(PyObject *self, PyObject *args);
PyObject *escape_lines(PyObject *self, PyObject *args);
PyObject *wrapped_lines(PyObject *self, PyObject *args);

/* _b64.c */
PyObject *base64_bounds(PyObject *self, PyObject *args);
PyObject *b64_join(PyObject *self, PyObject *args);

#endif

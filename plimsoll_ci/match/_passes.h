/* What the sources of `match._passes` share: _passes.c has the module and the runs of a class,
   _numbers.c the number candidates, _texts.c words and lines, _b64.c base64 regions. */
#ifndef PLIMSOLL_PASSES_H
#define PLIMSOLL_PASSES_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

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

/* What the two sources of `match._runs` share: _runs.c has the module and the runs of a class,
   _numbers.c the number candidates. */
#ifndef PLIMSOLL_RUNS_H
#define PLIMSOLL_RUNS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* The maximal runs of class `bit` in the class bytes c[0:n], as (start, end) int32 pairs into
   t (n + 1 entries); their count. */
Py_ssize_t runs_of(const uint8_t *c, Py_ssize_t n, uint8_t bit, int32_t *t);

PyObject *number_candidates(PyObject *self, PyObject *args);

#endif

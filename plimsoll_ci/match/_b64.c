/* The base64 regions of a large buffer, after `base64_kept` (in _passes.c) found its runs: where
   each ends with its padding and which must be decoded one by one (`base64_bounds`), and the
   decoded bytes of the others joined in one piece (`b64_join`). What `decode._base64_np` did
   with numpy over every kept run (a buffer of source has thousands a megabyte: CamelCase names)
   is done here, so the compiled path reads no numpy; without the compiled part numpy does it. */

#include <string.h>

#include "_passes.h"

/* base64_bounds(text, pairs, nexts, max_region, at_end, lo, hi) -> (starts, run_ends, ends,
   slow): for the kept runs `pairs` (int32 start, end) and the length of the run after each
   (`nexts`, int32; 0 for none), their starts and ends apart (int32), their ends with the padding
   (up to two `=`), and slow[r] = 1 for a run that must be decoded alone: one that ends its line
   and could start a wrapped block (`candidates.may_wrap`: 12+ bytes, no `=` at its end, and a
   width lo..hi, a multiple of 4, its own or its next line's when that is no shorter), one longer
   than `max_region`, and, unless `at_end`, one that runs to the end of the text. */
PyObject *base64_bounds(PyObject *self, PyObject *args) {
    Py_buffer text;
    PyObject *pairs, *nexts;
    Py_ssize_t max_region;
    int at_end, lo, hi;
    if (!PyArg_ParseTuple(args, "y*OOnpii", &text, &pairs, &nexts, &max_region, &at_end, &lo,
                          &hi))
        return NULL;
    PyObject *result = NULL, *starts = NULL, *run_ends = NULL, *ends = NULL, *slow = NULL;
    const int32_t *t = (const int32_t *)immutable(pairs, "base64_bounds", "pairs");
    const int32_t *nx = t ? (const int32_t *)immutable(nexts, "base64_bounds", "nexts") : NULL;
    if (nx == NULL || too_long("base64_bounds", "the text", text.len)
        || too_long("base64_bounds", "pairs", PyBytes_GET_SIZE(pairs)))
        goto done;
    Py_ssize_t k = PyBytes_GET_SIZE(nexts) / 4, n = text.len;
    const uint8_t *c = (const uint8_t *)text.buf;
    if (PyBytes_GET_SIZE(pairs) != 8 * k || PyBytes_GET_SIZE(nexts) % 4 || lo < 1 || hi < lo)
        goto bad;
    for (Py_ssize_t r = 0; r < k; r++)
        if (t[2 * r] < 0 || t[2 * r + 1] <= t[2 * r] || t[2 * r + 1] > n || nx[r] < 0) goto bad;
    starts = PyBytes_FromStringAndSize(NULL, 4 * k);
    run_ends = PyBytes_FromStringAndSize(NULL, 4 * k);
    ends = PyBytes_FromStringAndSize(NULL, 4 * k);
    slow = PyBytes_FromStringAndSize(NULL, k);
    if (starts == NULL || run_ends == NULL || ends == NULL || slow == NULL) goto done;
    int32_t *st = (int32_t *)PyBytes_AS_STRING(starts), *re = (int32_t *)PyBytes_AS_STRING(run_ends);
    int32_t *en = (int32_t *)PyBytes_AS_STRING(ends);
    uint8_t *sl = (uint8_t *)PyBytes_AS_STRING(slow);
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; r < k; r++) {
        int32_t s = t[2 * r], e = t[2 * r + 1];
        st[r] = s;
        re[r] = e;
        for (int j = 0; j < 2; j++)
            if (e < n && c[e] == '=') e++;
        en[r] = e;
        uint8_t one = 0;
        if (e < n && (c[e] == '\n' || c[e] == '\r')) {
            int64_t first = e - s, second = nx[r];
            int own = first % 4 == 0 && first >= lo && first <= hi;
            int by_second = second > 0 && second % 4 == 0 && second >= first && second >= lo
                            && second <= hi;
            one = first >= 12 && c[e - 1] != '=' && (own || by_second);
        }
        if (e - s > max_region || (!at_end && e >= n)) one = 1;
        sl[r] = one;
    }
    Py_END_ALLOW_THREADS
    result = PyTuple_Pack(4, starts, run_ends, ends, slow);
    goto done;
bad:
    PyErr_SetString(PyExc_ValueError,
                    "base64_bounds: int32 runs inside the text, a next length for each, lo <= hi");
done:
    Py_XDECREF(starts);
    Py_XDECREF(run_ends);
    Py_XDECREF(ends);
    Py_XDECREF(slow);
    PyBuffer_Release(&text);
    return result;
}

/* b64_join(data, starts, ends, take, sep) -> (joined, offsets, places): `data` as `b64_runs`
   gives it for the runs (int32 `starts`, `ends`: each run's decoded bytes from 3 * the quads
   of the runs before it, (end - start) * 3 / 4 of them); the decoded bytes of the runs with
   take[r] != 0 joined with `sep` between them (as `sep.join`), the start of each of those runs
   (int32) and where its bytes start in `joined` (int64). */
PyObject *b64_join(PyObject *self, PyObject *args) {
    Py_buffer data, sep;
    PyObject *starts, *ends, *take;
    if (!PyArg_ParseTuple(args, "y*OOOy*", &data, &starts, &ends, &take, &sep)) return NULL;
    PyObject *result = NULL, *joined = NULL, *offsets = NULL, *places = NULL;
    const int32_t *st = (const int32_t *)immutable(starts, "b64_join", "starts");
    const int32_t *en = st ? (const int32_t *)immutable(ends, "b64_join", "ends") : NULL;
    const uint8_t *tk = en ? (const uint8_t *)immutable(take, "b64_join", "take") : NULL;
    if (tk == NULL || too_long("b64_join", "the data", data.len)
        || too_long("b64_join", "the separator", sep.len)
        || too_long("b64_join", "starts", PyBytes_GET_SIZE(starts)))
        goto done;
    Py_ssize_t k = PyBytes_GET_SIZE(take), total = 0, count = 0, quads = 0;
    if (PyBytes_GET_SIZE(starts) != 4 * k || PyBytes_GET_SIZE(ends) != 4 * k) goto bad;
    for (Py_ssize_t r = 0; r < k; r++) {
        if (en[r] < st[r] || st[r] < 0) goto bad;
        if (tk[r]) {
            if (3 * quads + (Py_ssize_t)(en[r] - st[r]) * 3 / 4 > data.len) goto bad;
            total += (Py_ssize_t)(en[r] - st[r]) * 3 / 4;
            count++;
        }
        quads += ((Py_ssize_t)(en[r] - st[r]) + 3) / 4;
    }
    if (3 * quads > data.len) goto bad;
    if (count > 1) total += (count - 1) * sep.len;
    joined = PyBytes_FromStringAndSize(NULL, total);
    offsets = PyBytes_FromStringAndSize(NULL, 4 * count);
    places = PyBytes_FromStringAndSize(NULL, 8 * count);
    if (joined == NULL || offsets == NULL || places == NULL) goto done;
    char *o = PyBytes_AS_STRING(joined), *o0 = o;
    int32_t *off = (int32_t *)PyBytes_AS_STRING(offsets);
    int64_t *pl = (int64_t *)PyBytes_AS_STRING(places);
    const char *d = (const char *)data.buf;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t q = 0, i = 0;
    for (Py_ssize_t r = 0; r < k; r++) {
        Py_ssize_t len = (Py_ssize_t)(en[r] - st[r]);
        if (tk[r]) {
            if (i) {
                memcpy(o, sep.buf, (size_t)sep.len);
                o += sep.len;
            }
            off[i] = st[r];
            pl[i] = (int64_t)(o - o0);
            memcpy(o, d + 3 * q, (size_t)(len * 3 / 4));
            o += len * 3 / 4;
            i++;
        }
        q += (len + 3) / 4;
    }
    Py_END_ALLOW_THREADS
    result = PyTuple_Pack(3, joined, offsets, places);
    goto done;
bad:
    PyErr_SetString(PyExc_ValueError,
                    "b64_join: int32 runs, a flag for each, and their decoded bytes");
done:
    Py_XDECREF(joined);
    Py_XDECREF(offsets);
    Py_XDECREF(places);
    PyBuffer_Release(&data);
    PyBuffer_Release(&sep);
    return result;
}

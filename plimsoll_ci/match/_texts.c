/* The compiled parts of `match/` that look at words and lines rather than single runs (the module
   and the runs of a class are _passes.c): the text candidates of a buffer with the window of word
   runs each one needs, the lines that hold escapes, the lines of a wrapped base64 block, and
   spans of decoded bytes joined. Each has its Python equivalent in `match/` (tests compare them);
   none holds a value: they read bytes and return offsets and bytes of the buffer. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_passes.h"

/* word_windows(classes, text, bit, limit, tables, multiplier, tag_bits, k) -> bytes of int32
   The maximal runs of class `bit` (word bytes) in `classes` (the class bytes of `text`) that
   start before `limit` and that a text entry could start at: their first one to three lengths
   make a key some entry has and, when `tag_bits` > 0, their first word's tag (its first four
   bytes, ASCII letters lowered, and its length, times `multiplier`, top `tag_bits` bits) is
   some entry's; what `wordruns._candidates_np` picks with numpy. `tables` is one buffer: 256
   bytes `one` (first length), 65536 `two` (first two lengths), 65536 `pre3` (first two lengths
   of some three-length key), then `tag_ok` (1 << tag_bits bytes, or none), then the
   three-length keys as sorted int64. Lengths are clipped to 255; a run past the last one has
   length 0. For each candidate, the window `extract._text_runs` reads: the starts of the k runs
   from it, then their ends, 2k int32 per candidate (a run past the last one: start -1, and the
   last run's end). No array of every run reaches Python (source brings one run per six
   bytes). */
static inline unsigned run_len(const int32_t *t, Py_ssize_t i, Py_ssize_t count) {
    if (i >= count) return 0;
    int32_t v = t[2 * i + 1] - t[2 * i];
    return v > 255 ? 255u : (unsigned)v;
}

PyObject *word_windows(PyObject *self, PyObject *args) {
    Py_buffer view, text, tables;
    int bit, tag_bits, k;
    Py_ssize_t limit;
    unsigned long long mult;
    if (!PyArg_ParseTuple(args, "y*y*iny*Kii", &view, &text, &bit, &limit, &tables, &mult,
                          &tag_bits, &k))
        return NULL;
    Py_ssize_t n = view.len;
    Py_ssize_t tag_size = tag_bits > 0 && tag_bits <= 24 ? ((Py_ssize_t)1 << tag_bits) : 0;
    Py_ssize_t fixed = 256 + 65536 + 65536 + tag_size;
    PyObject *result = NULL;
    int32_t *t = NULL, *picked = NULL, *out = NULL;
    int64_t *k3 = NULL;
    if (too_long("word_windows", "the text", text.len)) goto done;
    if (text.len != n || bit < 1 || bit > 255 || tag_bits < 0
        || tag_bits > 24 || k < 1 || k > 64 || tables.len < fixed || (tables.len - fixed) % 8) {
        PyErr_SetString(PyExc_ValueError, "word_windows: classes as long as the text, a bit "
                        "1..255, tag bits 0..24, k 1..64 and tables that fit them");
        goto done;
    }
    const uint8_t *c = (const uint8_t *)view.buf, *buf = (const uint8_t *)text.buf;
    const uint8_t *one = (const uint8_t *)tables.buf;
    const uint8_t *two = one + 256, *pre3 = two + 65536, *tag_ok = pre3 + 65536;
    Py_ssize_t n3 = (tables.len - fixed) / 8, count = 0, m = 0;
    t = malloc((size_t)(n + 1) * sizeof(int32_t));
    picked = malloc((size_t)(n / 2 + 1) * sizeof(int32_t));
    if (n3) k3 = malloc((size_t)n3 * 8);
    if (t == NULL || picked == NULL || (n3 && k3 == NULL)) { PyErr_NoMemory(); goto done; }
    if (n3) memcpy(k3, tag_ok + tag_size, (size_t)n3 * 8);  /* (aligned) */
    Py_BEGIN_ALLOW_THREADS
    count = runs_of(c, n, (uint8_t)bit, t);
    /* First the keys of run lengths, then the tags of the runs they keep (about half of a
       source's words have some entry's first length): each pass without a branch per run. */
    unsigned l0 = run_len(t, 0, count);
    for (Py_ssize_t i = 0; i < count && t[2 * i] < limit; i++) {
        unsigned l1 = run_len(t, i + 1, count), pair = (l0 << 8) | l1;
        unsigned sel = one[l0] | two[pair];
        if (pre3[pair] && n3 && !sel)
            sel = (unsigned)has_key(k3, n3, ((int64_t)pair << 8) | run_len(t, i + 2, count));
        picked[m] = (int32_t)i;
        m += sel != 0;
        l0 = l1;
    }
    if (tag_bits > 0) {
        Py_ssize_t kept = 0;
        for (Py_ssize_t j = 0; j < m; j++) {
            Py_ssize_t i = picked[j];
            int32_t s = t[2 * i];
            unsigned len = run_len(t, i, count), nb = len < 4 ? len : 4;
            uint64_t key = 0;
            if ((Py_ssize_t)s + 4 <= n) {  /* four bytes at once, the word's kept */
                uint32_t w4;
                memcpy(&w4, buf + s, 4);
                key = w4 & (nb >= 4 ? 0xffffffffu : (1u << (8 * nb)) - 1u);
            } else {
                for (unsigned q = 0; q < nb; q++) key |= (uint64_t)buf[s + q] << (8 * q);
            }
            /* within a word, bytes 0x40-0x5f are the upper-case letters: set their case bit */
            uint64_t b6 = key & 0x40404040ULL;
            uint64_t up = b6 & ~((key & 0x20202020ULL) << 1) & ~((key & 0x80808080ULL) >> 1);
            key |= up >> 1;
            key |= (uint64_t)len << 32;
            picked[kept] = (int32_t)i;
            kept += tag_ok[(key * (uint64_t)mult) >> (64 - tag_bits)] != 0;
        }
        m = kept;
    }
    Py_END_ALLOW_THREADS
    out = malloc((size_t)(m * 2 * k + 1) * sizeof(int32_t));
    if (out == NULL) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t j = 0; j < m; j++) {
        int32_t *row = out + j * 2 * k;
        for (int r = 0; r < k; r++) {
            Py_ssize_t i = picked[j] + r;
            row[r] = i < count ? t[2 * i] : -1;
            row[k + r] = t[2 * (i < count ? i : count - 1) + 1];
        }
    }
    result = PyBytes_FromStringAndSize((const char *)out, m * 2 * k * (Py_ssize_t)sizeof(int32_t));
done:
    free(t);
    free(picked);
    free(k3);
    free(out);
    PyBuffer_Release(&view);
    PyBuffer_Release(&text);
    PyBuffer_Release(&tables);
    return result;
}

/* escape_lines(classes, text, bit) -> bytes of int32 triples (line start, line end, hit)
   Each line of `text` that holds an escape or an entity as `decode._esc_hit` matches them
   (`%XX`, `\uXXXX`, `\xXX`, `&name;` or `&#NNN;` of 1 to 10 letters and digits): where it starts,
   where its line break is (or the text's end), and where its first one starts. Its leads are
   the bytes of class `bit` (`%`, `\`, `&`) in `classes`, the class bytes of `text`. */
static inline int is_hex(uint8_t x) {
    return (x >= '0' && x <= '9') || ((x | 0x20) >= 'a' && (x | 0x20) <= 'f');
}

static inline int is_alnum(uint8_t x) {
    return (x >= '0' && x <= '9') || ((x | 0x20) >= 'a' && (x | 0x20) <= 'z');
}

static int escape_at(const uint8_t *x, Py_ssize_t n, Py_ssize_t p) {
    if (x[p] == '%') return p + 2 < n && is_hex(x[p + 1]) && is_hex(x[p + 2]);
    if (x[p] == '\\') {
        if (p + 3 < n && x[p + 1] == 'x') return is_hex(x[p + 2]) && is_hex(x[p + 3]);
        if (p + 5 < n && x[p + 1] == 'u')
            return is_hex(x[p + 2]) && is_hex(x[p + 3]) && is_hex(x[p + 4]) && is_hex(x[p + 5]);
        return 0;
    }
    if (x[p] == '&') {
        Py_ssize_t q = p + 1, r = 0;
        if (q < n && x[q] == '#') q++;
        while (r <= 10 && q + r < n && is_alnum(x[q + r])) r++;
        return r >= 1 && r <= 10 && q + r < n && x[q + r] == ';';
    }
    return 0;
}

PyObject *escape_lines(PyObject *self, PyObject *args) {
    Py_buffer view, text;
    int bit;
    if (!PyArg_ParseTuple(args, "y*y*i", &view, &text, &bit)) return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = view.len, k = 0, cap = 256;
    int32_t *out = NULL;
    if (too_long("escape_lines", "the text", text.len)) goto done;
    if (text.len != n || bit < 1 || bit > 255) {
        PyErr_SetString(PyExc_ValueError,
                        "escape_lines: classes as long as the text, a bit 1..255");
        goto done;
    }
    const uint8_t *c = (const uint8_t *)view.buf, *x = (const uint8_t *)text.buf;
    out = malloc((size_t)cap * 3 * sizeof(int32_t));
    if (out == NULL) { PyErr_NoMemory(); goto done; }
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t pos = 0;
    while (pos < n) {
        Py_ssize_t base = pos & ~(Py_ssize_t)63;
        uint64_t m = class_mask(c, n, base, (uint8_t)bit) & (~0ULL << (pos - base));
        while (!m && base + 64 < n) {
            base += 64;
            m = class_mask(c, n, base, (uint8_t)bit);
        }
        if (!m) break;
        Py_ssize_t p = base + __builtin_ctzll(m);
        if (!escape_at(x, n, p)) {
            pos = p + 1;
            continue;
        }
        Py_ssize_t ls = p, le = p;
        while (ls > 0 && x[ls - 1] != '\n') ls--;
        const uint8_t *nl = memchr(x + p, '\n', (size_t)(n - p));
        le = nl != NULL ? nl - x : n;
        if (k == cap) {
            int32_t *more = realloc(out, (size_t)cap * 2 * 3 * sizeof(int32_t));
            if (more == NULL) { failed = 1; break; }
            out = more;
            cap *= 2;
        }
        out[3 * k] = (int32_t)ls;
        out[3 * k + 1] = (int32_t)le;
        out[3 * k + 2] = (int32_t)p;
        k++;
        pos = le + 1;
    }
    Py_END_ALLOW_THREADS
    if (failed)
        PyErr_NoMemory();
    else
        result = PyBytes_FromStringAndSize((const char *)out, k * 3 * (Py_ssize_t)sizeof(int32_t));
done:
    free(out);
    PyBuffer_Release(&view);
    PyBuffer_Release(&text);
    return result;
}

/* wrapped_lines(text, a, b, limit) -> bytes of int32 (start, end) pairs, or None
   `b64.wrapped` compiled: the lines of a line-wrapped base64 block whose first line is
   text[a:b] (each later line as `b64._wrap_next` matches it: a line break, the block's
   indentation, a run of the alphabet and up to two `=`; a line's end is after its padding), or
   None when text[a:b] starts no block. The rules are `wrapped`'s, in its order. */
static inline int is_b64_char(uint8_t x) {
    return is_alnum(x) || x == '+' || x == '/' || x == '_' || x == '-';
}

static inline int is_space(uint8_t x) {  /* what bytes.strip() strips */
    return x == ' ' || x == '\t' || x == '\n' || x == '\r' || x == '\x0b' || x == '\x0c';
}

PyObject *wrapped_lines(PyObject *self, PyObject *args) {
    Py_buffer text;
    Py_ssize_t a, b, limit;
    if (!PyArg_ParseTuple(args, "y*nnn", &text, &a, &b, &limit)) return NULL;
    const uint8_t *x = (const uint8_t *)text.buf;
    Py_ssize_t n = text.len, count = 0, cap = 16, width = -1, indent = -1, indent_len = 0;
    int32_t *lines = NULL;
    PyObject *result = NULL;
    if (too_long("wrapped_lines", "the text", n)) goto done;
    if (a < 0 || b < a || b > n) {
        PyErr_SetString(PyExc_ValueError, "wrapped_lines: a run a <= b inside the text");
        goto done;
    }
    Py_ssize_t first = b - a;
    if (b >= n || (x[b] != '\n' && x[b] != '\r') || first < 12 || x[b - 1] == '=') goto none;
    lines = malloc((size_t)cap * 2 * sizeof(int32_t));
    if (lines == NULL) { PyErr_NoMemory(); goto done; }
    lines[0] = (int32_t)a;
    lines[1] = (int32_t)b;
    count = 1;
    Py_ssize_t pos = b;
    while (pos - a <= limit) {
        Py_ssize_t q = pos;
        if (q < n && x[q] == '\r') q++;
        if (q >= n || x[q] != '\n') break;
        Py_ssize_t is = ++q;
        while (q < n && (x[q] == ' ' || x[q] == '\t')) q++;
        Py_ssize_t ie = q, rs = q;
        while (q < n && is_b64_char(x[q])) q++;
        Py_ssize_t re = q;
        if (re == rs) break;
        while (q < n && q - re < 2 && x[q] == '=') q++;
        Py_ssize_t pe = q, len = re - rs;
        if (indent < 0) {
            indent = is;
            indent_len = ie - is;
        } else if (ie - is != indent_len || memcmp(x + is, x + indent, (size_t)indent_len)) {
            break;
        }
        int padded = pe > re, after = pe < n ? x[pe] : -1;
        int full = !padded && (after == '\n' || after == '\r');
        if (width < 0) width = full && len >= first ? len : first;
        if (len > width || (len < width && !padded && (after == ' ' || after == '\t'))) break;
        if (count == cap) {
            int32_t *more = realloc(lines, (size_t)cap * 4 * sizeof(int32_t));
            if (more == NULL) { PyErr_NoMemory(); goto done; }
            lines = more;
            cap *= 2;
        }
        lines[2 * count] = (int32_t)rs;
        lines[2 * count + 1] = (int32_t)pe;
        count++;
        if (len < width || !full) break;
        pos = pe;
    }
    if (count < 2 || width < 0 || width % 4 || width < 16 || width > 1024) goto none;
    if (first < width) {  /* a short first line with nothing before it: no block starts there */
        Py_ssize_t ls = a;
        while (ls > 0 && x[ls - 1] != '\n') ls--;
        Py_ssize_t j = ls;
        while (j < a && is_space(x[j])) j++;
        if (j == a) goto none;
    }
    result = PyBytes_FromStringAndSize((const char *)lines, count * 2 * (Py_ssize_t)sizeof(int32_t));
    goto done;
none:
    result = Py_NewRef(Py_None);
done:
    free(lines);
    PyBuffer_Release(&text);
    return result;
}

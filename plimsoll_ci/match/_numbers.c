/* The number tokens a buffer's digit runs could start, compiled: part of `match._passes` (its
   module table is in _passes.c). `extract._numbers_small` reads the runs one by one with `re` and
   `extract._numbers_np` picks the same runs in twenty numpy passes; this is one pass that walks
   the runs as `_numbers_small` does and keeps only what an exact check could take (each test
   below drops nothing the exact checks in `extract` would keep: the tests compare all three).

   number_candidates(text, classes, stop, luts, params) -> int32 triples (kind, start, end)
     text     the buffer (no-break spaces already made two spaces);
     classes  its class bytes (digits carry the bit `params[0]`);
     stop     only runs that start before it (the rest is context);
     luts     512 bytes: whether an integer entry has this many digits, then whether some number
              entry has this many significant digits (index min(count, 255): 255 means 255 or
              more);
     params   (digit_bit, flags, min_int_length, min_sig, hex_need, oct_need, bin_need): flags 1
              integer entries, 2 entries with a fraction, 4 clockable entries, 8 integer entries
              of 7+ digits (comma-grouped integers looked for); *_need: the fewest digits a
              prefixed integer (`0x..`, `0o..`, `0b..`) needs to reach min_int_length digits.
   kind: 1 a comma-grouped integer starts here, 2 a plain integer run (start, end), 3 a number
   token starts here (`extract._token`), 4 a clock starts here (start, its end). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_passes.h"

enum { K_GROUPED = 1, K_PLAIN = 2, K_TOKEN = 3, K_CLOCK = 4 };
enum { F_INTS = 1, F_DECIMALS = 2, F_CLOCKABLE = 4, F_GROUPED = 8 };

typedef struct {
    const uint8_t *b;
    Py_ssize_t n;
} Text;

/* The byte at i, or a space past either end (as the padded arrays of numpy's path read it). */
static inline uint8_t at(Text t, Py_ssize_t i) { return i >= 0 && i < t.n ? t.b[i] : ' '; }
static inline int is_digit(uint8_t c) { return c >= '0' && c <= '9'; }
static inline int exponent(uint8_t c) { return c == 'e' || c == 'E'; }
static inline int radix(uint8_t c) {  /* x o b, either case: a prefixed integer's letter */
    c |= 0x20;
    return c == 'x' || c == 'o' || c == 'b';
}
static inline int continues(uint8_t c) { return exponent(c) || c == '_' || radix(c); }
static inline unsigned clip(Py_ssize_t v) { return v > 255 ? 255u : (unsigned)v; }

/* The end of the clock at s (`0:31.5`, `1:02:03`; the run there is 1-3 digits and a colon
   follows it), or -1: `CLOCK_RE` and `extract._clock_end`. */
static Py_ssize_t clock_end(Text t, Py_ssize_t e) {
    Py_ssize_t p = e + 1;
    uint8_t c = at(t, p);
    if (!(c >= '0' && c <= '5' && is_digit(at(t, p + 1)))) return -1;
    p += 2;
    c = at(t, p + 1);
    if (at(t, p) == ':' && c >= '0' && c <= '5' && is_digit(at(t, p + 2))) p += 3;
    if (at(t, p) == '.' && is_digit(at(t, p + 1))) {
        p += 2;
        while (p < t.n && is_digit(t.b[p])) p++;
    }
    uint8_t nx = at(t, p), nx2 = at(t, p + 1), nx3 = at(t, p + 2);
    if (is_digit(nx) || ((nx == ':' || nx == '.' || nx == '_') && is_digit(nx2))
        || (exponent(nx) && (is_digit(nx2) || ((nx2 == '+' || nx2 == '-') && is_digit(nx3)))))
        return -1;
    return p;
}

/* Whether a comma-grouped integer of a length some entry has starts at s (`_GROUPED` and
   `extract._grouped`): 1-3 digits not starting with 0, then 2-6 groups of `,ddd`, and no digit,
   `,digit` or `.digit` after them. */
static int grouped(Text t, Py_ssize_t s, Py_ssize_t ln, const uint8_t *int_lut) {
    if (ln > 3 || t.b[s] == '0') return 0;
    Py_ssize_t p = s + ln, g = 0;
    while (g < 6 && at(t, p) == ',' && is_digit(at(t, p + 1)) && is_digit(at(t, p + 2))
           && is_digit(at(t, p + 3))) {
        p += 4;
        g++;
    }
    if (g < 2) return 0;
    uint8_t c = at(t, p);
    if (is_digit(c) || ((c == ',' || c == '.') && is_digit(at(t, p + 1)))) return 0;
    return int_lut[clip(ln + 3 * g)];
}

/* Whether the digits and underscores after a prefix (`0x` at s) are `need` or more in a row. */
static int prefixed_long(Text t, Py_ssize_t s, int need) {
    for (Py_ssize_t j = 0; j < need; j++) {
        uint8_t c = at(t, s + 2 + j);
        if (!(is_digit(c) || c == '_' || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f'))) return 0;
    }
    return 1;
}

/* Whether the integer grouped by underscores at run i (`1_000`, `86_64`) has `length` digits
   or more, or goes on with a fraction or an exponent, or chains over 64 runs
   (`digitruns.underscored_long_enough`). */
static int underscored_long(Text t, const int32_t *r, Py_ssize_t nr, Py_ssize_t i,
                            Py_ssize_t length) {
    Py_ssize_t total = r[2 * i + 1] - r[2 * i], cur = i;
    int steps = 0;
    for (; steps < 64; steps++) {
        if (!(cur + 1 < nr && at(t, r[2 * cur + 1]) == '_'
              && r[2 * cur + 2] == r[2 * cur + 1] + 1))
            break;
        cur++;
        total += r[2 * cur + 1] - r[2 * cur];
    }
    uint8_t after = at(t, r[2 * cur + 1]);
    return total >= length || after == '.' || exponent(after) || steps == 64;
}

/* The significant digits of run i and, with `frac`, of run i + 1 after its dot: their digits
   without the zeros before the first nonzero one and after the last (`extract._sig_ok`). */
static Py_ssize_t significant(Text t, const int32_t *r, Py_ssize_t i, int frac) {
    Py_ssize_t lo = r[2 * i], hi = r[2 * i + 1], lo2 = hi, hi2 = hi;
    if (frac) {
        lo2 = r[2 * i + 2];
        hi2 = r[2 * i + 3];
    }
    Py_ssize_t first = -1, last = -1;
    for (Py_ssize_t p = lo; p < hi && first < 0; p++) if (t.b[p] != '0') first = p - lo;
    for (Py_ssize_t p = lo2; p < hi2 && first < 0; p++)
        if (t.b[p] != '0') first = (hi - lo) + (p - lo2);
    if (first < 0) return 0;
    for (Py_ssize_t p = hi2 - 1; p >= lo2 && last < 0; p--)
        if (t.b[p] != '0') last = (hi - lo) + (p - lo2);
    for (Py_ssize_t p = hi - 1; p >= lo && last < 0; p--) if (t.b[p] != '0') last = p - lo;
    return last - first + 1;
}

typedef struct {
    int32_t *out;
    Py_ssize_t k;
} Picks;

static inline void pick(Picks *o, int kind, Py_ssize_t s, Py_ssize_t e) {
    o->out[3 * o->k] = kind;
    o->out[3 * o->k + 1] = (int32_t)s;
    o->out[3 * o->k + 2] = (int32_t)e;
    o->k++;
}

typedef struct {
    int flags;
    Py_ssize_t min_int, min_sig;
    int need[3];  /* digits after 0x, 0o, 0b */
    const uint8_t *int_lut, *sig_lut;
} Rules;

/* Run i (of nr, as (start, end) pairs in r) as `_numbers_small` reads it; the end of a clock
   it starts, else `claimed` as it was. */
static Py_ssize_t one_run(Text t, const int32_t *r, Py_ssize_t nr, Py_ssize_t i,
                          const Rules *u, Picks *o, Py_ssize_t claimed) {
    Py_ssize_t s = r[2 * i], e = r[2 * i + 1], ln = e - s;
    uint8_t p = at(t, s - 1), p2 = at(t, s - 2), nx = at(t, e);
    if (is_digit(p2) && (p == '.' || (p == '_' && ln <= 4))) return claimed;  /* inside a token */
    int nx2d = is_digit(at(t, e + 1)), ints = u->flags & F_INTS;
    if (nx == ':' && nx2d && ln <= 3 && !(p == ':' && is_digit(p2))) {
        Py_ssize_t end = clock_end(t, e);
        if (end >= 0) {  /* a clock is one token; anything else beside a colon is not */
            if (u->flags & F_CLOCKABLE) pick(o, K_CLOCK, s, end);
            return end;
        }
    }
    if ((u->flags & F_GROUPED) && nx == ',' && nx2d && !((p == ',' || p == ':') && is_digit(p2))
        && grouped(t, s, ln, u->int_lut))
        pick(o, K_GROUPED, s, 0);
    int dot = nx == '.' && nx2d;
    int cont = dot || (continues(nx) && (nx2d || radix(nx)))
               || (exponent(nx) && (at(t, e + 1) == '+' || at(t, e + 1) == '-')
                   && is_digit(at(t, e + 2)));
    if (!cont) {
        if (ints && (u->int_lut[clip(ln)] || (t.b[s] == '0' && ln > u->min_int)))
            pick(o, K_PLAIN, s, e);
        return claimed;
    }
    /* after a dot, the digits of run i + 1 (`31.5`: the 5) are the token's too */
    int frac = dot && i + 1 < nr && r[2 * i + 2] == e + 1;
    Py_ssize_t next_len = frac ? r[2 * i + 3] - r[2 * i + 2] : 0;
    int prefixed = ln == 1 && t.b[s] == '0' && radix(nx);
    if (ints && (prefixed || (nx == '_' && nx2d))) {
        int keep = 1;
        if (!(u->flags & F_DECIMALS)) {  /* only integer entries: too few digits equal none */
            uint8_t letter = nx | 0x20;
            keep = prefixed ? prefixed_long(t, s, u->need[letter == 'x' ? 0 : letter == 'o' ? 1 : 2])
                            : underscored_long(t, r, nr, i, u->min_int);
        }
        if (keep) pick(o, K_TOKEN, s, 0);
        return claimed;
    }
    if (ln + next_len < u->min_sig) return claimed;
    if (dot && !(u->flags & F_DECIMALS)) {
        /* integers only: a fraction must have an exponent after it or be all zeros (it starts
           and ends with one; the exact test follows, per token) */
        Py_ssize_t frac_end = e + 1 + next_len;
        if (!exponent(at(t, frac_end)) && !(at(t, e + 1) == '0' && at(t, frac_end - 1) == '0'))
            return claimed;
    }
    if (u->sig_lut[clip(significant(t, r, i, frac))]) pick(o, K_TOKEN, s, 0);
    return claimed;
}

PyObject *number_candidates(PyObject *self, PyObject *args) {
    Py_buffer text, classes, luts;
    Py_ssize_t stop;
    int bit, flags, need[3];
    Py_ssize_t min_int, min_sig;
    if (!PyArg_ParseTuple(args, "y*y*ny*(iinniii)", &text, &classes, &stop, &luts, &bit, &flags,
                          &min_int, &min_sig, &need[0], &need[1], &need[2]))
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t n = text.len;
    if (too_long("number_candidates", "the text", n)) goto done;
    if (classes.len != n || luts.len != 512 || bit < 1 || bit > 255
        || need[0] < 0 || need[1] < 0 || need[2] < 0 || need[0] > 64 || need[1] > 64
        || need[2] > 64) {
        PyErr_SetString(PyExc_ValueError,
                        "number_candidates: classes as long as the text, 512 bytes of tables, "
                        "a bit 1..255 and prefixed digit counts 0..64");
        goto done;
    }
    int32_t *r = malloc((size_t)(n + 1) * sizeof(int32_t));
    if (r == NULL) { PyErr_NoMemory(); goto done; }
    Py_ssize_t nr;
    Py_BEGIN_ALLOW_THREADS
    nr = runs_of(classes.buf, n, (uint8_t)bit, r);
    Py_END_ALLOW_THREADS
    /* at most two picks per run (a grouped integer, then the run's own token) */
    Picks o = {malloc((size_t)(2 * nr + 1) * 3 * sizeof(int32_t)), 0};
    if (o.out == NULL) { free(r); PyErr_NoMemory(); goto done; }
    const uint8_t *lut = (const uint8_t *)luts.buf;
    Rules u = {flags, min_int, min_sig, {need[0], need[1], need[2]}, lut, lut + 256};
    Text t = {(const uint8_t *)text.buf, n};
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t claimed = -1;  /* the end of the last clock: the runs before it are its parts */
    for (Py_ssize_t i = 0; i < nr; i++) {
        if (r[2 * i] >= stop) break;
        if (!is_digit(t.b[r[2 * i]])) { bad = 1; break; }  /* classes that are not this text's */
        if (r[2 * i] < claimed) continue;
        claimed = one_run(t, r, nr, i, &u, &o, claimed);
    }
    Py_END_ALLOW_THREADS
    if (bad)
        PyErr_SetString(PyExc_ValueError, "number_candidates: classes that are not the text's");
    else
        result = PyBytes_FromStringAndSize((const char *)o.out,
                                           o.k * 3 * (Py_ssize_t)sizeof(int32_t));
    free(o.out);
    free(r);
done:
    PyBuffer_Release(&text);
    PyBuffer_Release(&classes);
    PyBuffer_Release(&luts);
    return result;
}

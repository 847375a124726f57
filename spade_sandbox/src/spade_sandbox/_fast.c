/* spade_sandbox._fast: the C fast path of the sandbox's step round trips.
 *
 * Optional: spade_sandbox.native imports it when it was built (and SPADE_SANDBOX_NO_C is
 * not set); every function here has a pure-Python twin that stays the reference, and each
 * one hands anything unusual back to that Python code in a state it can continue from.
 *
 *   step_call             the pool's side of one binary step (channel.WorkerLink.step)
 *   serve_steps           the worker's loop over binary step requests (worker.serve)
 *   encode_step_columns   a worker's columnar step_cols reply, as msgpack bytes
 *   decode_step_columns   the pool's decoding + checks of that reply (pool._unpack_columns)
 *   split_steps           the pool's checks of a step batch's items and actions (_group_steps)
 *
 * decode_step_columns and step_call parse bytes written by an untrusted worker: every
 * length is checked against the bytes actually there, nothing recurses, and anything that
 * is not exactly the expected shape returns a code (or None) to the Python path, which
 * then gives its own result or error. Frame layouts: protocol.py (STEP_REQUEST, STEP_REPLY).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define STEP_MARK 0xC1
#define HEADER 4
#define REQUEST_SIZE 13 /* header, mark, int64 instance id */
#define REPLY_TEXT 14   /* header, mark, flags, float64 reward */

/* step_call's codes (anything else: a tuple, or the count of bytes read) */
#define NOT_SENT (-1)
#define WRITE_FAILED (-2)
#define TIMED_OUT (-3)
#define MALFORMED (-4)
#define STOPPED_READING (-5)

/* An int argument (a descriptor, a timeout); -1 with an exception set when it is none. */
static int
as_int(PyObject *v)
{
    long x = PyLong_AsLong(v);
    if (x == -1 && PyErr_Occurred())
        return -1;
    if (x < INT_MIN || x > INT_MAX) {
        PyErr_SetString(PyExc_OverflowError, "int argument out of range");
        return -1;
    }
    return (int)x;
}

static PyObject *str_step;     /* "step" */
static PyObject *str_request;  /* "request" */

static inline uint32_t
be32(const unsigned char *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static inline uint16_t
be16(const unsigned char *p)
{
    return (uint16_t)(((uint16_t)p[0] << 8) | (uint16_t)p[1]);
}

static inline void
put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

static int64_t
monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait for `events` on fd for up to timeout_ms (GIL released). 1: ready, 0: timed out,
 * -1: a signal handler raised (exception set). EINTR runs the handlers and waits for the
 * rest of the time, as select.poll does (PEP 475). */
static int
wait_fd(int fd, short events, int timeout_ms)
{
    struct pollfd p = {fd, events, 0};
    int64_t deadline = monotonic_ms() + timeout_ms;
    int left = timeout_ms;
    for (;;) {
        int r;
        Py_BEGIN_ALLOW_THREADS
        r = poll(&p, 1, left);
        Py_END_ALLOW_THREADS
        if (r > 0)
            return 1;
        if (r == 0)
            return 0;
        if (errno != EINTR)
            return 1; /* let the read (or write) report what is wrong with fd */
        if (PyErr_CheckSignals() < 0)
            return -1;
        int64_t now = monotonic_ms();
        left = now >= deadline ? 0 : (int)(deadline - now);
    }
}

/* read() retried on EINTR after running signal handlers. -2: a handler raised. */
static Py_ssize_t
read_some(int fd, char *into, Py_ssize_t cap)
{
    for (;;) {
        Py_ssize_t k = read(fd, into, (size_t)cap);
        if (k >= 0)
            return k;
        if (errno != EINTR)
            return -1;
        if (PyErr_CheckSignals() < 0)
            return -2;
    }
}

/* ------------------------------------------------------------------------------------ */

PyDoc_STRVAR(step_call_doc,
"step_call(wfd, rfd, buf, iid, action, timeout_ms) -> tuple | int\n\n"
"One binary step round trip of the pool: write the request frame (only when it fits\n"
"atomically in the pipe), wait up to timeout_ms for the reply (GIL released), read into\n"
"the bytearray buf and parse a whole binary reply into (obs, reward, terminated,\n"
"truncated, {}). Otherwise returns an int: -1 nothing was sent (the Python path sends),\n"
"-2 the write failed, -3 no reply in time, -4 a malformed binary reply, -5 the worker\n"
"stopped reading, 0 the channel closed, n > 0 the first n bytes of some other reply are\n"
"in buf (the Python path continues from there).");

static PyObject *
step_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "step_call takes 6 arguments");
        return NULL;
    }
    int wfd = as_int(args[0]);
    int rfd = as_int(args[1]);
    if ((wfd == -1 || rfd == -1) && PyErr_Occurred())
        return NULL;
    PyObject *buf = args[2];
    if (!PyByteArray_CheckExact(buf) || PyByteArray_GET_SIZE(buf) < REPLY_TEXT) {
        PyErr_SetString(PyExc_TypeError, "step_call needs a bytearray of at least 14 bytes");
        return NULL;
    }
    /* A str subclass may define its own encode(): the Python path calls it. */
    if (!PyLong_CheckExact(args[3]) || !PyUnicode_CheckExact(args[4]))
        return PyLong_FromLong(NOT_SENT);
    int overflow = 0;
    long long iid = PyLong_AsLongLongAndOverflow(args[3], &overflow);
    if (overflow)
        return PyLong_FromLong(NOT_SENT); /* the Python path's struct.pack says why */
    int timeout_ms = as_int(args[5]);
    if (timeout_ms == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t alen;
    const char *text = PyUnicode_AsUTF8AndSize(args[4], &alen);
    if (text == NULL) {
        PyErr_Clear(); /* lone surrogates: the Python path sends it as msgpack */
        return PyLong_FromLong(NOT_SENT);
    }
    if (alen > PIPE_BUF - REQUEST_SIZE)
        return PyLong_FromLong(NOT_SENT);
    unsigned char frame[PIPE_BUF];
    Py_ssize_t total = REQUEST_SIZE + alen;
    put32(frame, (uint32_t)(total - HEADER));
    frame[4] = STEP_MARK;
    uint64_t u = (uint64_t)iid;
    for (int i = 0; i < 8; i++)
        frame[5 + i] = (unsigned char)(u >> (56 - 8 * i));
    memcpy(frame + REQUEST_SIZE, text, (size_t)alen);

    Py_ssize_t sent = 0;
    while (sent < total) {
        Py_ssize_t k = write(wfd, frame + sent, (size_t)(total - sent));
        if (k > 0) {
            sent += k;
            continue;
        }
        if (k < 0 && errno == EINTR) {
            if (PyErr_CheckSignals() < 0)
                return NULL;
            continue;
        }
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (sent == 0)
                return PyLong_FromLong(NOT_SENT); /* a full pipe: the Python path waits */
            /* Frames this small go whole into a pipe; any other descriptor may split one.
             * The rest is written here, with the Python path's deadline for it. */
            int w = wait_fd(wfd, POLLOUT, timeout_ms);
            if (w < 0)
                return NULL;
            if (w == 0)
                return PyLong_FromLong(STOPPED_READING);
            continue;
        }
        return PyLong_FromLong(WRITE_FAILED);
    }

    int w = wait_fd(rfd, POLLIN, timeout_ms);
    if (w < 0)
        return NULL;
    if (w == 0)
        return PyLong_FromLong(TIMED_OUT);
    /* bytearray storage cannot move here: the link holds a memoryview of it */
    unsigned char *p = (unsigned char *)PyByteArray_AS_STRING(buf);
    Py_ssize_t have = read_some(rfd, (char *)p, PyByteArray_GET_SIZE(buf));
    if (have == -2)
        return NULL;
    if (have <= 0)
        return PyLong_FromLong(0);
    if (have <= HEADER || (uint64_t)have != (uint64_t)be32(p) + HEADER || p[4] != STEP_MARK)
        return PyLong_FromSsize_t(have);
    if (have < REPLY_TEXT || p[5] > 3)
        return PyLong_FromLong(MALFORMED);
    unsigned flags = p[5];
    double reward = PyFloat_Unpack8((const char *)p + 6, 0);
    if (reward == -1.0 && PyErr_Occurred())
        return NULL;
    PyObject *obs = PyUnicode_DecodeUTF8((const char *)p + REPLY_TEXT, have - REPLY_TEXT, NULL);
    if (obs == NULL) {
        if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
            PyErr_Clear();
            return PyLong_FromLong(MALFORMED);
        }
        return NULL;
    }
    PyObject *rw = PyFloat_FromDouble(reward);
    PyObject *info = PyDict_New();
    PyObject *out = PyTuple_New(5);
    if (rw == NULL || info == NULL || out == NULL) {
        Py_DECREF(obs);
        Py_XDECREF(rw);
        Py_XDECREF(info);
        Py_XDECREF(out);
        return NULL;
    }
    PyTuple_SET_ITEM(out, 0, obs);
    PyTuple_SET_ITEM(out, 1, rw);
    PyTuple_SET_ITEM(out, 2, Py_NewRef(flags & 1 ? Py_True : Py_False));
    PyTuple_SET_ITEM(out, 3, Py_NewRef(flags & 2 ? Py_True : Py_False));
    PyTuple_SET_ITEM(out, 4, info);
    return out;
}

/* ------------------------------------------------------------------------------------ */

/* The result needs no conversion: (str within limit, finite float, bool, bool, {}). The
 * same test as worker.serve's binary-reply branch. */
static inline int
plain_result(PyObject *r, Py_ssize_t limit)
{
    if (!PyTuple_CheckExact(r) || PyTuple_GET_SIZE(r) != 5)
        return 0;
    PyObject *o = PyTuple_GET_ITEM(r, 0), *rw = PyTuple_GET_ITEM(r, 1);
    PyObject *te = PyTuple_GET_ITEM(r, 2), *tr = PyTuple_GET_ITEM(r, 3), *inf = PyTuple_GET_ITEM(r, 4);
    return PyUnicode_CheckExact(o) && PyUnicode_GET_LENGTH(o) <= limit && PyFloat_CheckExact(rw) &&
           isfinite(PyFloat_AS_DOUBLE(rw)) && (te == Py_True || te == Py_False) &&
           (tr == Py_True || tr == Py_False) && PyDict_CheckExact(inf) && PyDict_GET_SIZE(inf) == 0;
}

/* Write all of data to a blocking descriptor (EINTR: run handlers, go on). 0 ok, -1 error set. */
static int
write_all(int fd, const unsigned char *data, Py_ssize_t n)
{
    while (n > 0) {
        Py_ssize_t k = write(fd, data, (size_t)n);
        if (k >= 0) {
            data += k;
            n -= k;
            continue;
        }
        if (errno == EINTR) {
            if (PyErr_CheckSignals() < 0)
                return -1;
            continue;
        }
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    return 0;
}

static int
count_request(PyObject *budget)
{
    PyObject *n = PyObject_GetAttr(budget, str_request);
    if (n == NULL)
        return -1;
    PyObject *one = PyLong_FromLong(1);
    PyObject *m = one ? PyNumber_Add(n, one) : NULL;
    Py_DECREF(n);
    Py_XDECREF(one);
    if (m == NULL)
        return -1;
    int rc = PyObject_SetAttr(budget, str_request, m);
    Py_DECREF(m);
    return rc;
}

PyDoc_STRVAR(serve_steps_doc,
"serve_steps(rfd, wfd, buf, live, limit, budget) -> tuple\n\n"
"The worker's loop over binary step requests: read a frame into the bytearray buf; for a\n"
"whole binary step request of a live instance, count it (budget.request += 1), call\n"
"live[iid].step(action) once and, when the result needs no conversion, write the binary\n"
"reply and read the next request. Returns to the Python loop with (0, n): the first n\n"
"bytes of a frame it did not handle are in buf, not yet counted (n == 0: the channel\n"
"closed); (1, result): a counted step whose result needs the Python conversion; or\n"
"(2, exception): a counted step that raised. Raises what a signal handler raised, or\n"
"OSError for a broken channel.");

static PyObject *
serve_steps(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "serve_steps takes 6 arguments");
        return NULL;
    }
    int rfd = as_int(args[0]);
    int wfd = as_int(args[1]);
    if ((wfd == -1 || rfd == -1) && PyErr_Occurred())
        return NULL;
    PyObject *buf = args[2], *live = args[3], *budget = args[5];
    Py_ssize_t limit = PyLong_AsSsize_t(args[4]);
    if (limit == -1 && PyErr_Occurred())
        return NULL;
    if (!PyByteArray_CheckExact(buf) || PyByteArray_GET_SIZE(buf) < REQUEST_SIZE || !PyDict_CheckExact(live)) {
        PyErr_SetString(PyExc_TypeError, "serve_steps needs a bytearray and a dict");
        return NULL;
    }
    for (;;) {
        unsigned char *p = (unsigned char *)PyByteArray_AS_STRING(buf);
        Py_ssize_t have = read_some(rfd, (char *)p, PyByteArray_GET_SIZE(buf));
        if (have == -2)
            return NULL;
        if (have < 0) {
            PyErr_SetFromErrno(PyExc_OSError);
            return NULL;
        }
        if (PyErr_CheckSignals() < 0)
            return NULL;
        if (have < REQUEST_SIZE || p[4] != STEP_MARK || (uint64_t)have != (uint64_t)be32(p) + HEADER)
            return Py_BuildValue("(in)", 0, have);
        uint64_t u = 0;
        for (int i = 0; i < 8; i++)
            u = (u << 8) | p[5 + i];
        PyObject *key = PyLong_FromLongLong((long long)u);
        if (key == NULL)
            return NULL;
        PyObject *inst = PyDict_GetItemWithError(live, key); /* borrowed */
        Py_DECREF(key);
        if (inst == NULL) {
            if (PyErr_Occurred())
                return NULL;
            return Py_BuildValue("(in)", 0, have); /* its error reply comes from Python */
        }
        PyObject *action = PyUnicode_DecodeUTF8((const char *)p + REQUEST_SIZE, have - REQUEST_SIZE, NULL);
        if (action == NULL) {
            PyErr_Clear(); /* the Python path decodes it again and says so */
            return Py_BuildValue("(in)", 0, have);
        }
        Py_INCREF(inst); /* step may drop it from live */
        if (count_request(budget) < 0) {
            Py_DECREF(inst);
            Py_DECREF(action);
            return NULL;
        }
        PyObject *r = PyObject_CallMethodOneArg(inst, str_step, action);
        Py_DECREF(inst);
        Py_DECREF(action);
        if (r == NULL) {
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            PyErr_NormalizeException(&type, &value, &tb);
            if (tb != NULL && value != NULL)
                PyException_SetTraceback(value, tb);
            Py_XDECREF(type);
            Py_XDECREF(tb);
            if (value == NULL)
                value = Py_NewRef(Py_None);
            PyObject *out = Py_BuildValue("(iN)", 2, value);
            return out;
        }
        Py_ssize_t tlen = 0;
        const char *text = NULL;
        if (plain_result(r, limit)) {
            text = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(r, 0), &tlen);
            if (text == NULL)
                PyErr_Clear(); /* lone surrogates: the Python path fails as before */
        }
        if (text == NULL)
            return Py_BuildValue("(iN)", 1, r);
        unsigned char stack[PIPE_BUF];
        unsigned char *out = stack;
        Py_ssize_t total = REPLY_TEXT + tlen;
        if (total > (Py_ssize_t)sizeof(stack)) {
            out = PyMem_Malloc((size_t)total);
            if (out == NULL) {
                Py_DECREF(r);
                PyErr_NoMemory();
                return NULL;
            }
        }
        put32(out, (uint32_t)(total - HEADER));
        out[4] = STEP_MARK;
        out[5] = (unsigned char)((PyTuple_GET_ITEM(r, 2) == Py_True) | (PyTuple_GET_ITEM(r, 3) == Py_True) << 1);
        if (PyFloat_Pack8(PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(r, 1)), (char *)out + 6, 0) < 0) {
            if (out != stack)
                PyMem_Free(out);
            Py_DECREF(r);
            return NULL;
        }
        memcpy(out + REPLY_TEXT, text, (size_t)tlen);
        int rc = write_all(wfd, out, total);
        if (out != stack)
            PyMem_Free(out);
        Py_DECREF(r);
        if (rc < 0)
            return NULL;
    }
}

/* ------------------------------------------------------------------------------------ */
/* msgpack, the subset of a columnar step reply, exactly as msgpack.Packer(use_bin_type=True) */

static inline Py_ssize_t
str_head_size(Py_ssize_t n)
{
    return n < 32 ? 1 : n < 256 ? 2 : n < 65536 ? 3 : 5;
}

static inline Py_ssize_t
array_head_size(Py_ssize_t n)
{
    return n < 16 ? 1 : n < 65536 ? 3 : 5;
}

static inline unsigned char *
put_str_head(unsigned char *w, Py_ssize_t n)
{
    if (n < 32) {
        *w++ = (unsigned char)(0xa0 | n);
    } else if (n < 256) {
        *w++ = 0xd9;
        *w++ = (unsigned char)n;
    } else if (n < 65536) {
        *w++ = 0xda;
        *w++ = (unsigned char)(n >> 8);
        *w++ = (unsigned char)n;
    } else {
        *w++ = 0xdb;
        put32(w, (uint32_t)n);
        w += 4;
    }
    return w;
}

static inline unsigned char *
put_array_head(unsigned char *w, Py_ssize_t n)
{
    if (n < 16) {
        *w++ = (unsigned char)(0x90 | n);
    } else if (n < 65536) {
        *w++ = 0xdc;
        *w++ = (unsigned char)(n >> 8);
        *w++ = (unsigned char)n;
    } else {
        *w++ = 0xdd;
        put32(w, (uint32_t)n);
        w += 4;
    }
    return w;
}

PyDoc_STRVAR(encode_step_columns_doc,
"encode_step_columns(results, limit) -> bytes | None\n\n"
"The msgpack payload of [\"ok\", obs, rewards, terminated, truncated, infos, []] for a\n"
"non-empty list of step results that all need no conversion (exact tuples of a str of at\n"
"most limit characters, a finite float, two bools and an empty dict), byte for byte what\n"
"msgpack.Packer(use_bin_type=True) writes for it; None for anything else.");

static PyObject *
encode_step_columns(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "encode_step_columns takes 2 arguments");
        return NULL;
    }
    PyObject *results = args[0];
    Py_ssize_t limit = PyLong_AsSsize_t(args[1]);
    if (limit == -1 && PyErr_Occurred())
        return NULL;
    if (!PyList_CheckExact(results))
        Py_RETURN_NONE;
    Py_ssize_t n = PyList_GET_SIZE(results);
    if (n == 0 || n > UINT32_MAX)
        Py_RETURN_NONE;
    /* pass 1: check every result, size the payload */
    Py_ssize_t size = 1 + 3 + 5 * array_head_size(n) + 1 + n * (9 + 1 + 1 + 1);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *r = PyList_GET_ITEM(results, i);
        if (!plain_result(r, limit))
            Py_RETURN_NONE;
        Py_ssize_t tlen;
        if (PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(r, 0), &tlen) == NULL) {
            PyErr_Clear(); /* lone surrogates: msgpack refuses them on the Python path */
            Py_RETURN_NONE;
        }
        if (tlen > UINT32_MAX)
            Py_RETURN_NONE;
        size += str_head_size(tlen) + tlen;
    }
    PyObject *payload = PyBytes_FromStringAndSize(NULL, size);
    if (payload == NULL)
        return NULL;
    unsigned char *w = (unsigned char *)PyBytes_AS_STRING(payload);
    *w++ = 0x97;
    *w++ = 0xa2;
    *w++ = 'o';
    *w++ = 'k';
    /* pass 2: the columns. The results list is ours to read only: nothing below runs Python
     * code, so it cannot change between the passes. */
    w = put_array_head(w, n);
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t tlen;
        const char *text = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(PyList_GET_ITEM(results, i), 0), &tlen);
        w = put_str_head(w, tlen);
        memcpy(w, text, (size_t)tlen);
        w += tlen;
    }
    w = put_array_head(w, n);
    for (Py_ssize_t i = 0; i < n; i++) {
        *w++ = 0xcb;
        PyFloat_Pack8(PyFloat_AS_DOUBLE(PyTuple_GET_ITEM(PyList_GET_ITEM(results, i), 1)), (char *)w, 0);
        w += 8;
    }
    for (int col = 2; col <= 3; col++) {
        w = put_array_head(w, n);
        for (Py_ssize_t i = 0; i < n; i++)
            *w++ = PyTuple_GET_ITEM(PyList_GET_ITEM(results, i), col) == Py_True ? 0xc3 : 0xc2;
    }
    w = put_array_head(w, n);
    memset(w, 0x80, (size_t)n);
    w += n;
    *w++ = 0x90;
    assert(w == (unsigned char *)PyBytes_AS_STRING(payload) + size);
    return payload;
}

/* A bounded reader over untrusted bytes. */
typedef struct {
    const unsigned char *p;
    const unsigned char *end;
} Cursor;

/* Length of an array header at the cursor, or -1 when it is not one. */
static Py_ssize_t
read_array_head(Cursor *c)
{
    if (c->p >= c->end)
        return -1;
    unsigned char b = *c->p;
    if ((b & 0xf0) == 0x90) {
        c->p++;
        return b & 0x0f;
    }
    if (b == 0xdc && c->end - c->p >= 3) {
        Py_ssize_t n = be16(c->p + 1);
        c->p += 3;
        return n;
    }
    if (b == 0xdd && c->end - c->p >= 5) {
        Py_ssize_t n = (Py_ssize_t)be32(c->p + 1);
        c->p += 5;
        return n;
    }
    return -1;
}

/* A str at the cursor: its bytes and their count, or -1. */
static Py_ssize_t
read_str(Cursor *c, const char **text)
{
    if (c->p >= c->end)
        return -1;
    unsigned char b = *c->p;
    Py_ssize_t n, head;
    Py_ssize_t avail = c->end - c->p;
    if ((b & 0xe0) == 0xa0) {
        n = b & 0x1f;
        head = 1;
    } else if (b == 0xd9 && avail >= 2) {
        n = c->p[1];
        head = 2;
    } else if (b == 0xda && avail >= 3) {
        n = be16(c->p + 1);
        head = 3;
    } else if (b == 0xdb && avail >= 5) {
        n = (Py_ssize_t)be32(c->p + 1);
        head = 5;
    } else {
        return -1;
    }
    if (n > avail - head)
        return -1;
    *text = (const char *)c->p + head;
    c->p += head + n;
    return n;
}

PyDoc_STRVAR(decode_step_columns_doc,
"decode_step_columns(payload, n, limit) -> list | None\n\n"
"The n step results of a columnar step_cols reply (the msgpack payload of [\"ok\", obs,\n"
"rewards, terminated, truncated, infos, []]) as (obs, reward, terminated, truncated, {})\n"
"tuples, when every column has n items of the plain types (valid UTF-8 str of at most\n"
"limit characters, finite float64, bool, empty map), the error list is empty and nothing\n"
"follows; None for anything else (the msgpack path then decodes and checks it).");

static PyObject *
decode_step_columns(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "decode_step_columns takes 3 arguments");
        return NULL;
    }
    Py_ssize_t n = PyLong_AsSsize_t(args[1]);
    Py_ssize_t limit = n == -1 && PyErr_Occurred() ? -1 : PyLong_AsSsize_t(args[2]);
    if (limit == -1 && PyErr_Occurred())
        return NULL;
    if (n <= 0 || n > 1000000) /* the msgpack path's max_array_len */
        Py_RETURN_NONE;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *rows = NULL, *result = Py_None;
    Cursor c = {(const unsigned char *)view.buf, (const unsigned char *)view.buf + view.len};
    const char *text;
    Py_ssize_t k;
    if (c.end - c.p < 4 || memcmp(c.p, "\x97\xa2ok", 4) != 0)
        goto done;
    c.p += 4;
    /* Every column is checked before any object is built: each item takes at least one
     * byte, so n must fit in what is left before a list of n rows is allocated. */
    if (read_array_head(&c) != n || n > c.end - c.p)
        goto done;
    const unsigned char *obs_at = c.p;
    for (Py_ssize_t i = 0; i < n; i++)
        if (read_str(&c, &text) < 0)
            goto done;
    if (read_array_head(&c) != n || c.end - c.p < 9 * n)
        goto done;
    const unsigned char *rewards_at = c.p;
    for (Py_ssize_t i = 0; i < n; i++, c.p += 9) {
        if (*c.p != 0xcb)
            goto done;
        /* finite: an exponent field that is not all ones */
        if ((be16(c.p + 1) & 0x7ff0) == 0x7ff0)
            goto done;
    }
    const unsigned char *flags_at[2];
    for (int col = 0; col < 2; col++) {
        if (read_array_head(&c) != n || c.end - c.p < n)
            goto done;
        flags_at[col] = c.p;
        for (Py_ssize_t i = 0; i < n; i++, c.p++)
            if (*c.p != 0xc2 && *c.p != 0xc3)
                goto done;
    }
    if (read_array_head(&c) != n || c.end - c.p < n)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++, c.p++)
        if (*c.p != 0x80)
            goto done;
    if (c.end - c.p != 1 || *c.p != 0x90)
        goto done;

    rows = PyList_New(n);
    if (rows == NULL) {
        result = NULL;
        goto done;
    }
    c.p = obs_at;
    for (Py_ssize_t i = 0; i < n; i++) {
        k = read_str(&c, &text); /* checked above */
        PyObject *obs = PyUnicode_DecodeUTF8(text, k, NULL);
        if (obs == NULL) {
            if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
                PyErr_Clear();
                goto done; /* None: the msgpack path fails it the same way */
            }
            result = NULL;
            goto done;
        }
        if (PyUnicode_GET_LENGTH(obs) > limit) {
            Py_DECREF(obs);
            goto done;
        }
        double reward = PyFloat_Unpack8((const char *)rewards_at + 9 * i + 1, 0);
        PyObject *rw = PyFloat_FromDouble(reward);
        PyObject *info = PyDict_New();
        PyObject *row = PyTuple_New(5);
        if (rw == NULL || info == NULL || row == NULL) {
            Py_DECREF(obs);
            Py_XDECREF(rw);
            Py_XDECREF(info);
            Py_XDECREF(row);
            result = NULL;
            goto done;
        }
        PyTuple_SET_ITEM(row, 0, obs);
        PyTuple_SET_ITEM(row, 1, rw);
        PyTuple_SET_ITEM(row, 2, Py_NewRef(flags_at[0][i] == 0xc3 ? Py_True : Py_False));
        PyTuple_SET_ITEM(row, 3, Py_NewRef(flags_at[1][i] == 0xc3 ? Py_True : Py_False));
        PyTuple_SET_ITEM(row, 4, info);
        PyList_SET_ITEM(rows, i, row);
    }
    result = rows;
    rows = NULL;
done:
    PyBuffer_Release(&view);
    Py_XDECREF(rows); /* PyList_New fills with NULLs; list dealloc skips them */
    if (result == Py_None)
        Py_RETURN_NONE;
    return result;
}

PyDoc_STRVAR(split_steps_doc,
"split_steps(items, max_action_chars) -> (handles, actions) | None\n\n"
"The two columns of a step batch (a list or tuple of (handle, action) pairs) in one pass:\n"
"every item an exact tuple or list of two, every action an exact str of at most\n"
"max_action_chars characters; None when any is not (the caller then checks item by\n"
"item). The handles are not looked at.");

static PyObject *
split_steps(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "split_steps takes 2 arguments");
        return NULL;
    }
    PyObject *items = args[0];
    Py_ssize_t limit = PyLong_AsSsize_t(args[1]);
    if (limit == -1 && PyErr_Occurred())
        return NULL;
    if (!PyList_CheckExact(items) && !PyTuple_CheckExact(items))
        Py_RETURN_NONE;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(items);
    PyObject **row = PySequence_Fast_ITEMS(items);
    /* Check first: nothing below runs Python code, so the items cannot change meanwhile. */
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = row[i];
        if (!((PyTuple_CheckExact(item) && PyTuple_GET_SIZE(item) == 2) ||
              (PyList_CheckExact(item) && PyList_GET_SIZE(item) == 2)))
            Py_RETURN_NONE;
        PyObject *action = PySequence_Fast_ITEMS(item)[1];
        if (!PyUnicode_CheckExact(action) || PyUnicode_GET_LENGTH(action) > limit)
            Py_RETURN_NONE;
    }
    PyObject *handles = PyList_New(n);
    PyObject *actions = PyList_New(n);
    if (handles == NULL || actions == NULL) {
        Py_XDECREF(handles);
        Py_XDECREF(actions);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject **pair = PySequence_Fast_ITEMS(row[i]);
        PyList_SET_ITEM(handles, i, Py_NewRef(pair[0]));
        PyList_SET_ITEM(actions, i, Py_NewRef(pair[1]));
    }
    return Py_BuildValue("(NN)", handles, actions);
}

static PyMethodDef methods[] = {
    {"split_steps", (PyCFunction)(void (*)(void))split_steps, METH_FASTCALL, split_steps_doc},
    {"step_call", (PyCFunction)(void (*)(void))step_call, METH_FASTCALL, step_call_doc},
    {"serve_steps", (PyCFunction)(void (*)(void))serve_steps, METH_FASTCALL, serve_steps_doc},
    {"encode_step_columns", (PyCFunction)(void (*)(void))encode_step_columns, METH_FASTCALL, encode_step_columns_doc},
    {"decode_step_columns", (PyCFunction)(void (*)(void))decode_step_columns, METH_FASTCALL, decode_step_columns_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "spade_sandbox._fast",
    "C fast path of the sandbox's step round trips (optional; see spade_sandbox.native).", -1, methods,
};

PyMODINIT_FUNC
PyInit__fast(void)
{
    str_step = PyUnicode_InternFromString("step");
    str_request = PyUnicode_InternFromString("request");
    if (str_step == NULL || str_request == NULL)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddIntConstant(m, "NOT_SENT", NOT_SENT) < 0 || PyModule_AddIntConstant(m, "WRITE_FAILED", WRITE_FAILED) < 0 ||
        PyModule_AddIntConstant(m, "TIMED_OUT", TIMED_OUT) < 0 || PyModule_AddIntConstant(m, "MALFORMED", MALFORMED) < 0 ||
        PyModule_AddIntConstant(m, "STOPPED_READING", STOPPED_READING) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

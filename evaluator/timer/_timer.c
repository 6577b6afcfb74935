/* The timed region of an evaluation, in compiled code.
 *
 * measure(prepare, call) runs prepare() (refill inputs, spin kernel, L2 flush, rank alignment), then records the
 * start, calls call(), records the end and, on CUDA, waits for the end event. Each sample is written by this file
 * to a descriptor the host opened, framed and keyed with SipHash-2-4 under a key drawn here from /dev/urandom and
 * sent to the host before any solution code is loaded: Python code in the process cannot change what is measured,
 * and cannot write a sample the host accepts. CUDA events come from the driver API (libcuda), loaded at open().
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int (*cu_event_create_t)(void **, unsigned int);
typedef int (*cu_event_record_t)(void *, void *);
typedef int (*cu_event_sync_t)(void *);
typedef int (*cu_event_elapsed_t)(float *, void *, void *);

static int out_fd = -1;
static uint64_t k0, k1;
static uint32_t seq;
static int cuda = 0;
static void *stream = NULL;
static void *ev_start = NULL, *ev_end = NULL;
static cu_event_record_t ev_record;
static cu_event_sync_t ev_sync;
static cu_event_elapsed_t ev_elapsed;

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                  \
    do {                                                                          \
        v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32);                 \
        v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;                                    \
        v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;                                    \
        v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32);                 \
    } while (0)

/* SipHash-2-4 of a message whose length is a multiple of 8 bytes (our records are). */
static uint64_t siphash(const unsigned char *m, size_t len) {
    uint64_t v0 = 0x736f6d6570736575ULL ^ k0, v1 = 0x646f72616e646f6dULL ^ k1;
    uint64_t v2 = 0x6c7967656e657261ULL ^ k0, v3 = 0x7465646279746573ULL ^ k1;
    size_t i;
    for (i = 0; i < len; i += 8) {
        uint64_t w;
        memcpy(&w, m + i, 8);
        v3 ^= w; SIPROUND; SIPROUND; v0 ^= w;
    }
    uint64_t b = ((uint64_t)len) << 56;
    v3 ^= b; SIPROUND; SIPROUND; v0 ^= b;
    v2 ^= 0xff; SIPROUND; SIPROUND; SIPROUND; SIPROUND;
    return v0 ^ v1 ^ v2 ^ v3;
}

static int write_all(const void *buf, size_t n) {
    const char *p = buf;
    while (n) {
        ssize_t w = write(out_fd, p, n);
        if (w <= 0) return -1;
        p += w; n -= (size_t)w;
    }
    return 0;
}

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* open(fd, stream): stream is a CUstream as an integer, or -1 on CPU. Sends the key; callable once. */
static PyObject *t_open(PyObject *self, PyObject *args) {
    int fd;
    long long stream_handle;
    if (!PyArg_ParseTuple(args, "iL", &fd, &stream_handle)) return NULL;
    if (out_fd >= 0) { PyErr_SetString(PyExc_RuntimeError, "the timer is already open"); return NULL; }
    unsigned char key[16];
    int r = open("/dev/urandom", O_RDONLY);
    if (r < 0 || read(r, key, 16) != 16) { PyErr_SetString(PyExc_OSError, "no /dev/urandom for the timer key"); return NULL; }
    close(r);
    memcpy(&k0, key, 8); memcpy(&k1, key + 8, 8);
    if (stream_handle >= 0) {
        void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!lib) { PyErr_SetString(PyExc_OSError, "libcuda.so.1 not found for the timer"); return NULL; }
        cu_event_create_t create = (cu_event_create_t)dlsym(lib, "cuEventCreate");
        ev_record = (cu_event_record_t)dlsym(lib, "cuEventRecord");
        ev_sync = (cu_event_sync_t)dlsym(lib, "cuEventSynchronize");
        ev_elapsed = (cu_event_elapsed_t)dlsym(lib, "cuEventElapsedTime");
        if (!create || !ev_record || !ev_sync || !ev_elapsed || create(&ev_start, 0) || create(&ev_end, 0)) {
            PyErr_SetString(PyExc_OSError, "the timer could not create CUDA events (no current context?)");
            return NULL;
        }
        stream = (void *)(intptr_t)stream_handle;
        cuda = 1;
    }
    out_fd = fd;
    unsigned char hello[24] = {'A', 'R', 'N', 'K'};
    memcpy(hello + 8, key, 16);
    if (write_all(hello, sizeof hello)) { PyErr_SetString(PyExc_OSError, "the timer could not write its key"); return NULL; }
    memset(key, 0, sizeof key);
    Py_RETURN_NONE;
}

/* Right after the call returns: no collection and no profile or trace function may run solution code before the
 * outputs are written, where its work would not be timed. */
static void quiet_after_call(void) {
    PyGC_Disable();
    PyEval_SetProfile(NULL, NULL);
    PyEval_SetTrace(NULL, NULL);
}

/* measure(prepare, call) -> (device_or_host_us, launch_us, result of call)
 * The cyclic garbage collector is off from the moment the call returns (quiet_after_call): a collection would run
 * the finalizers of the call's garbage. The caller turns it on again once the outputs are written
 * (evaluator/timer/protocol.py, TimedLoop.outputs_written). */
static PyObject *t_measure(PyObject *self, PyObject *args) {
    PyObject *prepare, *call;
    if (!PyArg_ParseTuple(args, "OO", &prepare, &call)) return NULL;
    if (out_fd < 0) { PyErr_SetString(PyExc_RuntimeError, "the timer is not open"); return NULL; }
    PyObject *p = PyObject_CallNoArgs(prepare);
    if (!p) return NULL;
    Py_DECREF(p);
    double h0, h1, elapsed;
    PyObject *result;
    if (cuda) {
        if (ev_record(ev_start, stream)) { PyErr_SetString(PyExc_RuntimeError, "cuEventRecord failed"); return NULL; }
        h0 = now_us();
        result = PyObject_CallNoArgs(call);
        quiet_after_call();
        h1 = now_us();
        if (ev_record(ev_end, stream)) { Py_XDECREF(result); PyErr_SetString(PyExc_RuntimeError, "cuEventRecord failed"); return NULL; }
        if (!result) return NULL;
        float ms = 0.0f;
        int rc;
        Py_BEGIN_ALLOW_THREADS
        rc = ev_sync(ev_end);
        Py_END_ALLOW_THREADS
        if (rc || ev_elapsed(&ms, ev_start, ev_end)) { Py_DECREF(result); PyErr_SetString(PyExc_RuntimeError, "CUDA event timing failed"); return NULL; }
        elapsed = ms * 1000.0;
    } else {
        h0 = now_us();
        result = PyObject_CallNoArgs(call);
        quiet_after_call();
        h1 = now_us();
        if (!result) return NULL;
        elapsed = h1 - h0;
    }
    double launch = h1 - h0;
    unsigned char rec[40] = {'A', 'R', 'N', 'S'};
    uint32_t s = seq++;
    memcpy(rec + 4, &s, 4);
    memcpy(rec + 8, &elapsed, 8);
    memcpy(rec + 16, &launch, 8);
    uint64_t mac = siphash(rec, 24);
    memcpy(rec + 24, &mac, 8);
    memset(rec + 32, 0, 8);
    if (write_all(rec, sizeof rec)) { Py_DECREF(result); PyErr_SetString(PyExc_OSError, "the timer could not report"); return NULL; }
    PyObject *out = Py_BuildValue("(ddN)", elapsed, launch, result);
    return out;
}

static PyMethodDef methods[] = {
    {"open", t_open, METH_VARARGS, "open(fd, stream): draw the key, send it to the host, load CUDA events."},
    {"measure", t_measure, METH_VARARGS, "measure(prepare, call) -> (us, launch_us, result)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_arena_timer", NULL, -1, methods};

PyMODINIT_FUNC PyInit__arena_timer(void) { return PyModule_Create(&module); }

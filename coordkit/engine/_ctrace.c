/* The tracer's hot path in C (optional: coordkit/engine/tracing.py is the fallback and the
 * reference; SCHED-67: both make the same choices).
 *
 * - enter_tracing(tstate) / leave_tracing(tstate): CPython's "inside a trace callback" state
 *   of an OS thread (3.11+), without a ctypes call around each.
 * - settrace(call) (3.11 only): a C global trace function.  A call event of a code object
 *   that `call` once answered NEVER for costs no Python call again; `call(frame, "call",
 *   None)` decides for the others, and a Local it answers becomes the frame's f_trace.  A
 *   Local calls `point("line")` at its frame's line events (the frame's f_trace_lines says
 *   whether there are any), and `instruction(ex, tracer, frame)` at an opcode event only at
 *   the offsets given (a bitmap), not at every instruction.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>

#if PY_VERSION_HEX >= 0x030B0000
#define CK_TRACING 1
#else
#define CK_TRACING 0
#endif

#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
#define CK_SETTRACE 1
/* PyFrameObject's layout on 3.11 (Include/internal/pycore_frame.h), up to the fields used. */
typedef struct {
    PyObject_HEAD
    PyObject *f_back;
    void *f_frame;
    PyObject *f_trace;
    int f_lineno;
    char f_trace_lines;
} CkFrame;
#else
#define CK_SETTRACE 0
#endif

#if CK_TRACING
/* The thread state is passed as ctypes passes it (an int address), so the two calls are
 * interchangeable with ctypes.pythonapi's. */
static PyObject *
enter_tracing(PyObject *self, PyObject *tstate)
{
    PyThreadState *t = PyLong_AsVoidPtr(tstate);
    if (t == NULL)
        return NULL;
    PyThreadState_EnterTracing(t);
    Py_RETURN_NONE;
}

static PyObject *
leave_tracing(PyObject *self, PyObject *tstate)
{
    PyThreadState *t = PyLong_AsVoidPtr(tstate);
    if (t == NULL)
        return NULL;
    PyThreadState_LeaveTracing(t);
    Py_RETURN_NONE;
}
#endif

#if CK_SETTRACE
/* ---- Local: what one traced frame does at its line and opcode events ---- */

typedef struct {
    PyObject_HEAD
    PyObject *point;        /* callable(kind) */
    PyObject *instruction;  /* callable(ex, tracer, frame) or None */
    PyObject *ex;
    PyObject *tracer;
    unsigned char *bits;    /* offset / 2 -> acts there */
    Py_ssize_t nbits;
} Local;

static PyObject *LINE_KIND;  /* "line" */

static void
Local_dealloc(Local *self)
{
    Py_XDECREF(self->point);
    Py_XDECREF(self->instruction);
    Py_XDECREF(self->ex);
    Py_XDECREF(self->tracer);
    PyMem_Free(self->bits);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
Local_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *point, *instruction, *ex, *tracer, *offsets;
    if (!PyArg_ParseTuple(args, "OOOOO", &point, &instruction, &ex, &tracer, &offsets))
        return NULL;
    Local *self = (Local *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->point = Py_NewRef(point);
    self->instruction = Py_NewRef(instruction);
    self->ex = Py_NewRef(ex);
    self->tracer = Py_NewRef(tracer);
    /* The bitmap: one byte per code unit (2 bytes of bytecode) up to the largest offset. */
    Py_ssize_t most = -1;
    PyObject *it = PyObject_GetIter(offsets), *item;
    if (it == NULL)
        goto fail;
    while ((item = PyIter_Next(it)) != NULL) {
        Py_ssize_t off = PyLong_AsSsize_t(item);
        Py_DECREF(item);
        if (off < 0) {
            Py_DECREF(it);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "offsets must be >= 0");
            goto fail;
        }
        if (off > most)
            most = off;
    }
    Py_DECREF(it);
    if (PyErr_Occurred())
        goto fail;
    self->nbits = most / 2 + 1;
    self->bits = PyMem_Calloc(self->nbits > 0 ? self->nbits : 1, 1);
    if (self->bits == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    it = PyObject_GetIter(offsets);
    if (it == NULL)
        goto fail;
    while ((item = PyIter_Next(it)) != NULL) {
        self->bits[PyLong_AsSsize_t(item) / 2] = 1;
        Py_DECREF(item);
    }
    Py_DECREF(it);
    if (PyErr_Occurred())
        goto fail;
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

static int Local_event(Local *self, PyFrameObject *frame, int what);

/* A Local is a trace function too (frame, event, arg), as sys.settrace's are: a tool that
 * installs a Python trace function while one of these frames runs finds one it can call. */
static PyObject *
Local_call(Local *self, PyObject *args, PyObject *kwds)
{
    PyObject *frame, *event, *arg;
    if (!PyArg_ParseTuple(args, "O!UO", &PyFrame_Type, &frame, &event, &arg))
        return NULL;
    int what = -1;
    if (PyUnicode_CompareWithASCIIString(event, "line") == 0)
        what = PyTrace_LINE;
    else if (PyUnicode_CompareWithASCIIString(event, "opcode") == 0)
        what = PyTrace_OPCODE;
    if (what >= 0 && Local_event(self, (PyFrameObject *)frame, what) < 0)
        return NULL;
    return Py_NewRef(self);
}

static PyTypeObject LocalType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "coordkit.engine._ctrace.Local",
    .tp_basicsize = sizeof(Local),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Local(point, instruction, ex, tracer, offsets): one traced frame's events",
    .tp_new = Local_new,
    .tp_dealloc = (destructor)Local_dealloc,
    .tp_call = (ternaryfunc)Local_call,
};

static int
Local_event(Local *self, PyFrameObject *frame, int what)
{
    PyObject *r;
    if (what == PyTrace_LINE) {  /* (only where the frame's f_trace_lines is set) */
        r = PyObject_CallOneArg(self->point, LINE_KIND);
    }
    else {
        int lasti = PyFrame_GetLasti(frame);
        if (lasti < 0 || lasti / 2 >= self->nbits || !self->bits[lasti / 2]
                || self->instruction == Py_None)
            return 0;
        PyObject *args[3] = {self->ex, self->tracer, (PyObject *)frame};
        r = PyObject_Vectorcall(self->instruction, args, 3, NULL);
    }
    if (r == NULL)
        return -1;
    Py_DECREF(r);
    return 0;
}

/* ---- the global trace function ---- */

/* Code objects that are never traced: an open-addressing set of pointers, each held (so no
 * pointer is reused for another code object). */
static PyObject **never = NULL;
static size_t never_size = 0, never_used = 0;

static inline size_t
slot_of(PyObject *code, size_t size)
{
    return ((size_t)code >> 4) * 11400714819323198485ull >> 3 & (size - 1);
}

static int
never_has(PyObject *code)
{
    if (never_size == 0)
        return 0;
    for (size_t i = slot_of(code, never_size);; i = (i + 1) & (never_size - 1)) {
        if (never[i] == code)
            return 1;
        if (never[i] == NULL)
            return 0;
    }
}

static int
never_add(PyObject *code)
{
    if (2 * (never_used + 1) > never_size) {
        size_t size = never_size ? 2 * never_size : 1024;
        PyObject **table = PyMem_Calloc(size, sizeof(PyObject *));
        if (table == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        for (size_t j = 0; j < never_size; j++) {
            if (never[j] == NULL)
                continue;
            size_t i = slot_of(never[j], size);
            while (table[i] != NULL)
                i = (i + 1) & (size - 1);
            table[i] = never[j];
        }
        PyMem_Free(never);
        never = table;
        never_size = size;
    }
    size_t i = slot_of(code, never_size);
    while (never[i] != NULL)
        i = (i + 1) & (never_size - 1);
    never[i] = Py_NewRef(code);
    never_used++;
    return 0;
}

static PyObject *NEVER;  /* what `call` answers for a code object that is never traced */
static PyObject *CALL_EVENT;  /* "call" */

static int
trace(PyObject *call, PyFrameObject *frame, int what, PyObject *arg)
{
    if (what == PyTrace_CALL) {
        PyCodeObject *code = PyFrame_GetCode(frame);
        int skip = never_has((PyObject *)code);
        if (skip) {
            /* No line event of this frame would do anything: none is made. */
            ((CkFrame *)frame)->f_trace_lines = 0;
            Py_DECREF(code);
            return 0;
        }
        PyObject *args[3] = {(PyObject *)frame, CALL_EVENT, Py_None};
        PyObject *r = PyObject_Vectorcall(call, args, 3, NULL);
        if (r == NULL) {
            Py_DECREF(code);
            return -1;
        }
        int err = 0;
        if (r == NEVER)
            err = never_add((PyObject *)code);
        else if (Py_IS_TYPE(r, &LocalType))
            Py_XSETREF(((CkFrame *)frame)->f_trace, Py_NewRef(r));
        Py_DECREF(r);
        Py_DECREF(code);
        return err;
    }
    if (what == PyTrace_LINE || what == PyTrace_OPCODE) {
        PyObject *local = ((CkFrame *)frame)->f_trace;
        if (local == NULL || !Py_IS_TYPE(local, &LocalType))
            return 0;
        Py_INCREF(local);
        int err = Local_event((Local *)local, frame, what);
        Py_DECREF(local);
        return err;
    }
    return 0;
}

static PyObject *
settrace(PyObject *self, PyObject *call)
{
    if (call == Py_None)
        PyEval_SetTrace(NULL, NULL);
    else
        PyEval_SetTrace((Py_tracefunc)trace, call);
    Py_RETURN_NONE;
}
#endif

static PyMethodDef methods[] = {
#if CK_TRACING
    {"enter_tracing", enter_tracing, METH_O,
     "enter_tracing(tstate): the OS thread is inside a trace callback (no trace events)."},
    {"leave_tracing", leave_tracing, METH_O, "leave_tracing(tstate): undo one enter_tracing."},
#endif
#if CK_SETTRACE
    {"settrace", settrace, METH_O,
     "settrace(call): the C global trace function, asking call(frame, 'call', None) "
     "(None: uninstall)."},
#endif
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "coordkit.engine._ctrace",
    "The tracer's hot path in C (optional; tracing.py is the fallback).", -1, methods,
};

PyMODINIT_FUNC
PyInit__ctrace(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
#if CK_SETTRACE
    if (PyType_Ready(&LocalType) < 0)
        goto fail;
    LINE_KIND = PyUnicode_InternFromString("line");
    NEVER = PyUnicode_InternFromString("never");
    CALL_EVENT = PyUnicode_InternFromString("call");
    if (LINE_KIND == NULL || NEVER == NULL || CALL_EVENT == NULL)
        goto fail;
    if (PyModule_AddObjectRef(m, "Local", (PyObject *)&LocalType) < 0
            || PyModule_AddObjectRef(m, "NEVER", NEVER) < 0)
        goto fail;
#endif
    return m;
#if CK_SETTRACE
fail:
    Py_DECREF(m);
    return NULL;
#endif
}

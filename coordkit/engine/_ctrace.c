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
 *   the offsets given (a bitmap), not at every instruction; at the `counted` ones, where a
 *   step the search repeats only counts the access (SCHED-85), it counts it in C.
 * - stay(ex, kind, obj, callback): Execution._reach where the running thread goes on (one
 *   runnable thread, a replayed 0, the scheduler's stays() drawing "go on"), or nothing
 *   done (False) for _reach to do it all.  A Local's line events take it first (3.11).
 * - line_event(code, line) (3.12+): sys.monitoring's LINE callback; a line point of a run
 *   in C (stay, else ex.callback_point), anything else tracing._line_event's.
 * C pays for the generic attribute look-ups on Execution: it wins where its caller is C
 * already (a trace or monitoring callback), not when called from the engine's Python.
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

/* ---- stay: a scheduling point at which the running thread goes on, without Python ----
 *
 * Execution._reach's path where no switch can happen (one runnable thread, or a replayed
 * 0, or a scheduler's stays() that draws "go on"), in C; anything else is left to
 * _reach, with nothing changed.  configure(Point, RUNNABLE, FAIRNESS_BOUND) first. */

static PyTypeObject *POINT_TYPE = NULL;
static PyObject *RUNNABLE_STATE = NULL;
static long FAIRNESS = 0;

static PyObject *S_killing, *S_in_callers_code, *S_recorder, *S_invariant, *S_races,
    *S_current, *S_steps, *S_step_limit, *S_nondaemon_alive, *S_runnable, *S_state,
    *S_choices, *S_replayed, *S_stays, *S_yielding, *S_streak, *S_max_choices, *S_tid,
    *S_pt, *S_in_callback, *S_next, *S_switch, *EMPTY;

static PyObject *
configure(PyObject *self, PyObject *args)
{
    PyObject *point, *runnable;
    long fairness;
    if (!PyArg_ParseTuple(args, "O!Ol", &PyType_Type, &point, &runnable, &fairness))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)point, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "Point must be a tuple type");
        return NULL;
    }
    Py_XSETREF(POINT_TYPE, (PyTypeObject *)Py_NewRef(point));
    Py_XSETREF(RUNNABLE_STATE, Py_NewRef(runnable));
    FAIRNESS = fairness;
    Py_RETURN_NONE;
}

/* obj.name as a C long, clamped to LONG_MIN..LONG_MAX (a step budget may be any int);
 * -1 with an error set when it is not an int */
static int
get_long(PyObject *obj, PyObject *name, long *out)
{
    PyObject *v = PyObject_GetAttr(obj, name);
    if (v == NULL)
        return -1;
    int overflow;
    *out = PyLong_AsLongAndOverflow(v, &overflow);
    Py_DECREF(v);
    if (overflow)
        *out = overflow > 0 ? LONG_MAX : LONG_MIN;
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

/* 1: obj.name is None; 0: it is not; -1: error */
static int
is_none(PyObject *obj, PyObject *name)
{
    PyObject *v = PyObject_GetAttr(obj, name);
    if (v == NULL)
        return -1;
    int r = v == Py_None;
    Py_DECREF(v);
    return r;
}

/* 1: obj.name is true; 0: false; -1: error */
static int
is_true(PyObject *obj, PyObject *name)
{
    PyObject *v = PyObject_GetAttr(obj, name);
    if (v == NULL)
        return -1;
    int r = PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

static int
set_long(PyObject *obj, PyObject *name, long value)
{
    PyObject *v = PyLong_FromLong(value);
    if (v == NULL)
        return -1;
    int r = PyObject_SetAttr(obj, name, v);
    Py_DECREF(v);
    return r;
}

/* The step's number and the thread's point (what _reach does first). */
static int
step_taken(PyObject *ex, PyObject *task, PyObject *kind, PyObject *obj, long steps)
{
    long tid;
    PyObject *yielding;
    if (set_long(ex, S_steps, steps) < 0 || get_long(task, S_tid, &tid) < 0)
        return -1;
    yielding = PyObject_GetAttr(task, S_yielding);
    if (yielding == NULL)
        return -1;
    PyObject *pt = POINT_TYPE->tp_alloc(POINT_TYPE, 5);
    if (pt == NULL) {
        Py_DECREF(yielding);
        return -1;
    }
    PyObject *t = PyLong_FromLong(tid), *n = PyLong_FromLong(steps);
    if (t == NULL || n == NULL) {
        Py_XDECREF(t);
        Py_XDECREF(n);
        Py_DECREF(yielding);
        Py_DECREF(pt);
        return -1;
    }
    PyTuple_SET_ITEM(pt, 0, t);
    PyTuple_SET_ITEM(pt, 1, Py_NewRef(kind));
    PyTuple_SET_ITEM(pt, 2, Py_NewRef(obj));
    PyTuple_SET_ITEM(pt, 3, yielding);
    PyTuple_SET_ITEM(pt, 4, n);
    int r = PyObject_SetAttr(task, S_pt, pt);
    Py_DECREF(pt);
    return r;
}

/* The choice "the running thread goes on" (0 of `runnable`), as _goes_on records it. */
static int
went_on(PyObject *ex, long runnable, long streak)
{
    PyObject *choices = PyObject_GetAttr(ex, S_choices);
    if (choices == NULL)
        return -1;
    PyObject *choice = Py_BuildValue("(li)", runnable, 0);
    int r = choice == NULL ? -1 : PyList_Check(choices) ? PyList_Append(choices, choice)
        : (PyErr_SetString(PyExc_TypeError, "choices must be a list"), -1);
    Py_XDECREF(choice);
    Py_DECREF(choices);
    return r < 0 ? -1 : set_long(ex, S_streak, streak + 1);
}

/* 1: the point was taken here; 0: nothing was done (Execution._reach takes it); -1: error. */
static int
ck_stay(PyObject *ex, PyObject *kind, PyObject *obj, int callback)
{
    if (POINT_TYPE == NULL)
        return 0;
    int r;
    if ((r = is_true(ex, S_killing)) != 0 || (r = is_true(ex, S_in_callers_code)) != 0
            || (r = is_none(ex, S_recorder)) != 1 || (r = is_none(ex, S_invariant)) != 1)
        return r < 0 ? -1 : 0;
    if (PyUnicode_GET_LENGTH(obj) && (r = is_none(ex, S_races)) != 1)
        return r < 0 ? -1 : 0;  /* (a synchronisation the race detector orders) */
    long steps, limit, alive, runnable;
    if (get_long(ex, S_steps, &steps) < 0 || get_long(ex, S_step_limit, &limit) < 0
            || get_long(ex, S_nondaemon_alive, &alive) < 0
            || get_long(ex, S_runnable, &runnable) < 0)
        return -1;
    if (steps + 1 > limit || alive <= 0)
        return 0;
    PyObject *task = PyObject_GetAttr(ex, S_current);
    if (task == NULL)
        return -1;
    PyObject *state = NULL, *replayed = NULL, *stays = NULL, *choices = NULL, *drawn = NULL;
    int result = -1;
    if (task == Py_None || (state = PyObject_GetAttr(task, S_state)) == NULL)
        goto done;
    if (state != RUNNABLE_STATE) {
        result = 0;
        goto done;
    }
    if (runnable == 1) {
        result = step_taken(ex, task, kind, obj, steps + 1) < 0 ? -1 : 1;
        goto done;
    }
    /* _goes_on, up to its draw */
    long streak, most, yielding;
    if (get_long(ex, S_streak, &streak) < 0 || get_long(ex, S_max_choices, &most) < 0
            || (yielding = is_true(task, S_yielding)) < 0)
        goto done;
    if ((replayed = PyObject_GetAttr(ex, S_replayed)) == NULL
            || (stays = PyObject_GetAttr(ex, S_stays)) == NULL
            || (choices = PyObject_GetAttr(ex, S_choices)) == NULL)
        goto done;
    Py_ssize_t k = PyObject_Length(choices), nreplayed = PyObject_Length(replayed);
    if (k < 0 || nreplayed < 0)
        goto done;
    result = 0;
    if ((nreplayed == 0 && stays == Py_None) || yielding || streak >= FAIRNESS || k >= most)
        goto done;
    if (k < nreplayed) {
        PyObject *at = PySequence_GetItem(replayed, k);
        if (at == NULL) {
            result = -1;
            goto done;
        }
        int nonzero = PyObject_IsTrue(at);
        Py_DECREF(at);
        if (nonzero)
            result = nonzero < 0 ? -1 : 0;
        else
            result = step_taken(ex, task, kind, obj, steps + 1) < 0
                || went_on(ex, runnable, streak) < 0 ? -1 : 1;
        goto done;
    }
    if (stays == Py_None)
        goto done;
    /* The draw: from here the point is this function's, whichever way it goes. */
    result = -1;
    if ((drawn = PyObject_CallNoArgs(stays)) == NULL)
        goto done;
    int goes_on = PyObject_IsTrue(drawn);
    if (goes_on < 0 || step_taken(ex, task, kind, obj, steps + 1) < 0)
        goto done;
    if (goes_on) {
        result = went_on(ex, runnable, streak) < 0 ? -1 : 1;
        goto done;
    }
    /* It does not go on: the rest of _reach's choice, in the state _reach runs in (from a
     * trace callback, `callback`: inside the callback state, as callback_point sets it). */
    if (callback && PyObject_SetAttr(ex, S_in_callback, Py_True) < 0)
        goto done;
    /* nxt = ex._next(task, asked=True); if nxt is not task: ex._switch(nxt) */
    PyObject *next = PyObject_CallMethodObjArgs(ex, S_next, task, Py_True, NULL);
    if (next != NULL && next != task) {
        PyObject *switched = PyObject_CallMethodOneArg(ex, S_switch, next);
        Py_DECREF(next);
        next = switched;
    }
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    int reset = callback ? PyObject_SetAttr(ex, S_in_callback, Py_False) : 0;
    if (type != NULL) {
        PyErr_Restore(type, value, tb);
    }
    else if (reset == 0 && next != NULL) {
        result = 1;
    }
    Py_XDECREF(next);
done:
    Py_DECREF(task);
    Py_XDECREF(state);
    Py_XDECREF(replayed);
    Py_XDECREF(stays);
    Py_XDECREF(choices);
    Py_XDECREF(drawn);
    return result;
}

static PyObject *
stay(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || !PyUnicode_Check(args[1]) || !PyUnicode_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "stay(ex, kind, obj, callback): kind and obj are str");
        return NULL;
    }
    int callback = PyObject_IsTrue(args[3]);
    if (callback < 0)
        return NULL;
    int r = ck_stay(args[0], args[1], args[2], callback);
    if (r < 0)
        return NULL;
    return Py_NewRef(r ? Py_True : Py_False);
}

/* ---- line_event: sys.monitoring's LINE callback (3.12+), its hot path in C ----
 *
 * tracing._line_event's path for a line of the user's code, already instrumented, in a
 * thread of a run whose tracer makes line points: the point (stay, else
 * ex.callback_point("line")).  Anything else is tracing._line_event's, called as is.
 * configure_lines(fallback, user_codes, instrumented, getcurrent, TaskGreenlet) first. */

static PyObject *LINE_FALLBACK = NULL, *USER_CODES = NULL, *INSTRUMENTED = NULL,
    *GETCURRENT = NULL, *TASK_GREENLET = NULL;
static PyObject *S_task_execution, *S_finished, *S_tracer, *S_lines, *S_callback_point,
    *S_line;

static PyObject *
configure_lines(PyObject *self, PyObject *args)
{
    PyObject *fallback, *user, *instrumented, *getcurrent, *task_greenlet;
    if (!PyArg_ParseTuple(args, "OO!O!OO!", &fallback, &PyDict_Type, &user, &PyDict_Type,
                          &instrumented, &getcurrent, &PyType_Type, &task_greenlet))
        return NULL;
    Py_XSETREF(LINE_FALLBACK, Py_NewRef(fallback));
    Py_XSETREF(USER_CODES, Py_NewRef(user));
    Py_XSETREF(INSTRUMENTED, Py_NewRef(instrumented));
    Py_XSETREF(GETCURRENT, Py_NewRef(getcurrent));
    Py_XSETREF(TASK_GREENLET, Py_NewRef(task_greenlet));
    Py_RETURN_NONE;
}

/* The run whose thread this is, with a line-making tracer (a new reference), or NULL with
 * no error set where tracing._line_event decides. */
static PyObject *
line_run(PyObject *code)
{
    PyObject *key = PyLong_FromVoidPtr(code);
    if (key == NULL)
        return NULL;
    PyObject *user = PyDict_GetItemWithError(USER_CODES, key);  /* (borrowed) */
    int known = user != NULL && PyObject_IsTrue(user) == 1
        && PyDict_Contains(INSTRUMENTED, key) == 1;
    Py_DECREF(key);
    if (!known || PyErr_Occurred())
        return NULL;
    PyObject *g = PyObject_CallNoArgs(GETCURRENT);
    if (g == NULL || Py_TYPE(g) != (PyTypeObject *)TASK_GREENLET) {
        Py_XDECREF(g);
        return NULL;
    }
    PyObject *ex = PyObject_GetAttr(g, S_task_execution);
    Py_DECREF(g);
    if (ex == NULL)
        return NULL;
    PyObject *tracer = NULL;
    int ok = is_true(ex, S_finished) == 0 && (tracer = PyObject_GetAttr(ex, S_tracer)) != NULL
        && tracer != Py_None && is_true(tracer, S_lines) == 1;
    Py_XDECREF(tracer);
    if (!ok) {
        Py_DECREF(ex);
        return NULL;
    }
    return ex;
}

static PyObject *
line_event(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || LINE_FALLBACK == NULL) {
        PyErr_SetString(PyExc_TypeError, "line_event(code, line), after configure_lines");
        return NULL;
    }
    PyObject *ex = line_run(args[0]);
    if (ex == NULL) {
        PyErr_Clear();  /* (the fallback meets the same error, and raises it) */
        return PyObject_Vectorcall(LINE_FALLBACK, args, 2, NULL);
    }
    int stayed = ck_stay(ex, S_line, EMPTY, 1);
    PyObject *r = stayed < 0 ? NULL : stayed ? Py_NewRef(Py_None)
        : PyObject_CallMethodOneArg(ex, S_callback_point, S_line);
    Py_DECREF(ex);
    if (r == NULL)
        return NULL;
    Py_DECREF(r);
    Py_RETURN_NONE;
}

#if CK_SETTRACE
/* ---- Local: what one traced frame does at its line and opcode events ---- */

typedef struct {
    PyObject_HEAD
    PyObject *point;        /* callable(kind) */
    PyObject *instruction;  /* callable(ex, tracer, frame) or None */
    PyObject *ex;
    PyObject *tracer;
    unsigned char *bits;    /* offset / 2 -> acts there (ACTS), may only count (COUNTS) */
    Py_ssize_t nbits;
} Local;

enum { ACTS = 1, COUNTS = 2 };

static PyObject *LINE_KIND;  /* "line" */
static PyObject *S_unseen, *S_names_again, *S_accesses;

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

/* Mark the offsets (among the acting ones) where the instruction may only count an access. */
static int
mark_counted(Local *self, PyObject *counted)
{
    PyObject *it = PyObject_GetIter(counted), *item;
    if (it == NULL)
        return -1;
    while ((item = PyIter_Next(it)) != NULL) {
        Py_ssize_t off = PyLong_AsSsize_t(item);
        Py_DECREF(item);
        if (off >= 0 && off / 2 < self->nbits && self->bits[off / 2])
            self->bits[off / 2] = ACTS | COUNTS;
        else if (off == -1 && PyErr_Occurred())
            break;
    }
    Py_DECREF(it);
    return PyErr_Occurred() ? -1 : 0;
}

/* tracing._access at an offset that may only count, done here when it does only that: in a
 * step the search repeats (the recorder's names_again), without race detection, an access
 * that labelled no memory where it was recorded and leaves nothing for a later instruction
 * (SCHED-85) is counted and nothing else.  1: done; 0: not so (Python does it all); -1. */
static int
count_only(Local *self)
{
    PyObject *v = PyObject_GetAttr(self->tracer, S_unseen);
    if (v == NULL)
        return -1;
    int unseen = v != Py_None;
    Py_DECREF(v);
    if (unseen)
        return 0;
    PyObject *races = PyObject_GetAttr(self->ex, S_races);
    if (races == NULL)
        return -1;
    Py_DECREF(races);
    if (races != Py_None)
        return 0;
    PyObject *rec = PyObject_GetAttr(self->ex, S_recorder);
    if (rec == NULL)
        return -1;
    int done = 0;
    PyObject *again = NULL, *n = NULL;
    if (rec == Py_None)
        goto out;
    if ((again = PyObject_GetAttr(rec, S_names_again)) == NULL) {
        done = -1;
        goto out;
    }
    if (again == Py_None)
        goto out;
    long count;
    if (get_long(rec, S_accesses, &count) < 0 || (n = PyLong_FromLong(count + 1)) == NULL) {
        done = -1;
        goto out;
    }
    int named = PySequence_Contains(again, n);
    if (named != 0)
        done = named < 0 ? -1 : 0;
    else
        done = PyObject_SetAttr(rec, S_accesses, n) < 0 ? -1 : 1;
out:
    Py_XDECREF(n);
    Py_XDECREF(again);
    Py_DECREF(rec);
    return done;
}

static PyObject *
Local_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *point, *instruction, *ex, *tracer, *offsets, *counted = NULL;
    if (!PyArg_ParseTuple(args, "OOOOO|O", &point, &instruction, &ex, &tracer, &offsets,
                          &counted))
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
        self->bits[PyLong_AsSsize_t(item) / 2] = ACTS;
        Py_DECREF(item);
    }
    Py_DECREF(it);
    if (PyErr_Occurred())
        goto fail;
    if (counted != NULL && mark_counted(self, counted) < 0)
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
        int stayed = ck_stay(self->ex, LINE_KIND, EMPTY, 1);
        if (stayed)
            return stayed < 0 ? -1 : 0;
        r = PyObject_CallOneArg(self->point, LINE_KIND);
    }
    else {
        int lasti = PyFrame_GetLasti(frame);
        if (lasti < 0 || lasti / 2 >= self->nbits || !self->bits[lasti / 2]
                || self->instruction == Py_None)
            return 0;
        if (self->bits[lasti / 2] & COUNTS) {
            int counted = count_only(self);
            if (counted)
                return counted < 0 ? -1 : 0;
        }
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
    {"configure", configure, METH_VARARGS,
     "configure(Point, RUNNABLE, FAIRNESS_BOUND): what stay() makes and compares with."},
    {"configure_lines", configure_lines, METH_VARARGS,
     "configure_lines(fallback, user_codes, instrumented, getcurrent, TaskGreenlet)."},
    {"line_event", (PyCFunction)(void (*)(void))line_event, METH_FASTCALL,
     "line_event(code, line): sys.monitoring's LINE callback, its hot path in C."},
    {"stay", (PyCFunction)(void (*)(void))stay, METH_FASTCALL,
     "stay(ex, kind, obj, callback): take ex's scheduling point here where the running "
     "thread goes on (True), or do nothing (False: Execution._reach takes it); callback: "
     "called from a trace callback (as Execution.callback_point is)."},
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
    PyObject **names[] = {&S_killing, &S_in_callers_code, &S_recorder, &S_invariant, &S_races,
        &S_current, &S_steps, &S_step_limit, &S_nondaemon_alive, &S_runnable, &S_state,
        &S_choices, &S_replayed, &S_stays, &S_yielding, &S_streak, &S_max_choices, &S_tid,
        &S_pt, &S_in_callback, &S_next, &S_switch, &EMPTY, &S_task_execution, &S_finished,
        &S_tracer, &S_lines, &S_callback_point, &S_line};
    const char *texts[] = {"killing", "_in_callers_code", "recorder", "invariant", "races",
        "current", "steps", "step_limit", "_nondaemon_alive", "_runnable", "state",
        "choices", "replayed", "_stays", "yielding", "_streak", "max_choices", "tid",
        "pt", "in_callback", "_next", "_switch", "", "task_execution", "finished", "tracer",
        "lines", "callback_point", "line"};
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) {
        if ((*names[i] = PyUnicode_InternFromString(texts[i])) == NULL) {
            Py_DECREF(m);
            return NULL;
        }
    }
#if CK_SETTRACE
    if (PyType_Ready(&LocalType) < 0)
        goto fail;
    LINE_KIND = PyUnicode_InternFromString("line");
    NEVER = PyUnicode_InternFromString("never");
    CALL_EVENT = PyUnicode_InternFromString("call");
    S_unseen = PyUnicode_InternFromString("unseen");
    S_names_again = PyUnicode_InternFromString("names_again");
    S_accesses = PyUnicode_InternFromString("accesses");
    if (LINE_KIND == NULL || NEVER == NULL || CALL_EVENT == NULL || S_unseen == NULL
            || S_names_again == NULL || S_accesses == NULL)
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

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
#include <structmember.h>

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
    *S_pt, *S_in_callback, *S_next, *S_switch, *EMPTY, *S_task_execution, *S_finished,
    *S_tracer, *S_lines, *S_callback_point, *S_line, *S_tstate, *S_point, *S_reach;

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

/* v (a new reference, or NULL: an error) as a C long, clamped to LONG_MIN..LONG_MAX (a
 * step budget may be any int); -1 with an error set when it is not an int.  Takes v. */
static int
clamped_long(PyObject *v, long *out)
{
    if (v == NULL)
        return -1;
    int overflow;
    *out = PyLong_AsLongAndOverflow(v, &overflow);
    Py_DECREF(v);
    if (overflow)
        *out = overflow > 0 ? LONG_MAX : LONG_MIN;
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

/* obj.name as a C long (clamped_long) */
static inline int
get_long(PyObject *obj, PyObject *name, long *out)
{
    return clamped_long(PyObject_GetAttr(obj, name), out);
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

/* ---- reading the engine's objects without the generic look-up ----
 *
 * An Execution's attributes live in its __dict__: where its class looks attributes up
 * generically and has no data descriptor of any name read here (checked once per class and
 * version of it), they are read and written in the dict, as the generic look-up would.  A
 * Task is a slotted dataclass: its fields are read and written at their slots' offsets.
 * Anything else (another class, a changed one, a name the dict lacks) takes the generic
 * look-up, so the two ways never differ in what they find or raise. */

typedef struct {
    PyObject *obj;
    PyObject *dict;  /* obj's __dict__ where it may be used directly, or NULL */
} Attrs;

static PyObject **EX_NAMES[] = {&S_killing, &S_in_callers_code, &S_recorder, &S_invariant,
    &S_races, &S_current, &S_steps, &S_step_limit, &S_nondaemon_alive, &S_runnable,
    &S_choices, &S_replayed, &S_stays, &S_streak, &S_max_choices, &S_in_callback,
    &S_finished, &S_tracer, &S_tstate};
static PyTypeObject *EX_TYPE = NULL;  /* the last class found plain (a strong reference) */
static unsigned int EX_VERSION = 0;   /* its version tag then (a change gives a new one) */

/* 1: `type` looks attributes up generically and has no data descriptor named in `names`
 * (its version tag is then valid); 0: not; -1: error. */
static int
plain_class(PyTypeObject *type, PyObject ***names, size_t n)
{
    if (type->tp_getattro != PyObject_GenericGetAttr
            || type->tp_setattro != PyObject_GenericSetAttr)
        return 0;
    for (size_t i = 0; i < n; i++) {
        PyObject *found = _PyType_Lookup(type, *names[i]);  /* (borrowed) */
        if (found != NULL && Py_TYPE(found)->tp_descr_set != NULL)
            return 0;
    }
    return type->tp_version_tag != 0;
}

/* ex's attributes as read and written here: its __dict__ where that is the generic
 * look-up's answer.  *a holds new references; attrs_done releases them. */
static int
attrs_of(PyObject *ex, Attrs *a)
{
    PyTypeObject *type = Py_TYPE(ex);
    a->obj = Py_NewRef(ex);
    a->dict = NULL;
    if (type != EX_TYPE || type->tp_version_tag != EX_VERSION) {
        int plain = plain_class(type, EX_NAMES, sizeof(EX_NAMES) / sizeof(EX_NAMES[0]));
        if (plain < 0)
            return -1;
        if (!plain)
            return 0;
        Py_XSETREF(EX_TYPE, (PyTypeObject *)Py_NewRef(type));
        EX_VERSION = type->tp_version_tag;
    }
    PyObject *dict = PyObject_GenericGetDict(ex, NULL);
    if (dict == NULL)
        return -1;
    if (PyDict_CheckExact(dict))
        a->dict = dict;
    else
        Py_DECREF(dict);
    return 0;
}

static void
attrs_done(Attrs *a)
{
    Py_CLEAR(a->obj);
    Py_CLEAR(a->dict);
}

/* a.name, a new reference */
static PyObject *
get(Attrs *a, PyObject *name)
{
    if (a->dict != NULL) {
        PyObject *v = PyDict_GetItemWithError(a->dict, name);
        if (v != NULL)
            return Py_NewRef(v);
        if (PyErr_Occurred())
            return NULL;
    }
    return PyObject_GetAttr(a->obj, name);
}

static int
set(Attrs *a, PyObject *name, PyObject *value)
{
    return a->dict != NULL ? PyDict_SetItem(a->dict, name, value)
        : PyObject_SetAttr(a->obj, name, value);
}

/* get_long, of an Attrs */
static int
attr_long(Attrs *a, PyObject *name, long *out)
{
    return clamped_long(get(a, name), out);
}

/* 1: a.name is None; 0: it is not; -1: error */
static int
attr_is_none(Attrs *a, PyObject *name)
{
    PyObject *v = get(a, name);
    if (v == NULL)
        return -1;
    int r = v == Py_None;
    Py_DECREF(v);
    return r;
}

/* 1: a.name is true; 0: false; -1: error */
static int
attr_is_true(Attrs *a, PyObject *name)
{
    PyObject *v = get(a, name);
    if (v == NULL)
        return -1;
    int r = v == Py_True ? 1 : v == Py_False ? 0 : PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

static int
attr_set_long(Attrs *a, PyObject *name, long value)
{
    PyObject *v = PyLong_FromLong(value);
    if (v == NULL)
        return -1;
    int r = set(a, name, v);
    Py_DECREF(v);
    return r;
}

/* A Task's fields, read and written at their slots (see above). */
enum { T_STATE, T_TID, T_YIELDING, T_PT, T_FIELDS };
static PyObject **TASK_NAMES[T_FIELDS] = {&S_state, &S_tid, &S_yielding, &S_pt};
static PyTypeObject *TASK_TYPE = NULL;
static unsigned int TASK_VERSION = 0;
static Py_ssize_t TASK_OFFSETS[T_FIELDS];

/* 1: task's fields are at TASK_OFFSETS; 0: they are read generically; -1: error */
static int
task_slots(PyObject *task)
{
    PyTypeObject *type = Py_TYPE(task);
    if (type == TASK_TYPE && type->tp_version_tag == TASK_VERSION)
        return 1;
    if (type->tp_getattro != PyObject_GenericGetAttr
            || type->tp_setattro != PyObject_GenericSetAttr)
        return 0;
    Py_ssize_t offsets[T_FIELDS];
    for (int i = 0; i < T_FIELDS; i++) {
        PyObject *found = _PyType_Lookup(type, *TASK_NAMES[i]);  /* (borrowed) */
        if (found == NULL || !Py_IS_TYPE(found, &PyMemberDescr_Type))
            return 0;
        PyMemberDef *m = ((PyMemberDescrObject *)found)->d_member;
        if (m->type != T_OBJECT_EX || (m->flags & READONLY)
                || !PyType_IsSubtype(type, PyDescr_TYPE(found)))
            return 0;
        offsets[i] = m->offset;
    }
    if (type->tp_version_tag == 0)
        return 0;
    memcpy(TASK_OFFSETS, offsets, sizeof(offsets));
    Py_XSETREF(TASK_TYPE, (PyTypeObject *)Py_NewRef(type));
    TASK_VERSION = type->tp_version_tag;
    return 1;
}

/* task's field, a new reference; `slots`: task_slots(task) said 1 */
static PyObject *
task_get(PyObject *task, int slots, int field)
{
    if (slots) {
        PyObject *v = *(PyObject **)((char *)task + TASK_OFFSETS[field]);
        if (v != NULL)
            return Py_NewRef(v);
    }
    return PyObject_GetAttr(task, *TASK_NAMES[field]);  /* (unset: its AttributeError) */
}

static int
task_set(PyObject *task, int slots, int field, PyObject *value)
{
    if (!slots)
        return PyObject_SetAttr(task, *TASK_NAMES[field], value);
    PyObject **at = (PyObject **)((char *)task + TASK_OFFSETS[field]);
    Py_XSETREF(*at, Py_NewRef(value));
    return 0;
}

/* The step's number and the thread's point (what _reach does first). */
static int
step_taken(Attrs *ex, PyObject *task, int slots, PyObject *kind, PyObject *obj, long steps)
{
    if (attr_set_long(ex, S_steps, steps) < 0)
        return -1;
    PyObject *tid = task_get(task, slots, T_TID);
    if (tid == NULL)
        return -1;
    PyObject *yielding = task_get(task, slots, T_YIELDING);
    if (yielding == NULL) {
        Py_DECREF(tid);
        return -1;
    }
    PyObject *pt = POINT_TYPE->tp_alloc(POINT_TYPE, 5);
    PyObject *n = PyLong_FromLong(steps);
    if (pt == NULL || n == NULL) {
        Py_XDECREF(pt);
        Py_XDECREF(n);
        Py_DECREF(tid);
        Py_DECREF(yielding);
        return -1;
    }
    PyTuple_SET_ITEM(pt, 0, tid);
    PyTuple_SET_ITEM(pt, 1, Py_NewRef(kind));
    PyTuple_SET_ITEM(pt, 2, Py_NewRef(obj));
    PyTuple_SET_ITEM(pt, 3, yielding);
    PyTuple_SET_ITEM(pt, 4, n);
    int r = task_set(task, slots, T_PT, pt);
    Py_DECREF(pt);
    return r;
}

/* The choice "the running thread goes on" (0 of `runnable`), as _goes_on records it. */
static int
went_on(Attrs *ex, long runnable, long streak)
{
    PyObject *choices = get(ex, S_choices);
    if (choices == NULL)
        return -1;
    PyObject *n = PyLong_FromLong(runnable), *zero = PyLong_FromLong(0);
    PyObject *choice = n == NULL || zero == NULL ? NULL : PyTuple_Pack(2, n, zero);
    Py_XDECREF(n);
    Py_XDECREF(zero);
    int r = choice == NULL ? -1 : PyList_Check(choices) ? PyList_Append(choices, choice)
        : (PyErr_SetString(PyExc_TypeError, "choices must be a list"), -1);
    Py_XDECREF(choice);
    Py_DECREF(choices);
    return r < 0 ? -1 : attr_set_long(ex, S_streak, streak + 1);
}

/* 1: the point was taken here; 0: nothing was done (Execution._reach takes it); -1: error. */
static int
ck_stay_in(Attrs *ex, PyObject *kind, PyObject *obj, int callback)
{
    int r;
    if ((r = attr_is_true(ex, S_killing)) != 0
            || (r = attr_is_true(ex, S_in_callers_code)) != 0
            || (r = attr_is_none(ex, S_recorder)) != 1
            || (r = attr_is_none(ex, S_invariant)) != 1)
        return r < 0 ? -1 : 0;
    if (PyUnicode_GET_LENGTH(obj) && (r = attr_is_none(ex, S_races)) != 1)
        return r < 0 ? -1 : 0;  /* (a synchronisation the race detector orders) */
    long steps, limit, alive, runnable;
    if (attr_long(ex, S_steps, &steps) < 0 || attr_long(ex, S_step_limit, &limit) < 0
            || attr_long(ex, S_nondaemon_alive, &alive) < 0
            || attr_long(ex, S_runnable, &runnable) < 0)
        return -1;
    if (steps + 1 > limit || alive <= 0)
        return 0;
    PyObject *task = get(ex, S_current);
    if (task == NULL)
        return -1;
    PyObject *state = NULL, *replayed = NULL, *stays = NULL, *choices = NULL, *drawn = NULL;
    int result = -1, slots = 0;
    if (task == Py_None || (slots = task_slots(task)) < 0
            || (state = task_get(task, slots, T_STATE)) == NULL)
        goto done;
    if (state != RUNNABLE_STATE) {
        result = 0;
        goto done;
    }
    if (runnable == 1) {
        result = step_taken(ex, task, slots, kind, obj, steps + 1) < 0 ? -1 : 1;
        goto done;
    }
    /* _goes_on, up to its draw */
    long streak, most;
    int yielding;
    if (attr_long(ex, S_streak, &streak) < 0 || attr_long(ex, S_max_choices, &most) < 0)
        goto done;
    PyObject *y = task_get(task, slots, T_YIELDING);
    if (y == NULL)
        goto done;
    yielding = y == Py_True ? 1 : y == Py_False ? 0 : PyObject_IsTrue(y);
    Py_DECREF(y);
    if (yielding < 0)
        goto done;
    if ((replayed = get(ex, S_replayed)) == NULL || (stays = get(ex, S_stays)) == NULL
            || (choices = get(ex, S_choices)) == NULL)
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
            result = step_taken(ex, task, slots, kind, obj, steps + 1) < 0
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
    if (goes_on < 0 || step_taken(ex, task, slots, kind, obj, steps + 1) < 0)
        goto done;
    if (goes_on) {
        result = went_on(ex, runnable, streak) < 0 ? -1 : 1;
        goto done;
    }
    /* It does not go on: the rest of _reach's choice, in the state _reach runs in (from a
     * trace callback, `callback`: inside the callback state, as callback_point sets it). */
    if (callback && set(ex, S_in_callback, Py_True) < 0)
        goto done;
    /* nxt = ex._next(task, asked=True); if nxt is not task: ex._switch(nxt) */
    PyObject *next = PyObject_CallMethodObjArgs(ex->obj, S_next, task, Py_True, NULL);
    if (next != NULL && next != task) {
        PyObject *switched = PyObject_CallMethodOneArg(ex->obj, S_switch, next);
        Py_DECREF(next);
        next = switched;
    }
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    int reset = callback ? set(ex, S_in_callback, Py_False) : 0;
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

static int
ck_stay(PyObject *ex, PyObject *kind, PyObject *obj, int callback)
{
    if (POINT_TYPE == NULL)
        return 0;
    Attrs a;
    int r = attrs_of(ex, &a) < 0 ? -1 : ck_stay_in(&a, kind, obj, callback);
    attrs_done(&a);
    return r;
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

/* ---- importing: patch._importing, in C ----
 *
 * importing(): whether a frame above the calling function's caller runs code of
 * importlib's frozen bootstrap (its file name starts "<frozen importlib"): a module is
 * being imported on the calling thread.  The same walk as patch._importing's. */

static PyObject *IMPORTLIB_PREFIX = NULL;

static PyObject *
importing(PyObject *self, PyObject *unused)
{
    PyFrameObject *frame = PyEval_GetFrame();  /* (borrowed) the calling function's */
    if (frame == NULL)
        Py_RETURN_FALSE;
    frame = PyFrame_GetBack(frame);  /* its caller's, as sys._getframe(2) in _importing */
    while (frame != NULL) {
        PyCodeObject *code = PyFrame_GetCode(frame);
        Py_ssize_t match = PyUnicode_Check(code->co_filename)
            ? PyUnicode_Tailmatch(code->co_filename, IMPORTLIB_PREFIX, 0, PY_SSIZE_T_MAX, -1)
            : 0;
        Py_DECREF(code);
        if (match != 0) {
            Py_DECREF(frame);
            if (match < 0)
                return NULL;
            Py_RETURN_TRUE;
        }
        PyFrameObject *back = PyFrame_GetBack(frame);
        Py_DECREF(frame);
        frame = back;
    }
    Py_RETURN_FALSE;
}

/* ---- point: Execution.point, in C ----
 *
 * point(ex, kind, obj=""): ex.point(kind, obj), where the thread is untraced already (a
 * shim's point, or ex has no tracer): nothing while the run unwinds or runs the caller's
 * code; else the point taken by stay where the thread goes on, and by ex._reach where
 * not.  A traced thread's point, and a kind or obj that is no str, is ex.point's, called
 * as it is.  configure() first. */

static PyObject *
point(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 2 || nargs > 3) {
        PyErr_SetString(PyExc_TypeError, "point(ex, kind, obj='')");
        return NULL;
    }
    PyObject *ex = args[0], *kind = args[1], *obj = nargs == 3 ? args[2] : EMPTY;
    if (POINT_TYPE == NULL || !PyUnicode_Check(kind) || !PyUnicode_Check(obj))
        return PyObject_VectorcallMethod(S_point, args, nargs, NULL);
    Attrs a;
    int r;
    if (attrs_of(ex, &a) < 0)
        goto error;
    if ((r = attr_is_true(&a, S_killing)) != 0 || (r = attr_is_true(&a, S_in_callers_code)) != 0) {
        attrs_done(&a);
        return r < 0 ? NULL : Py_NewRef(Py_None);
    }
    if ((r = attr_is_true(&a, S_in_callback)) == 0 && (r = attr_is_none(&a, S_tstate)) == 0) {
        attrs_done(&a);  /* traced: Execution.point stops tracing around the point */
        return PyObject_VectorcallMethod(S_point, args, nargs, NULL);
    }
    if (r < 0 || (r = ck_stay_in(&a, kind, obj, 0)) < 0)
        goto error;
    attrs_done(&a);
    if (r)
        Py_RETURN_NONE;
    PyObject *reach_args[] = {ex, kind, obj};
    return PyObject_VectorcallMethod(S_reach, reach_args, 3, NULL);
error:
    attrs_done(&a);
    return NULL;
}

/* ---- enabled: Execution._enabled, in C ----
 *
 * enabled(tasks, cur): the points of the runnable threads of the list `tasks`, `cur`
 * first (None: from the first), then round-robin by id after it; a yielding `cur` whose
 * point comes first goes last instead.  Read as _enabled reads them (a Task's fields at
 * their slots, see above); configure() first. */

static PyObject *
enabled(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyList_CheckExact(args[0])) {
        PyErr_SetString(PyExc_TypeError, "enabled(tasks, cur): tasks is a list");
        return NULL;
    }
    if (RUNNABLE_STATE == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "enabled: configure() first");
        return NULL;
    }
    PyObject *tasks = args[0], *cur = args[1], *tid = NULL, *out = NULL;
    Py_ssize_t n = PyList_GET_SIZE(tasks), start = 0;
    int slots = 0;
    if (cur != Py_None) {
        if ((slots = task_slots(cur)) < 0 || (tid = task_get(cur, slots, T_TID)) == NULL)
            return NULL;
        start = PyLong_AsSsize_t(tid);
        if (start == -1 && PyErr_Occurred())
            goto error;
    }
    if ((out = PyList_New(0)) == NULL)
        goto error;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t j = (start + i) % n;
        if (j < 0)
            j += n;  /* (Python's modulo) */
        if (j >= PyList_GET_SIZE(tasks)) {
            PyErr_SetString(PyExc_IndexError, "list index out of range");
            goto error;
        }
        PyObject *t = Py_NewRef(PyList_GET_ITEM(tasks, j));
        int s = task_slots(t);
        PyObject *state = s < 0 ? NULL : task_get(t, s, T_STATE);
        int r = state == NULL ? -1 : 0;
        if (state == RUNNABLE_STATE) {
            PyObject *pt = task_get(t, s, T_PT);
            r = pt == NULL ? -1 : PyList_Append(out, pt);
            Py_XDECREF(pt);
        }
        Py_XDECREF(state);
        Py_DECREF(t);
        if (r < 0)
            goto error;
    }
    if (cur != Py_None) {
        PyObject *y = task_get(cur, slots, T_YIELDING);
        int yielding = y == NULL ? -1 : PyObject_IsTrue(y);
        Py_XDECREF(y);
        if (yielding < 0)
            goto error;
        if (yielding && PyList_GET_SIZE(out) > 1) {
            PyObject *first = Py_NewRef(PyList_GET_ITEM(out, 0));
            PyObject *thread = PySequence_GetItem(first, 0);
            int same = thread == NULL ? -1 : PyObject_RichCompareBool(thread, tid, Py_EQ);
            Py_XDECREF(thread);
            if (same > 0 && (PySequence_DelItem(out, 0) < 0 || PyList_Append(out, first) < 0))
                same = -1;
            Py_DECREF(first);
            if (same < 0)
                goto error;
        }
    }
    Py_XDECREF(tid);
    return out;
error:
    Py_XDECREF(tid);
    Py_XDECREF(out);
    return NULL;
}

/* ---- line_event: sys.monitoring's LINE callback (3.12+), its hot path in C ----
 *
 * tracing._line_event's path for a line of the user's code, already instrumented, in a
 * thread of a run whose tracer makes line points: the point (stay, else
 * ex.callback_point("line")).  Anything else is tracing._line_event's, called as is.
 * configure_lines(fallback, user_codes, instrumented, getcurrent, TaskGreenlet) first. */

static PyObject *LINE_FALLBACK = NULL, *USER_CODES = NULL, *INSTRUMENTED = NULL;
/* greenlet.getcurrent and TaskGreenlet, as configure_lines and configure_calls give them. */
static PyObject *GETCURRENT = NULL, *TASK_GREENLET = NULL;

/* The execution of the run whose thread is calling (a new reference); NULL with no error
 * set where the caller is no run's thread, with one where a call failed. */
static PyObject *
task_execution(PyObject *getcurrent, PyObject *task_greenlet)
{
    PyObject *g = PyObject_CallNoArgs(getcurrent);
    if (g == NULL)
        return NULL;
    if (Py_TYPE(g) != (PyTypeObject *)task_greenlet) {
        Py_DECREF(g);
        return NULL;
    }
    PyObject *ex = PyObject_GetAttr(g, S_task_execution);
    Py_DECREF(g);
    return ex;
}

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
    PyObject *ex = task_execution(GETCURRENT, TASK_GREENLET);
    if (ex == NULL)
        return NULL;
    Attrs a;
    PyObject *tracer = NULL;
    int ok = attrs_of(ex, &a) == 0 && attr_is_true(&a, S_finished) == 0
        && (tracer = get(&a, S_tracer)) != NULL && tracer != Py_None;
    attrs_done(&a);
    if (ok)
        ok = is_true(tracer, S_lines) == 1;
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

/* A Local is a frame's f_trace and holds the run (ex): a frame a traceback keeps (a thread
 * that was killed) makes a cycle through it, which the collector must see to free. */
static int
Local_traverse(Local *self, visitproc visit, void *arg)
{
    Py_VISIT(self->point);
    Py_VISIT(self->instruction);
    Py_VISIT(self->ex);
    Py_VISIT(self->tracer);
    return 0;
}

static int
Local_clear(Local *self)
{
    Py_CLEAR(self->point);
    Py_CLEAR(self->instruction);
    Py_CLEAR(self->ex);
    Py_CLEAR(self->tracer);
    return 0;
}

static void
Local_dealloc(Local *self)
{
    PyObject_GC_UnTrack(self);
    Local_clear(self);
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

/* `counted` (NULL: none) marks the offsets where the instruction may only count. */
static PyObject *
local_make(PyTypeObject *type, PyObject *point, PyObject *instruction, PyObject *ex,
           PyObject *tracer, PyObject *offsets, PyObject *counted)
{
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

static PyObject *
Local_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *point, *instruction, *ex, *tracer, *offsets, *counted = NULL;
    if (!PyArg_ParseTuple(args, "OOOOO|O", &point, &instruction, &ex, &tracer, &offsets,
                          &counted))
        return NULL;
    return local_make(type, point, instruction, ex, tracer, offsets, counted);
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
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "Local(point, instruction, ex, tracer, offsets): one traced frame's events",
    .tp_new = Local_new,
    .tp_dealloc = (destructor)Local_dealloc,
    .tp_traverse = (traverseproc)Local_traverse,
    .tp_clear = (inquiry)Local_clear,
    .tp_call = (ternaryfunc)Local_call,
};

static int
Local_event(Local *self, PyFrameObject *frame, int what)
{
    PyObject *r;
    if (self->ex == NULL)  /* cleared by the collector (Local_clear) */
        return 0;
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

/* `call`'s answer for the user's code in a run, where `call` has answered for the code in a
 * run of the same tracer mode before (its offsets are known): decided here, as `call`
 * decides it.  configure_calls(traced, USER, instruction, getcurrent, TaskGreenlet) first. */
static PyObject *TRACED = NULL, *USER_KIND = NULL, *INSTRUCTION = NULL;
static PyObject *S_offsets_cache, *S_counted_cache, *S_f_trace_opcodes;

static PyObject *
configure_calls(PyObject *self, PyObject *args)
{
    PyObject *traced, *user, *instruction, *getcurrent, *task_greenlet;
    if (!PyArg_ParseTuple(args, "O!OOOO!", &PyDict_Type, &traced, &user, &instruction,
                          &getcurrent, &PyType_Type, &task_greenlet))
        return NULL;
    Py_XSETREF(TRACED, Py_NewRef(traced));
    Py_XSETREF(USER_KIND, Py_NewRef(user));
    Py_XSETREF(INSTRUCTION, Py_NewRef(instruction));
    Py_XSETREF(GETCURRENT, Py_NewRef(getcurrent));
    Py_XSETREF(TASK_GREENLET, Py_NewRef(task_greenlet));
    Py_RETURN_NONE;
}

/* The frame's Local (a new reference), Py_None (a new reference: no Local, as `call`
 * answers None), or NULL: not decided here (`call` decides; an error is cleared, `call`
 * meets it again). */
static PyObject *
user_call(PyFrameObject *frame, PyObject *code)
{
    if (TRACED == NULL)
        return NULL;
    PyObject *key = PyLong_FromVoidPtr(code);
    if (key == NULL) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *ex = NULL, *tracer = NULL, *cache = NULL, *offsets = NULL, *result = NULL;
    PyObject *counts = NULL, *counted = NULL;
    Attrs a = {NULL, NULL};
    PyObject *kind = PyDict_GetItemWithError(TRACED, key);  /* (borrowed) */
    if (kind != USER_KIND)
        goto done;
    ex = task_execution(GETCURRENT, TASK_GREENLET);
    if (ex == NULL || attrs_of(ex, &a) < 0 || attr_is_true(&a, S_finished) != 0
            || (tracer = get(&a, S_tracer)) == NULL || tracer == Py_None
            || (cache = PyObject_GetAttr(tracer, S_offsets_cache)) == NULL
            || !PyDict_Check(cache))
        goto done;
    offsets = PyDict_GetItemWithError(cache, key);
    if (offsets == NULL || !PyFrozenSet_CheckExact(offsets)) {
        offsets = NULL;
        goto done;
    }
    Py_INCREF(offsets);  /* (a look-up below may run Python code) */
    /* Where it only counts (tracing.Tracer.counted), known once `call` has made a Local
     * of the code in this mode. */
    if ((counts = PyObject_GetAttr(tracer, S_counted_cache)) == NULL || !PyDict_Check(counts))
        goto done;
    counted = PyDict_GetItemWithError(counts, key);
    if (counted == NULL || !PyFrozenSet_CheckExact(counted)) {
        counted = NULL;
        goto done;
    }
    Py_INCREF(counted);
    int lines = is_true(tracer, S_lines);
    if (lines < 0)
        goto done;
    ((CkFrame *)frame)->f_trace_lines = (char)lines;
    if (PySet_GET_SIZE(offsets)) {
        if (PyObject_SetAttr((PyObject *)frame, S_f_trace_opcodes, Py_True) < 0)
            goto done;
    }
    else if (!lines) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    PyObject *point = get(&a, S_callback_point);
    if (point != NULL) {
        result = local_make(&LocalType, point, INSTRUCTION, ex, tracer, offsets, counted);
        Py_DECREF(point);
    }
done:
    PyErr_Clear();
    Py_DECREF(key);
    attrs_done(&a);
    Py_XDECREF(ex);
    Py_XDECREF(tracer);
    Py_XDECREF(cache);
    Py_XDECREF(offsets);
    Py_XDECREF(counts);
    Py_XDECREF(counted);
    return result;
}

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
        PyObject *r = user_call(frame, (PyObject *)code);
        if (r == NULL) {
            PyObject *args[3] = {(PyObject *)frame, CALL_EVENT, Py_None};
            r = PyObject_Vectorcall(call, args, 3, NULL);
        }
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

/* ---- current_execution: runtime.current_execution, in C ----
 *
 * current_execution_of(getcurrent, TaskGreenlet) makes the function; its self is the pair. */

static PyObject *
current_execution(PyObject *pair, PyObject *unused)
{
    PyObject *ex = task_execution(PyTuple_GET_ITEM(pair, 0), PyTuple_GET_ITEM(pair, 1));
    if (ex == NULL) {
        if (!PyErr_Occurred())
            Py_RETURN_NONE;
        /* "greenlet is being finalized" (see runtime.current_execution): not a run's thread */
        if (!PyErr_ExceptionMatches(PyExc_RuntimeError))
            return NULL;
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    int finished = is_true(ex, S_finished);
    if (finished == 0)
        return ex;
    Py_DECREF(ex);
    if (finished < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyMethodDef CURRENT_DEF = {"current_execution", current_execution, METH_NOARGS,
    "The execution whose thread is calling, or None outside a controlled run."};

static PyObject *
current_execution_of(PyObject *self, PyObject *args)
{
    PyObject *getcurrent, *task_greenlet;
    if (!PyArg_ParseTuple(args, "OO!", &getcurrent, &PyType_Type, &task_greenlet))
        return NULL;
    PyObject *pair = PyTuple_Pack(2, getcurrent, task_greenlet);
    if (pair == NULL)
        return NULL;
    PyObject *fn = PyCFunction_New(&CURRENT_DEF, pair);
    Py_DECREF(pair);
    return fn;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(Point, RUNNABLE, FAIRNESS_BOUND): what stay() makes and compares with."},
    {"current_execution_of", current_execution_of, METH_VARARGS,
     "current_execution_of(getcurrent, TaskGreenlet): runtime.current_execution, in C."},
    {"configure_lines", configure_lines, METH_VARARGS,
     "configure_lines(fallback, user_codes, instrumented, getcurrent, TaskGreenlet)."},
    {"line_event", (PyCFunction)(void (*)(void))line_event, METH_FASTCALL,
     "line_event(code, line): sys.monitoring's LINE callback, its hot path in C."},
    {"importing", importing, METH_NOARGS,
     "importing(): patch._importing(), in C: a frame above the caller's caller is "
     "importlib's."},
    {"point", (PyCFunction)(void (*)(void))point, METH_FASTCALL,
     "point(ex, kind, obj=''): Execution.point(ex, kind, obj), where the thread is untraced "
     "already in C (stay, else ex._reach), else ex.point."},
    {"enabled", (PyCFunction)(void (*)(void))enabled, METH_FASTCALL,
     "enabled(tasks, cur): Execution._enabled(cur) of an Execution whose tasks are tasks."},
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
    {"configure_calls", configure_calls, METH_VARARGS,
     "configure_calls(traced, USER, instruction, getcurrent, TaskGreenlet): what the global "
     "trace function decides alone (the user's code, its offsets known for the tracer)."},
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
        &S_tracer, &S_lines, &S_callback_point, &S_line, &S_tstate, &S_point, &S_reach,
        &IMPORTLIB_PREFIX};
    const char *texts[] = {"killing", "_in_callers_code", "recorder", "invariant", "races",
        "current", "steps", "step_limit", "_nondaemon_alive", "_runnable", "state",
        "choices", "replayed", "_stays", "yielding", "_streak", "max_choices", "tid",
        "pt", "in_callback", "_next", "_switch", "", "task_execution", "finished", "tracer",
        "lines", "callback_point", "line", "_tstate", "point", "_reach",
        "<frozen importlib"};
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
    S_offsets_cache = PyUnicode_InternFromString("_offsets");
    S_counted_cache = PyUnicode_InternFromString("_counted");
    S_f_trace_opcodes = PyUnicode_InternFromString("f_trace_opcodes");
    S_unseen = PyUnicode_InternFromString("unseen");
    S_names_again = PyUnicode_InternFromString("names_again");
    S_accesses = PyUnicode_InternFromString("accesses");
    if (LINE_KIND == NULL || NEVER == NULL || CALL_EVENT == NULL || S_offsets_cache == NULL
            || S_counted_cache == NULL || S_f_trace_opcodes == NULL || S_unseen == NULL
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

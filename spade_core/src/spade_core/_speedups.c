/* spade_core._speedups: the C path of registering a store's environments in Gymnasium.
 *
 * Optional: spade_core.native imports it when it was built (and SPADE_CORE_NO_C is not
 * set); spade_core.registry keeps the pure-Python code it replaces, which stays the
 * reference (tests/core/test_registry_native.py compares the two).
 *
 *   register_specs   create one StoredEnvSpec per (id, name) and insert it into the
 *                    registry dict, in one loop without a Python frame or call per id
 *   keep_alive       at exit: keep Gymnasium's registry, store specs and all, past the
 *                    interpreter's teardown instead of rebuilding it without them
 *
 * Each spec is made like object.__new__(cls) followed by setting its two slots, except
 * that it is taken off the cyclic garbage collector's list (see register_specs for why
 * that is safe).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

/* The byte offset of the object slot ``name`` of ``cls`` (a member descriptor of type
 * T_OBJECT_EX on one of its bases), or -1 with an exception set. */
static Py_ssize_t
slot_offset(PyTypeObject *cls, const char *name)
{
    PyObject *key = PyUnicode_FromString(name);
    if (key == NULL)
        return -1;
    PyObject *descr = _PyType_Lookup(cls, key); /* borrowed */
    Py_DECREF(key);
    if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
        PyErr_Format(PyExc_TypeError, "register_specs: %.200s has no slot %s", cls->tp_name, name);
        return -1;
    }
    PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
    PyTypeObject *owner = PyDescr_TYPE(descr);
    if (member->type != T_OBJECT_EX || (member->flags & READONLY) || member->offset <= 0
        || member->offset + (Py_ssize_t)sizeof(PyObject *) > owner->tp_basicsize
        || !PyType_IsSubtype(cls, owner)) {
        PyErr_Format(PyExc_TypeError, "register_specs: %s of %.200s is not a writable object slot",
                     name, cls->tp_name);
        return -1;
    }
    return member->offset;
}

PyDoc_STRVAR(register_specs_doc,
"register_specs(registry, cls, gym_ids, names, /)\n--\n\n"
"For each i, registry[gym_ids[i]] = a new cls instance with the slots id = gym_ids[i] and\n"
"name = names[i] (created without __init__), in order. The instances are not tracked by\n"
"the cyclic garbage collector. gym_ids and names: lists of str of the same length.");

static PyObject *
register_specs(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4) {
        PyErr_Format(PyExc_TypeError, "register_specs() takes 4 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *registry = args[0], *cls_obj = args[1], *gym_ids = args[2], *names = args[3];
    if (!PyDict_Check(registry)) {
        PyErr_Format(PyExc_TypeError, "register_specs: registry must be a dict, not %.100s",
                     Py_TYPE(registry)->tp_name);
        return NULL;
    }
    if (!PyType_Check(cls_obj)) {
        PyErr_Format(PyExc_TypeError, "register_specs: cls must be a class, not %.100s",
                     Py_TYPE(cls_obj)->tp_name);
        return NULL;
    }
    if (!PyList_Check(gym_ids) || !PyList_Check(names)) {
        PyErr_Format(PyExc_TypeError, "register_specs: gym_ids and names must be lists, not %.100s and %.100s",
                     Py_TYPE(gym_ids)->tp_name, Py_TYPE(names)->tp_name);
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(gym_ids);
    if (PyList_GET_SIZE(names) != n) {
        PyErr_Format(PyExc_ValueError, "register_specs: %zd gym ids but %zd names", n, PyList_GET_SIZE(names));
        return NULL;
    }
    PyTypeObject *cls = (PyTypeObject *)cls_obj;
    if (!(cls->tp_flags & Py_TPFLAGS_HEAPTYPE) || !PyType_IS_GC(cls) || cls->tp_itemsize != 0
        || cls->tp_alloc == NULL) {
        PyErr_Format(PyExc_TypeError, "register_specs: %.200s is not a class defined in Python", cls->tp_name);
        return NULL;
    }
    Py_ssize_t id_at = slot_offset(cls, "id");
    if (id_at < 0)
        return NULL;
    Py_ssize_t name_at = slot_offset(cls, "name");
    if (name_at < 0)
        return NULL;

    /* Allocating counts towards the collector's thresholds even for objects untracked at
     * once: 100,000 allocations would start ~140 collections, some of the whole heap
     * (about a sixth of this function's time). Paused, as the Python path does. */
    int was_enabled = PyGC_Disable();
    PyObject *result = NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        /* Python code can run below only through a key already in the registry whose
         * __eq__ is Python code (Gymnasium's are str): read the lists by index, checked. */
        if (i >= PyList_GET_SIZE(gym_ids) || i >= PyList_GET_SIZE(names)) {
            PyErr_SetString(PyExc_RuntimeError, "register_specs: the lists changed size");
            goto done;
        }
        PyObject *gym_id = PyList_GET_ITEM(gym_ids, i), *name = PyList_GET_ITEM(names, i);
        if (!PyUnicode_CheckExact(gym_id) || !PyUnicode_CheckExact(name)) {
            PyErr_Format(PyExc_TypeError, "register_specs: item %zd: gym id and name must be str, not %.100s and %.100s",
                         i, Py_TYPE(gym_id)->tp_name, Py_TYPE(name)->tp_name);
            goto done;
        }
        PyObject *spec = cls->tp_alloc(cls, 0); /* zeroed, GC-tracked, holds a reference to cls */
        if (spec == NULL)
            goto done;
        /* Untracked: the cyclic collector neither walks these objects in each collection
         * (the interpreter's shutdown collections included) nor considers them garbage.
         * Safe: an untracked object is treated as referenced from outside, so what it
         * refers to is never collected while it is alive (its own references are simply not
         * subtracted), and it is freed by reference counting when its last reference goes.
         * The worst case is a cycle through one spec that is never collected, a leak, not a
         * wrong collection. A spec refers only to two str and its class; the instance dict
         * it gets lazily (version: int, kwargs: a dict of str) is a separate object that
         * the collector handles as usual, so a cycle needs code storing a reference back to
         * the spec in it. */
        PyObject_GC_UnTrack(spec);
        Py_INCREF(gym_id);
        *(PyObject **)((char *)spec + id_at) = gym_id;
        Py_INCREF(name);
        *(PyObject **)((char *)spec + name_at) = name;
        int failed = PyDict_SetItem(registry, gym_id, spec);
        Py_DECREF(spec);
        if (failed)
            goto done;
    }
    result = Py_NewRef(Py_None);
done:
    if (was_enabled)
        PyGC_Enable();
    return result;
}

PyDoc_STRVAR(keep_alive_doc,
"keep_alive(obj, /)\n--\n\n"
"Take one reference to obj that is never given back, and take obj off the cyclic garbage\n"
"collector's list: obj and everything it refers to outlive the interpreter's teardown\n"
"(which then neither frees them nor walks obj in its collections). For interpreter exit.");

static PyObject *
keep_alive(PyObject *module, PyObject *obj)
{
    /* Untracking is safe for the same reason as in register_specs: what obj refers to
     * counts as referenced from outside, so nothing is collected wrongly. A later insert
     * of a tracked object into a dict tracks it again (only costing the walk). */
    Py_INCREF(obj);
    if (PyObject_GC_IsTracked(obj))
        PyObject_GC_UnTrack(obj);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"keep_alive", keep_alive, METH_O, keep_alive_doc},
    {"register_specs", (PyCFunction)(void (*)(void))register_specs, METH_FASTCALL, register_specs_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "spade_core._speedups",
    .m_doc = "The C path of registering store environments (see spade_core.native).",
    .m_size = 0,
    .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    return PyModuleDef_Init(&module_def);
}

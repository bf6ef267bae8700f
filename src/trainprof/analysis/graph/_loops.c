/* trainprof.analysis.graph._loops: the two node-by-node loops of the dependency graph, in C.
 *
 * chains.py keeps the Python versions, used where this optional extension is not built; the
 * results are the same bit for bit (the same additions and comparisons in the same order;
 * tests/unit/analysis/test_loops.py). Python costs ~0.3 µs a junction in-edge or a hop; why it
 * is kept (measured with benchmarks/graph_loops.py): docs/benchmarks.md, "The graph loops in C".
 *
 * retime_junctions(deg, src, add, tj): tj (float64, one per junction, in topological order)
 *   is updated in place: junction i takes max over its deg[i] in-edges (the next deg[i]
 *   entries of src/add) of tj[src[k]] + add[k], where some in-edge is above -inf.
 * hop_back(bind, src, t, end, t_start) -> (edges int64 in time order, head): from node `end`,
 *   follow each node's binding in-edge back to its source while the node's time > t_start;
 *   head is the first node without one (-1 when the walk reached t_start).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* obj as a contiguous 1-d buffer of int64 (fmt "q") or float64 (fmt "d"); -1 with an error set. */
static int get(PyObject *obj, Py_buffer *view, const char *fmt, Py_ssize_t itemsize, int writable, const char *what) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    /* int64 is 'l' on LP64 Linux/macOS and 'q' on Windows; a byte-order prefix may precede */
    const char *f = view->format;
    char last = f && *f ? f[strlen(f) - 1] : 0;
    int ok = fmt[0] == 'd' ? last == 'd' : (last == 'q' || (last == 'l' && sizeof(long) == 8));
    if (view->itemsize != itemsize || view->ndim != 1 || !ok) {
        PyErr_Format(PyExc_TypeError, "%s: expected a contiguous 1-d array of format '%s'", what, fmt);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static PyObject *retime_junctions(PyObject *self, PyObject *args) {
    PyObject *o_deg, *o_src, *o_add, *o_tj;
    if (!PyArg_ParseTuple(args, "OOOO", &o_deg, &o_src, &o_add, &o_tj)) return NULL;
    Py_buffer deg, src, add, tj;
    if (get(o_deg, &deg, "q", 8, 0, "deg") < 0) return NULL;
    if (get(o_src, &src, "q", 8, 0, "src") < 0) { PyBuffer_Release(&deg); return NULL; }
    if (get(o_add, &add, "d", 8, 0, "add") < 0) { PyBuffer_Release(&deg); PyBuffer_Release(&src); return NULL; }
    if (get(o_tj, &tj, "d", 8, 1, "tj") < 0) {
        PyBuffer_Release(&deg); PyBuffer_Release(&src); PyBuffer_Release(&add);
        return NULL;
    }
    const int64_t *d = deg.buf, *s = src.buf;
    const double *a = add.buf;
    double *t = tj.buf;
    Py_ssize_t nj = tj.len / 8, ne = src.len / 8, k = 0;
    int bad = deg.len / 8 != nj || add.len / 8 != ne;
    for (Py_ssize_t i = 0; i < nj && !bad; i++) {
        if (d[i] < 0 || k + d[i] > ne) { bad = 1; break; }
        double best = -INFINITY;
        for (int64_t j = 0; j < d[i]; j++, k++) {
            int64_t from = s[k];
            if (from < 0 || from >= nj) { bad = 1; break; }
            double x = t[from] + a[k];
            if (x > best) best = x;
        }
        if (best > -INFINITY) t[i] = best;
    }
    PyBuffer_Release(&deg); PyBuffer_Release(&src); PyBuffer_Release(&add); PyBuffer_Release(&tj);
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "retime_junctions: inconsistent junction arrays");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *hop_back(PyObject *self, PyObject *args) {
    PyObject *o_bind, *o_src, *o_t;
    Py_ssize_t end;
    double t_start;
    if (!PyArg_ParseTuple(args, "OOOnd", &o_bind, &o_src, &o_t, &end, &t_start)) return NULL;
    Py_buffer bind, src, tv;
    if (get(o_bind, &bind, "q", 8, 0, "bind") < 0) return NULL;
    if (get(o_src, &src, "q", 8, 0, "src") < 0) { PyBuffer_Release(&bind); return NULL; }
    if (get(o_t, &tv, "d", 8, 0, "t") < 0) { PyBuffer_Release(&bind); PyBuffer_Release(&src); return NULL; }
    const int64_t *b = bind.buf, *s = src.buf;
    const double *t = tv.buf;
    Py_ssize_t n = bind.len / 8, ne = src.len / 8, cap = 1024, m = 0;
    int64_t head = -1, v = end;
    int bad = tv.len / 8 != n;
    int64_t *out = PyMem_Malloc(cap * sizeof(int64_t));
    if (!out) bad = 2;
    for (Py_ssize_t hops = 0; !bad && v >= 0; hops++) {
        if (v >= n || hops > ne) { bad = 1; break; } /* a cycle cannot happen in a DAG; guard anyway */
        if (!(t[v] > t_start)) break;
        int64_t e = b[v];
        if (e < 0) { head = v; break; }
        if (e >= ne) { bad = 1; break; }
        if (m == cap) {
            int64_t *grown = PyMem_Realloc(out, 2 * cap * sizeof(int64_t));
            if (!grown) { bad = 2; break; }
            out = grown;
            cap *= 2;
        }
        out[m++] = e;
        v = s[e];
    }
    PyBuffer_Release(&bind); PyBuffer_Release(&src); PyBuffer_Release(&tv);
    if (bad) {
        PyMem_Free(out);
        if (bad == 2) return PyErr_NoMemory();
        PyErr_SetString(PyExc_ValueError, "hop_back: inconsistent graph arrays");
        return NULL;
    }
    PyObject *edges = PyBytes_FromStringAndSize(NULL, m * (Py_ssize_t)sizeof(int64_t));
    if (edges) {
        int64_t *dst = (int64_t *)PyBytes_AS_STRING(edges);
        for (Py_ssize_t i = 0; i < m; i++) dst[i] = out[m - 1 - i]; /* time order */
    }
    PyMem_Free(out);
    if (!edges) return NULL;
    return Py_BuildValue("(NL)", edges, (long long)head);
}

static PyMethodDef methods[] = {
    {"retime_junctions", retime_junctions, METH_VARARGS, "junction times in place (see the module docstring)"},
    {"hop_back", hop_back, METH_VARARGS, "binding edges back from a node (see the module docstring)"},
    {NULL}};

static struct PyModuleDef loops_module = {PyModuleDef_HEAD_INIT, .m_name = "_loops", .m_size = -1,
                                          .m_methods = methods};

PyMODINIT_FUNC PyInit__loops(void) { return PyModule_Create(&loops_module); }

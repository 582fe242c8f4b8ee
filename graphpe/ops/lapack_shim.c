/* C support of graphpe's ahead-of-time kernel extension (ops.aot_build):
 *
 * - the LAPACK routines the kernels call (ops.aot.LapackRoutine binds the same symbol names in
 *   numba's JIT): each forwards to scipy's Cython LAPACK, looked up on its first call;
 * - numba_unpickle with a cache: numba's compiled wrappers unpickle a constant (the ndarray
 *   type) each time they return an array, and in an extension numba's helper library does
 *   so without the cache numba's JIT has (~2.5 us per returned array). aot_build compiles the
 *   helper library's own function as graphpe_numba_unpickle_uncached. */
#undef numba_unpickle
#include <Python.h>
#include <stdio.h>
#include <stdlib.h>

PyObject *graphpe_numba_unpickle_uncached(const char *data, int n, const char *hashed);

#define UNPICKLE_CACHE_SIZE 64
static const char *unpickled_data[UNPICKLE_CACHE_SIZE];
static PyObject *unpickled_objects[UNPICKLE_CACHE_SIZE];

/* Called with the GIL held. The pickles are constants of the extension: the address of one
 * identifies it. */
PyObject *numba_unpickle(const char *data, int n, const char *hashed)
{
    int i;
    PyObject *obj;
    for (i = 0; i < UNPICKLE_CACHE_SIZE && unpickled_data[i] != NULL; i++) {
        if (unpickled_data[i] == data) {
            Py_INCREF(unpickled_objects[i]);
            return unpickled_objects[i];
        }
    }
    obj = graphpe_numba_unpickle_uncached(data, n, hashed);
    if (obj != NULL && i < UNPICKLE_CACHE_SIZE) {
        Py_INCREF(obj);
        unpickled_objects[i] = obj;
        unpickled_data[i] = data;
    }
    return obj;
}

static void *graphpe_lapack_address(const char *name)
{
    void *address = NULL;
    PyGILState_STATE state = PyGILState_Ensure();
    PyObject *module = PyImport_ImportModule("scipy.linalg.cython_lapack");
    if (module != NULL) {
        PyObject *capi = PyObject_GetAttrString(module, "__pyx_capi__");
        if (capi != NULL) {
            PyObject *capsule = PyDict_GetItemString(capi, name);
            if (capsule != NULL)
                address = PyCapsule_GetPointer(capsule, PyCapsule_GetName(capsule));
            Py_DECREF(capi);
        }
        Py_DECREF(module);
    }
    if (address == NULL) {
        PyErr_Print();
        fprintf(stderr, "graphpe: scipy.linalg.cython_lapack has no %s\n", name);
        abort();
    }
    PyGILState_Release(state);
    return address;
}

typedef void (*dsytrd_fn)(void *, void *, void *, void *, void *, void *, void *, void *, void *, void *);
static dsytrd_fn address_dsytrd = NULL;

void graphpe_dsytrd(void *a0, void *a1, void *a2, void *a3, void *a4, void *a5, void *a6, void *a7, void *a8, void *a9)
{
    if (address_dsytrd == NULL)
        address_dsytrd = (dsytrd_fn)graphpe_lapack_address("dsytrd");
    address_dsytrd(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9);
}

typedef void (*dormtr_fn)(void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *);
static dormtr_fn address_dormtr = NULL;

void graphpe_dormtr(void *a0, void *a1, void *a2, void *a3, void *a4, void *a5, void *a6, void *a7, void *a8, void *a9, void *a10, void *a11, void *a12)
{
    if (address_dormtr == NULL)
        address_dormtr = (dormtr_fn)graphpe_lapack_address("dormtr");
    address_dormtr(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12);
}

typedef void (*zheevr_fn)(void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *, void *);
static zheevr_fn address_zheevr = NULL;

void graphpe_zheevr(void *a0, void *a1, void *a2, void *a3, void *a4, void *a5, void *a6, void *a7, void *a8, void *a9, void *a10, void *a11, void *a12, void *a13, void *a14, void *a15, void *a16, void *a17, void *a18, void *a19, void *a20, void *a21, void *a22)
{
    if (address_zheevr == NULL)
        address_zheevr = (zheevr_fn)graphpe_lapack_address("zheevr");
    address_zheevr(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17, a18, a19, a20, a21, a22);
}

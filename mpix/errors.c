#include "config.h"

#include "coll/dtype.h"
#include "mem/mem.h"
#include "mpix_internal.h"
#include "reduce/reduce.h"
#include "util/log.h"
#include "util/str.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#ifdef HAVE_MPIR_ERR_CREATE_CODE
/* MPICH's own error-stack constructor (exported by libmpich; ROMIO uses it).
 * MPI_Add_error_code on a predefined class is broken in MPICH 4.0.2 (the code
 * lacks the dynamic bit, so MPI_Error_string prints a stale stack), so this
 * is the way to get standard classes with our message. */
int MPIR_Err_create_code(int lastcode, int fatal, const char fcname[], int line,
                         int error_class, const char generic_msg[], const char specific_msg[],
                         ...);
#endif

static int config_class = -1;
static int config_code  = -1;

int mxh_config_error_class(void)
{
    if (config_class < 0) {
        if (MPI_Add_error_class(&config_class) != MPI_SUCCESS) {
            config_class = MPI_ERR_OTHER;
            return config_class;
        }
        MPI_Add_error_string(config_class, "mpix-hier configuration or topology error");
        if (MPI_Add_error_code(config_class, &config_code) != MPI_SUCCESS)
            config_code = config_class;
    }
    return config_class;
}

static const char *generic_key(int mpi_class)
{
    switch (mpi_class) {
    case MPI_ERR_COUNT:  return "**count";
    case MPI_ERR_TYPE:   return "**dtype";
    case MPI_ERR_OP:     return "**op";
    case MPI_ERR_COMM:   return "**comm";
    case MPI_ERR_ROOT:   return "**root";
    case MPI_ERR_BUFFER: return "**buffer";
    case MPI_ERR_ARG:    return "**arg";
    case MPI_ERR_INTERN: return "**intern";
    default:             return "**other";
    }
}

static int make_code(int mpi_class, const char *func, const char *msg)
{
    if (mpi_class == mxh_config_error_class() && config_code >= 0) {
        /* our own class: a dynamic code whose string is replaced each time */
        char buf[MPI_MAX_ERROR_STRING];
        size_t fl = strlen(func);
        mxh_strlcpy(buf, func, sizeof(buf));
        if (fl + 2 < sizeof(buf)) {
            memcpy(buf + fl, ": ", 3);
            mxh_strlcpy(buf + fl + 2, msg, sizeof(buf) - fl - 2);
        }
        MPI_Add_error_string(config_code, buf);
        return config_code;
    }
#ifdef HAVE_MPIR_ERR_CREATE_CODE
    return MPIR_Err_create_code(MPI_SUCCESS, 0, func, 0, mpi_class, generic_key(mpi_class),
                                "%s", msg);
#else
    (void)func;
    (void)msg;
    (void)generic_key;
    return mpi_class;
#endif
}

int mxh_raise(MPI_Comm comm, int mpi_class, const char *func, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    int initialized = 0, finalized = 0;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    mxh_debug("%s: %s", func, msg);

    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized) {
        mxh_error("%s called %s MPI: %s", func, finalized ? "after finalizing" : "before initializing", msg);
        return mpi_class;
    }
    int code = make_code(mpi_class, func, msg);
    MPI_Comm_call_errhandler(comm == MPI_COMM_NULL ? MPI_COMM_WORLD : comm, code);
    return code;
}

static int status_class(mxh_status_t status)
{
    switch (status) {
    case MXH_ERR_NO_MEMORY:     return MPI_ERR_NO_MEM;
    case MXH_ERR_INVALID_PARAM: return MPI_ERR_ARG;
    case MXH_ERR_IO:
    case MXH_ERR_PARSE:
    case MXH_ERR_CONFIG:        return mxh_config_error_class();
    case MXH_ERR_MPI:           return MPI_ERR_OTHER;
    default:                    return MPI_ERR_INTERN;
    }
}

int mxh_status_code(mxh_status_t status, const char *func)
{
    const char *cause = mxh_log_last_error();
    char msg[768];
    snprintf(msg, sizeof(msg), "%s%s%s", mxh_status_string(status), cause[0] ? ": " : "", cause);
    return make_code(status_class(status), func, msg);
}

int mxh_raise_status(MPI_Comm comm, mxh_status_t status, const char *func)
{
    const char *cause = mxh_log_last_error();
    int cls;

    switch (status) {
    case MXH_ERR_NO_MEMORY:     cls = MPI_ERR_NO_MEM; break;
    case MXH_ERR_INVALID_PARAM: cls = MPI_ERR_ARG; break;
    case MXH_ERR_IO:
    case MXH_ERR_PARSE:
    case MXH_ERR_CONFIG:        cls = mxh_config_error_class(); break;
    case MXH_ERR_MPI:           cls = MPI_ERR_OTHER; break;
    default:                    cls = MPI_ERR_INTERN; break;
    }
    return mxh_raise(comm, cls, func, "%s%s%s", mxh_status_string(status),
                     cause[0] ? ": " : "", cause);
}

/* ---- datatypes and ops ---------------------------------------------------- */

/* MPI's queries on a handle the program passed run with MPI_ERRORS_RETURN on
 * the communicators MPICH reports handle-less errors on: a garbage handle is
 * then an answer, raised once through the call's communicator, instead of a
 * call of MPI_COMM_WORLD's handler (fatal by default) before it. */
typedef struct quiet {
    MPI_Errhandler world, self;
} quiet_t;

static void quiet_begin(quiet_t *q)
{
    MPI_Comm_get_errhandler(MPI_COMM_WORLD, &q->world);
    MPI_Comm_get_errhandler(MPI_COMM_SELF, &q->self);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
}

static void quiet_end(quiet_t *q)
{
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, q->world);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, q->self);
    MPI_Errhandler_free(&q->world);
    MPI_Errhandler_free(&q->self);
}

/* Whether @dt is a datatype handle MPI knows (MPI_Type_get_envelope answers),
 * and its combiner. */
static int dtype_valid(MPI_Datatype dt, int *combiner)
{
    quiet_t q;
    int ni, na, nd, rc;
    quiet_begin(&q);
    rc = MPI_Type_get_envelope(dt, &ni, &na, &nd, combiner);
    quiet_end(&q);
    return rc == MPI_SUCCESS;
}

/* @dt's group: its row of the datatype table (reduce/dtypes.h), else other
 * predefined types and derived ones. */
static mxh_dtype_class_t classify_slow(MPI_Datatype dt)
{
    const mxh_dtype_desc_t *d = mxh_dtype_find(dt);
    int ni, na, nd, combiner;

    if (d != NULL)
        return d->cls;
    if (MPI_Type_get_envelope(dt, &ni, &na, &nd, &combiner) == MPI_SUCCESS &&
        combiner == MPI_COMBINER_NAMED)
        return MXH_DT_OTHER;
    return MXH_DT_DERIVED;
}

/* What the entry checks need to know of a predefined datatype, cached: the
 * handles of predefined types never change or get reused, so a handle found
 * here is that type (derived types are never entered). Keeps the per-call
 * cost of the checks to a few loads. Not thread-safe, like the rest. */
typedef struct dt_info {
    MPI_Datatype      dt;
    mxh_dtype_class_t cls;
    int               plain;
    size_t            size;
} dt_info_t;

#define DT_CACHE_SIZE 128
static dt_info_t dt_cache[DT_CACHE_SIZE];
static int       dt_cache_used[DT_CACHE_SIZE];

static unsigned dt_slot(MPI_Datatype dt)
{
    uint64_t h = (uint64_t)(uintptr_t)dt * 0x9E3779B97F4A7C15ULL;
    return (unsigned)(h >> 57) % DT_CACHE_SIZE;
}

/* The cached entry of @dt, or NULL (not looked up yet, or derived). */
static inline const dt_info_t *dt_hit(MPI_Datatype dt)
{
    unsigned k = dt_slot(dt);
    return dt_cache_used[k] && dt_cache[k].dt == dt ? &dt_cache[k] : NULL;
}

/* Look @dt up and enter it: NULL for derived (and invalid) types. A
 * predefined half type (MPICH's MPIX_C_FLOAT16) is entered as what
 * mxh_half_kind makes of it: class MXH_DT_HALF, 2 bytes, so that a hit answers
 * without asking half_types.c. */
__attribute__((noinline)) static const dt_info_t *dt_enter(MPI_Datatype dt)
{
    unsigned k = dt_slot(dt);
    int ni, na, nd, combiner, sz;
    MPI_Aint lb, extent;

    if (dt == MPI_DATATYPE_NULL ||
        MPI_Type_get_envelope(dt, &ni, &na, &nd, &combiner) != MPI_SUCCESS ||
        combiner != MPI_COMBINER_NAMED)
        return NULL;
    dt_info_t info = {dt, classify_slow(dt), 0, 0};
    if (mxh_half_kind(dt) != MXH_HALF_NONE) {
        info.cls   = MXH_DT_HALF;
        info.plain = 1;
        info.size  = 2;
    } else if (MPI_Type_size(dt, &sz) == MPI_SUCCESS &&
        MPI_Type_get_extent(dt, &lb, &extent) == MPI_SUCCESS && lb == 0 && extent == sz &&
        sz > 0) {
        info.plain = 1;
        info.size  = (size_t)sz;
    }
    dt_cache[k]      = info; /* a collision simply replaces the slot */
    dt_cache_used[k] = 1;
    return &dt_cache[k];
}

/* The hit inline, the look-up out of line (noinline: its MPI queries would
 * give every caller their register saves). */
static inline const dt_info_t *dt_info(MPI_Datatype dt)
{
    const dt_info_t *info = dt_hit(dt);
    return info != NULL ? info : dt_enter(dt);
}

MPI_Datatype mxh_dt_last = MPI_DATATYPE_NULL;
size_t       mxh_dt_last_size;

/* dt_info, remembering a predefined @dt as the last one (mpix_internal.h). */
static inline const dt_info_t *dt_info_last(MPI_Datatype dt)
{
    const dt_info_t *info = dt_info(dt);
    if (info != NULL) {
        mxh_dt_last      = dt;
        mxh_dt_last_size = info->plain ? info->size : 0;
    }
    return info;
}

mxh_dtype_class_t mxh_dtype_classify(MPI_Datatype dt)
{
    const dt_info_t *info = dt_hit(dt); /* a predefined type seen before */

    if (info != NULL)
        return info->cls;
    if (mxh_half_kind(dt) != MXH_HALF_NONE)
        return MXH_DT_HALF;
    info = dt_info(dt);
    return info ? info->cls : MXH_DT_DERIVED;
}

int mxh_dtype_is_plain_slow(MPI_Datatype dt, size_t *size)
{
    const dt_info_t *info = dt_hit(dt); /* a predefined type seen before */

    if (info == NULL) {
        if (mxh_half_kind(dt) != MXH_HALF_NONE) {
            *size = 2;
            return 1;
        }
        info = dt_info(dt);
    }
    if (info == NULL || !info->plain)
        return 0;
    *size = info->size;
    return 1;
}

int mxh_check_comm_slow(MPI_Comm comm, const char *func)
{
    int inter = 0, rc;
    quiet_t q;

    if (comm == MPI_COMM_NULL)
        return mxh_raise(comm, MPI_ERR_COMM, func, "communicator is MPI_COMM_NULL");
    if (mxh_hier_cached(comm))
        return MPI_SUCCESS; /* validated when its hierarchy was looked up */
    quiet_begin(&q);
    rc = MPI_Comm_test_inter(comm, &inter);
    quiet_end(&q);
    if (rc != MPI_SUCCESS) /* MPI_COMM_WORLD's handler, as MPICH's collectives */
        return mxh_raise(MPI_COMM_NULL, MPI_ERR_COMM, func, "invalid communicator handle");
    return MPI_SUCCESS;
}

int mxh_comm_is_inter_slow(MPI_Comm comm)
{
    int inter = 0;
    if (mxh_hier_cached(comm))
        return 0;
    return MPI_Comm_test_inter(comm, &inter) == MPI_SUCCESS && inter;
}

int mxh_check_count(MPI_Comm comm, int count, const char *what, const char *func)
{
    if (count < 0)
        return mxh_raise(comm, MPI_ERR_COUNT, func, "%s = %d is negative", what, count);
    return MPI_SUCCESS;
}

/* A private MPI_COMM_SELF with MPI_ERRORS_RETURN to probe datatypes on. */
static MPI_Comm probe_comm = MPI_COMM_NULL;

void mxh_errors_cleanup(void)
{
    if (probe_comm != MPI_COMM_NULL)
        MPI_Comm_free(&probe_comm);
}

int mxh_check_dtype_slow(MPI_Comm comm, MPI_Datatype dt, MPI_Op op, const char *what,
                         const char *func)
{
    int combiner, size;

    if (dt == MPI_DATATYPE_NULL)
        return mxh_raise(comm, MPI_ERR_TYPE, func, "%s is MPI_DATATYPE_NULL", what);
    if (dt_hit(dt) != NULL) {
        dt_info_last(dt); /* predefined, seen before */
        return MPI_SUCCESS;
    }
    if (!dtype_valid(dt, &combiner)) {
        /* MPICH's reductions check a predefined op's types first: MPI_ERR_OP */
        if (op != MPI_OP_NULL && mxh_dtype_op_name(op) != NULL)
            return mxh_raise(comm, MPI_ERR_OP, func,
                             "%s is not defined for %s, which is not a valid datatype handle",
                             mxh_dtype_op_name(op), what);
        return mxh_raise(comm, MPI_ERR_TYPE, func, "%s is not a valid datatype handle", what);
    }
    if (combiner == MPI_COMBINER_NAMED) {
        dt_info_last(dt); /* predefined */
        return MPI_SUCCESS;
    }
    /* derived: MPI has no query for "committed"; MPI_Pack_size checks it */
    if (probe_comm == MPI_COMM_NULL) {
        if (MPI_Comm_dup(MPI_COMM_SELF, &probe_comm) != MPI_SUCCESS)
            return MPI_SUCCESS; /* cannot probe: MPI checks it in the plain collective */
        MPI_Comm_set_errhandler(probe_comm, MPI_ERRORS_RETURN);
    }
    if (MPI_Pack_size(1, dt, probe_comm, &size) != MPI_SUCCESS)
        return mxh_raise(comm, MPI_ERR_TYPE, func,
                         "%s is a derived datatype that is not committed (MPI_Type_commit)", what);
    return MPI_SUCCESS;
}

static const char *dtype_name(MPI_Datatype dt, char *buf, int len)
{
    int rl = 0;
    buf[0] = '\0';
    if (MPI_Type_get_name(dt, buf, &rl) != MPI_SUCCESS || buf[0] == '\0')
        snprintf(buf, (size_t)len, "(unnamed datatype)");
    return buf;
}

static int check_op(MPI_Comm comm, MPI_Op op, MPI_Datatype dt, int *hier_ok, const char *func)
{
    const char *name;
    mxh_dtype_class_t cls;
    int allowed, commute = 0;
    char tn[MPI_MAX_OBJECT_NAME];

    *hier_ok = 0;
    if (op == MPI_OP_NULL)
        return mxh_raise(comm, MPI_ERR_OP, func, "op is MPI_OP_NULL");
    name = mxh_dtype_op_name(op);
    if (name == NULL) {
        /* user-defined: MPI's collective. A user function is written for the
         * datatype it is given, and ranks may pass different datatypes with one
         * signature (MPI_INT x 2k here, contiguous(2, MPI_INT) x k there): no
         * element size every rank agrees on exists for it, so the path cannot
         * be hierarchical on some ranks and not on others */
        quiet_t q;
        int rc;
        quiet_begin(&q);
        rc = MPI_Op_commutative(op, &commute);
        quiet_end(&q);
        if (rc != MPI_SUCCESS)
            return mxh_raise(comm, MPI_ERR_OP, func, "op is not a valid operation handle");
        mxh_debug("%s: user op: plain MPI collective", func);
        *hier_ok = -MXH_FB_USER_OP;
        return MPI_SUCCESS;
    }
    if (op == MPI_REPLACE || op == MPI_NO_OP)
        return mxh_raise(comm, MPI_ERR_OP, func,
                         "%s is only valid in one-sided accumulate operations", name);
    cls = mxh_dtype_classify(dt);
    if (cls == MXH_DT_DERIVED) {
        /* a derived type reduces like the one basic type of its signature (the
         * same on every rank, whatever type map each passes); a signature of
         * several basic types goes to MPI, which checks it */
        MPI_Datatype base;
        size_t n;
        *hier_ok = -MXH_FB_NO_KERNEL;
        if (mxh_dtype_signature(dt, &base, &n) != 0 || base == MPI_DATATYPE_NULL)
            return MPI_SUCCESS;
        dt  = base;
        cls = mxh_dtype_classify(base);
        if (cls == MXH_DT_DERIVED)
            return MPI_SUCCESS;
    }
    allowed = mxh_dtype_op_defined(cls, mxh_dtype_op_kind(op));
    if (!allowed && cls == MXH_DT_HALF)
        return mxh_raise(comm, MPI_ERR_OP, func,
                         "%s is not defined for the half precision datatype %s (SUM, PROD, "
                         "MAX, MIN are)", name, dtype_name(dt, tn, (int)sizeof(tn)));
    if (!allowed) {
        /* never stricter than MPI: pairs we have no kernel for (MPI_SUM on MPI_CHAR,
         * MPI_LAND on MPI_AINT, ...) go to the plain collective, which accepts or
         * rejects them as MPI does */
        mxh_debug("%s: %s on %s: plain MPI collective", func, name,
                  dtype_name(dt, tn, (int)sizeof(tn)));
        *hier_ok = -MXH_FB_NO_KERNEL;
        return MPI_SUCCESS;
    }
    *hier_ok = (op == MPI_MINLOC || op == MPI_MAXLOC) ? -MXH_FB_LOC_OP : 1;
    return MPI_SUCCESS;
}

/* check_op, remembering the last pair it accepted silently (a kernel, no
 * message) of a predefined op and datatype: the answer is a function of the
 * two handles, which never change or get reused, and calls repeat their pair. */
int mxh_check_op(MPI_Comm comm, MPI_Op op, MPI_Datatype dt, int *hier_ok, const char *func)
{
    static MPI_Op last_op       = MPI_OP_NULL; /* never entered: checked each time */
    static MPI_Datatype last_dt = MPI_DATATYPE_NULL;
    static int last_ok;
    int rc;

    if (op == last_op && dt == last_dt) {
        *hier_ok = last_ok;
        return MPI_SUCCESS;
    }
    rc = check_op(comm, op, dt, hier_ok, func);
    if (rc == MPI_SUCCESS && (*hier_ok == 1 || *hier_ok == -MXH_FB_LOC_OP) &&
        dt_hit(dt) != NULL) {
        last_op = op; /* predefined: user ops end at -MXH_FB_USER_OP */
        last_dt = dt;
        last_ok = *hier_ok;
    }
    return rc;
}

int mxh_check_buf_slow(MPI_Comm comm, const void *buf, int count, const char *what,
                       const char *func)
{
    if (count > 0 && buf == NULL)
        return mxh_raise(comm, MPI_ERR_BUFFER, func, "%s is NULL with count %d", what, count);
    if (buf == MPI_IN_PLACE)
        return mxh_raise(comm, MPI_ERR_BUFFER, func, "%s must not be MPI_IN_PLACE", what);
    if (count > 0) {
        /* with a GPU in the process: memory of another device, and a freed
         * device pointer (which CUDA then reports as plain host memory and a
         * host copy would fault on), are errors, not crashes */
        const mxh_mem_ops_t *ops;
        mxh_status_t st;
        mxh_log_clear_last_error();
        if ((st = mxh_mem_query(buf, what, 1, &ops)) != MXH_OK)
            return mxh_raise_status(comm, st, func);
    }
    return MPI_SUCCESS;
}

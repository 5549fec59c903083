/* MPI's request functions over the library's persistent requests and tasks.
 *
 * MPI_Start, MPI_Startall, MPI_Wait*, MPI_Test*, MPI_Request_get_status and
 * MPI_Request_free are defined here and pass every request that is not the
 * library's to PMPI_*. A persistent request of the library (coll/persist.h) is
 * started, completed and freed here; MPI sees its handle as an inactive
 * persistent request, so arrays that mix the two go to MPI with the library's
 * entries replaced by MPI_REQUEST_NULL.
 *
 * Progress: MPI polls the library's nonblocking requests itself (generalized
 * requests with a poll function) only when they are waited on or tested, and
 * SimGrid's SMPI not at all; so while tasks are in flight, a wait on any
 * request tests it in a loop that also runs the library's tasks. Inside a task
 * (the library's own MPI calls) nothing is added. */
#include "config.h"

#include "coll/persist.h"
#include "exec/task.h"
#include "mpix_internal.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

#define PUBLIC __attribute__((visibility("default")))

/* A wait on MPI's requests must run the library's tasks itself: a peer's
 * collective may need this rank's part of one (MPICH's nonblocking3 waits on
 * one request while another's shared-memory step waits for it). */
static int must_progress(void)
{
    return !mxh_task_in_fiber() && mxh_task_in_flight() > 0;
}

static void idle(unsigned *n)
{
    if (++*n > 16)
        sched_yield(); /* oversubscribed: let the peers run */
}

/* The library's persistent request behind @r, or NULL. Its handle never goes to
 * MPI's wait and test functions: MPICH 4.0.2 reports a persistent collective
 * that was never started as incomplete (MPI_Test) and waits for it forever. */
static mxh_persist_t *ours(const MPI_Request *r)
{
    return r != NULL ? mxh_persist_find(*r) : NULL;
}

static void empty_status(MPI_Status *st, int code)
{
    if (st == MPI_STATUS_IGNORE)
        return;
    MPI_Status_set_elements(st, MPI_BYTE, 0);
    MPI_Status_set_cancelled(st, 0);
    st->MPI_SOURCE = MPI_ANY_SOURCE;
    st->MPI_TAG    = MPI_ANY_TAG;
    st->MPI_ERROR  = code;
}

/* Complete @p (its call has finished): inactive again, its status; a failure
 * through its communicator's error handler (MPI reported its own). */
static int finish(mxh_persist_t *p, MPI_Status *st)
{
    int mpi_rc, code = MPI_SUCCESS;
    mxh_status_t s = mxh_persist_finish(p, &mpi_rc);
    if (mpi_rc != MPI_SUCCESS)
        code = mpi_rc;
    else if (s != MXH_OK)
        code = mxh_raise_status(mxh_persist_comm(p), s, mxh_persist_func(p));
    empty_status(st, code);
    return code;
}

/* @reqs with the library's requests as MPI_REQUEST_NULL (in @tmp), and their
 * objects in @mine (NULL elsewhere); the number of them that are active. */
static int split(int n, const MPI_Request *reqs, MPI_Request *tmp, mxh_persist_t **mine)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        mine[i] = mxh_persist_find(reqs[i]);
        tmp[i]  = mine[i] != NULL ? MPI_REQUEST_NULL : reqs[i];
        k += mine[i] != NULL && mxh_persist_active(mine[i]);
    }
    return k;
}

/* The status of @p, active or not, in a call that completes every entry. */
static int finish_any(mxh_persist_t *p, MPI_Status *st)
{
    if (mxh_persist_active(p))
        return finish(p, st);
    empty_status(st, MPI_SUCCESS);
    return MPI_SUCCESS;
}

static int active(const mxh_persist_t *p)
{
    return p != NULL && mxh_persist_active(p);
}

/* MPI's handles back from @tmp (completed ones are MPI_REQUEST_NULL now). */
static void merge(int n, MPI_Request *reqs, const MPI_Request *tmp, mxh_persist_t *const *mine)
{
    for (int i = 0; i < n; i++)
        if (mine[i] == NULL)
            reqs[i] = tmp[i];
}

/* Scratch for split(): on the stack for short arrays. */
#define SCRATCH 16
typedef struct {
    MPI_Request    tmp_s[SCRATCH], *tmp;
    mxh_persist_t *mine_s[SCRATCH], **mine;
} scratch_t;

static int scratch_get(scratch_t *s, int n)
{
    s->tmp  = s->tmp_s;
    s->mine = s->mine_s;
    if (n <= SCRATCH)
        return 0;
    s->tmp  = malloc((size_t)n * sizeof(*s->tmp));
    s->mine = malloc((size_t)n * sizeof(*s->mine));
    return s->tmp != NULL && s->mine != NULL ? 0 : -1;
}

static void scratch_put(scratch_t *s)
{
    if (s->tmp != s->tmp_s)
        free(s->tmp);
    if (s->mine != s->mine_s)
        free(s->mine);
}

/* The array functions' way in: 1 when @reqs may hold the library's requests (@s
 * then has room for them), 0 when MPI takes the call as it is, -1 when out of
 * memory (raised, its code in *@rc). */
static int mine_in(int n, const MPI_Request *reqs, scratch_t *s, const char *func, int *rc)
{
    if (mxh_persist_live == 0 || n <= 0 || reqs == NULL)
        return 0;
    if (scratch_get(s, n) == 0)
        return 1;
    scratch_put(s);
    *rc = mxh_raise(MPI_COMM_WORLD, MPI_ERR_NO_MEM, func, "out of memory");
    return -1;
}

/* ---- start ------------------------------------------------------------------------------- */

static int start(mxh_persist_t *p)
{
    mxh_status_t st = mxh_persist_start(p);
    int mpi_rc      = MPI_SUCCESS;
    if (st == MXH_ERR_INVALID_PARAM)
        return mxh_raise(mxh_persist_comm(p), MPI_ERR_REQUEST, "MPI_Start",
                         "the persistent request (%s) is active: wait for it first",
                         mxh_persist_func(p));
    if (st != MXH_OK) {
        mxh_persist_finish(p, &mpi_rc);
        return mpi_rc != MPI_SUCCESS ? mpi_rc
                                     : mxh_raise_status(mxh_persist_comm(p), st, "MPI_Start");
    }
    return MPI_SUCCESS;
}

PUBLIC int MPI_Start(MPI_Request *request)
{
    mxh_persist_t *p = request != NULL ? mxh_persist_find(*request) : NULL;
    return p != NULL ? start(p) : PMPI_Start(request);
}

PUBLIC int MPI_Startall(int count, MPI_Request requests[])
{
    int rc = MPI_SUCCESS, r;
    if (mxh_persist_live == 0 || count <= 0 || requests == NULL)
        return PMPI_Startall(count, requests);
    for (int i = 0; i < count; i++) {
        mxh_persist_t *p = mxh_persist_find(requests[i]);
        r = p != NULL ? start(p) : PMPI_Start(&requests[i]);
        if (rc == MPI_SUCCESS)
            rc = r;
    }
    return rc;
}

/* ---- one request ------------------------------------------------------------------------- */

PUBLIC int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    mxh_persist_t *p = ours(request);
    unsigned n       = 0;
    int flag = 0, rc;

    if (p != NULL) {
        mxh_persist_wait(p);
        return finish_any(p, status);
    }
    while (must_progress()) {
        mxh_task_progress_all();
        if ((rc = PMPI_Test(request, &flag, status)) != MPI_SUCCESS || flag)
            return rc;
        idle(&n);
    }
    return PMPI_Wait(request, status);
}

PUBLIC int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    mxh_persist_t *p = ours(request);
    if (p != NULL) {
        *flag = !mxh_persist_active(p) || mxh_persist_test(p);
        return *flag ? finish_any(p, status) : MPI_SUCCESS;
    }
    if (must_progress())
        mxh_task_progress_all();
    return PMPI_Test(request, flag, status);
}

PUBLIC int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    mxh_persist_t *p = ours(&request);
    if (p != NULL) {
        *flag = !mxh_persist_active(p) || mxh_persist_test(p);
        if (*flag)
            empty_status(status, MPI_SUCCESS); /* the error comes with its wait or test */
        return MPI_SUCCESS;
    }
    if (must_progress())
        mxh_task_progress_all();
    return PMPI_Request_get_status(request, flag, status);
}

PUBLIC int MPI_Request_free(MPI_Request *request)
{
    mxh_persist_t *p = ours(request);
    if (p != NULL)
        mxh_persist_free(p); /* an active one completes, unobserved, as MPI says */
    return PMPI_Request_free(request);
}

/* ---- arrays ------------------------------------------------------------------------------ */

/* MPI's code for an array call: MPI_ERR_IN_STATUS where statuses say which. */
static int array_code(int rc, int mine_rc, const MPI_Status *statuses)
{
    if (mine_rc == MPI_SUCCESS)
        return rc;
    return statuses != MPI_STATUSES_IGNORE ? MPI_ERR_IN_STATUS : mine_rc;
}

/* MPI's waitall, running the library's tasks where MPI would not. */
static int mpi_waitall(int count, MPI_Request *requests, MPI_Status *statuses)
{
    int rc, flag = 0;
    unsigned n = 0;
    while (must_progress()) {
        mxh_task_progress_all();
        if ((rc = PMPI_Testall(count, requests, &flag, statuses)) != MPI_SUCCESS || flag)
            return rc;
        idle(&n);
    }
    return PMPI_Waitall(count, requests, statuses);
}

PUBLIC int MPI_Waitall(int count, MPI_Request requests[], MPI_Status statuses[])
{
    scratch_t s;
    int in;
    int rc, mine_rc = MPI_SUCCESS;

    if ((in = mine_in(count, requests, &s, "MPI_Waitall", &rc)) <= 0)
        return in < 0 ? rc : mpi_waitall(count, requests, statuses);
    split(count, requests, s.tmp, s.mine);
    for (int i = 0; i < count; i++)
        if (active(s.mine[i]))
            mxh_persist_wait(s.mine[i]);
    rc = mpi_waitall(count, s.tmp, statuses);
    for (int i = 0; i < count; i++)
        if (s.mine[i] != NULL) {
            int c = finish_any(s.mine[i], statuses != MPI_STATUSES_IGNORE ? &statuses[i]
                                                                       : MPI_STATUS_IGNORE);
            if (mine_rc == MPI_SUCCESS)
                mine_rc = c;
        }
    /* MPI_ERR_IN_STATUS because of the library's: MPI's entries succeeded */
    for (int i = 0; mine_rc != MPI_SUCCESS && rc == MPI_SUCCESS &&
                    statuses != MPI_STATUSES_IGNORE && i < count; i++)
        if (s.mine[i] == NULL)
            statuses[i].MPI_ERROR = MPI_SUCCESS;
    merge(count, requests, s.tmp, s.mine);
    scratch_put(&s);
    return array_code(rc, mine_rc, statuses);
}

/* One pass of MPI_Testall: the library's all complete, then MPI's. Completes
 * nothing unless everything has completed. */
PUBLIC int MPI_Testall(int count, MPI_Request requests[], int *flag, MPI_Status statuses[])
{
    scratch_t s;
    int in;
    int rc, mine_rc = MPI_SUCCESS, k;

    if (must_progress())
        mxh_task_progress_all();
    if ((in = mine_in(count, requests, &s, "MPI_Testall", &rc)) <= 0)
        return in < 0 ? rc : PMPI_Testall(count, requests, flag, statuses);
    k     = split(count, requests, s.tmp, s.mine);
    *flag = 0;
    for (int i = 0; i < count && k > 0; i++)
        if (active(s.mine[i]) && !mxh_persist_test(s.mine[i])) {
            scratch_put(&s);
            return MPI_SUCCESS;
        }
    rc = PMPI_Testall(count, s.tmp, flag, statuses);
    if (rc == MPI_SUCCESS && *flag) {
        for (int i = 0; i < count; i++)
            if (s.mine[i] != NULL) {
                int c = finish_any(s.mine[i], statuses != MPI_STATUSES_IGNORE
                                                  ? &statuses[i]
                                                  : MPI_STATUS_IGNORE);
                if (mine_rc == MPI_SUCCESS)
                    mine_rc = c;
            }
        merge(count, requests, s.tmp, s.mine);
    }
    scratch_put(&s);
    return array_code(rc, mine_rc, statuses);
}

/* One pass of MPI_Testany (@wait: of MPI_Waitany). *@idx the completed entry,
 * or MPI_UNDEFINED with *@flag = 1 when nothing is active. */
static int any_pass(int count, MPI_Request *requests, scratch_t *s, int *idx, int *flag,
                    MPI_Status *status)
{
    int rc, k = split(count, requests, s->tmp, s->mine);
    for (int i = 0; i < count && k > 0; i++)
        if (active(s->mine[i]) && mxh_persist_test(s->mine[i])) {
            *idx  = i;
            *flag = 1;
            return finish(s->mine[i], status);
        }
    rc = PMPI_Testany(count, s->tmp, idx, flag, status);
    if (rc == MPI_SUCCESS && *flag && *idx != MPI_UNDEFINED)
        requests[*idx] = s->tmp[*idx];
    else if (rc == MPI_SUCCESS && *flag && k > 0)
        *flag = 0; /* MPI's are inactive, the library's still run */
    return rc;
}

PUBLIC int MPI_Testany(int count, MPI_Request requests[], int *index, int *flag,
                       MPI_Status *status)
{
    scratch_t s;
    int in;
    int rc;

    if (must_progress())
        mxh_task_progress_all();
    if ((in = mine_in(count, requests, &s, "MPI_Testany", &rc)) <= 0)
        return in < 0 ? rc : PMPI_Testany(count, requests, index, flag, status);
    rc = any_pass(count, requests, &s, index, flag, status);
    if (rc == MPI_SUCCESS && !*flag)
        *index = MPI_UNDEFINED;
    scratch_put(&s);
    return rc;
}

PUBLIC int MPI_Waitany(int count, MPI_Request requests[], int *index, MPI_Status *status)
{
    scratch_t s;
    int in;
    int rc, flag = 0;
    unsigned n = 0;

    if ((in = mine_in(count, requests, &s, "MPI_Waitany", &rc)) < 0)
        return rc;
    if (in == 0) {
        while (must_progress()) {
            mxh_task_progress_all();
            if ((rc = PMPI_Testany(count, requests, index, &flag, status)) != MPI_SUCCESS ||
                flag)
                return rc;
            idle(&n);
        }
        return PMPI_Waitany(count, requests, index, status);
    }
    for (;;) {
        mxh_task_progress_all();
        rc = any_pass(count, requests, &s, index, &flag, status);
        if (rc != MPI_SUCCESS || flag)
            break;
        idle(&n);
    }
    scratch_put(&s);
    return rc;
}

/* One pass of MPI_Testsome: the library's completed entries first, then
 * MPI's. *@outcount MPI_UNDEFINED when nothing is active. */
static int some_pass(int count, MPI_Request *requests, scratch_t *s, int *outcount,
                     int *indices, MPI_Status *statuses)
{
    int rc, out = 0, more = 0, mine_rc = MPI_SUCCESS;
    int k = split(count, requests, s->tmp, s->mine);
    for (int i = 0; i < count && k > 0; i++)
        if (active(s->mine[i]) && mxh_persist_test(s->mine[i])) {
            int c = finish(s->mine[i], statuses != MPI_STATUSES_IGNORE ? &statuses[out]
                                                                        : MPI_STATUS_IGNORE);
            if (mine_rc == MPI_SUCCESS)
                mine_rc = c;
            indices[out++] = i;
        } else if (active(s->mine[i])) {
            more = 1;
        }
    rc = PMPI_Testsome(count, s->tmp, &k, indices + out,
                       statuses != MPI_STATUSES_IGNORE ? statuses + out : MPI_STATUSES_IGNORE);
    if (k != MPI_UNDEFINED) {
        for (int j = out; j < out + k; j++)
            requests[indices[j]] = s->tmp[indices[j]];
        out += k;
    } else if (out == 0 && !more) {
        out = MPI_UNDEFINED;
    }
    *outcount = out;
    return array_code(rc, mine_rc, statuses);
}

PUBLIC int MPI_Testsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                        MPI_Status statuses[])
{
    scratch_t s;
    int in;
    int rc;

    if (must_progress())
        mxh_task_progress_all();
    if ((in = mine_in(incount, requests, &s, "MPI_Testsome", &rc)) <= 0)
        return in < 0 ? rc : PMPI_Testsome(incount, requests, outcount, indices, statuses);
    rc = some_pass(incount, requests, &s, outcount, indices, statuses);
    scratch_put(&s);
    return rc;
}

PUBLIC int MPI_Waitsome(int incount, MPI_Request requests[], int *outcount, int indices[],
                        MPI_Status statuses[])
{
    scratch_t s;
    int in;
    int rc;
    unsigned n = 0;

    if ((in = mine_in(incount, requests, &s, "MPI_Waitsome", &rc)) < 0)
        return rc;
    if (in == 0) {
        while (must_progress()) {
            mxh_task_progress_all();
            if ((rc = PMPI_Testsome(incount, requests, outcount, indices, statuses)) !=
                    MPI_SUCCESS ||
                *outcount != 0)
                return rc;
            idle(&n);
        }
        return PMPI_Waitsome(incount, requests, outcount, indices, statuses);
    }
    for (;;) {
        mxh_task_progress_all();
        rc = some_pass(incount, requests, &s, outcount, indices, statuses);
        if (rc != MPI_SUCCESS || *outcount != 0)
            break;
        idle(&n);
    }
    scratch_put(&s);
    return rc;
}

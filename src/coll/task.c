/* Tasks: fibers, per-communicator queues, progress (coll/task.h). */
#include "config.h"

#include "coll/task.h"

#include <sched.h>

int mxh_task_in_fiber(void)
{
    return 0;
}

void mxh_task_yield(void)
{
    sched_yield();
}

int mxh_task_wait_all(int n, MPI_Request *reqs, MPI_Status *stats)
{
    return MPI_Waitall(n, reqs, stats);
}

int mxh_task_wait_any(int n, MPI_Request *reqs, int *idx, MPI_Status *stat)
{
    return MPI_Waitany(n, reqs, idx, stat);
}

int mxh_task_wait(MPI_Request *req, MPI_Status *stat)
{
    return MPI_Wait(req, stat);
}

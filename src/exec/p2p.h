/* Point-to-point algorithms of one step of a plan on a level communicator, as
 * nonblocking state machines that the executor advances (several can be in flight:
 * pipelined fragments, other stages). Which algorithms exist and which one a step
 * runs: decide/p2p_choose.h.
 *
 * Every element is reduced in one fixed order that all ranks holding it share,
 * so results are bitwise identical on every rank. Reductions use
 * mxh_reduce_local (the op must be commutative). */
#ifndef MXH_P2P_H
#define MXH_P2P_H

#include <mpi.h>
#include <stddef.h>

#include "decide/p2p_choose.h"
#include "mem/mem.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MXH_P2P_MAXREQ    (2 * MXH_P2P_DIRECT_P)

/* How a step's buffers reach MPI. Host: they are host memory. Device buffers (env.mem,
 * a kind other than host): direct, MPI takes them as they are (a CUDA-aware MPI over a
 * transport that moves CUDA memory: GPUDirect); staged, each message goes through a
 * bounce buffer of pinned host memory (the kind's copies, D2H before a send, H2D after
 * a receive). Either way the reductions run on the device (the kind's reduce_start) and
 * the engine never touches device memory itself; the messages are the same bytes as a
 * host step's, so ranks that run a step on the device and ranks that run it on host
 * memory exchange with each other unchanged. */
typedef enum mxh_xfer {
    MXH_XFER_HOST = 0,
    MXH_XFER_DIRECT,
    MXH_XFER_STAGED
} mxh_xfer_t;

/* One message of a staged exchange: device side, bounce side. */
typedef struct mxh_p2p_msg {
    char  *dev;
    char  *bnc;
    size_t cnt;
    int    peer;
    int    send;
} mxh_p2p_msg_t;

/* The device work of one op in flight (one per op the executor runs at a time):
 * the events of its current phase and, staged, its messages and bounce space. */
typedef struct mxh_p2p_dev {
    char           *bounce; /* pinned host memory (staged), cap bytes */
    size_t          cap, used;
    int             nev;
    mxh_mem_event_t ev[MXH_P2P_MAXREQ];
    int             nmsg;
    mxh_p2p_msg_t   msg[MXH_P2P_MAXREQ];
    uint64_t        staged;  /* bytes this op moved through the bounce buffer */
} mxh_p2p_dev_t;

typedef struct mxh_p2p_env {
    MPI_Comm             comm;
    MPI_Datatype         dt;
    size_t               ext;
    MPI_Op               op;
    const mxh_mem_ops_t *mem;  /* the kind of base, src and tmp; NULL: host memory */
    mxh_xfer_t           xfer; /* with mem: direct or staged */
    mxh_p2p_dev_t       *dev;  /* with mem: this op's device work */
} mxh_p2p_env_t;

/* Bounce bytes a staged op of step @s needs at most (each exchange's distinct sends and
 * its receives). */
size_t mxh_p2p_bounce_bytes(const mxh_step_t *s, size_t ext);

typedef struct mxh_p2p_op {
    const mxh_step_t *s;
    mxh_p2p_env_t     env;
    char             *base; /* the step's region */
    const char       *src;  /* its input (reducing steps; == base: in place) */
    char             *tmp;  /* receive space (mxh_p2p_tmp_count elements) */
    int               tag;
    mxh_p2p_algo_t    algo;
    int               k;      /* current substep */
    int               nrs;    /* substeps of the reduce-scatter phase */
    int               nsub;   /* all substeps */
    int               ascend; /* rhd: nearest partner first */
    int               rootless; /* bcast/reduce, direct: the root's part is empty */
    int               root_adds; /* rootless reduce: the root adds its contribution last */
    int               nfac;   /* radix, kary: factors */
    int               fac[32];
    int               active;
    int               ready;  /* the current exchange completed; its reduction is pending */
    int               hold;   /* set by the caller: after an exchange completes (and its
                                 reduction ran), leave the next one unposted (held) */
    int               held;   /* the next exchange is due but not posted (mxh_p2p_post_held) */
    int               phase;  /* device buffers: what the current exchange waits for
                                 (p2p.c MXH_P2P_PH_*); 0: its MPI requests */
    size_t            xbytes; /* bytes the current exchange sends */
    size_t            xmsg;   /* and its largest message */
    int               nreq;
    MPI_Request       req[MXH_P2P_MAXREQ];
} mxh_p2p_op_t;

/* Bytes the exchange just posted (mxh_p2p_start, mxh_p2p_post_held) books on its link
 * for pacing (exec.c): its own; kary: its phase's, (p - 1) / p of the region, since
 * the phase's later exchanges follow unheld. */
size_t mxh_p2p_pace_bytes(const mxh_p2p_op_t *op);

/* Elements of receive space the step needs. */
size_t mxh_p2p_tmp_count(const mxh_step_t *s, size_t ext);

/* Start step @s on @base with receive space @tmp, messages tagged @tag. @src
 * (NULL: @base) holds the step's input when it is not in @base yet: reducing
 * steps read it where they would read their own contribution, and write the
 * results to @base (no copy in; @src is never written). Returns an MPI error
 * code. */
int mxh_p2p_start(mxh_p2p_op_t *op, const mxh_step_t *s, const mxh_p2p_env_t *env, char *base,
                  const char *src, char *tmp, int tag);

/* Test the current exchange; when it is complete reduce, then post the next
 * one. Returns an MPI error code; *moved is set when an exchange completed.
 * op->active is 0 once the step is done. */
int mxh_p2p_advance(mxh_p2p_op_t *op, int *moved);

/* The same without testing: the exchange counts as complete once every one of
 * its requests is MPI_REQUEST_NULL, i.e. the caller completed them with
 * MPI_Wait* (op->req[0 .. op->nreq) ). For executors that block in one
 * MPI_Waitany over all their requests instead of polling: no MPI_Test calls,
 * which a simulator charges (SMPI's smpi/test) and real MPIs only spin on. */
int mxh_p2p_advance_waited(mxh_p2p_op_t *op, int *moved);

/* Whether @op's current exchange has completed (its requests done, as a wait
 * leaves them) and its reduction or copies have not run yet (mxh_p2p_advance*). */
int mxh_p2p_completed(const mxh_p2p_op_t *op);


/* Whether @op waits for device work (copies, reductions) that only polling completes:
 * an executor then polls instead of blocking in MPI_Wait*. */
static inline int mxh_p2p_dev_busy(const mxh_p2p_op_t *op)
{
    return op->active && op->phase != 0;
}

/* Post the exchange that op->hold kept back (op->held). Returns an MPI error code. */
int mxh_p2p_post_held(mxh_p2p_op_t *op);

/* Run step @s to completion (blocking). */
int mxh_p2p_run(const mxh_step_t *s, const mxh_p2p_env_t *env, char *base, const char *src,
                char *tmp, int tag);

#ifdef __cplusplus
}
#endif

#endif

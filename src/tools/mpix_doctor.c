/* mpix_doctor: measures every level of the hierarchy the way the collectives use it and
 * names the links that are slower than their peers.
 *
 *   mpiexec -n N mpix_doctor [--json FILE] [--png FILE] [--levels node,rail,spine]
 *                            [--size BYTES] [--reps N] [--k K] [--floor F] [--quick] ...
 *
 * Phases (each in O(N) rounds of disjoint pairs, circle-method round robin):
 *   rail   ranks of one rail (the same rail index on every host), every rail at once;
 *          in each pair latency (ping-pong), then a -> b, then b -> a streamed
 *   spine  ranks on different rails of different hosts (bipartite rounds between rails):
 *          the traffic that crosses the spine
 *   node   the ranks of one node pairwise (shared memory), one node at a time
 * A transfer a -> b is timed by the sender from the receiver's "ready" to its "ack" and is
 * attributed to a's interface leaving ("tx") and b's arriving ("rx"). The attribution and
 * the outlier test (median/MAD per level, src/diag/doctor_stats.h) run on rank 0; every
 * suspect is measured again in isolation against healthy references (confirm step) before
 * it is reported. Then the expected vs measured allreduce bus bandwidth per level.
 *
 * Exit status: 0 healthy, 3 confirmed outliers, 1 usage or runtime error (README: mpix_doctor).
 * The report is written and flushed before MPI_Finalize, and a watchdog ends the process with
 * the same status if MPI_Finalize hangs (UCX TCP teardown, see EMULATION-NOTES). */
#define _GNU_SOURCE
#include "config.h"

#include "mpix_hier.h"
#include "coll/hier.h"
#include "diag/doctor_stats.h"
#include "decide/levels.h"

#include <json-c/json.h>

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <limits.h>
#include <math.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define EXIT_HEALTHY  0
#define EXIT_ERROR    1
#define EXIT_OUTLIERS 3

enum { LV_RAIL = 0, LV_SPINE, LV_NODE, NLV };
static const char *const lv_names[NLV] = {"rail", "spine", "node"};

enum { TAG_READY = 7001, TAG_DATA, TAG_ACK, TAG_PING, TAG_PONG };

typedef struct {
    const char *json, *png;
    int         levels; /* bit per LV_* */
    size_t      size;   /* fixed transfer size (0: adapt) */
    size_t      max_size;
    int         reps;
    double      target; /* seconds per transfer */
    double      k, floor, node_floor;
    int         poll_us;
    int         lat_iters;
    int         busbw;
    int         confirm;
    int         finalize_wait;
} opts_t;

typedef struct {
    char host[64];  /* gethostname (MPI_Get_processor_name) */
    char node[64];  /* the library's node identity */
    char iface[32];
    int  nodeid, rail, local;
} rinfo_t;

typedef struct {
    double src, dst, bw;
} xs_t; /* a transfer, as doubles for MPI */

typedef struct {
    int      active;
    size_t   bytes;     /* per transfer */
    int      rounds;
    xs_t    *bw;        /* gathered on rank 0 */
    int      nbw;
    xs_t    *lat;       /* (src, dst, one-way seconds) */
    int      nlat;
    mxh_dr_port_t *ports;
    mxh_dr_level_stats_t st;
    double   lat_median;
    double   seconds;
    /* busbw of the library's level of that name (rail, spine, node) */
    double   bus_expected, bus_measured;
    size_t   bus_bytes;
    int      bus_n;
} level_t;

typedef struct {
    int    level, rank, dir;
    double median, ratio;
    int    confirmed;
    double confirm_bw, reference_bw;
} outlier_t;

static MPI_Comm comm;
static int      me, np;
static opts_t   O;
static rinfo_t *R;
static char    *sbuf, *rbuf;
static size_t   buf_cap;
static volatile int exit_code_for_watchdog = EXIT_ERROR;

/* ---- waiting without hogging the CPU (2 cores, 16 busy-polling ranks) --------------------- */

static void nap(void)
{
    struct timespec ts = {0, (long)O.poll_us * 1000L};
    if (O.poll_us > 0)
        nanosleep(&ts, NULL);
}

static void waitq(MPI_Request *r)
{
    int done = 0;
    if (O.poll_us <= 0) {
        MPI_Wait(r, MPI_STATUS_IGNORE);
        return;
    }
    for (;;) {
        MPI_Test(r, &done, MPI_STATUS_IGNORE);
        if (done)
            return;
        nap();
    }
}

static void qbarrier(void)
{
    MPI_Request r;
    MPI_Ibarrier(comm, &r);
    waitq(&r);
}

static void need_bufs(size_t bytes)
{
    if (bytes <= buf_cap)
        return;
    free(sbuf);
    free(rbuf);
    sbuf = malloc(bytes);
    rbuf = malloc(bytes);
    if (sbuf == NULL || rbuf == NULL) {
        fprintf(stderr, "mpix_doctor: cannot allocate %zu bytes\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, EXIT_ERROR);
    }
    memset(sbuf, me & 0xff, bytes);
    buf_cap = bytes;
}

/* ---- one transfer, timed by the sender from "ready" to "ack" ----------------------------- */

static double send_timed(int peer, size_t bytes)
{
    MPI_Request r;
    double t0;
    MPI_Irecv(NULL, 0, MPI_BYTE, peer, TAG_READY, comm, &r);
    waitq(&r);
    t0 = MPI_Wtime();
    MPI_Isend(sbuf, (int)bytes, MPI_BYTE, peer, TAG_DATA, comm, &r);
    waitq(&r);
    MPI_Irecv(NULL, 0, MPI_BYTE, peer, TAG_ACK, comm, &r);
    waitq(&r);
    return MPI_Wtime() - t0;
}

static void recv_timed(int peer, size_t bytes)
{
    MPI_Request r[2];
    MPI_Irecv(rbuf, (int)bytes, MPI_BYTE, peer, TAG_DATA, comm, &r[1]);
    MPI_Isend(NULL, 0, MPI_BYTE, peer, TAG_READY, comm, &r[0]);
    waitq(&r[0]);
    waitq(&r[1]);
    MPI_Isend(NULL, 0, MPI_BYTE, peer, TAG_ACK, comm, &r[0]);
    waitq(&r[0]);
}

/* src streams to dst @reps times: the sender returns the median bandwidth (bytes/s), the
 * receiver -1. */
static double one_way(int src, int dst, size_t bytes, int reps)
{
    double t[64], bw;
    if (reps > 64)
        reps = 64;
    if (me == src) {
        for (int i = 0; i < reps; i++) {
            double s = send_timed(dst, bytes);
            t[i] = s > 0 ? (double)bytes / s : 0;
        }
        bw = mxh_dr_median(t, reps);
        return bw;
    }
    if (me == dst)
        for (int i = 0; i < reps; i++)
            recv_timed(src, bytes);
    return -1;
}

/* Ping-pong of 8 bytes (busy: latency), the lower rank returns the median one-way time. */
static double pingpong(int a, int b, int iters)
{
    double t[64], x = 0;
    int peer = me == a ? b : a;
    if (iters > 64)
        iters = 64;
    if (iters <= 0)
        return -1;
    for (int i = 0; i < iters + 1; i++) {
        double t0 = MPI_Wtime();
        if (me == a) {
            MPI_Send(&x, 1, MPI_DOUBLE, peer, TAG_PING, comm);
            MPI_Recv(&x, 1, MPI_DOUBLE, peer, TAG_PONG, comm, MPI_STATUS_IGNORE);
            if (i > 0)
                t[i - 1] = (MPI_Wtime() - t0) / 2;
        } else {
            MPI_Recv(&x, 1, MPI_DOUBLE, peer, TAG_PING, comm, MPI_STATUS_IGNORE);
            MPI_Send(&x, 1, MPI_DOUBLE, peer, TAG_PONG, comm);
        }
    }
    return me == a ? mxh_dr_median(t, iters) : -1;
}

/* ---- pairings ------------------------------------------------------------------------------ */

/* Round @r of the circle method over @m participants (index pairs): partner of index @i,
 * -1 for a bye. Rounds: m - 1 (m even) or m (m odd). */
static int circle_partner(int m, int r, int i)
{
    int n = m % 2 ? m + 1 : m; /* with a dummy */
    int pos_i, pos_p, p;
    if (m < 2 || i < 0 || i >= m)
        return -1;
    /* positions: index n-1 fixed, the others rotate: index i sits at (i + r) mod (n-1);
     * the pairs are (pos, n-1-pos) */
    pos_i = i == n - 1 ? n - 1 : (i + r) % (n - 1);
    pos_p = n - 1 - pos_i;
    p     = pos_p == n - 1 ? n - 1 : ((pos_p - r) % (n - 1) + (n - 1)) % (n - 1);
    return p >= m ? -1 : p;
}
static int circle_rounds(int m) { return m < 2 ? 0 : (m % 2 ? m : m - 1); }

/* ---- gathering samples on rank 0 --------------------------------------------------------- */

static xs_t *gather_xs(const xs_t *mine, int n, int *total)
{
    int *cnt = NULL, *dsp = NULL, tot = 0;
    xs_t *all = NULL;
    MPI_Request r;
    int n3 = 3 * n;
    if (me == 0) {
        cnt = calloc((size_t)np, sizeof(int));
        dsp = calloc((size_t)np, sizeof(int));
    }
    MPI_Igather(&n3, 1, MPI_INT, cnt, 1, MPI_INT, 0, comm, &r);
    waitq(&r);
    if (me == 0) {
        for (int i = 0; i < np; i++) {
            dsp[i] = tot;
            tot += cnt[i];
        }
        all = malloc(sizeof(double) * (size_t)(tot + 3));
    }
    MPI_Igatherv(mine, n3, MPI_DOUBLE, all, cnt, dsp, MPI_DOUBLE, 0, comm, &r);
    waitq(&r);
    free(cnt);
    free(dsp);
    if (total)
        *total = tot / 3;
    return all;
}

/* ---- the phases ---------------------------------------------------------------------------- */

/* Groups of the rail phase: ranks with the same (rail, k-th rank of that rail on its node),
 * ordered by node. */
static int *rail_key; /* [np] */
static int  nkeys;

static void make_rail_keys(void)
{
    rail_key = malloc(sizeof(int) * (size_t)np);
    int *keys_rail = malloc(sizeof(int) * (size_t)np * 2);
    nkeys = 0;
    for (int r = 0; r < np; r++) {
        int sub = 0, k;
        for (int q = 0; q < r; q++)
            if (R[q].nodeid == R[r].nodeid && R[q].rail == R[r].rail)
                sub++;
        for (k = 0; k < nkeys; k++)
            if (keys_rail[2 * k] == R[r].rail && keys_rail[2 * k + 1] == sub)
                break;
        if (k == nkeys) {
            keys_rail[2 * k]     = R[r].rail;
            keys_rail[2 * k + 1] = sub;
            nkeys++;
        }
        rail_key[r] = k;
    }
    free(keys_rail);
}

/* Members of a group (ranks with rail_key == key, or on node == node), ordered by node, then
 * rank. Returns the count. */
static int members(int key, int node, int *out)
{
    int n = 0;
    for (int nd = 0; nd < np && n < np; nd++)
        for (int r = 0; r < np; r++)
            if (R[r].nodeid == nd && (key < 0 || rail_key[r] == key) && (node < 0 || R[r].nodeid == node))
                out[n++] = r;
    return n;
}

typedef struct {
    xs_t *bw, *lat;
    int nbw, nlat, cap;
} local_xs_t;

static void push(xs_t **a, int *n, int *cap, int src, int dst, double v)
{
    if (*n >= *cap) {
        *cap = *cap ? 2 * *cap : 64;
        *a = realloc(*a, sizeof(xs_t) * (size_t)*cap);
    }
    (*a)[(*n)++] = (xs_t){src, dst, v};
}

typedef struct {
    local_xs_t x;
    int capl;
} acc_t;

/* One pair (a < b by convention: a streams first): latency, a -> b, b -> a. */
static void do_pair(acc_t *acc, int a, int b, size_t bytes, int reps, int lat)
{
    double v;
    if (lat && (v = pingpong(a, b, O.lat_iters)) >= 0)
        push(&acc->x.lat, &acc->x.nlat, &acc->capl, a, b, v);
    if ((v = one_way(a, b, bytes, reps)) >= 0)
        push(&acc->x.bw, &acc->x.nbw, &acc->x.cap, a, b, v);
    if ((v = one_way(b, a, bytes, reps)) >= 0)
        push(&acc->x.bw, &acc->x.nbw, &acc->x.cap, b, a, v);
}

/* My partner in round @r of level @lv (-1: none), and the number of rounds. */
static int *grp_buf, *grp2_buf;

static int rail_round_partner(int r, int *nrounds)
{
    int m = members(rail_key[me], -1, grp_buf), i = 0;
    *nrounds = circle_rounds(m);
    while (grp_buf[i] != me)
        i++;
    if (r >= *nrounds)
        return -1;
    int p = circle_partner(m, r, i);
    return p < 0 ? -1 : grp_buf[p];
}

/* Spine: rounds over pairs of rail groups (circle method over the groups), each with
 * shifts t = 0..mB-1 pairing A[i] with B[(i + t) mod mB]; pairs on one node are skipped. */
static int spine_round_partner(int r, int *nrounds)
{
    int gr = circle_rounds(nkeys), maxm = 0;
    for (int k = 0; k < nkeys; k++) {
        int m = members(k, -1, grp_buf);
        maxm = m > maxm ? m : maxm;
    }
    *nrounds = gr * maxm;
    if (r >= *nrounds || gr == 0)
        return -1;
    int gro = r / maxm, t = r % maxm;
    int ka = rail_key[me], kb = circle_partner(nkeys, gro, ka);
    if (kb < 0)
        return -1;
    int ma = members(ka, -1, grp_buf), mb = members(kb, -1, grp2_buf), i = 0;
    while (grp_buf[i] != me)
        i++;
    int p;
    if (ka < kb) { /* my group is A: A[i] meets B[(i + t) mod |B|], i < min(|A|, |B|) */
        if (t >= mb || i >= mb)
            return -1;
        p = grp2_buf[(i + t) % mb];
    } else { /* my group is B (size ma): A[i'] with (i' + t) mod |B| == i */
        int ip = ((i - t) % ma + ma) % ma;
        if (t >= ma || ip >= mb)
            return -1;
        p = grp2_buf[ip];
    }
    if (R[p].nodeid == R[me].nodeid)
        return -1;
    return p;
}

static size_t clamp_size(double bw)
{
    double s = bw * O.target;
    size_t b;
    if (s < 64 * 1024)
        s = 64 * 1024;
    if (s > (double)O.max_size)
        s = (double)O.max_size;
    b = (size_t)s & ~(size_t)4095;
    return b ? b : 4096;
}

/* Probe: one round's pairs, one transfer each way of @probe bytes (4 MiB on the network:
 * several times a shaper's burst, which would make a short probe look fast); the largest bandwidth
 * over all ranks sizes the level's transfers. */
static size_t probe_size(int (*partner)(int, int *), size_t probe)
{
    int nr = 0, p = -1, rr, any = 0;
    double bw = 0, mx = 0, v;
    MPI_Request r;
    /* the first round in which some pair exists, the same round on every rank (a rank with
     * a bye there must not probe with its partner of another round: that one is busy) */
    for (rr = 0; rr < 64; rr++) {
        int have;
        p    = partner(rr, &nr);
        have = p >= 0;
        MPI_Iallreduce(&have, &any, 1, MPI_INT, MPI_MAX, comm, &r);
        waitq(&r);
        if (any)
            break;
    }
    need_bufs(probe);
    if (any && p >= 0) {
        int a = me < p ? me : p, b = me < p ? p : me;
        if ((v = one_way(a, b, probe, 1)) > bw) bw = v;
        if ((v = one_way(b, a, probe, 1)) > bw) bw = v;
    }
    MPI_Iallreduce(&bw, &mx, 1, MPI_DOUBLE, MPI_MAX, comm, &r);
    waitq(&r);
    return mx > 0 ? clamp_size(mx) : probe;
}

static void run_network_level(level_t *L, int (*partner)(int, int *))
{
    acc_t acc = {{0}, 0};
    double t0 = MPI_Wtime();
    int nr = 0, maxr = 0;
    MPI_Request rq;
    partner(0, &nr);
    MPI_Iallreduce(&nr, &maxr, 1, MPI_INT, MPI_MAX, comm, &rq);
    waitq(&rq);
    if (maxr == 0) {
        L->active = 0;
        return;
    }
    L->bytes  = O.size ? O.size : probe_size(partner, 4 << 20);
    L->rounds = maxr;
    need_bufs(L->bytes);
    for (int r = 0; r < maxr; r++) {
        int p = partner(r, &nr);
        if (p < 0)
            continue;
        int a = me < p ? me : p, b = me < p ? p : me;
        do_pair(&acc, a, b, L->bytes, O.reps, O.lat_iters > 0);
    }
    L->bw  = gather_xs(acc.x.bw, acc.x.nbw, &L->nbw);
    L->lat = gather_xs(acc.x.lat, acc.x.nlat, &L->nlat);
    free(acc.x.bw);
    free(acc.x.lat);
    qbarrier();
    L->seconds = MPI_Wtime() - t0;
}

/* Node: the ranks of each node pairwise, one node at a time (the others sleep), busy
 * polling (shared-memory copies run inside progress calls). */
static void run_node_level(level_t *L, int nnodes)
{
    acc_t acc = {{0}, 0};
    double t0 = MPI_Wtime();
    int poll = O.poll_us, maxm = 0;
    for (int nd = 0; nd < nnodes; nd++) {
        int m = members(-1, nd, grp_buf);
        maxm = m > maxm ? m : maxm;
    }
    if (maxm < 2) {
        L->active = 0;
        return;
    }
    /* size: a 4 MiB probe on node 0 */
    if (O.size) {
        L->bytes = O.size;
    } else {
        double bw = 0, mx = 0;
        MPI_Request rq;
        int m = members(-1, 0, grp_buf);
        need_bufs(4 << 20);
        O.poll_us = 0;
        if (m >= 2 && (me == grp_buf[0] || me == grp_buf[1]))
            bw = one_way(grp_buf[0], grp_buf[1], 4 << 20, 2);
        O.poll_us = poll;
        MPI_Iallreduce(&bw, &mx, 1, MPI_DOUBLE, MPI_MAX, comm, &rq);
        waitq(&rq);
        L->bytes = mx > 0 ? clamp_size(mx / 2) : (4 << 20); /* half the target: 2 ranks/core */
    }
    need_bufs(L->bytes);
    L->rounds = circle_rounds(maxm) * nnodes;
    for (int nd = 0; nd < nnodes; nd++) {
        if (R[me].nodeid == nd) {
            int m = members(-1, nd, grp_buf), i = 0;
            while (grp_buf[i] != me)
                i++;
            O.poll_us = 0;
            for (int r = 0; r < circle_rounds(m); r++) {
                int p = circle_partner(m, r, i);
                if (p < 0)
                    continue;
                p = grp_buf[p];
                do_pair(&acc, me < p ? me : p, me < p ? p : me, L->bytes, O.reps, O.lat_iters > 0);
            }
            O.poll_us = poll;
        }
        qbarrier();
    }
    L->bw  = gather_xs(acc.x.bw, acc.x.nbw, &L->nbw);
    L->lat = gather_xs(acc.x.lat, acc.x.nlat, &L->nlat);
    free(acc.x.bw);
    free(acc.x.lat);
    L->seconds = MPI_Wtime() - t0;
}

/* ---- confirm: suspects again in isolation, against healthy references --------------------- */

typedef struct {
    int src, dst, lv, outlier; /* outlier index; -1 - index for a reference transfer */
} ctr_t;

static int peers_of(int lv, int x, int *out)
{
    int n = 0, m;
    if (lv == LV_RAIL) {
        m = members(rail_key[x], -1, grp_buf);
        for (int i = 0; i < m; i++)
            if (R[grp_buf[i]].nodeid != R[x].nodeid)
                out[n++] = grp_buf[i];
    } else if (lv == LV_SPINE) {
        for (int r = 0; r < np; r++)
            if (rail_key[r] != rail_key[x] && R[r].nodeid != R[x].nodeid)
                out[n++] = r;
    } else {
        m = members(-1, R[x].nodeid, grp_buf);
        for (int i = 0; i < m; i++)
            if (grp_buf[i] != x)
                out[n++] = grp_buf[i];
    }
    return n;
}

static void confirm(level_t *lv, outlier_t *out, int nout)
{
    ctr_t *list = NULL;
    int n = 0;
    double *res, *all;
    MPI_Request rq;
    if (me == 0) {
        int *peers = malloc(sizeof(int) * (size_t)np), *refs = malloc(sizeof(int) * (size_t)np);
        list = malloc(sizeof(ctr_t) * (size_t)(nout * 6 + 1));
        for (int o = 0; o < nout; o++) {
            int x = out[o].rank, npe = peers_of(out[o].level, x, peers), nref = 0, k;
            /* references: same level, not flagged, not x, not the peer */
            for (int i = 0; i < npe && n < nout * 6; i++) {
                int p = peers[(i * 7 + o) % npe];
                int dup = 0;
                for (k = 0; k < n; k++)
                    if (list[k].outlier == o && (out[o].dir == MXH_DR_TX ? list[k].dst : list[k].src) == p)
                        dup = 1;
                if (dup)
                    continue;
                list[n++] = out[o].dir == MXH_DR_TX ? (ctr_t){x, p, out[o].level, o}
                                                    : (ctr_t){p, x, out[o].level, o};
                /* a reference through the same peer from/to another healthy port */
                int nr = peers_of(out[o].level, p, refs);
                for (k = 0; k < nr; k++) {
                    int y = refs[(k + o) % nr], bad = 0;
                    if (y == x || R[y].nodeid == R[x].nodeid)
                        continue;
                    for (int q = 0; q < nout; q++)
                        if (out[q].rank == y && out[q].level == out[o].level)
                            bad = 1;
                    if (bad)
                        continue;
                    list[n++] = out[o].dir == MXH_DR_TX ? (ctr_t){y, p, out[o].level, -1 - o}
                                                        : (ctr_t){p, y, out[o].level, -1 - o};
                    break;
                }
                if (++nref >= 2)
                    break;
            }
        }
        free(peers);
        free(refs);
    }
    MPI_Ibcast(&n, 1, MPI_INT, 0, comm, &rq);
    waitq(&rq);
    if (me != 0)
        list = malloc(sizeof(ctr_t) * (size_t)(n + 1));
    MPI_Ibcast(list, 4 * n, MPI_INT, 0, comm, &rq);
    waitq(&rq);
    res = malloc(sizeof(double) * (size_t)(n + 1));
    all = malloc(sizeof(double) * (size_t)(n + 1));
    for (int i = 0; i < n; i++) {
        int poll = O.poll_us;
        res[i] = -1;
        if (me != list[i].src && me != list[i].dst)
            continue;
        if (list[i].lv == LV_NODE)
            O.poll_us = 0;
        need_bufs(lv[list[i].lv].bytes);
        res[i] = one_way(list[i].src, list[i].dst, lv[list[i].lv].bytes, O.reps);
        O.poll_us = poll;
    }
    MPI_Ireduce(res, all, n, MPI_DOUBLE, MPI_MAX, 0, comm, &rq);
    waitq(&rq);
    if (me == 0) {
        double *v = malloc(sizeof(double) * (size_t)(n + 1)), *w = malloc(sizeof(double) * (size_t)(n + 1));
        for (int o = 0; o < nout; o++) {
            int nv = 0, nw = 0;
            for (int i = 0; i < n; i++) {
                if (list[i].outlier == o && all[i] > 0)
                    v[nv++] = all[i];
                if (list[i].outlier == -1 - o && all[i] > 0)
                    w[nw++] = all[i];
            }
            out[o].confirm_bw   = mxh_dr_median(v, nv);
            out[o].reference_bw = nw ? mxh_dr_median(w, nw) : lv[out[o].level].st.median;
            out[o].confirmed    = nv > 0 && out[o].confirm_bw < (out[o].level == LV_NODE ? O.node_floor : O.floor) * out[o].reference_bw;
        }
        free(v);
        free(w);
    }
    free(list);
    free(res);
    free(all);
}

/* ---- bus bandwidth per level ------------------------------------------------------------- */

static void busbw(level_t *lv, MPI_Comm world_comm)
{
    int nlev = 0;
    MPIX_Hier_comm_get_num_levels(world_comm, &nlev);
    for (int l = 0; l < nlev; l++) {
        MPI_Comm c;
        char name[MPIX_HIER_MAX_LEVEL_NAME];
        int idx = -1, n;
        MPIX_Hier_comm_get_level(world_comm, l, &c, name);
        for (int k = 0; k < NLV; k++)
            if (!strcmp(name, lv_names[k]))
                idx = k;
        if (idx < 0 || !lv[idx].active)
            continue;
        MPI_Comm_size(c, &n);
        level_t *L = &lv[idx];
        double exp = L->st.median, bytes_d, t[16], tm, mx;
        size_t bytes;
        int reps = O.reps < 16 ? O.reps : 16;
        /* expected (ring bound): the link bandwidth; size: ~ 2 targets at that rate */
        bytes_d = exp * O.target * 2 * n / (2.0 * (n - 1));
        bytes   = (size_t)bytes_d & ~(size_t)7;
        if (bytes < 65536) bytes = 65536;
        if (bytes > O.max_size) bytes = O.max_size;
        MPI_Bcast(&bytes, sizeof(bytes), MPI_BYTE, 0, world_comm);
        need_bufs(bytes);
        for (int i = -1; i < reps; i++) {
            MPI_Barrier(c);
            double t0 = MPI_Wtime();
            MPI_Allreduce(sbuf, rbuf, (int)(bytes / 4), MPI_FLOAT, MPI_SUM, c);
            tm = MPI_Wtime() - t0;
            MPI_Allreduce(&tm, &mx, 1, MPI_DOUBLE, MPI_MAX, c);
            if (i >= 0)
                t[i] = mx;
        }
        tm = mxh_dr_median(t, reps);
        double bus = tm > 0 ? (double)bytes / tm * 2.0 * (n - 1) / n : 0, minb = 0;
        MPI_Reduce(&bus, &minb, 1, MPI_DOUBLE, MPI_MIN, 0, world_comm);
        L->bus_expected = exp;
        L->bus_measured = minb;
        L->bus_bytes    = bytes;
        L->bus_n        = n;
    }
}

/* ---- interfaces ---------------------------------------------------------------------------- */

#define MAXIF 4
typedef struct {
    char     name[MAXIF][32];
    uint32_t addr[MAXIF], mask[MAXIF];
    int      n;
} ifs_t;

static void local_ifaces(ifs_t *f)
{
    struct ifaddrs *ifa = NULL, *i;
    const char *ucx = getenv("UCX_NET_DEVICES");
    memset(f, 0, sizeof(*f));
    if (getifaddrs(&ifa) != 0)
        return;
    for (i = ifa; i && f->n < MAXIF; i = i->ifa_next) {
        if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || (i->ifa_flags & IFF_LOOPBACK) ||
            !(i->ifa_flags & IFF_UP))
            continue;
        if (ucx && *ucx && strcmp(ucx, "all")) {
            /* UCX_NET_DEVICES: a comma list of devices (mlx5_0:1, eth1, ...) */
            char list[256], *tok, *save = NULL;
            int found = 0;
            snprintf(list, sizeof(list), "%s", ucx);
            for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                char *c = strchr(tok, ':');
                if (c)
                    *c = 0;
                if (!strcmp(tok, i->ifa_name))
                    found = 1;
            }
            if (!found)
                continue;
        }
        snprintf(f->name[f->n], sizeof(f->name[0]), "%s", i->ifa_name);
        f->addr[f->n] = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
        f->mask[f->n] = i->ifa_netmask ? ((struct sockaddr_in *)i->ifa_netmask)->sin_addr.s_addr : 0;
        f->n++;
    }
    freeifaddrs(ifa);
    if (f->n == 0 && ucx && *ucx && strcmp(ucx, "all")) {
        /* a device without an IPv4 address (InfiniBand HCA): its name */
        snprintf(f->name[0], sizeof(f->name[0]), "%s", ucx);
        char *c = strpbrk(f->name[0], ",");
        if (c)
            *c = 0;
        f->n = 1;
    }
}

/* The interface a rank uses: the only one, else the one whose subnet holds the most
 * addresses of ranks on other hosts. */
static void choose_iface(const ifs_t *all, int r, char *out, size_t len)
{
    const ifs_t *f = &all[r];
    int best = -1, bestn = -1;
    if (f->n == 0) {
        snprintf(out, len, "unknown");
        return;
    }
    for (int i = 0; i < f->n; i++) {
        int cnt = 0;
        for (int q = 0; q < np; q++) {
            if (R[q].nodeid == R[r].nodeid)
                continue;
            for (int j = 0; j < all[q].n; j++)
                if (f->mask[i] && (all[q].addr[j] & f->mask[i]) == (f->addr[i] & f->mask[i]))
                    cnt++;
        }
        if (cnt > bestn) {
            bestn = cnt;
            best  = i;
        }
    }
    snprintf(out, len, "%s", f->name[best]);
}

/* ---- report ---------------------------------------------------------------------------------- */

static const char *iface_of(int lv, int r)
{
    return lv == LV_NODE ? "shm" : R[r].iface;
}

static const char *dir_name(int lv, int dir)
{
    if (lv == LV_NODE)
        return dir == MXH_DR_TX ? "tx" : "rx"; /* copies out of / into the rank */
    return dir == MXH_DR_TX ? "tx" : "rx";
}

#define MBPS(x) ((x) / 1e6)

/* Confirmed outliers of one port (rank, direction; the node level's shared memory apart
 * from the network interface) form one finding, whatever levels saw them. */
static int same_finding(const outlier_t *a, const outlier_t *b)
{
    return a->confirmed && b->confirmed && a->rank == b->rank && a->dir == b->dir &&
           (a->level == LV_NODE) == (b->level == LV_NODE);
}

/* out[o] opens a finding: confirmed, and no earlier outlier is the same finding */
static int first_of_finding(const outlier_t *out, int o)
{
    if (!out[o].confirmed)
        return 0;
    for (int q = 0; q < o; q++)
        if (same_finding(&out[q], &out[o]))
            return 0;
    return 1;
}

static void print_text(FILE *f, level_t *lv, outlier_t *out, int nout, int nconf,
                       const int *excl, int nexcl, double sweep, const char *describe)
{
    (void)describe;
    for (int k = 0; k < NLV; k++) {
        level_t *L = &lv[k];
        if (!L->active)
            continue;
        fprintf(f, "\n[%s] %d rounds, %d transfers of %zu bytes (x%d), %.1f s\n", lv_names[k],
                L->rounds, L->nbw, L->bytes, O.reps, L->seconds);
        fprintf(f, "  median %.2f MB/s, MAD %.2f MB/s, latency median %.1f us\n",
                MBPS(L->st.median), MBPS(L->st.mad), L->lat_median * 1e6);
        if (L->bus_n > 1)
            fprintf(f, "  allreduce busbw (MPI_Allreduce on the %s communicator, %d ranks, %zu B): "
                       "expected %.2f MB/s, measured %.2f MB/s (%.0f%%)\n",
                    lv_names[k], L->bus_n, L->bus_bytes, MBPS(L->bus_expected),
                    MBPS(L->bus_measured),
                    L->bus_expected > 0 ? 100 * L->bus_measured / L->bus_expected : 0);
        fprintf(f, "  %-4s %-20s %-4s %-12s %-3s %10s %7s\n", "rank", "host", "rail", "iface",
                "dir", "MB/s", "ratio");
        for (int q = 0; q < 2 * np; q++) {
            const mxh_dr_port_t *p = &L->ports[q];
            int r = q / 2;
            if (p->nsamples == 0 && !p->outlier)
                continue;
            fprintf(f, "  %-4d %-20s %-4d %-12s %-3s %10.2f %7.2f%s\n", r, R[r].host, R[r].rail,
                    iface_of(k, r), dir_name(k, q % 2), MBPS(p->median), p->ratio,
                    p->outlier ? "  <- suspect" : "");
        }
    }
    fprintf(f, "\n");
    for (int o = 0; o < nout; o++) {
        const outlier_t *x = &out[o];
        const rinfo_t *ri = &R[x->rank];
        fprintf(f, "%s level=%s host=%s rail=%d iface=%s dir=%s rank=%d node=%s bw=%.2fMB/s "
                   "level_median=%.2fMB/s ratio=%.2f confirm=%.2fMB/s reference=%.2fMB/s\n",
                x->confirmed ? "OUTLIER" : "cleared", lv_names[x->level], ri->host, ri->rail,
                iface_of(x->level, x->rank), dir_name(x->level, x->dir), x->rank, ri->node, MBPS(x->median),
                MBPS(lv[x->level].st.median), x->ratio, MBPS(x->confirm_bw),
                MBPS(x->reference_bw));
    }
    /* one line per (host, rail, interface, direction), whatever levels saw it */
    for (int o = 0; o < nout; o++) {
        const outlier_t *x = &out[o];
        if (!first_of_finding(out, o))
            continue;
        fprintf(f, "FINDING host=%s rail=%d iface=%s dir=%s ratio=%.2f levels=", R[x->rank].host,
                R[x->rank].rail, iface_of(x->level, x->rank), dir_name(x->level, x->dir), x->ratio);
        for (int q = o, n = 0; q < nout; q++)
            if (same_finding(&out[q], x))
                fprintf(f, "%s%s", n++ ? "," : "", lv_names[out[q].level]);
        fprintf(f, "\n");
    }
    if (nexcl) {
        fprintf(f, "recommend: MPIX_HIER_EXCLUDE_RAILS=");
        for (int i = 0; i < nexcl; i++)
            fprintf(f, "%s%d", i ? "," : "", excl[i]);
        fprintf(f, "\n");
    }
    fprintf(f, "sweep %.1f s\n", sweep);
    fprintf(f, "VERDICT: %s\n", nconf ? "OUTLIERS" : "healthy");
    fflush(f);
}

/* ---- the JSON report (json-c): one object per fact, numbers that are not finite as null */

static json_object *jnum(double x)
{
    return isfinite(x) ? json_object_new_double(x) : NULL;
}

static json_object *jstr(const char *s)
{
    return json_object_new_string(s != NULL ? s : "");
}

static void put(json_object *o, const char *key, json_object *v)
{
    json_object_object_add(o, key, v);
}

/* "rank_info": every rank's host, node, rail and interface. */
static json_object *json_rank_info(void)
{
    json_object *a = json_object_new_array_ext(np);
    for (int r = 0; r < np; r++) {
        json_object *o = json_object_new_object();
        put(o, "rank", json_object_new_int(r));
        put(o, "host", jstr(R[r].host));
        put(o, "node", jstr(R[r].node));
        put(o, "node_index", json_object_new_int(R[r].nodeid));
        put(o, "rail", json_object_new_int(R[r].rail));
        put(o, "local_index", json_object_new_int(R[r].local));
        put(o, "iface", jstr(R[r].iface));
        json_object_array_add(a, o);
    }
    return a;
}

/* [src, dst, value] triples of a level's samples. */
static json_object *json_samples(const xs_t *v, int n)
{
    json_object *a = json_object_new_array_ext(n);
    for (int i = 0; i < n; i++) {
        json_object *t = json_object_new_array_ext(3);
        json_object_array_add(t, json_object_new_int((int)v[i].src));
        json_object_array_add(t, json_object_new_int((int)v[i].dst));
        json_object_array_add(t, jnum(v[i].bw));
        json_object_array_add(a, t);
    }
    return a;
}

/* The object of active level @k. */
static json_object *json_level(const level_t *lv, int k)
{
    const level_t *L = &lv[k];
    json_object *o = json_object_new_object(), *bus = json_object_new_object();
    json_object *ports = json_object_new_array();

    put(o, "name", jstr(lv_names[k]));
    put(o, "rounds", json_object_new_int(L->rounds));
    put(o, "bytes", json_object_new_uint64(L->bytes));
    put(o, "seconds", jnum(L->seconds));
    put(o, "median_bw", jnum(L->st.median));
    put(o, "mad_bw", jnum(L->st.mad));
    put(o, "latency_median", jnum(L->lat_median));
    put(bus, "collective", jstr("MPI_Allreduce"));
    put(bus, "ranks", json_object_new_int(L->bus_n));
    put(bus, "bytes", json_object_new_uint64(L->bus_bytes));
    put(bus, "expected", jnum(L->bus_expected));
    put(bus, "measured", jnum(L->bus_measured));
    put(o, "busbw", bus);
    for (int q = 0; q < 2 * np; q++) {
        const mxh_dr_port_t *p = &L->ports[q];
        int r = q / 2;
        if (p->nsamples == 0 && !p->outlier)
            continue;
        json_object *e = json_object_new_object();
        put(e, "rank", json_object_new_int(r));
        put(e, "host", jstr(R[r].host));
        put(e, "rail", json_object_new_int(R[r].rail));
        put(e, "iface", jstr(iface_of(k, r)));
        put(e, "dir", jstr(dir_name(k, q % 2)));
        put(e, "median_bw", jnum(p->median));
        put(e, "samples", json_object_new_int(p->nsamples));
        put(e, "ratio", jnum(p->ratio));
        put(e, "suspect", json_object_new_boolean(p->outlier));
        json_object_array_add(ports, e);
    }
    put(o, "ports", ports);
    put(o, "transfers", json_samples(L->bw, L->nbw));
    put(o, "latencies", json_samples(L->lat, L->nlat));
    return o;
}

/* Confirmed "outliers", their "findings" (one per port) and the suspects the confirmation
 * "cleared", into @root. */
static void json_outliers(json_object *root, const level_t *lv, const outlier_t *out, int nout)
{
    json_object *outl = json_object_new_array(), *find = json_object_new_array();
    json_object *clr = json_object_new_array();

    for (int o = 0; o < nout; o++) {
        const outlier_t *x = &out[o];
        json_object *e     = json_object_new_object();
        put(e, "level", jstr(lv_names[x->level]));
        if (x->confirmed) {
            put(e, "host", jstr(R[x->rank].host));
            put(e, "node", jstr(R[x->rank].node));
            put(e, "rail", json_object_new_int(R[x->rank].rail));
            put(e, "iface", jstr(iface_of(x->level, x->rank)));
        }
        put(e, "rank", json_object_new_int(x->rank));
        put(e, "dir", jstr(dir_name(x->level, x->dir)));
        put(e, "median_bw", jnum(x->median));
        if (x->confirmed) {
            put(e, "level_median_bw", jnum(lv[x->level].st.median));
            put(e, "ratio", jnum(x->ratio));
        }
        put(e, "confirm_bw", jnum(x->confirm_bw));
        put(e, "reference_bw", jnum(x->reference_bw));
        json_object_array_add(x->confirmed ? outl : clr, e);
        if (!first_of_finding(out, o))
            continue;
        json_object *f = json_object_new_object(), *levels = json_object_new_array();
        put(f, "host", jstr(R[x->rank].host));
        put(f, "rail", json_object_new_int(R[x->rank].rail));
        put(f, "iface", jstr(iface_of(x->level, x->rank)));
        put(f, "dir", jstr(dir_name(x->level, x->dir)));
        put(f, "rank", json_object_new_int(x->rank));
        put(f, "ratio", jnum(x->ratio));
        for (int q = o; q < nout; q++)
            if (same_finding(&out[q], x))
                json_object_array_add(levels, jstr(lv_names[out[q].level]));
        put(f, "levels", levels);
        json_object_array_add(find, f);
    }
    put(root, "outliers", outl);
    put(root, "findings", find);
    put(root, "cleared", clr);
}

static void write_json(const char *path, level_t *lv, outlier_t *out, int nout, int nconf,
                       const int *excl, int nexcl, double sweep, int nnodes)
{
    json_object *root = json_object_new_object(), *units = json_object_new_object();
    json_object *params = json_object_new_object(), *levels = json_object_new_array();
    json_object *rails = json_object_new_array();

    put(root, "tool", jstr("mpix_doctor"));
    put(root, "schema_version", json_object_new_int(1));
    put(units, "bw", jstr("bytes/s"));
    put(units, "latency", jstr("s"));
    put(root, "units", units);
    put(root, "ranks", json_object_new_int(np));
    put(root, "hosts", json_object_new_int(nnodes));
    put(root, "rails", json_object_new_int(nkeys));
    put(root, "sweep_seconds", jnum(sweep));
    put(params, "k", jnum(O.k));
    put(params, "floor", jnum(O.floor));
    put(params, "reps", json_object_new_int(O.reps));
    put(params, "target_seconds", jnum(O.target));
    put(params, "max_size", json_object_new_uint64(O.max_size));
    put(params, "confirm", json_object_new_boolean(O.confirm));
    put(params, "node_floor", jnum(O.node_floor));
    put(root, "params", params);
    put(root, "rank_info", json_rank_info());
    for (int k = 0; k < NLV; k++)
        if (lv[k].active)
            json_object_array_add(levels, json_level(lv, k));
    put(root, "levels", levels);
    json_outliers(root, lv, out, nout);
    for (int i = 0; i < nexcl; i++)
        json_object_array_add(rails, json_object_new_int(excl[i]));
    put(root, "exclude_rails", rails);
    put(root, "healthy", json_object_new_boolean(nconf == 0));
    put(root, "exit_code", json_object_new_int(nconf ? EXIT_OUTLIERS : EXIT_HEALTHY));
    /* one line (the transfer lists make a pretty print long); `jq . FILE` reads it */
    json_c_set_serialization_double_format("%.6g", JSON_C_OPTION_GLOBAL);
    if (json_object_to_file_ext(path, root, JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE) != 0)
        fprintf(stderr, "mpix_doctor: cannot write %s: %s\n", path, json_util_get_last_err());
    json_object_put(root);
}

static void write_png(const char *path, level_t *lv)
{
    char dir[] = "/tmp/mpix_doctor.XXXXXX", file[512], script[512], cmd[1200];
    int nl = 0;
    FILE *f;
    if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
        fprintf(stdout, "png: gnuplot not found, %s not written\n", path);
        return;
    }
    if (mkdtemp(dir) == NULL)
        return;
    for (int k = 0; k < NLV; k++)
        nl += lv[k].active;
    snprintf(script, sizeof(script), "%s/plot.gp", dir);
    f = fopen(script, "w");
    if (f == NULL)
        return;
    fprintf(f, "set terminal pngcairo size %d,420 noenhanced\nset output '%s'\n"
               "set multiplot layout 1,%d\nset xlabel 'dst rank'\nset ylabel 'src rank'\n"
               "set cblabel 'MB/s'\nset palette defined (0 'red', 0.5 'yellow', 1 'green')\n"
               "set datafile missing 'nan'\nset size ratio -1\nset cbrange [0:*]\nset xtics 1\nset ytics 1\n",
            nl * 460 + 40, path, nl ? nl : 1);
    for (int k = 0; k < NLV; k++) {
        level_t *L = &lv[k];
        FILE *d;
        if (!L->active)
            continue;
        snprintf(file, sizeof(file), "%s/%s.dat", dir, lv_names[k]);
        d = fopen(file, "w");
        if (d == NULL)
            continue;
        for (int s = 0; s < np; s++) {
            for (int t = 0; t < np; t++) {
                double v = NAN;
                for (int i = 0; i < L->nbw; i++)
                    if ((int)L->bw[i].src == s && (int)L->bw[i].dst == t)
                        v = MBPS(L->bw[i].bw);
                fprintf(d, isnan(v) ? "nan " : "%.3f ", v);
            }
            fprintf(d, "\n");
        }
        fclose(d);
        fprintf(f, "set title '%s level: src -> dst MB/s'\nset xrange [-0.5:%d.5]\nset yrange "
                   "[%d.5:-0.5]\nplot '%s' matrix with image notitle\n",
                lv_names[k], np - 1, np - 1, file);
    }
    fprintf(f, "unset multiplot\n");
    fclose(f);
    snprintf(cmd, sizeof(cmd), "gnuplot '%s' 2>/dev/null", script);
    if (system(cmd) == 0)
        fprintf(stdout, "png: %s\n", path);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        return;
}

/* ---- main ---------------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpiexec -n N mpix_doctor [options]\n"
            "  --json FILE        machine-readable report (README: mpix_doctor)\n"
            "  --png FILE         heatmap of the pair matrices per level (gnuplot)\n"
            "  --levels LIST      rail,spine,node (default: all)\n"
            "  --size BYTES       bytes per transfer (default: adapted per level, --target)\n"
            "  --max-size BYTES   upper bound of the adapted size (default 64m)\n"
            "  --target SECONDS   time of one transfer when adapting (default 0.08)\n"
            "  --reps N           transfers per direction and pair, median (default 3)\n"
            "  --k K              outlier: median - x > K * 1.4826 * MAD (default 4)\n"
            "  --floor F          ... and x < F * median; confirmed below F x reference (default 0.6)\n"
            "  --node-floor F     the floor of the node level (shared memory on busy cores is\n"
            "                     noisy; default 0.35)\n"
            "  --poll-us N        sleep between tests while waiting (default 100; 0: busy)\n"
            "  --lat-iters N      ping-pong iterations per pair (default 10; 0: none)\n"
            "  --no-busbw         skip the allreduce bus bandwidth per level\n"
            "  --no-confirm       report suspects without measuring them again\n"
            "  --quick            --reps 1 --target 0.04 --lat-iters 4 --no-busbw\n"
            "exit status: 0 healthy, 3 outliers found, 1 error\n");
}

static size_t parse_size(const char *s)
{
    char *e;
    double v = strtod(s, &e);
    switch (*e) {
    case 'k': case 'K': v *= 1024; break;
    case 'm': case 'M': v *= 1048576; break;
    case 'g': case 'G': v *= 1073741824.0; break;
    default: break;
    }
    return (size_t)v;
}

static void on_alarm(int sig)
{
    (void)sig;
    _exit(exit_code_for_watchdog);
}

static int parse_args(int argc, char **argv)
{
    O.levels = (1 << NLV) - 1;
    O.reps = 3;
    O.target = 0.08;
    O.max_size = 64u << 20;
    O.k = 4.0;
    O.floor = 0.6;
    O.node_floor = 0.35;
    O.poll_us = 100;
    O.lat_iters = 10;
    O.busbw = 1;
    O.confirm = 1;
    O.finalize_wait = 5;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define ARG(name) (!strcmp(a, name) && v && (i++, 1))
        if (ARG("--json")) O.json = v;
        else if (ARG("--png")) O.png = v;
        else if (ARG("--size")) O.size = parse_size(v);
        else if (ARG("--max-size")) O.max_size = parse_size(v);
        else if (ARG("--target")) O.target = atof(v);
        else if (ARG("--reps")) O.reps = atoi(v);
        else if (ARG("--k")) O.k = atof(v);
        else if (ARG("--floor")) O.floor = atof(v);
        else if (ARG("--node-floor")) O.node_floor = atof(v);
        else if (ARG("--poll-us")) O.poll_us = atoi(v);
        else if (ARG("--lat-iters")) O.lat_iters = atoi(v);
        else if (ARG("--finalize-wait")) O.finalize_wait = atoi(v);
        else if (ARG("--levels")) {
            char buf[128], *t, *save = NULL;
            O.levels = 0;
            snprintf(buf, sizeof(buf), "%s", v);
            for (t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                int found = 0;
                for (int k = 0; k < NLV; k++)
                    if (!strcmp(t, lv_names[k])) {
                        O.levels |= 1 << k;
                        found = 1;
                    }
                if (!found)
                    return -1;
            }
        } else if (!strcmp(a, "--no-busbw")) O.busbw = 0;
        else if (!strcmp(a, "--no-confirm")) O.confirm = 0;
        else if (!strcmp(a, "--quick")) {
            O.reps = 1;
            O.target = 0.04;
            O.lat_iters = 4;
            O.busbw = 0;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) return 1;
        else return -1;
#undef ARG
    }
    if (O.reps < 1) O.reps = 1;
    if (O.reps > 64) O.reps = 64;
    if (O.max_size > (size_t)INT_MAX) O.max_size = (size_t)INT_MAX & ~(size_t)4095;
    if (O.size > O.max_size) O.size = O.max_size;
    return 0;
}

/* Who is who: every rank's host, node, rail, local index and interface into R; returns
 * the number of nodes. */
static int gather_ranks(const mxh_hier_t *h)
{
    rinfo_t mine;
    ifs_t f, *all = malloc(sizeof(ifs_t) * (size_t)np);
    const mxh_layout_t *L = h->layout;
    int len = 0;
    char pn[MPI_MAX_PROCESSOR_NAME];

    R = calloc((size_t)np, sizeof(rinfo_t));
    memset(&mine, 0, sizeof(mine));
    MPI_Get_processor_name(pn, &len);
    snprintf(mine.host, sizeof(mine.host), "%.63s", pn);
    snprintf(mine.node, sizeof(mine.node), "%.63s", h->recs[me].node);
    MPI_Allgather(&mine, sizeof(mine), MPI_BYTE, R, sizeof(mine), MPI_BYTE, comm);
    for (int r = 0; r < np; r++) {
        R[r].nodeid = L->node_of[r];
        R[r].rail   = L->rail[r];
        R[r].local  = L->local_index[r];
    }
    local_ifaces(&f);
    MPI_Allgather(&f, sizeof(f), MPI_BYTE, all, sizeof(f), MPI_BYTE, comm);
    for (int r = 0; r < np; r++)
        choose_iface(all, r, R[r].iface, sizeof(R[r].iface));
    free(all);
    return L->nnodes;
}

/* Rank 0: the ports of each active level attributed from its samples; the outliers go to
 * @out (room for 2 * np * NLV), their number to @nout_p. */
static void analyse_levels(level_t *lv, outlier_t *out, int *nout_p)
{
    int nout = 0;

    for (int k = 0; k < NLV; k++) {
        level_t *L = &lv[k];
        if (!L->active)
            continue;
        mxh_dr_sample_t *s = malloc(sizeof(*s) * (size_t)(L->nbw + 1));
        double *lt = malloc(sizeof(double) * (size_t)(L->nlat + 1));
        for (int i = 0; i < L->nbw; i++)
            s[i] = (mxh_dr_sample_t){(int)L->bw[i].src, (int)L->bw[i].dst, L->bw[i].bw};
        for (int i = 0; i < L->nlat; i++)
            lt[i] = L->lat[i].bw;
        L->lat_median = mxh_dr_median(lt, L->nlat);
        L->ports = calloc((size_t)(2 * np), sizeof(mxh_dr_port_t));
        mxh_dr_params_t p = {O.k, k == LV_NODE ? O.node_floor : O.floor};
        mxh_dr_attribute(s, L->nbw, np, &p, L->ports, &L->st);
        for (int q = 0; q < 2 * np; q++)
            if (L->ports[q].outlier)
                out[nout++] = (outlier_t){k, q / 2, q % 2, L->ports[q].median,
                                          L->ports[q].ratio, 1, 0, 0};
        free(s);
        free(lt);
    }
    *nout_p = nout;
}

/* Rank 0: counts the confirmed outliers, prints the report (and writes the JSON and PNG
 * asked for); returns the exit code. */
static int report(level_t *lv, outlier_t *out, int nout, double sweep, int nnodes)
{
    int nconf = 0, excl[64], nexcl = 0, dl = 0;
    char *d;

    for (int o = 0; o < nout; o++) {
        if (!O.confirm)
            out[o].confirmed = 1;
        if (!out[o].confirmed)
            continue;
        nconf++;
        if (out[o].level != LV_NODE) {
            int dup = 0;
            for (int i = 0; i < nexcl; i++)
                dup |= excl[i] == R[out[o].rank].rail;
            if (!dup && nexcl < 64)
                excl[nexcl++] = R[out[o].rank].rail;
        }
    }
    MPIX_Hier_comm_describe(MPI_COMM_WORLD, NULL, 0, &dl);
    d = malloc((size_t)dl + 1);
    MPIX_Hier_comm_describe(MPI_COMM_WORLD, d, dl + 1, NULL);
    printf("mpix_doctor: %d ranks on %d hosts, %d rails; k=%g floor=%g reps=%d\n%s", np,
           nnodes, nkeys, O.k, O.floor, O.reps, d);
    free(d);
    print_text(stdout, lv, out, nout, nconf, excl, nexcl, sweep, NULL);
    if (O.json)
        write_json(O.json, lv, out, nout, nconf, excl, nexcl, sweep, nnodes);
    if (O.png)
        write_png(O.png, lv);
    fflush(stdout);
    return nconf ? EXIT_OUTLIERS : EXIT_HEALTHY;
}

int main(int argc, char **argv)
{
    mxh_hier_t *h;
    int rc, nnodes, code = EXIT_HEALTHY;
    level_t lv[NLV];
    outlier_t *out = NULL;
    int nout = 0;
    double t_start;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    rc = parse_args(argc, argv);
    if (rc != 0) {
        if (me == 0)
            usage(rc > 0 ? stdout : stderr);
        MPI_Finalize();
        return rc > 0 ? 0 : EXIT_ERROR;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    if (mxh_hier_get(MPI_COMM_WORLD, &h) != MXH_OK) {
        if (me == 0)
            fprintf(stderr, "mpix_doctor: building the hierarchy failed\n");
        MPI_Abort(MPI_COMM_WORLD, EXIT_ERROR);
    }
    t_start = MPI_Wtime();
    nnodes  = gather_ranks(h);
    make_rail_keys();
    grp_buf  = malloc(sizeof(int) * (size_t)np);
    grp2_buf = malloc(sizeof(int) * (size_t)np);
    memset(lv, 0, sizeof(lv));
    for (int k = 0; k < NLV; k++)
        lv[k].active = (O.levels >> k) & 1;
    if (nnodes < 2)
        lv[LV_RAIL].active = lv[LV_SPINE].active = 0;
    if (nkeys < 2)
        lv[LV_SPINE].active = 0;
    qbarrier();
    if (lv[LV_RAIL].active)
        run_network_level(&lv[LV_RAIL], rail_round_partner);
    if (lv[LV_SPINE].active)
        run_network_level(&lv[LV_SPINE], spine_round_partner);
    if (lv[LV_NODE].active)
        run_node_level(&lv[LV_NODE], nnodes);

    /* analysis on rank 0 */
    if (me == 0) {
        out = calloc((size_t)(2 * np * NLV + 1), sizeof(outlier_t));
        analyse_levels(lv, out, &nout);
    } else {
        for (int k = 0; k < NLV; k++)
            lv[k].ports = calloc((size_t)(2 * np), sizeof(mxh_dr_port_t));
    }
    /* the level medians and suspect count everywhere (sizes of confirm and busbw) */
    for (int k = 0; k < NLV; k++)
        MPI_Bcast(&lv[k].st, sizeof(lv[k].st), MPI_BYTE, 0, comm);
    MPI_Bcast(&nout, 1, MPI_INT, 0, comm);
    if (nout > 0 && O.confirm)
        confirm(lv, out, nout);
    double sweep = MPI_Wtime() - t_start;
    if (O.busbw)
        busbw(lv, MPI_COMM_WORLD);

    if (me == 0)
        code = report(lv, out, nout, sweep, nnodes);
    else
        MPIX_Hier_comm_describe(MPI_COMM_WORLD, NULL, 0, NULL);
    MPI_Bcast(&code, 1, MPI_INT, 0, comm);
    /* results are out: a hanging MPI_Finalize (UCX TCP teardown) must not change them */
    exit_code_for_watchdog = code;
    signal(SIGALRM, on_alarm);
    if (O.finalize_wait > 0)
        alarm((unsigned)O.finalize_wait);
    MPI_Comm_free(&comm);
    for (int k = 0; k < NLV; k++) {
        free(lv[k].bw);
        free(lv[k].lat);
        free(lv[k].ports);
    }
    free(out);
    free(R);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return code;
}

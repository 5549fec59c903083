#include "util/config.h"
#include "util/log.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

extern char **environ;

#define MXH_LEVELS_ALL 0xF /* node, rail, spine, island */

const mxh_config_var_t mxh_config_vars[] = {
    {"MPIX_HIER_ENABLE", "yes",
     "Use hierarchical algorithms (yes/no). 'no' makes every MPIX_Hier_ call the plain MPI "
     "collective.", 1},
    {"MPIX_HIER_LOG_LEVEL", "warn",
     "Log level: error, warn, info, debug, trace. 'info' prints each communicator's hierarchy "
     "once.", 0},
    {"MPIX_HIER_HOSTNAME", "",
     "Node identity of this rank (default: MPI_Get_processor_name refined by "
     "MPI_COMM_TYPE_SHARED). Set it per rank to fake several nodes on one machine.", 0},
    {"MPIX_HIER_TOPO_FILE", "",
     "Slurm topology.conf (tree: SwitchName=, Nodes=, Switches=; block: BlockName=) giving the "
     "leaf switch of each node. Empty: /etc/slurm/topology.conf if readable, else all nodes "
     "under one leaf.", 0},
    {"MPIX_HIER_CLUSTER_FILE", "",
     "Cluster description: lines 'HOSTLIST node=NAME rail=N leaf=NAME' mapping host names "
     "(MPI_Get_processor_name, or MPIX_HIER_HOSTNAME; under SimGrid the simulated host) to "
     "node, rail and leaf switch group; values may be hostlists applied element-wise "
     "(README: Cluster file). Listed values override discovery and MPIX_HIER_TOPO_FILE.", 0},
    {"MPIX_HIER_HWLOC_XML", "",
     "hwloc XML export to discover GPUs, NICs and NVLink from instead of this machine "
     "(default: hwloc's HWLOC_XMLFILE, else the live machine).", 0},
    {"MPIX_HIER_NCCL_TOPO_FILE", "",
     "NCCL topology XML (<system>) stating GPU/NIC/NVLink placement; preferred over hwloc "
     "where they disagree (default: NCCL_TOPO_FILE).", 0},
    {"MPIX_HIER_GPU_BUSID", "",
     "PCI bus id of the GPU this rank drives (e.g. 0000:07:00.0), for codes that select GPUs "
     "themselves and for tests. Default: CUDA's current device, else CUDA_VISIBLE_DEVICES / "
     "local index over the node's GPUs.", 0},
    {"MPIX_HIER_GPU_MPS", "auto",
     "Whether this rank's GPU contexts are shared through CUDA MPS (one context for the "
     "processes on a GPU: ranks sharing it take the device node level from MPIX_HIER_IPC_MIN, "
     "not 4 MiB): auto (CUDA's cudaDevAttrMpsEnabled of the current device), yes, no.", 0},
    {"MPIX_HIER_DISCOVER", "yes",
     "Discover GPUs, NICs and NVLink with hwloc/CUDA/UCX (no: rails are local indices, nodes "
     "are whole nodes).", 1},
    {"MPIX_HIER_MIN_BYTES", "0",
     "Messages smaller than this many bytes (per rank) use the plain MPI collective. "
     "Accepts k/m/g suffixes.", 1},
    {"MPIX_HIER_LEVELS", "island,node,rail,spine",
     "Comma-separated levels the hierarchy may use: node and rail are required; without "
     "spine, leaf switches are ignored and rails span all nodes; without island, NVLink "
     "islands inside a node are not separated.", 1},
    {"MPIX_HIER_PLAN_CACHE_SIZE", "16",
     "Schedules (per collective, count, root and element size) cached per communicator.", 0},
    {"MPIX_HIER_ALGO", "auto",
     "Force algorithms for experiments: auto, or an algorithm for every collective (mpi, shm, "
     "hier, pipeline), or a list coll:algo with coll one of allreduce, "
     "reduce_scatter_block, allgather, bcast, reduce, allgatherv, reduce_scatter, alltoall, "
     "alltoallv (e.g. 'allreduce:pipeline,bcast:mpi'). An algorithm that "
     "cannot run on the communicator degrades (shm -> hier -> mpi).", 1},
    {"MPIX_HIER_FRAG_SIZE", "8m",
     "Pipelining fragment in bytes of the whole vector: hierarchical schedules of messages of "
     "at least two fragments overlap levels fragment by fragment; from 1m on a minimum: a "
     "message of more than 64 such fragments is cut into 64 larger ones; 0 disables "
     "pipelining.", 1},
    {"MPIX_HIER_PIPELINE_DEPTH", "0",
     "Fragments in flight at most (0: one per stage of the schedule, one more when fragments "
     "stream point to point, 2 x stages - 2 for schedules of more than 3 stages; 1: no "
     "overlap).",
     1},
    {"MPIX_HIER_PIPELINE_RAMP", "auto",
     "Pipelines of fragments of 1m or more fill and drain with small pieces: k (at most 4): "
     "the first fragment is cut into pieces of 1/2^k, 1/2^k, ..., 1/2 of it, the last likewise "
     "in reverse; linear: pieces of 1/8, 2/8, ..., 7/8 of a fragment (allgather: sixths) at the "
     "start and the same reversed at the end; 0: uniform fragments; auto: where the measured "
     "network is flat in message size (not on a torus) the cost model picks linear or 2 per "
     "schedule, else 2.",
     1},
    {"MPIX_HIER_SHM", "yes",
     "Shared-memory algorithms between the ranks of a node (yes/no): the single-node "
     "collectives and the node level of hierarchical schedules.", 1},
    {"MPIX_HIER_SHM_CHUNK", "128k",
     "Shared-memory slot per rank in bytes (messages larger than a slot are pipelined through "
     "it chunk by chunk).", 1},
    {"MPIX_HIER_IPC", "auto",
     "Device buffers of the ranks of one node are read through peer mappings (CUDA IPC) and "
     "reduced by the device's kernels instead of being staged through host memory: auto (when "
     "every rank of the node drives a GPU), yes, no.", 1},
    {"MPIX_HIER_IPC_MIN", "256k",
     "Smallest message (bytes of the whole vector) that tries the device node level; smaller "
     "ones are staged. Where the level exists every rank of the node, host buffers too, pays "
     "one shared-memory exchange per such call (0.1-0.5 us on 2 ranks) to agree. With "
     "MPIX_HIER_IPC=auto, where two ranks of a node drive one GPU without MPS: at least "
     "4 MiB (there every call cost ~1.2 ms on an H200 shared by 4 processes; 62-153 us "
     "under MPS, MPIX_HIER_GPU_MPS).", 1},
    /* mpix_doctor's feedback (README: mpix_doctor) */
    {"MPIX_HIER_EXCLUDE_RAILS", "",
     "Rails whose ranks send nothing on the network: a comma list of rail indices (e.g. '1'), "
     "or the path of an mpix_doctor --json report (its exclude_rails). allreduce on node + rail "
     "layouts routes their node's data over the healthy rails; ignored (warning) when every rail "
     "is excluded.", 1},
    /* metrics (coll/metrics.h) */
    {"MPIX_HIER_METRICS", "yes",
     "Count calls, bytes, time, fallbacks and level times per communicator (yes/no; README: "
     "Metrics). 'no' saves two clock reads per call; the counters then read 0.", 0},
    {"MPIX_HIER_PIPELINE_PACE", "auto",
     "Pipelines streamed point to point post an exchange of one fragment on a link (NVLink, "
     "the NIC) only once its latency would end as the bytes booked on that link before it "
     "have crossed (their time and latency by the MPIX_HIER_COST_* parameters and factors), "
     "so that latencies overlap other fragments' transfers instead of fragments waiting "
     "together and then sharing the link; allreduce, reduce_scatter_block, allgather "
     "(bcast and reduce stream unpaced; a bcast's staggered node steps post each scatter a "
     "latency before the one before is due to end, by these link times, unless 'no') "
     "(yes/no/auto). 'auto': per schedule, paced where the "
     "cost model predicts it faster than unpaced (mpix_info --explain shows the prediction "
     "of the pacing chosen).",
     1},
    {"MPIX_HIER_KARY", "auto",
     "Network levels of more than 16 ranks (rails under one leaf of more than 16 nodes) "
     "reduce-scatter and allgather in log_f p exchanges of up to 7 messages (kary, factors "
     "of at most 8) instead of one exchange with every peer: the same bytes, one more "
     "latency per factor, far fewer messages (yes/no/auto). 'auto': per schedule, where "
     "the cost model predicts it at most 0.25 % slower (mpix_info --explain).",
     1},
    {"MPIX_HIER_RSAG", "auto",
     "Allreduce steps of up to 32 KiB on a network level (the spine's of a pipelined "
     "allreduce at 1024 GPUs) reduce-scatter and then allgather (two latencies, each rank's "
     "share of the bytes) instead of sending the whole piece to every peer (radix: one "
     "latency, p - 1 times the bytes) (yes/no/auto). 'auto': per schedule, where the cost "
     "model predicts it at least 1 % faster (mpix_info --explain): where the NIC is the "
     "pipeline's bottleneck, its bytes cost more than the latency.",
     1},
    {"MPIX_HIER_SPREAD", "yes",
     "Small allreduces (up to 4 KiB) on layouts with two network levels or more (rails under "
     "leaf switches and a spine) cross them in one exchange: after the node's allreduce each of "
     "its g ranks reduces the node sums of 1/g of the nodes over its own rail, then the node "
     "adds the g partial sums; one network latency instead of one per level, for one more "
     "NVLink latency (yes/no). 'no': an allreduce per level.",
     1},
    {"MPIX_HIER_METRICS_FILE", "",
     "Write the metrics (Prometheus text format; mpix_info --metrics lists them) to this file "
     "at MPI_Finalize and every MPIX_HIER_METRICS_INTERVAL seconds: %r is the MPI_COMM_WORLD "
     "rank, %h the host name, %p the process id, %% a percent sign; without %r or %p, jobs of "
     "several ranks get .rank<r> appended. Written to a temporary file, then renamed.", 0},
    {"MPIX_HIER_METRICS_INTERVAL", "0",
     "Seconds between writes of MPIX_HIER_METRICS_FILE (checked in library calls and in the "
     "progress of nonblocking collectives; 0: only at MPI_Finalize).", 0},
    /* cost model (coll/cost.h): per level latency and bandwidth, the rank's reduction and
     * copy speed; mpix_info --explain COLL BYTES prints its predictions */
    {"MPIX_HIER_COST_MODEL", "auto",
     "Choose hier or pipeline and the fragment size of allreduce, reduce_scatter_block, "
     "allgather, bcast and reduce on grid hierarchies (and allreduce, reduce_scatter_block, "
     "allgather on torus levels) by the cost model (the MPIX_HIER_COST_* parameters) "
     "instead of MPIX_HIER_FRAG_SIZE (yes/no/auto). 'auto': where the network measured "
     "(MPIX_HIER_COST_MEASURE) is flat in message size (every size class within 1.5 times "
     "the large messages' latency and bandwidth), with the measured figures (on a torus split, "
     "and where a level's last member answers 8 B more than 1.25 times slower or faster than "
     "its first (a dragonfly group), the model's choice only where it predicts it at least 5 % "
     "faster than the thresholds', and there pacing too only 5 % faster); "
     "where it is not flat but plausible, the same margin with those figures; where nothing "
     "was measured, and where MPIX_HIER_FRAG_SIZE is set, no.", 1},
    {"MPIX_HIER_COST_MEASURE", "auto",
     "Measure the cost model's parameters when a communicator's hierarchy is built: rank 0 "
     "exchanges messages of 8 B to 512 KiB with one member of each of its level groups (a "
     "rank of its node, of its rail, across the spine) and 8 B with the group's last member, "
     "fits each level's latency and "
     "bandwidth and the latency and bandwidth factors of smaller messages, and every rank "
     "uses rank 0's "
     "figures (pacing and MPIX_HIER_COST_MODEL read them; mpix_info --explain shows the "
     "configured ones) (yes/no/auto). 'auto': with MPIX_HIER_COST_MODEL yes or auto, unless "
     "a MPIX_HIER_COST_ latency, bandwidth or factor variable is set; 'yes': always, "
     "measured figures replacing those.", 1},
    {"MPIX_HIER_COST_NODE_LATENCY", "1us",
     "Cost model: seconds per exchange inside a node (NVLink, shared memory); suffix s, ms, "
     "us or ns.", 1},
    {"MPIX_HIER_COST_NODE_BW", "370g",
     "Cost model: bytes per second of one rank's link inside a node, each direction "
     "(decimal suffix k, m, g, t).", 1},
    {"MPIX_HIER_COST_NET_LATENCY", "2us",
     "Cost model: seconds per exchange across nodes under one leaf (rail level: NIC, leaf "
     "switch, NIC).", 1},
    {"MPIX_HIER_COST_NET_BW", "48g",
     "Cost model: bytes per second of one rank's NIC (rail and spine levels).", 1},
    {"MPIX_HIER_COST_SPINE_LATENCY", "4us",
     "Cost model: seconds per exchange between leaf groups (spine level: NIC, leaf, spine, "
     "leaf, NIC); its bandwidth is the NIC's.", 1},
    {"MPIX_HIER_COST_TORUS_LATENCY", "3us",
     "Cost model: seconds per exchange between neighbours of a torus of nodes (a level per "
     "torus dimension: NIC, one torus link, NIC).", 1},
    {"MPIX_HIER_COST_TORUS_BW", "0",
     "Cost model: bytes per second of one torus link, each direction (decimal suffix k, m, g, "
     "t); 0: the node's GPUs' NICs over 2 links per dimension, g x MPIX_HIER_COST_NET_BW / (2 "
     "x dimensions longer than 1), gen_platform.py's default.", 1},
    {"MPIX_HIER_COST_NET_CONTENTION", "1",
     "Cost model: factor on the network levels' byte time (ranks sharing a NIC, an "
     "oversubscribed spine).", 1},
    {"MPIX_HIER_COST_REDUCE_BW", "1000g",
     "Cost model: bytes per second of two-input reduction output of one rank (an n-input "
     "reduction costs (n + 1) / 3 of that per output byte).", 1},
    {"MPIX_HIER_COST_COPY_BW", "1500g", "Cost model: bytes per second of local copies.", 1},
    {"MPIX_HIER_COST_LAT_FACTOR", "",
     "Cost model: latency factors by message size, 'BYTES:FACTOR;...' (a message pays the "
     "factor of the largest BYTES not above its size; SimGrid's smpi/lat-factor syntax: "
     "protocol changes such as eager/rendezvous); empty: 1.", 1},
    {"MPIX_HIER_COST_BW_FACTOR", "",
     "Cost model: bandwidth factors by message size, the same syntax (smpi/bw-factor); "
     "empty: 1.", 1},
    {NULL, NULL, NULL, 0}};

static const char *const level_names[] = {"node", "rail", "spine", "island"};

const char *const mxh_config_coll_names[MXH_CONFIG_NCOLL] = {
    "allreduce",  "reduce_scatter_block", "allgather", "bcast",    "reduce",
    "allgatherv", "reduce_scatter",       "alltoall",  "alltoallv"};
const char *const mxh_config_algo_names[MXH_CONFIG_NALGO] = {"auto", "mpi", "shm", "hier",
                                                             "pipeline"};

static int find_name(const char *const *names, int n, const char *s, size_t len)
{
    for (int i = 0; i < n; i++)
        if (strlen(names[i]) == len && !strncasecmp(names[i], s, len))
            return i;
    return -1;
}

/* auto | algo | [algo,]coll:algo[,coll:algo...] */
static int parse_algo(const char *s, int *algo)
{
    int out[MXH_CONFIG_NCOLL] = {0};
    const char *p = s;

    while (*p) {
        const char *end = strchr(p, ','), *colon;
        size_t len      = end ? (size_t)(end - p) : strlen(p);
        int a, c;

        colon = memchr(p, ':', len);
        if (colon == NULL) {
            a = find_name(mxh_config_algo_names, MXH_CONFIG_NALGO, p, len);
            if (a < 0)
                return -1;
            for (c = 0; c < MXH_CONFIG_NCOLL; c++)
                out[c] = a;
        } else {
            c = find_name(mxh_config_coll_names, MXH_CONFIG_NCOLL, p, (size_t)(colon - p));
            a = find_name(mxh_config_algo_names, MXH_CONFIG_NALGO, colon + 1,
                          len - (size_t)(colon + 1 - p));
            if (c < 0 || a < 0)
                return -1;
            out[c] = a;
        }
        p += len;
        if (*p == ',')
            p++;
    }
    memcpy(algo, out, sizeof(out));
    return 0;
}

static int parse_bool(const char *s, int *out)
{
    if (!strcasecmp(s, "1") || !strcasecmp(s, "yes") || !strcasecmp(s, "y") ||
        !strcasecmp(s, "true") || !strcasecmp(s, "on")) {
        *out = 1;
        return 0;
    }
    if (!strcasecmp(s, "0") || !strcasecmp(s, "no") || !strcasecmp(s, "n") ||
        !strcasecmp(s, "false") || !strcasecmp(s, "off")) {
        *out = 0;
        return 0;
    }
    return -1;
}

static int parse_size(const char *s, size_t *out)
{
    char *end;
    unsigned long long v;

    while (isspace((unsigned char)*s))
        s++;
    if (!isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno)
        return -1;
    switch (tolower((unsigned char)*end)) {
    case 'k': v <<= 10; end++; break;
    case 'm': v <<= 20; end++; break;
    case 'g': v <<= 30; end++; break;
    default: break;
    }
    if (*end == 'b' || *end == 'B')
        end++;
    if (*end != '\0')
        return -1;
    *out = (size_t)v;
    return 0;
}

/* A positive number with an optional suffix: @time: s, ms, us, ns (seconds);
 * else decimal k, m, g, t (bytes per second, "g" = 1e9). */
static int parse_real(const char *s, int time, double *out)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || !(v > 0))
        return -1;
    if (time) {
        if (!strcmp(end, "ms"))
            v *= 1e-3, end += 2;
        else if (!strcmp(end, "us"))
            v *= 1e-6, end += 2;
        else if (!strcmp(end, "ns"))
            v *= 1e-9, end += 2;
        else if (!strcmp(end, "s"))
            end++;
    } else {
        switch (tolower((unsigned char)*end)) {
        case 'k': v *= 1e3; end++; break;
        case 'm': v *= 1e6; end++; break;
        case 'g': v *= 1e9; end++; break;
        case 't': v *= 1e12; end++; break;
        default: break;
        }
    }
    if (*end != '\0')
        return -1;
    *out = v;
    return 0;
}

/* 'BYTES:FACTOR;BYTES:FACTOR...' (any order; sorted by size here), "" = none */
static int parse_factors(const char *s, int *n, size_t *size, double *f)
{
    int k = 0;
    while (*s) {
        char *end;
        unsigned long long b;
        double v;
        while (*s == ' ' || *s == ';')
            s++;
        if (!*s)
            break;
        if (k == MXH_CONFIG_FACTORS || !isdigit((unsigned char)*s))
            return -1;
        errno = 0;
        b = strtoull(s, &end, 10);
        if (errno || *end != ':')
            return -1;
        v = strtod(end + 1, &end);
        if (!(v > 0) || (*end && *end != ';'))
            return -1;
        int i = k++;
        while (i > 0 && size[i - 1] > b) { /* insertion: ascending sizes */
            size[i] = size[i - 1];
            f[i]    = f[i - 1];
            i--;
        }
        size[i] = (size_t)b;
        f[i]    = v;
        s       = end;
    }
    *n = k;
    return 0;
}

static void print_factors(char *buf, size_t len, int n, const size_t *size, const double *f)
{
    size_t off = 0;
    for (int i = n - 1; i >= 0 && off < len; i--) {
        int k = snprintf(buf + off, len - off, "%s%zu:%g", off ? ";" : "", size[i], f[i]);
        if (k < 0)
            break;
        off += (size_t)k;
    }
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_levels(const char *s, int *mask)
{
    char buf[256];
    char *tok, *save = NULL;
    int m = 0;

    if (strlen(s) >= sizeof(buf))
        return -1;
    strcpy(buf, s);
    for (tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
        int found = 0;
        for (int i = 0; i < 4; i++) {
            if (!strcasecmp(tok, level_names[i])) {
                m |= 1 << i;
                found = 1;
            }
        }
        if (!found)
            return -1;
    }
    *mask = m;
    return 0;
}

/* MPIX_HIER_EXCLUDE_RAILS: "" | "1,3" | a file holding '"exclude_rails": [1, 3]' (the
 * doctor's JSON). The rails as a mask, so ranks reading equal lists from different paths
 * agree (the plan hash covers the mask). */
static int parse_rail_list(const char *s, const char *end, uint64_t *mask)
{
    uint64_t m = 0;
    while (s < end) {
        char *e;
        long v;
        while (s < end && (isspace((unsigned char)*s) || *s == ','))
            s++;
        if (s >= end)
            break;
        if (!isdigit((unsigned char)*s))
            return -1;
        v = strtol(s, &e, 10);
        if (e > end || v < 0 || v > 63)
            return -1;
        m |= (uint64_t)1 << v;
        s = e;
    }
    *mask = m;
    return 0;
}

static int parse_exclude_rails(const char *s, uint64_t *mask)
{
    const char *p = s;
    while (isspace((unsigned char)*p))
        p++;
    if (*p == '\0' || isdigit((unsigned char)*p))
        return parse_rail_list(p, p + strlen(p), mask);
    {
        FILE *f = fopen(s, "r");
        char *buf, *k, *open, *close;
        long n;
        int rc = -1;
        if (f == NULL) {
            mxh_error("MPIX_HIER_EXCLUDE_RAILS: cannot open '%s'", s);
            return -1;
        }
        buf = malloc(1 << 22);
        n   = buf ? (long)fread(buf, 1, (1 << 22) - 1, f) : 0;
        fclose(f);
        if (buf == NULL)
            return -1;
        buf[n] = '\0';
        if ((k = strstr(buf, "\"exclude_rails\"")) != NULL && (open = strchr(k, '[')) != NULL &&
            (close = strchr(open, ']')) != NULL)
            rc = parse_rail_list(open + 1, close, mask);
        else
            mxh_error("MPIX_HIER_EXCLUDE_RAILS: '%s' has no \"exclude_rails\": [...]", s);
        free(buf);
        return rc;
    }
}

void mxh_config_init_defaults(mxh_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->enable          = 1;
    cfg->log_level       = MXH_LOG_WARN;
    cfg->min_bytes       = 0;
    cfg->levels_mask     = MXH_LEVELS_ALL;
    cfg->plan_cache_size = 16;
    cfg->discover        = 1;
    cfg->frag_size       = (size_t)8 << 20; /* simulated best, benchmarks/RESULTS.md */
    cfg->pipeline_depth  = 0;
    cfg->pipeline_ramp   = MXH_RAMP_AUTO; /* simulated, benchmarks/RESULTS.md */
    cfg->pipeline_pace   = 2; /* auto; simulated, benchmarks/RESULTS.md section 5 (issue 21) */
    cfg->kary            = 2; /* auto; simulated, benchmarks/RESULTS.md section 5 (issue 21) */
    cfg->rsag            = 2; /* auto; the same */
    cfg->shm             = 1;
    cfg->spread          = 1; /* simulated, benchmarks/RESULTS.md section 5 (issue 21) */
    cfg->shm_chunk       = 128 << 10; /* measured, src/coll/shm.h */
    cfg->ipc             = -1;        /* auto */
    cfg->gpu_mps         = -1;        /* auto */
    cfg->ipc_min         = 256 << 10; /* host cost of agreeing: RESULTS.md section 4 */
    cfg->metrics         = 1;
    /* H100 + NDR, as benchmarks/sim/gen_platform.py describes them (link-exact) */
    cfg->cost_node_latency   = 1e-6;
    cfg->cost_node_bw        = 370e9;
    cfg->cost_net_latency    = 2e-6;
    cfg->cost_net_bw         = 48e9;
    cfg->cost_net_contention = 1;
    cfg->cost_measure        = 2; /* auto */
    cfg->cost_model          = 2; /* auto; simulated, benchmarks/RESULTS.md section 5 */
    cfg->cost_spine_latency  = 4e-6;
    cfg->cost_torus_latency  = 3e-6; /* NIC, torus link, NIC: 1 us each */
    cfg->cost_torus_bw       = 0;    /* derived from the NICs (gen_platform.py --b-torus) */
    cfg->cost_reduce_bw      = 1000e9;
    cfg->cost_copy_bw        = 1500e9;
}

static const mxh_config_var_t *find_var(const char *name)
{
    for (const mxh_config_var_t *v = mxh_config_vars; v->name; v++)
        if (!strcasecmp(v->name, name))
            return v;
    return NULL;
}

static mxh_status_t copy_str(char *dst, size_t cap, const char *name, const char *value)
{
    if (strlen(value) >= cap) {
        mxh_error("%s: value is longer than %zu characters", name, cap - 1);
        return MXH_ERR_PARSE;
    }
    strcpy(dst, value);
    return MXH_OK;
}

/* The variables that describe the network: MPIX_HIER_COST_MEASURE=auto keeps them
 * instead of measuring (src/coll/measure.h). */
static int is_network_parameter(const char *name)
{
    static const char *const names[] = {
        "MPIX_HIER_COST_NODE_LATENCY",  "MPIX_HIER_COST_NODE_BW",
        "MPIX_HIER_COST_NET_LATENCY",   "MPIX_HIER_COST_NET_BW",
        "MPIX_HIER_COST_SPINE_LATENCY", "MPIX_HIER_COST_TORUS_LATENCY",
        "MPIX_HIER_COST_TORUS_BW",      "MPIX_HIER_COST_LAT_FACTOR",
        "MPIX_HIER_COST_BW_FACTOR"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!strcmp(name, names[i]))
            return 1;
    return 0;
}

mxh_status_t mxh_config_set(mxh_config_t *cfg, const char *name, const char *value,
                            const char *source)
{
    const mxh_config_var_t *var = find_var(name);
    int rc = 0;

    if (var == NULL) {
        mxh_error("unknown configuration variable %s (from %s)", name, source);
        return MXH_ERR_CONFIG;
    }
    name = var->name;
    if (!strcmp(name, "MPIX_HIER_ENABLE")) {
        rc = parse_bool(value, &cfg->enable);
    } else if (!strcmp(name, "MPIX_HIER_LOG_LEVEL")) {
        mxh_log_level_t l;
        rc = mxh_log_level_parse(value, &l);
        if (rc == 0)
            cfg->log_level = (int)l;
    } else if (!strcmp(name, "MPIX_HIER_HOSTNAME")) {
        return copy_str(cfg->hostname, sizeof(cfg->hostname), name, value);
    } else if (!strcmp(name, "MPIX_HIER_TOPO_FILE")) {
        return copy_str(cfg->topo_file, sizeof(cfg->topo_file), name, value);
    } else if (!strcmp(name, "MPIX_HIER_CLUSTER_FILE")) {
        return copy_str(cfg->cluster_file, sizeof(cfg->cluster_file), name, value);
    } else if (!strcmp(name, "MPIX_HIER_HWLOC_XML")) {
        return copy_str(cfg->hwloc_xml, sizeof(cfg->hwloc_xml), name, value);
    } else if (!strcmp(name, "MPIX_HIER_NCCL_TOPO_FILE")) {
        return copy_str(cfg->nccl_topo_file, sizeof(cfg->nccl_topo_file), name, value);
    } else if (!strcmp(name, "MPIX_HIER_GPU_BUSID")) {
        return copy_str(cfg->gpu_busid, sizeof(cfg->gpu_busid), name, value);
    } else if (!strcmp(name, "MPIX_HIER_GPU_MPS")) {
        if (!strcasecmp(value, "auto"))
            cfg->gpu_mps = -1;
        else
            rc = parse_bool(value, &cfg->gpu_mps);
    } else if (!strcmp(name, "MPIX_HIER_DISCOVER")) {
        rc = parse_bool(value, &cfg->discover);
    } else if (!strcmp(name, "MPIX_HIER_MIN_BYTES")) {
        rc = parse_size(value, &cfg->min_bytes);
    } else if (!strcmp(name, "MPIX_HIER_LEVELS")) {
        rc = parse_levels(value, &cfg->levels_mask);
    } else if (!strcmp(name, "MPIX_HIER_PLAN_CACHE_SIZE")) {
        rc = parse_int(value, 1, 4096, &cfg->plan_cache_size);
    } else if (!strcmp(name, "MPIX_HIER_ALGO")) {
        rc = parse_algo(value, cfg->algo);
    } else if (!strcmp(name, "MPIX_HIER_FRAG_SIZE")) {
        rc = parse_size(value, &cfg->frag_size);
    } else if (!strcmp(name, "MPIX_HIER_PIPELINE_DEPTH")) {
        rc = parse_int(value, 0, 1 << 20, &cfg->pipeline_depth);
    } else if (!strcmp(name, "MPIX_HIER_PIPELINE_RAMP")) {
        if (!strcasecmp(value, "auto"))
            cfg->pipeline_ramp = MXH_RAMP_AUTO;
        else if (!strcasecmp(value, "linear"))
            cfg->pipeline_ramp = MXH_RAMP_LINEAR;
        else
            rc = parse_int(value, 0, 4, &cfg->pipeline_ramp);
    } else if (!strcmp(name, "MPIX_HIER_PIPELINE_PACE")) {
        if (!strcasecmp(value, "auto"))
            cfg->pipeline_pace = 2;
        else
            rc = parse_bool(value, &cfg->pipeline_pace);
    } else if (!strcmp(name, "MPIX_HIER_KARY")) {
        if (!strcasecmp(value, "auto"))
            cfg->kary = 2;
        else
            rc = parse_bool(value, &cfg->kary);
    } else if (!strcmp(name, "MPIX_HIER_RSAG")) {
        if (!strcasecmp(value, "auto"))
            cfg->rsag = 2;
        else
            rc = parse_bool(value, &cfg->rsag);
    } else if (!strcmp(name, "MPIX_HIER_SPREAD")) {
        rc = parse_bool(value, &cfg->spread);
    } else if (!strcmp(name, "MPIX_HIER_COST_MODEL")) {
        if (!strcasecmp(value, "auto"))
            cfg->cost_model = 2;
        else
            rc = parse_bool(value, &cfg->cost_model);
    } else if (!strcmp(name, "MPIX_HIER_COST_MEASURE")) {
        if (!strcasecmp(value, "auto"))
            cfg->cost_measure = 2;
        else
            rc = parse_bool(value, &cfg->cost_measure);
    } else if (!strcmp(name, "MPIX_HIER_COST_NODE_LATENCY")) {
        rc = parse_real(value, 1, &cfg->cost_node_latency);
    } else if (!strcmp(name, "MPIX_HIER_COST_NODE_BW")) {
        rc = parse_real(value, 0, &cfg->cost_node_bw);
    } else if (!strcmp(name, "MPIX_HIER_COST_NET_LATENCY")) {
        rc = parse_real(value, 1, &cfg->cost_net_latency);
    } else if (!strcmp(name, "MPIX_HIER_COST_NET_BW")) {
        rc = parse_real(value, 0, &cfg->cost_net_bw);
    } else if (!strcmp(name, "MPIX_HIER_COST_SPINE_LATENCY")) {
        rc = parse_real(value, 1, &cfg->cost_spine_latency);
    } else if (!strcmp(name, "MPIX_HIER_COST_TORUS_LATENCY")) {
        rc = parse_real(value, 1, &cfg->cost_torus_latency);
    } else if (!strcmp(name, "MPIX_HIER_COST_TORUS_BW")) {
        if (!strcmp(value, "0"))
            cfg->cost_torus_bw = 0; /* derived from the NICs */
        else
            rc = parse_real(value, 0, &cfg->cost_torus_bw);
    } else if (!strcmp(name, "MPIX_HIER_COST_NET_CONTENTION")) {
        rc = parse_real(value, 0, &cfg->cost_net_contention);
        if (rc == 0 && cfg->cost_net_contention < 1)
            rc = -1;
    } else if (!strcmp(name, "MPIX_HIER_COST_REDUCE_BW")) {
        rc = parse_real(value, 0, &cfg->cost_reduce_bw);
    } else if (!strcmp(name, "MPIX_HIER_COST_COPY_BW")) {
        rc = parse_real(value, 0, &cfg->cost_copy_bw);
    } else if (!strcmp(name, "MPIX_HIER_COST_LAT_FACTOR")) {
        rc = parse_factors(value, &cfg->cost_lat_n, cfg->cost_lat_size, cfg->cost_lat_f);
    } else if (!strcmp(name, "MPIX_HIER_COST_BW_FACTOR")) {
        rc = parse_factors(value, &cfg->cost_bw_n, cfg->cost_bw_size, cfg->cost_bw_f);
    } else if (!strcmp(name, "MPIX_HIER_SHM")) {
        rc = parse_bool(value, &cfg->shm);
    } else if (!strcmp(name, "MPIX_HIER_SHM_CHUNK")) {
        rc = parse_size(value, &cfg->shm_chunk);
        if (rc == 0 && (cfg->shm_chunk < 64 || cfg->shm_chunk > ((size_t)1 << 30)))
            rc = -1;
    } else if (!strcmp(name, "MPIX_HIER_IPC")) {
        if (!strcasecmp(value, "auto"))
            cfg->ipc = -1;
        else
            rc = parse_bool(value, &cfg->ipc);
    } else if (!strcmp(name, "MPIX_HIER_IPC_MIN")) {
        rc = parse_size(value, &cfg->ipc_min);
    } else if (!strcmp(name, "MPIX_HIER_EXCLUDE_RAILS")) {
        rc = parse_exclude_rails(value, &cfg->exclude_rails);
    } else if (!strcmp(name, "MPIX_HIER_METRICS")) {
        rc = parse_bool(value, &cfg->metrics);
    } else if (!strcmp(name, "MPIX_HIER_METRICS_FILE")) {
        return copy_str(cfg->metrics_file, sizeof(cfg->metrics_file), name, value);
    } else if (!strcmp(name, "MPIX_HIER_METRICS_INTERVAL")) {
        char *end;
        errno                 = 0;
        cfg->metrics_interval = strtod(value, &end);
        rc = errno || end == value || *end != '\0' || !(cfg->metrics_interval >= 0) ||
             cfg->metrics_interval > 1e9;
    }
    if (rc != 0) {
        mxh_error("%s='%s' (from %s) is malformed: %s", name, value, source, var->doc);
        return MXH_ERR_PARSE;
    }
    if (is_network_parameter(name))
        cfg->cost_given = 1;
    if (!strcmp(name, "MPIX_HIER_FRAG_SIZE"))
        cfg->frag_given = 1;
    return MXH_OK;
}

mxh_status_t mxh_config_apply_env(mxh_config_t *cfg, int warn_unknown)
{
    for (char **e = environ; e && *e; e++) {
        const char *eq;
        char name[128];

        if (strncmp(*e, "MPIX_HIER_", 10) != 0)
            continue;
        eq = strchr(*e, '=');
        if (eq == NULL || (size_t)(eq - *e) >= sizeof(name))
            continue;
        memcpy(name, *e, (size_t)(eq - *e));
        name[eq - *e] = '\0';
        if (!strncmp(name, "MPIX_HIER_SIM_", 14))
            continue; /* the SimGrid cost model's own (src/sim/sim.h) */
        if (!strcmp(name, "MPIX_HIER_LIBRARY"))
            continue; /* the Python package's: which libmpixhier it loads (python/mpix_hier) */
        if (!strncmp(name, "MPIX_HIER_PMPI", 14))
            continue; /* the drop-in library's own (mpix/pmpi.c), read there */
        if (find_var(name) == NULL) {
            if (warn_unknown)
                mxh_warn("unknown environment variable %s ignored (the README lists the MPIX_HIER_* "
                     "variables)", name);
            continue;
        }
        mxh_status_t st = mxh_config_set(cfg, name, eq + 1, "environment");
        if (st != MXH_OK)
            return st;
    }
    return MXH_OK;
}

void mxh_config_get_string(const mxh_config_t *cfg, const char *name, char *buf, size_t len)
{
    static const char *const lvl[] = {"error", "warn", "info", "debug", "trace"};
    const mxh_config_var_t *var = find_var(name);

    buf[0] = '\0';
    if (var == NULL)
        return;
    name = var->name;
    if (!strcmp(name, "MPIX_HIER_ENABLE")) {
        snprintf(buf, len, "%s", cfg->enable ? "yes" : "no");
    } else if (!strcmp(name, "MPIX_HIER_LOG_LEVEL")) {
        snprintf(buf, len, "%s", lvl[cfg->log_level]);
    } else if (!strcmp(name, "MPIX_HIER_HOSTNAME")) {
        snprintf(buf, len, "%s", cfg->hostname);
    } else if (!strcmp(name, "MPIX_HIER_TOPO_FILE")) {
        snprintf(buf, len, "%s", cfg->topo_file);
    } else if (!strcmp(name, "MPIX_HIER_CLUSTER_FILE")) {
        snprintf(buf, len, "%s", cfg->cluster_file);
    } else if (!strcmp(name, "MPIX_HIER_HWLOC_XML")) {
        snprintf(buf, len, "%s", cfg->hwloc_xml);
    } else if (!strcmp(name, "MPIX_HIER_NCCL_TOPO_FILE")) {
        snprintf(buf, len, "%s", cfg->nccl_topo_file);
    } else if (!strcmp(name, "MPIX_HIER_GPU_BUSID")) {
        snprintf(buf, len, "%s", cfg->gpu_busid);
    } else if (!strcmp(name, "MPIX_HIER_GPU_MPS")) {
        snprintf(buf, len, "%s", cfg->gpu_mps < 0 ? "auto" : cfg->gpu_mps ? "yes" : "no");
    } else if (!strcmp(name, "MPIX_HIER_DISCOVER")) {
        snprintf(buf, len, "%s", cfg->discover ? "yes" : "no");
    } else if (!strcmp(name, "MPIX_HIER_MIN_BYTES")) {
        snprintf(buf, len, "%zu", cfg->min_bytes);
    } else if (!strcmp(name, "MPIX_HIER_LEVELS")) {
        size_t off = 0;
        for (int i = 0; i < 4; i++)
            if (cfg->levels_mask & (1 << i))
                off += (size_t)snprintf(buf + off, off < len ? len - off : 0, "%s%s",
                                        off ? "," : "", level_names[i]);
    } else if (!strcmp(name, "MPIX_HIER_PLAN_CACHE_SIZE")) {
        snprintf(buf, len, "%d", cfg->plan_cache_size);
    } else if (!strcmp(name, "MPIX_HIER_ALGO")) {
        int same = 1;
        for (int c = 1; c < MXH_CONFIG_NCOLL; c++)
            same &= cfg->algo[c] == cfg->algo[0];
        if (same) {
            snprintf(buf, len, "%s", mxh_config_algo_names[cfg->algo[0]]);
        } else {
            size_t off = 0;
            for (int c = 0; c < MXH_CONFIG_NCOLL; c++)
                if (cfg->algo[c] && off < len)
                    off += (size_t)snprintf(buf + off, len - off, "%s%s:%s", off ? "," : "",
                                            mxh_config_coll_names[c],
                                            mxh_config_algo_names[cfg->algo[c]]);
        }
    } else if (!strcmp(name, "MPIX_HIER_FRAG_SIZE")) {
        snprintf(buf, len, "%zu", cfg->frag_size);
    } else if (!strcmp(name, "MPIX_HIER_PIPELINE_DEPTH")) {
        snprintf(buf, len, "%d", cfg->pipeline_depth);
    } else if (!strcmp(name, "MPIX_HIER_PIPELINE_RAMP")) {
        if (cfg->pipeline_ramp == MXH_RAMP_AUTO)
            snprintf(buf, len, "auto");
        else if (cfg->pipeline_ramp == MXH_RAMP_LINEAR)
            snprintf(buf, len, "linear");
        else
            snprintf(buf, len, "%d", cfg->pipeline_ramp);
    } else if (!strcmp(name, "MPIX_HIER_PIPELINE_PACE")) {
        snprintf(buf, len, "%s", cfg->pipeline_pace == 2 ? "auto" : cfg->pipeline_pace ? "yes" : "no");
    } else if (!strcmp(name, "MPIX_HIER_KARY")) {
        snprintf(buf, len, "%s", cfg->kary == 2 ? "auto" : cfg->kary ? "yes" : "no");
    } else if (!strcmp(name, "MPIX_HIER_RSAG")) {
        snprintf(buf, len, "%s", cfg->rsag == 2 ? "auto" : cfg->rsag ? "yes" : "no");
    } else if (!strcmp(name, "MPIX_HIER_SPREAD")) {
        snprintf(buf, len, "%s", cfg->spread ? "yes" : "no");
    } else if (!strcmp(name, "MPIX_HIER_COST_MODEL")) {
        snprintf(buf, len, "%s", cfg->cost_model == 2 ? "auto" : cfg->cost_model ? "yes" : "no");
    } else if (!strcmp(name, "MPIX_HIER_COST_MEASURE")) {
        snprintf(buf, len, "%s", cfg->cost_measure == 2 ? "auto" : cfg->cost_measure ? "yes" : "no");
    } else if (!strcmp(name, "MPIX_HIER_COST_NODE_LATENCY")) {
        snprintf(buf, len, "%gus", cfg->cost_node_latency * 1e6);
    } else if (!strcmp(name, "MPIX_HIER_COST_NODE_BW")) {
        snprintf(buf, len, "%gg", cfg->cost_node_bw / 1e9);
    } else if (!strcmp(name, "MPIX_HIER_COST_NET_LATENCY")) {
        snprintf(buf, len, "%gus", cfg->cost_net_latency * 1e6);
    } else if (!strcmp(name, "MPIX_HIER_COST_NET_BW")) {
        snprintf(buf, len, "%gg", cfg->cost_net_bw / 1e9);
    } else if (!strcmp(name, "MPIX_HIER_COST_SPINE_LATENCY")) {
        snprintf(buf, len, "%gus", cfg->cost_spine_latency * 1e6);
    } else if (!strcmp(name, "MPIX_HIER_COST_TORUS_LATENCY")) {
        snprintf(buf, len, "%gus", cfg->cost_torus_latency * 1e6);
    } else if (!strcmp(name, "MPIX_HIER_COST_TORUS_BW")) {
        snprintf(buf, len, "%gg", cfg->cost_torus_bw / 1e9);
    } else if (!strcmp(name, "MPIX_HIER_COST_NET_CONTENTION")) {
        snprintf(buf, len, "%g", cfg->cost_net_contention);
    } else if (!strcmp(name, "MPIX_HIER_COST_REDUCE_BW")) {
        snprintf(buf, len, "%gg", cfg->cost_reduce_bw / 1e9);
    } else if (!strcmp(name, "MPIX_HIER_COST_COPY_BW")) {
        snprintf(buf, len, "%gg", cfg->cost_copy_bw / 1e9);
    } else if (!strcmp(name, "MPIX_HIER_COST_LAT_FACTOR")) {
        print_factors(buf, len, cfg->cost_lat_n, cfg->cost_lat_size, cfg->cost_lat_f);
    } else if (!strcmp(name, "MPIX_HIER_COST_BW_FACTOR")) {
        print_factors(buf, len, cfg->cost_bw_n, cfg->cost_bw_size, cfg->cost_bw_f);
    } else if (!strcmp(name, "MPIX_HIER_SHM")) {
        snprintf(buf, len, "%s", cfg->shm ? "yes" : "no");
    } else if (!strcmp(name, "MPIX_HIER_SHM_CHUNK")) {
        snprintf(buf, len, "%zu", cfg->shm_chunk);
    } else if (!strcmp(name, "MPIX_HIER_IPC")) {
        snprintf(buf, len, "%s", cfg->ipc < 0 ? "auto" : cfg->ipc ? "yes" : "no");
    } else if (!strcmp(name, "MPIX_HIER_IPC_MIN")) {
        snprintf(buf, len, "%zu", cfg->ipc_min);
    } else if (!strcmp(name, "MPIX_HIER_EXCLUDE_RAILS")) {
        size_t off = 0;
        for (int r = 0; r < 64 && off < len; r++)
            if (cfg->exclude_rails >> r & 1)
                off += (size_t)snprintf(buf + off, len - off, "%s%d", off ? "," : "", r);
    } else if (!strcmp(name, "MPIX_HIER_METRICS")) {
        snprintf(buf, len, "%s", cfg->metrics ? "yes" : "no");
    } else if (!strcmp(name, "MPIX_HIER_METRICS_FILE")) {
        snprintf(buf, len, "%s", cfg->metrics_file);
    } else if (!strcmp(name, "MPIX_HIER_METRICS_INTERVAL")) {
        snprintf(buf, len, "%g", cfg->metrics_interval);
    }
}

uint64_t mxh_hash_bytes(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = (const unsigned char *)data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

uint64_t mxh_config_plan_hash(const mxh_config_t *cfg)
{
    uint64_t h = MXH_HASH_INIT;
    uint64_t mb = (uint64_t)cfg->min_bytes;

    h = mxh_hash_bytes(h, &cfg->enable, sizeof(cfg->enable));
    h = mxh_hash_bytes(h, &mb, sizeof(mb));
    h = mxh_hash_bytes(h, &cfg->levels_mask, sizeof(cfg->levels_mask));
    h = mxh_hash_bytes(h, &cfg->discover, sizeof(cfg->discover));
    {
        uint64_t fs = (uint64_t)cfg->frag_size, sc = (uint64_t)cfg->shm_chunk;
        h = mxh_hash_bytes(h, cfg->algo, sizeof(cfg->algo));
        h = mxh_hash_bytes(h, &fs, sizeof(fs));
        h = mxh_hash_bytes(h, &cfg->pipeline_depth, sizeof(cfg->pipeline_depth));
        h = mxh_hash_bytes(h, &cfg->pipeline_ramp, sizeof(cfg->pipeline_ramp));
        h = mxh_hash_bytes(h, &cfg->pipeline_pace, sizeof(cfg->pipeline_pace));
        h = mxh_hash_bytes(h, &cfg->kary, sizeof(cfg->kary));
        h = mxh_hash_bytes(h, &cfg->rsag, sizeof(cfg->rsag));
        h = mxh_hash_bytes(h, &cfg->spread, sizeof(cfg->spread));
        h = mxh_hash_bytes(h, &cfg->shm, sizeof(cfg->shm));
        h = mxh_hash_bytes(h, &sc, sizeof(sc));
        h = mxh_hash_bytes(h, &cfg->exclude_rails, sizeof(cfg->exclude_rails));
        uint64_t im = (uint64_t)cfg->ipc_min;
        h = mxh_hash_bytes(h, &cfg->ipc, sizeof(cfg->ipc));
        h = mxh_hash_bytes(h, &im, sizeof(im));
    }
    /* the cost model chooses algorithms and fragments from these */
    h = mxh_hash_bytes(h, &cfg->cost_model, sizeof(cfg->cost_model));
    h = mxh_hash_bytes(h, &cfg->cost_measure, sizeof(cfg->cost_measure));
    h = mxh_hash_bytes(h, &cfg->cost_given, sizeof(cfg->cost_given));
    h = mxh_hash_bytes(h, &cfg->frag_given, sizeof(cfg->frag_given));
    h = mxh_hash_bytes(h, &cfg->cost_node_latency, sizeof(double));
    h = mxh_hash_bytes(h, &cfg->cost_node_bw, sizeof(double));
    h = mxh_hash_bytes(h, &cfg->cost_net_latency, sizeof(double));
    h = mxh_hash_bytes(h, &cfg->cost_net_bw, sizeof(double));
    h = mxh_hash_bytes(h, &cfg->cost_net_contention, sizeof(double));
    h = mxh_hash_bytes(h, &cfg->cost_spine_latency, sizeof(double));
    h = mxh_hash_bytes(h, &cfg->cost_torus_latency, sizeof(double));
    h = mxh_hash_bytes(h, &cfg->cost_torus_bw, sizeof(double));
    h = mxh_hash_bytes(h, &cfg->cost_reduce_bw, sizeof(double));
    h = mxh_hash_bytes(h, &cfg->cost_copy_bw, sizeof(double));
    for (int i = 0; i < cfg->cost_lat_n; i++) {
        uint64_t sz = (uint64_t)cfg->cost_lat_size[i];
        h = mxh_hash_bytes(h, &sz, sizeof(sz));
        h = mxh_hash_bytes(h, &cfg->cost_lat_f[i], sizeof(double));
    }
    h = mxh_hash_bytes(h, &cfg->cost_lat_n, sizeof(int));
    for (int i = 0; i < cfg->cost_bw_n; i++) {
        uint64_t sz = (uint64_t)cfg->cost_bw_size[i];
        h = mxh_hash_bytes(h, &sz, sizeof(sz));
        h = mxh_hash_bytes(h, &cfg->cost_bw_f[i], sizeof(double));
    }
    h = mxh_hash_bytes(h, &cfg->cost_bw_n, sizeof(int));
    /* The topology file need not agree: leaf names travel in the gathered records. */
    return h;
}

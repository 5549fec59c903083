/* Transport capabilities: UCX (UCP memory types, UCT transports/devices with
 * their bandwidth/latency estimates) and MPICH's CUDA-awareness.
 *
 * UCX part (HAVE_UCX):
 *  1. UCP: ucp_config_read + ucp_init(UCP_FEATURE_TAG) + ucp_context_query
 *     (UCP_ATTR_FIELD_MEMORY_TYPES) -> ucx_present and the memory types;
 *     the context is cleaned up at once. UCX_TLS and friends apply here.
 *  2. UCT: every component -> every memory domain (uct_md_open) -> its
 *     transport resources (tl_name/dev_name). For each resource an interface
 *     is opened on a private worker (async context in poll mode, no thread)
 *     just long enough for uct_iface_query, which gives UCX's bandwidth
 *     (dedicated + shared, bytes/s) and latency (constant part, s) model, as
 *     `ucx_info -d` prints them. A resource whose interface cannot be opened
 *     is still listed, with bandwidth/latency 0 ("not reported"). UCT lists
 *     all resources regardless of UCX_TLS.
 *  gpu_direct: UCP moves CUDA memory, and an rc_* / dc_* transport exists
 *  whose memory domain registers CUDA memory (GPUDirect RDMA: nvidia_peermem)
 *  or a gdr_copy transport exists.
 *
 * MPI part: MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA), else
 * MPIX_Query_cuda_support(), when configure found them. */
#include "config.h"

#include "topo/caps.h"
#include "util/log.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#ifdef HAVE_UCX
#include <ucp/api/ucp.h>
#include <ucs/async/async_fwd.h>
#include <ucs/sys/math.h> /* UCS_MBYTE */
#include <uct/api/uct.h>
#endif

void mxh_caps_init(mxh_caps_t *caps)
{
    if (caps == NULL)
        return;
    memset(caps, 0, sizeof(*caps));
    caps->mpi_cuda_aware = -1;
}

static void caps_reset_ucx(mxh_caps_t *caps)
{
    int mpi = caps->mpi_cuda_aware;
    memset(caps, 0, sizeof(*caps));
    caps->mpi_cuda_aware = mpi;
}

#ifdef HAVE_UCX

/* What the UCT walk learned beyond the listed transports. */
typedef struct uct_scan {
    int have_rdma;        /* an rc_* or dc_* transport */
    int have_rdma_cuda;   /* ... whose memory domain registers CUDA memory */
    int have_gdr_copy;
    int nresources;       /* all resources seen (listed or not) */
} uct_scan_t;

static int ucp_query(mxh_caps_t *caps)
{
    ucp_config_t      *config = NULL;
    ucp_context_h      context = NULL;
    ucp_params_t       params;
    ucp_context_attr_t attr;
    ucs_status_t       st;

    st = ucp_config_read(NULL, NULL, &config);
    if (st != UCS_OK) {
        mxh_info("UCX not usable: ucp_config_read: %s", ucs_status_string(st));
        return 0;
    }
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features = UCP_FEATURE_TAG;
    st = ucp_init(&params, config, &context);
    ucp_config_release(config);
    if (st != UCS_OK) {
        mxh_info("UCX not usable: ucp_init: %s", ucs_status_string(st));
        return 0;
    }
    memset(&attr, 0, sizeof(attr));
    attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
    st = ucp_context_query(context, &attr);
    if (st == UCS_OK) {
        caps->ucx_mem_host = (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_HOST)) != 0;
        caps->ucx_mem_cuda = (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
        caps->ucx_mem_cuda_managed =
            (attr.memory_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA_MANAGED)) != 0;
    } else {
        mxh_info("UCX: ucp_context_query(memory types): %s; assuming host memory only",
                 ucs_status_string(st));
        caps->ucx_mem_host = 1;
    }
    ucp_cleanup(context);
    return 1;
}

/* Bandwidth/latency of one resource from a short-lived interface; 0/0 when
 * it cannot be opened. */
static void iface_perf(uct_md_h md, uct_worker_h worker, const uct_tl_resource_desc_t *res,
                       double *bw_mbs, double *lat_ns)
{
    uct_iface_config_t *config = NULL;
    uct_iface_params_t  params;
    uct_iface_attr_t    attr;
    uct_iface_h         iface = NULL;
    ucs_status_t        st;

    *bw_mbs = 0;
    *lat_ns = 0;
    if (worker == NULL)
        return;
    st = uct_md_iface_config_read(md, res->tl_name, NULL, NULL, &config);
    if (st != UCS_OK) {
        mxh_debug("UCX: %s/%s: iface config: %s", res->tl_name, res->dev_name,
                  ucs_status_string(st));
        return;
    }
    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE | UCT_IFACE_PARAM_FIELD_DEVICE |
                        UCT_IFACE_PARAM_FIELD_RX_HEADROOM;
    params.open_mode = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name = res->tl_name;
    params.mode.device.dev_name = res->dev_name;
    params.rx_headroom = 0;
    st = uct_iface_open(md, worker, &params, config, &iface);
    uct_config_release(config);
    if (st != UCS_OK) {
        mxh_debug("UCX: %s/%s: cannot open interface: %s (bandwidth not reported)",
                  res->tl_name, res->dev_name, ucs_status_string(st));
        return;
    }
    memset(&attr, 0, sizeof(attr));
    st = uct_iface_query(iface, &attr);
    if (st == UCS_OK) {
        double bw = attr.bandwidth.dedicated + attr.bandwidth.shared;
        *bw_mbs = bw > 0 ? bw / (double)UCS_MBYTE : 0;
        *lat_ns = attr.latency.c > 0 ? attr.latency.c * 1e9 : 0;
    } else {
        mxh_debug("UCX: %s/%s: uct_iface_query: %s", res->tl_name, res->dev_name,
                  ucs_status_string(st));
    }
    uct_iface_close(iface);
}

/* Copy a UCX name array of @ssz bytes (NUL-terminated or full). */
static void copy_name(char *dst, size_t dsz, const char *src, size_t ssz)
{
    size_t n = strnlen(src, ssz);
    if (n >= dsz)
        n = dsz - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static void scan_md(mxh_caps_t *caps, uct_scan_t *scan, uct_component_h comp, const char *md_name,
                    uct_worker_h worker)
{
    uct_md_config_t        *md_config = NULL;
    uct_md_h                md = NULL;
    uct_md_attr_t           md_attr;
    uct_tl_resource_desc_t *res = NULL;
    unsigned                nres = 0;
    int                     md_cuda = 0;
    ucs_status_t            st;

    st = uct_md_config_read(comp, NULL, NULL, &md_config);
    if (st != UCS_OK) {
        mxh_debug("UCX: md %s: config: %s", md_name, ucs_status_string(st));
        return;
    }
    st = uct_md_open(comp, md_name, md_config, &md);
    uct_config_release(md_config);
    if (st != UCS_OK) {
        mxh_debug("UCX: md %s: cannot open: %s", md_name, ucs_status_string(st));
        return;
    }
    memset(&md_attr, 0, sizeof(md_attr));
    if (uct_md_query(md, &md_attr) == UCS_OK)
        md_cuda = (md_attr.cap.reg_mem_types & UCS_BIT(UCS_MEMORY_TYPE_CUDA)) != 0;
    st = uct_md_query_tl_resources(md, &res, &nres);
    if (st != UCS_OK) {
        mxh_debug("UCX: md %s: transport resources: %s", md_name, ucs_status_string(st));
        goto out;
    }
    for (unsigned i = 0; i < nres; i++) {
        const char *tl = res[i].tl_name;
        scan->nresources++;
        if (strncmp(tl, "rc", 2) == 0 || strncmp(tl, "dc", 2) == 0) {
            scan->have_rdma = 1;
            if (md_cuda)
                scan->have_rdma_cuda = 1;
        }
        if (strcmp(tl, "gdr_copy") == 0)
            scan->have_gdr_copy = 1;
        if (caps->ntransports >= MXH_CAPS_MAX_TRANSPORTS)
            continue;
        int k = caps->ntransports++;
        copy_name(caps->transports[k].name, sizeof(caps->transports[k].name), tl,
                  sizeof(res[i].tl_name));
        copy_name(caps->transports[k].device, sizeof(caps->transports[k].device),
                  res[i].dev_name, sizeof(res[i].dev_name));
        iface_perf(md, worker, &res[i], &caps->transports[k].bandwidth_mbs,
                   &caps->transports[k].latency_ns);
    }
    uct_release_tl_resource_list(res);
out:
    uct_md_close(md);
}

static void uct_query(mxh_caps_t *caps, uct_scan_t *scan)
{
    uct_component_h     *comps = NULL;
    unsigned             ncomps = 0;
    ucs_async_context_t *async = NULL;
    uct_worker_h         worker = NULL;
    ucs_status_t         st;

    st = uct_query_components(&comps, &ncomps);
    if (st != UCS_OK) {
        mxh_info("UCX: uct_query_components: %s; no transports listed", ucs_status_string(st));
        return;
    }
    /* a private worker to open interfaces on; poll mode: no async thread */
    st = ucs_async_context_create(UCS_ASYNC_MODE_POLL, &async);
    if (st == UCS_OK) {
        st = uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker);
        if (st != UCS_OK)
            worker = NULL;
    }
    if (worker == NULL)
        mxh_info("UCX: no UCT worker (%s): transport bandwidth/latency not reported",
                 ucs_status_string(st));

    for (unsigned c = 0; c < ncomps; c++) {
        uct_component_attr_t   attr;
        uct_md_resource_desc_t *mds = NULL;

        memset(&attr, 0, sizeof(attr));
        attr.field_mask =
            UCT_COMPONENT_ATTR_FIELD_NAME | UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        st = uct_component_query(comps[c], &attr);
        if (st != UCS_OK || attr.md_resource_count == 0)
            continue;
        mds = calloc(attr.md_resource_count, sizeof(*mds));
        if (mds == NULL) {
            mxh_warn("UCX: out of memory listing component %s", attr.name);
            continue;
        }
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        attr.md_resources = mds;
        st = uct_component_query(comps[c], &attr);
        if (st == UCS_OK)
            for (unsigned m = 0; m < attr.md_resource_count; m++)
                scan_md(caps, scan, comps[c], mds[m].md_name, worker);
        free(mds);
    }

    if (worker != NULL)
        uct_worker_destroy(worker);
    if (async != NULL)
        ucs_async_context_destroy(async);
    uct_release_component_list(comps);
}

#endif /* HAVE_UCX */

mxh_status_t mxh_caps_query_ucx(mxh_caps_t *caps)
{
    if (caps == NULL) {
        mxh_error("mxh_caps_query_ucx: caps is NULL");
        return MXH_ERR_INVALID_PARAM;
    }
    caps_reset_ucx(caps);
#ifdef HAVE_UCX
    uct_scan_t scan;
    memset(&scan, 0, sizeof(scan));
    if (!ucp_query(caps))
        return MXH_OK;
    caps->ucx_present = 1;
    uct_query(caps, &scan);
    caps->gpu_direct =
        caps->ucx_mem_cuda && scan.have_rdma && (scan.have_rdma_cuda || scan.have_gdr_copy);
    if (scan.nresources > caps->ntransports)
        mxh_info("UCX: %d transport resources, the first %d listed", scan.nresources,
                 caps->ntransports);
    mxh_debug("UCX: %d transports, memory host=%d cuda=%d cuda_managed=%d, gpu_direct=%d",
              caps->ntransports, caps->ucx_mem_host, caps->ucx_mem_cuda,
              caps->ucx_mem_cuda_managed, caps->gpu_direct);
#else
    mxh_info("UCX capabilities not available: mpix-hier was built without UCX");
#endif
    return MXH_OK;
}

void mxh_caps_query_mpi(mxh_caps_t *caps)
{
    int initialized = 0, finalized = 0;
    if (caps == NULL)
        return;
    caps->mpi_cuda_aware = -1;
    if (MPI_Initialized(&initialized) != MPI_SUCCESS || !initialized ||
        MPI_Finalized(&finalized) != MPI_SUCCESS || finalized) {
        mxh_debug("MPI CUDA-awareness unknown: MPI is not initialized");
        return;
    }
#if defined(HAVE_MPIX_GPU_QUERY_SUPPORT)
    {
        int supported = 0;
        if (MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &supported) == MPI_SUCCESS) {
            caps->mpi_cuda_aware = supported ? 1 : 0;
            return;
        }
    }
#endif
#if defined(HAVE_MPIX_QUERY_CUDA_SUPPORT)
    caps->mpi_cuda_aware = MPIX_Query_cuda_support() ? 1 : 0;
#else
    mxh_debug("MPI CUDA-awareness unknown: this MPICH has no MPIX_GPU_query_support");
#endif
}

/* snprintf-style appender: keeps the total length needed. */
typedef struct sbuf {
    char  *buf;
    size_t len, used;
} sbuf_t;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void sb_printf(sbuf_t *sb, const char *fmt, ...)
{
    va_list ap;
    char   *dst = NULL;
    size_t  room = 0;
    if (sb->buf != NULL && sb->used < sb->len) {
        dst = sb->buf + sb->used;
        room = sb->len - sb->used;
    }
    va_start(ap, fmt);
    int n = vsnprintf(dst, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        sb->used += (size_t)n;
}

static const char *yes_no(int v) { return v > 0 ? "yes" : v == 0 ? "no" : "unknown"; }

size_t mxh_caps_describe(const mxh_caps_t *caps, char *buf, size_t len)
{
    sbuf_t sb = {.buf = buf, .len = len, .used = 0};
    if (buf != NULL && len > 0)
        buf[0] = '\0';
    if (caps == NULL)
        return 0;
    if (!caps->ucx_present) {
        sb_printf(&sb, "UCX: no");
    } else {
        sb_printf(&sb, "UCX: yes; memory: host=%s cuda=%s cuda_managed=%s; gpu_direct=%s",
                  yes_no(caps->ucx_mem_host), yes_no(caps->ucx_mem_cuda),
                  yes_no(caps->ucx_mem_cuda_managed), yes_no(caps->gpu_direct));
    }
    sb_printf(&sb, "; MPI CUDA-aware: %s", yes_no(caps->mpi_cuda_aware));
    if (caps->ucx_present) {
        int n = caps->ntransports;
        if (n < 0)
            n = 0;
        if (n > MXH_CAPS_MAX_TRANSPORTS)
            n = MXH_CAPS_MAX_TRANSPORTS;
        sb_printf(&sb, "; transports (%d):", n);
        for (int i = 0; i < n; i++) {
            const char *name = caps->transports[i].name;
            const char *dev = caps->transports[i].device;
            sb_printf(&sb, "%s %.*s/%.*s", i ? "," : "", (int)sizeof(caps->transports[i].name),
                      name, (int)sizeof(caps->transports[i].device), dev);
            if (caps->transports[i].bandwidth_mbs > 0)
                sb_printf(&sb, " (%.0f MB/s, %.0f ns)", caps->transports[i].bandwidth_mbs,
                          caps->transports[i].latency_ns);
            else
                sb_printf(&sb, " (bandwidth not reported)");
        }
    }
    return sb.used;
}

int mxh_caps_net_direct(const mxh_caps_t *caps, char *why, size_t len)
{
    int direct = caps != NULL && caps->mpi_cuda_aware == 1 && caps->ucx_mem_cuda;
    const char *r = caps == NULL                  ? "no transport capabilities"
                    : caps->mpi_cuda_aware == 0   ? "MPI is not CUDA-aware"
                    : caps->mpi_cuda_aware < 0    ? "MPI does not say whether it is CUDA-aware"
                    : !caps->ucx_mem_cuda         ? "UCX does not move CUDA memory"
                    : caps->gpu_direct            ? "CUDA-aware MPI, UCX moves CUDA memory, GPUDirect RDMA"
                                                  : "CUDA-aware MPI, UCX moves CUDA memory";
    if (why != NULL && len > 0)
        snprintf(why, len, "%s", r);
    return direct;
}

#include "topo/discover.h"
#include "util/log.h"
#include "util/str.h"

#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- machine cache ------------------------------------------------------------ */

static struct {
    int            valid;
    char           hwloc_xml[MXH_CONFIG_STR_MAX];
    char           nccl_file[MXH_CONFIG_STR_MAX];
    mxh_machine_t *hw, *nccl;
    const mxh_machine_t *chosen;
} cache;

static int said_once;
static void cuda_nvlink_islands(mxh_machine_t *m);
static int caps_valid;
static mxh_caps_t caps_cache;

const mxh_caps_t *mxh_discover_caps(mxh_record_t *rec)
{
    if (!caps_valid) {
        mxh_caps_init(&caps_cache);
        mxh_caps_query_ucx(&caps_cache);
        mxh_caps_query_mpi(&caps_cache);
        caps_valid = 1;
        if (mxh_log_get_rank() <= 0 && mxh_log_level_current >= MXH_LOG_INFO) {
            char buf[2048];
            mxh_caps_describe(&caps_cache, buf, sizeof(buf));
            mxh_info("transports: %s", buf);
        }
    }
    if (rec != NULL) {
        if (caps_cache.ucx_present)
            rec->flags |= MXH_REC_UCX;
        if (caps_cache.ucx_mem_cuda)
            rec->flags |= MXH_REC_UCX_MEM_CUDA;
        if (caps_cache.gpu_direct)
            rec->flags |= MXH_REC_GPU_DIRECT;
        if (caps_cache.mpi_cuda_aware == 1)
            rec->flags |= MXH_REC_MPI_CUDA;
    }
    return &caps_cache;
}

void mxh_discover_cleanup(void)
{
    caps_valid = 0;
    mxh_machine_destroy(cache.hw);
    mxh_machine_destroy(cache.nccl);
    memset(&cache, 0, sizeof(cache));
}

static void compare_sources(const mxh_machine_t *hw, const mxh_machine_t *nc)
{
    char what[256] = "";

    if (hw->ngpus != nc->ngpus) {
        snprintf(what, sizeof(what), "%d GPUs in hwloc, %d in the NCCL file", hw->ngpus,
                 nc->ngpus);
    } else {
        for (int g = 0; g < hw->ngpus && !what[0]; g++) {
            const mxh_gpu_t *a = &hw->gpus[g], *b = &nc->gpus[g];
            if (strcmp(a->busid, b->busid))
                snprintf(what, sizeof(what), "GPU %d is %s in hwloc, %s in the NCCL file", g,
                         a->busid, b->busid);
            else if (a->nic >= 0 && b->nic >= 0 && hw->nnics == nc->nnics &&
                     strcmp(hw->nics[a->nic].name, nc->nics[b->nic].name))
                snprintf(what, sizeof(what), "GPU %s: nearest NIC %s (hwloc) vs %s (NCCL file)",
                         a->busid, hw->nics[a->nic].name, nc->nics[b->nic].name);
        }
    }
    if (what[0])
        mxh_info("discovery: %s and %s disagree (%s); using the NCCL topology file",
                 hw->source, nc->source, what);
}

mxh_status_t mxh_discover_machine(const mxh_config_t *cfg, const mxh_machine_t **machine_p)
{
    const char *xml = cfg->hwloc_xml[0] ? cfg->hwloc_xml : getenv("HWLOC_XMLFILE");
    const char *nccl = cfg->nccl_topo_file[0] ? cfg->nccl_topo_file : getenv("NCCL_TOPO_FILE");
    mxh_status_t st;

    if (xml && !xml[0])
        xml = NULL;
    if (nccl && !nccl[0])
        nccl = NULL;
    if (cache.valid && !strcmp(cache.hwloc_xml, xml ? xml : "") &&
        !strcmp(cache.nccl_file, nccl ? nccl : "")) {
        *machine_p = cache.chosen;
        return MXH_OK;
    }
    mxh_discover_cleanup();

    st = mxh_machine_from_hwloc(xml, &cache.hw);
    if (st != MXH_OK) {
        if (xml != NULL)
            return st; /* a file the user named: the loader logged why */
        mxh_info("discovery: hwloc could not describe this machine (%s): no GPU/NIC "
                 "placement", mxh_status_string(st));
        cache.hw = NULL;
    }
    if (nccl != NULL) {
        st = mxh_machine_from_nccl(nccl, &cache.nccl);
        if (st != MXH_OK) {
            mxh_discover_cleanup();
            return st;
        }
        if (cache.hw && cache.hw->ngpus > 0)
            compare_sources(cache.hw, cache.nccl);
    }
    if (cache.hw != NULL && xml == NULL)
        cuda_nvlink_islands(cache.hw); /* the live machine only: XML is another machine */
    cache.chosen = cache.nccl ? cache.nccl : cache.hw;
    cache.valid  = 1;
    mxh_strlcpy(cache.hwloc_xml, xml ? xml : "", sizeof(cache.hwloc_xml));
    mxh_strlcpy(cache.nccl_file, nccl ? nccl : "", sizeof(cache.nccl_file));
    *machine_p = cache.chosen;
    return MXH_OK;
}

/* ---- CUDA, loaded on demand ---------------------------------------------------- */

typedef int (*cuda_count_fn)(int *);
typedef int (*cuda_get_fn)(int *);
typedef int (*cuda_busid_fn)(char *, int, int);
typedef int (*cuda_p2p_attr_fn)(int *, int, int, int);
typedef int (*cuda_dev_attr_fn)(int *, int, int);

#define MXH_CUDA_P2P_ACCESS_SUPPORTED 2 /* cudaDevP2PAttrAccessSupported */
#define MXH_CUDA_P2P_NATIVE_ATOMIC    3 /* cudaDevP2PAttrNativeAtomicSupported */

/* The CUDA runtime if this process can load it (kept loaded: unloading CUDA under a
 * live context is unsafe), else NULL. */
static void *cuda_runtime(void)
{
    static const char *const libs[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12",
                                       "libcudart.so.11.0"};
    static void *lib;
    static int tried;

    if (!tried) {
        tried = 1;
        for (size_t i = 0; i < sizeof(libs) / sizeof(libs[0]) && lib == NULL; i++)
            lib = dlopen(libs[i], RTLD_NOW | RTLD_LOCAL);
    }
    return lib;
}

/* Without NVLink information from hwloc, NVLink islands from CUDA peer attributes:
 * two visible GPUs are joined when peer access is supported with native atomics (which
 * PCIe peer access does not offer). GPUs CUDA does not show keep their own island. */
static void cuda_nvlink_islands(mxh_machine_t *m)
{
    void *lib = cuda_runtime();
    cuda_count_fn count;
    cuda_busid_fn bus;
    cuda_p2p_attr_fn attr;
    int n = 0, *gpu_of_dev = NULL, *parent = NULL, *scratch = NULL, links = 0;

    if (lib == NULL || m->ngpus < 2 || m->has_nvlink)
        return;
    count = (cuda_count_fn)dlsym(lib, "cudaGetDeviceCount");
    bus   = (cuda_busid_fn)dlsym(lib, "cudaDeviceGetPCIBusId");
    attr  = (cuda_p2p_attr_fn)dlsym(lib, "cudaDeviceGetP2PAttribute");
    if (!count || !bus || !attr || count(&n) != 0 || n < 2)
        return;
    gpu_of_dev = malloc(sizeof(int) * (size_t)n);
    parent     = malloc(sizeof(int) * (size_t)m->ngpus);
    scratch    = malloc(sizeof(int) * (size_t)m->ngpus);
    if (gpu_of_dev == NULL || parent == NULL || scratch == NULL)
        goto out;
    for (int d = 0; d < n; d++) {
        char raw[64], busid[MXH_BUSID_LEN];
        gpu_of_dev[d] = -1;
        if (bus(raw, (int)sizeof(raw), d) == 0 && mxh_busid_normalize(raw, busid) == 0)
            gpu_of_dev[d] = mxh_machine_find_gpu(m, busid);
    }
    for (int g = 0; g < m->ngpus; g++)
        parent[g] = g;
    for (int a = 0; a < n; a++)
        for (int b = a + 1; b < n; b++) {
            int access = 0, atomics = 0;
            if (gpu_of_dev[a] < 0 || gpu_of_dev[b] < 0)
                continue;
            if (attr(&access, MXH_CUDA_P2P_ACCESS_SUPPORTED, a, b) == 0 && access &&
                attr(&atomics, MXH_CUDA_P2P_NATIVE_ATOMIC, a, b) == 0 && atomics) {
                mxh_uf_union(parent, gpu_of_dev[a], gpu_of_dev[b]);
                links++;
            }
        }
    if (links > 0) {
        mxh_machine_number_islands(m, parent, scratch);
        m->has_nvlink = 1;
        mxh_debug("discovery: %d NVLink island(s) from CUDA peer attributes", m->nislands);
    }
out:
    free(gpu_of_dev);
    free(parent);
    free(scratch);
}

void mxh_discover_cuda_busid(char busid[MXH_BUSID_LEN])
{
    void *lib = cuda_runtime();
    char raw[64];
    int n = 0, dev = 0;

    busid[0] = '\0';
    if (lib == NULL)
        return;
    cuda_count_fn count = (cuda_count_fn)dlsym(lib, "cudaGetDeviceCount");
    cuda_get_fn get     = (cuda_get_fn)dlsym(lib, "cudaGetDevice");
    cuda_busid_fn bus   = (cuda_busid_fn)dlsym(lib, "cudaDeviceGetPCIBusId");
    if (count && get && bus && count(&n) == 0 && n > 0 && get(&dev) == 0 &&
        bus(raw, (int)sizeof(raw), dev) == 0 && mxh_busid_normalize(raw, busid) != 0)
        busid[0] = '\0';
}

/* cudaDevAttrMpsEnabled: by number, so that the library needs no CUDA header; an
 * older runtime rejects it (cudaErrorInvalidValue), which reads as no MPS */
#define MXH_CUDA_ATTR_MPS_ENABLED 133

int mxh_discover_cuda_mps(void)
{
    void *lib = cuda_runtime();
    int n = 0, dev = 0, on = 0;

    if (lib == NULL)
        return 0;
    cuda_count_fn count   = (cuda_count_fn)dlsym(lib, "cudaGetDeviceCount");
    cuda_get_fn get       = (cuda_get_fn)dlsym(lib, "cudaGetDevice");
    cuda_dev_attr_fn attr = (cuda_dev_attr_fn)dlsym(lib, "cudaDeviceGetAttribute");
    if (count && get && attr && count(&n) == 0 && n > 0 && get(&dev) == 0 &&
        attr(&on, MXH_CUDA_ATTR_MPS_ENABLED, dev) == 0)
        return on != 0;
    return 0;
}

/* ---- record ---------------------------------------------------------------------- */

static int parse_visible(const char *s, int ngpus, int8_t *out)
{
    int n = 0;
    while (s && *s) {
        char *end;
        long v;
        while (*s == ' ' || *s == ',')
            s++;
        if (!*s)
            break;
        if (!isdigit((unsigned char)*s))
            return 0; /* UUIDs / MIG names: cannot map to bus order */
        v = strtol(s, &end, 10);
        if (v < 0 || v >= ngpus || n >= MXH_REC_MAX_VISIBLE)
            return 0;
        out[n++] = (int8_t)v;
        s = end;
    }
    return n;
}

mxh_status_t mxh_discover_fill_record(const mxh_config_t *cfg, const mxh_machine_t *m,
                                      mxh_record_t *rec)
{
    char busid[MXH_BUSID_LEN] = "";
    const char *how = NULL;

    rec->ngpus = 0;
    rec->gpu   = -1;
    rec->nnics = 0;
    if (m != NULL) {
        rec->ngpus = (int16_t)(m->ngpus < MXH_REC_MAX_GPUS ? m->ngpus : MXH_REC_MAX_GPUS);
        for (int g = 0; g < rec->ngpus; g++) {
            rec->gpu_rail[g]   = (int8_t)(m->gpus[g].nic < MXH_REC_MAX_NICS ? m->gpus[g].nic : -1);
            rec->gpu_island[g] = (int8_t)m->gpus[g].island;
        }
        rec->nnics = (int16_t)(m->nnics < MXH_REC_MAX_NICS ? m->nnics : MXH_REC_MAX_NICS);
        for (int i = 0; i < rec->nnics; i++)
            mxh_strlcpy(rec->nic_names[i], m->nics[i].name, MXH_REC_NIC_NAME);
        if (m->has_nvlink)
            rec->flags |= MXH_REC_NVLINK_INFO;
    }

    /* which GPU this rank drives: CUDA, then the explicit bus id */
    mxh_discover_cuda_busid(busid);
    if (busid[0])
        how = "CUDA current device";
    if (cfg->gpu_mps > 0 || (cfg->gpu_mps < 0 && busid[0] && mxh_discover_cuda_mps()))
        rec->flags |= MXH_REC_GPU_MPS;
    if (!busid[0] && cfg->gpu_busid[0]) {
        if (mxh_busid_normalize(cfg->gpu_busid, busid) != 0) {
            mxh_error("MPIX_HIER_GPU_BUSID='%s' is not a PCI bus id (expected dddd:bb:dd.f)",
                      cfg->gpu_busid);
            return MXH_ERR_CONFIG;
        }
        how = "MPIX_HIER_GPU_BUSID";
    }
    if (busid[0]) {
        mxh_strlcpy(rec->gpu_busid, busid, sizeof(rec->gpu_busid));
        int g = m ? mxh_machine_find_gpu(m, busid) : -1;
        if (g >= 0 && g < rec->ngpus)
            rec->gpu = (int16_t)g;
        else
            mxh_warn("GPU %s (%s) is not among the %d GPUs %s found on this node: its rail "
                     "and NVLink island are unknown",
                     busid, how, m ? m->ngpus : 0, m ? m->source : "discovery");
    } else if (rec->ngpus > 0) {
        rec->nvisible = (int16_t)parse_visible(getenv("CUDA_VISIBLE_DEVICES"), rec->ngpus,
                                               rec->visible);
    }
    if (!said_once) {
        /* once per process; at info level on the first rank only, as all say the same */
        mxh_log_level_t lvl = mxh_log_get_rank() <= 0 ? MXH_LOG_INFO : MXH_LOG_DEBUG;
        said_once = 1;
        if (m == NULL || m->ngpus == 0)
            mxh_log(lvl, "discovery: no GPU found (%s): rails are local ranks",
                     m ? m->source : "no machine description");
        else if (m->nnics == 0)
            mxh_log(lvl, "discovery: %d GPUs but no NIC found (%s): rails are local ranks",
                     m->ngpus, m->source);
    }
    return MXH_OK;
}

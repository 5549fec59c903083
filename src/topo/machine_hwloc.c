/* Node discovery with hwloc: GPUs, NICs, their PCIe placement, NVLink islands
 * and the GPU -> NIC (rail) assignment, from the live machine or from an
 * hwloc XML export (v2, or v1 with hwloc 2.x). Also the helpers of machine.h
 * that do not need hwloc (they are built even without it, so that the NCCL
 * topology loader can use them).
 *
 * What is read from the hwloc tree:
 *   - GPUs: PCI devices 10de with class 0x0300 (VGA) or 0x0302 (3D), sorted
 *     by (domain, bus, dev, func). NVSwitches (10de, class 0x0680, or
 *     subtype "NVSwitch") are not GPUs. Model: the "GPUModel" info of an OS
 *     device below the PCI device (CUDA/NVML name, as nvidia-smi prints it),
 *     else the PCI "PCIDevice" info (pci.ids name), else "".
 *   - NICs: PCI functions carrying an OpenFabrics OS device (mlx5_N, hfi1_N,
 *     EFA rdmapX): hpc = 1. Only when the node has none, PCI functions
 *     carrying a Network OS device (ethN, enX) are used (hpc = 0). OS devices
 *     without a PCI parent (virtual, loopback) are ignored. One PCI function
 *     is one NIC whatever number of OS devices it has (mlx5_0 + ib0), named
 *     after its first OpenFabrics OS device (first Network one otherwise).
 *   - PCIe distance between a GPU and a NIC, from their common ancestor in
 *     the tree: a PCI-to-PCI bridge (a switch, or a root port leading to
 *     one) -> same switch; a host bridge -> same host bridge; otherwise the
 *     CPU-side objects they hang from are compared: same NUMA node, same
 *     package, else other socket (unknown if the packages are unknown).
 *   - Rails: GPUs are taken in bus order; each picks, among the NICs at its
 *     minimal distance, the one serving the fewest GPUs so far (ties: bus
 *     order). Equally near GPUs and NICs are so paired one-to-one, and GPUs
 *     share a NIC only when there are fewer nearest NICs than GPUs.
 *   - NVLink islands: the "NVLinkBandwidth" distances matrix (added by the
 *     NVML backend). Its objects may be GPU OS devices (nvmlN, cudaN: mapped
 *     to their PCI parent), NVSwitch PCI devices and CPU packages. Two GPUs
 *     are in one island when a chain of non-zero links joins them through
 *     GPUs and NVSwitches (any I/O object of the matrix that is not one of
 *     our GPUs is treated as an NVSwitch). Links to CPU objects (POWER8/9
 *     NVLink to the CPU) do not join islands. Without the matrix every GPU
 *     is its own island and has_nvlink is 0.
 */
#include "config.h"

#include "topo/machine.h"
#include "topo/xml_check.h"
#include "util/log.h"
#include "util/str.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HAVE_HWLOC
#include "topo/hwloc_compat.h"
#endif

#ifdef HAVE_HWLOC

/* ------------------------------------------------------------------------ */
/* hwloc discovery                                                          */

#define NVIDIA_VENDOR      0x10de
#define PCI_CLASS_VGA      0x0300
#define PCI_CLASS_3D       0x0302
#define NVLINK_MATRIX_NAME "NVLinkBandwidth"

/* A PCI function we keep, with its sort key. */
typedef struct dev_ref {
    hwloc_obj_t obj;      /* the PCI device */
    hwloc_obj_t osdev;    /* NICs: the OS device that names it */
    uint64_t    key;      /* (domain, bus, dev, func) */
} dev_ref_t;

static uint64_t pci_key(hwloc_obj_t pci)
{
    return ((uint64_t)mxh_hwloc_pci_domain(pci) << 24) |
           ((uint64_t)pci->attr->pcidev.bus << 16) | ((uint64_t)pci->attr->pcidev.dev << 8) |
           (uint64_t)pci->attr->pcidev.func;
}

static int dev_ref_cmp(const void *a, const void *b)
{
    const dev_ref_t *x = a, *y = b;
    return (x->key > y->key) - (x->key < y->key);
}

static int pci_busid(hwloc_obj_t pci, char out[MXH_BUSID_LEN])
{
    int n = snprintf(out, MXH_BUSID_LEN, "%04x:%02x:%02x.%x", mxh_hwloc_pci_domain(pci),
                     (unsigned)pci->attr->pcidev.bus, (unsigned)pci->attr->pcidev.dev,
                     (unsigned)pci->attr->pcidev.func);
    return (n > 0 && n < MXH_BUSID_LEN) ? 0 : -1;
}

static int is_gpu_pci(hwloc_obj_t pci)
{
    return pci->attr->pcidev.vendor_id == NVIDIA_VENDOR &&
           (pci->attr->pcidev.class_id == PCI_CLASS_VGA || pci->attr->pcidev.class_id == PCI_CLASS_3D);
}

/* The PCI device an OS device hangs from, or NULL (virtual devices). */
static hwloc_obj_t osdev_pci(hwloc_obj_t osdev)
{
    hwloc_obj_t p = osdev->parent;
    return (p != NULL && p->type == HWLOC_OBJ_PCI_DEVICE) ? p : NULL;
}

static int os_index_or_minus1(hwloc_obj_t obj)
{
    if (obj == NULL || obj->os_index == HWLOC_UNKNOWN_INDEX || obj->os_index > (unsigned)INT32_MAX)
        return -1;
    return (int)obj->os_index;
}

/* NUMA node (os index) of an I/O object: the single NUMA node near the CPU
 * object it hangs from, -1 when that object is near several or none. */
static int io_numa(hwloc_topology_t topo, hwloc_obj_t io)
{
    hwloc_obj_t cpu = hwloc_get_non_io_ancestor_obj(topo, io);
    int first;
    if (cpu == NULL || cpu->nodeset == NULL || hwloc_bitmap_weight(cpu->nodeset) != 1)
        return -1;
    first = hwloc_bitmap_first(cpu->nodeset);
    return first >= 0 ? first : -1;
}

/* Package (os index) of an I/O object: the package it hangs below, else the
 * only package whose CPUs include those of its CPU-side ancestor (I/O
 * attached to the Machine of a one-socket node), else -1. */
static int io_package(hwloc_topology_t topo, hwloc_obj_t io)
{
    hwloc_obj_t cpu = hwloc_get_non_io_ancestor_obj(topo, io);
    hwloc_obj_t pkg = NULL, p = NULL;

    if (cpu == NULL)
        return -1;
    if (cpu->type == HWLOC_OBJ_PACKAGE)
        return os_index_or_minus1(cpu);
    pkg = hwloc_get_ancestor_obj_by_type(topo, HWLOC_OBJ_PACKAGE, cpu);
    if (pkg != NULL)
        return os_index_or_minus1(pkg);
    if (cpu->cpuset == NULL || hwloc_bitmap_iszero(cpu->cpuset))
        return -1;
    while ((p = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_PACKAGE, p)) != NULL) {
        if (p->cpuset != NULL && hwloc_bitmap_isincluded(cpu->cpuset, p->cpuset))
            return os_index_or_minus1(p);
    }
    return -1;
}

/* hwloc_get_common_ancestor_obj() compares depths, which are negative
 * (virtual) for I/O objects: walk the parent chains instead. */
static hwloc_obj_t common_ancestor(hwloc_obj_t a, hwloc_obj_t b)
{
    hwloc_obj_t x, y;
    for (x = a; x != NULL; x = x->parent)
        for (y = b; y != NULL; y = y->parent)
            if (x == y)
                return x;
    return NULL;
}

static mxh_pci_distance_t pci_distance(hwloc_obj_t gpu, const mxh_gpu_t *g, hwloc_obj_t nic,
                                       const mxh_nic_t *n)
{
    hwloc_obj_t c = common_ancestor(gpu, nic);

    if (c != NULL && c->type == HWLOC_OBJ_BRIDGE)
        return c->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI ? MXH_PCI_SAME_SWITCH
                                                                     : MXH_PCI_SAME_HOSTBRIDGE;
    if (c != NULL && c->type == HWLOC_OBJ_PCI_DEVICE) /* functions of one device */
        return MXH_PCI_SAME_SWITCH;
    if (g->numa >= 0 && g->numa == n->numa)
        return MXH_PCI_SAME_NUMA;
    if (g->package >= 0 && g->package == n->package)
        return MXH_PCI_SAME_PACKAGE;
    if (g->package >= 0 && n->package >= 0)
        return MXH_PCI_OTHER_SOCKET;
    return MXH_PCI_UNKNOWN;
}

static void gpu_model(hwloc_obj_t pci, char *out, size_t size)
{
    hwloc_obj_t c;
    const char *s;

    for (c = pci->io_first_child; c != NULL; c = c->next_sibling) {
        if (c->type != HWLOC_OBJ_OS_DEVICE)
            continue;
        s = hwloc_obj_get_info_by_name(c, "GPUModel");
        if (s != NULL && s[0] != '\0') {
            mxh_strlcpy(out, s, size);
            return;
        }
    }
    s = hwloc_obj_get_info_by_name(pci, "PCIDevice");
    mxh_strlcpy(out, s != NULL ? s : "", size);
}

/* @cap zeroed references to devices of the kind @what into @refs_p; NULL when @cap is 0. */
static mxh_status_t refs_alloc(int cap, const char *what, dev_ref_t **refs_p)
{
    *refs_p = NULL;
    if (cap == 0)
        return MXH_OK;
    *refs_p = calloc((size_t)cap, sizeof(**refs_p));
    if (*refs_p == NULL) {
        mxh_error("hwloc discovery: out of memory for %d %s records", cap, what);
        return MXH_ERR_NO_MEMORY;
    }
    return MXH_OK;
}

/* GPUs: 10de PCI devices of class VGA/3D, in bus order. */
static mxh_status_t collect_gpus(hwloc_topology_t topo, dev_ref_t **refs_p, int *n_p)
{
    hwloc_obj_t pci = NULL;
    dev_ref_t *refs;
    int n = 0, cap = 0;
    mxh_status_t st;

    while ((pci = hwloc_get_next_pcidev(topo, pci)) != NULL)
        if (is_gpu_pci(pci))
            cap++;
    *refs_p = NULL;
    *n_p = 0;
    if ((st = refs_alloc(cap, "GPU", &refs)) != MXH_OK || refs == NULL)
        return st;
    while ((pci = hwloc_get_next_pcidev(topo, pci)) != NULL && n < cap) {
        if (!is_gpu_pci(pci))
            continue;
        refs[n].obj = pci;
        refs[n].key = pci_key(pci);
        n++;
    }
    qsort(refs, (size_t)n, sizeof(*refs), dev_ref_cmp);
    *refs_p = refs;
    *n_p = n;
    return MXH_OK;
}

/* NICs: one per PCI function carrying an OS device of @kind, in bus order. */
static mxh_status_t collect_nics(hwloc_topology_t topo, mxh_hwloc_osdev_kind_t kind,
                                 dev_ref_t **refs_p, int *n_p)
{
    hwloc_obj_t os = NULL, pci;
    dev_ref_t *refs;
    int n = 0, cap = 0, i;
    mxh_status_t st;

    while ((os = hwloc_get_next_osdev(topo, os)) != NULL)
        if (mxh_hwloc_osdev_is(os, kind) && osdev_pci(os) != NULL)
            cap++;
    *refs_p = NULL;
    *n_p = 0;
    if ((st = refs_alloc(cap, "NIC", &refs)) != MXH_OK || refs == NULL)
        return st;
    while ((os = hwloc_get_next_osdev(topo, os)) != NULL && n < cap) {
        if (!mxh_hwloc_osdev_is(os, kind) || (pci = osdev_pci(os)) == NULL)
            continue;
        for (i = 0; i < n; i++)
            if (refs[i].obj == pci)
                break;
        if (i < n) /* second OS device of one function: keep the first name */
            continue;
        refs[n].obj   = pci;
        refs[n].osdev = os;
        refs[n].key   = pci_key(pci);
        n++;
    }
    qsort(refs, (size_t)n, sizeof(*refs), dev_ref_cmp);
    *refs_p = refs;
    *n_p = n;
    return MXH_OK;
}

/* GPU -> NIC: nearest NIC, spreading equally near GPUs over equally near
 * NICs (see the file comment and mxh_machine_assign_rails). */
static mxh_status_t assign_rails(mxh_machine_t *m, const dev_ref_t *gpus, const dev_ref_t *nics)
{
    mxh_pci_distance_t *dist;

    if (m->ngpus == 0 || m->nnics == 0) {
        mxh_machine_assign_rails(m, NULL);
        return MXH_OK;
    }
    dist = malloc(sizeof(*dist) * (size_t)m->ngpus * (size_t)m->nnics);
    if (dist == NULL) {
        mxh_error("hwloc discovery: out of memory");
        return MXH_ERR_NO_MEMORY;
    }
    for (int g = 0; g < m->ngpus; g++)
        for (int k = 0; k < m->nnics; k++)
            dist[(size_t)g * (size_t)m->nnics + (size_t)k] =
                pci_distance(gpus[g].obj, &m->gpus[g], nics[k].obj, &m->nics[k]);
    mxh_machine_assign_rails(m, dist);
    free(dist);
    return MXH_OK;
}

/* Adds the links of one NVLink matrix to the union-find. Returns whether
 * one of our GPUs is in the matrix. */
static int nvlink_matrix_links(const struct hwloc_distances_s *d, const dev_ref_t *gpus, int ngpus,
                               int *parent, int *node, hwloc_obj_t *switches, int *nswitches)
{
    unsigned i, j, nb = d->nbobjs;
    int has_gpu = 0, g;

    /* node[i]: GPU index, ngpus + switch index, or -1 (CPU side, unknown) */
    for (i = 0; i < nb; i++) {
        hwloc_obj_t o = d->objs[i];
        node[i] = -1;
        if (o == NULL)
            continue;
        if (o->type == HWLOC_OBJ_OS_DEVICE) {
            o = osdev_pci(o);
            if (o == NULL)
                continue;
        }
        if (o->type != HWLOC_OBJ_PCI_DEVICE && o->type != HWLOC_OBJ_BRIDGE)
            continue; /* Package, NUMA node...: NVLink to the CPU */
        for (g = 0; g < ngpus; g++)
            if (gpus[g].obj == o)
                break;
        if (g < ngpus) {
            node[i] = g;
            has_gpu = 1;
            continue;
        }
        for (g = 0; g < *nswitches; g++)
            if (switches[g] == o)
                break;
        if (g == *nswitches)
            switches[(*nswitches)++] = o;
        node[i] = ngpus + g;
    }
    for (i = 0; i < nb; i++) {
        for (j = i + 1; j < nb; j++) {
            if (node[i] < 0 || node[j] < 0)
                continue;
            if (d->values[i * nb + j] == 0 && d->values[j * nb + i] == 0)
                continue;
            mxh_uf_union(parent, node[i], node[j]);
        }
    }
    return has_gpu;
}

static mxh_status_t compute_islands(hwloc_topology_t topo, mxh_machine_t *m, const dev_ref_t *gpus)
{
    struct hwloc_distances_s **dist = NULL;
    unsigned nr = 0, k, maxobjs = 0;
    int *parent = NULL, *node = NULL, *island_of_root = NULL;
    hwloc_obj_t *switches = NULL;
    int nswitches = 0, nnodes, g;
    mxh_status_t st = MXH_OK;

    m->has_nvlink = 0;
    m->nislands = 0;
    if (m->ngpus == 0)
        return MXH_OK;

    if (hwloc_distances_get_by_name(topo, NVLINK_MATRIX_NAME, &nr, NULL, 0) != 0)
        nr = 0;
    if (nr > 0) {
        unsigned got = nr;
        dist = calloc(nr, sizeof(*dist));
        if (dist == NULL) {
            mxh_error("hwloc discovery: out of memory for %u distance matrices", nr);
            st = MXH_ERR_NO_MEMORY;
            goto out;
        }
        if (hwloc_distances_get_by_name(topo, NVLINK_MATRIX_NAME, &got, dist, 0) != 0) {
            mxh_warn("hwloc: cannot read the %s matrix (%s); GPUs taken as not NVLink-connected",
                     NVLINK_MATRIX_NAME, strerror(errno));
            got = 0;
        }
        nr = got < nr ? got : nr;
        for (k = 0; k < nr; k++)
            if (dist[k] != NULL && dist[k]->nbobjs > maxobjs)
                maxobjs = dist[k]->nbobjs;
    }

    nnodes = m->ngpus + (int)maxobjs * (int)(nr > 0 ? nr : 1);
    parent = malloc((size_t)nnodes * sizeof(*parent));
    island_of_root = malloc((size_t)nnodes * sizeof(*island_of_root));
    node = malloc((size_t)(maxobjs > 0 ? maxobjs : 1) * sizeof(*node));
    switches = malloc((size_t)(nnodes - m->ngpus > 0 ? nnodes - m->ngpus : 1) * sizeof(*switches));
    if (parent == NULL || island_of_root == NULL || node == NULL || switches == NULL) {
        mxh_error("hwloc discovery: out of memory for NVLink islands (%d nodes)", nnodes);
        st = MXH_ERR_NO_MEMORY;
        goto out;
    }
    for (g = 0; g < nnodes; g++) {
        parent[g] = g;
        island_of_root[g] = -1;
    }
    for (k = 0; k < nr; k++) {
        if (dist[k] == NULL)
            continue;
        if (nvlink_matrix_links(dist[k], gpus, m->ngpus, parent, node, switches, &nswitches))
            m->has_nvlink = 1;
    }
    mxh_machine_number_islands(m, parent, island_of_root);

out:
    free(switches);
    free(node);
    free(island_of_root);
    free(parent);
    if (dist != NULL) {
        for (k = 0; k < nr; k++)
            if (dist[k] != NULL)
                hwloc_distances_release(topo, dist[k]);
        free(dist);
    }
    return st;
}

/* Opens the topology: this machine (@xml_path NULL) or an XML export. The export is read
 * once and checked (topo/xml_check.h) before hwloc sees the very same bytes: hwloc 2.9's
 * minimalistic importer crashes on some malformed files instead of failing. */
static mxh_status_t topology_open(const char *xml_path, hwloc_topology_t *topo_p)
{
    hwloc_topology_t topo = NULL;
    mxh_status_t st = MXH_OK;
    unsigned v = hwloc_get_api_version();
    char *text = NULL;
    size_t len = 0;

    *topo_p = NULL;
    if (xml_path != NULL &&
        (st = mxh_xml_read_checked(xml_path, "hwloc XML", "topology", MXH_XML_HWLOC, &text, &len)) != MXH_OK)
        return st; /* logged: "PATH:LINE: malformed hwloc XML: cause" */
    if (hwloc_topology_init(&topo) != 0) {
        mxh_error("hwloc_topology_init failed: %s", strerror(errno));
        free(text);
        return MXH_ERR_NO_MEMORY;
    }
    /* Keep every PCI and OS device (the default drops most of them), before
     * any load, XML included. Include disallowed resources: the PCIe
     * placement of devices does not depend on our cgroup. */
    if (hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL) != 0 ||
        hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED) != 0) {
        mxh_error("hwloc: cannot configure I/O discovery: %s", strerror(errno));
        st = MXH_ERR_UNSUPPORTED;
        goto fail;
    }
    /* the length with the ending NUL, as hwloc_topology_export_xmlbuffer counts it */
    if (xml_path != NULL && hwloc_topology_set_xmlbuffer(topo, text, (int)len + 1) != 0) {
        mxh_error("cannot load hwloc XML %s: not a valid hwloc XML export for hwloc %u.%u (%s)%s",
                  xml_path, v >> 16, (v >> 8) & 0xff, strerror(errno),
                  mxh_hwloc_xml_v1_supported() ? "" : "; hwloc 1.x exports need hwloc 2.x");
        st = MXH_ERR_PARSE;
        goto fail;
    }
    if (hwloc_topology_load(topo) != 0) {
        if (xml_path != NULL) {
            mxh_error("cannot load hwloc XML %s: invalid content for hwloc %u.%u (%s)%s", xml_path,
                      v >> 16, (v >> 8) & 0xff, strerror(errno),
                      mxh_hwloc_xml_v1_supported() ? "" : "; hwloc 1.x exports need hwloc 2.x");
            st = MXH_ERR_PARSE;
        } else {
            mxh_error("hwloc could not discover this machine: %s", strerror(errno));
            st = MXH_ERR_IO;
        }
        goto fail;
    }
    free(text);
    *topo_p = topo;
    return MXH_OK;

fail:
    free(text);
    hwloc_topology_destroy(topo);
    return st;
}

/* The GPUs of @gpus whose bus id fits into m->gpus, in order (@gpus is compacted alike). */
static void add_gpus(hwloc_topology_t topo, mxh_machine_t *m, dev_ref_t *gpus, int ngpus)
{
    for (int i = 0; i < ngpus; i++) {
        mxh_gpu_t *g = &m->gpus[m->ngpus];
        if (pci_busid(gpus[i].obj, g->busid) != 0) {
            mxh_warn("hwloc: GPU with PCI domain %x ignored (bus id too long)",
                     mxh_hwloc_pci_domain(gpus[i].obj));
            continue;
        }
        gpu_model(gpus[i].obj, g->model, sizeof(g->model));
        g->numa = io_numa(topo, gpus[i].obj);
        g->package = io_package(topo, gpus[i].obj);
        g->island = m->ngpus;
        g->nic = -1;
        g->nic_distance = MXH_PCI_UNKNOWN;
        gpus[m->ngpus] = gpus[i];
        m->ngpus++;
    }
}

/* The NICs of @nics whose bus id fits into m->nics, in order (@nics is compacted alike);
 * @hpc: they are OpenFabrics ports. */
static void add_nics(hwloc_topology_t topo, mxh_machine_t *m, dev_ref_t *nics, int nnics,
                     int hpc)
{
    for (int i = 0; i < nnics; i++) {
        mxh_nic_t *n = &m->nics[m->nnics];
        if (pci_busid(nics[i].obj, n->busid) != 0) {
            mxh_warn("hwloc: NIC %s with PCI domain %x ignored (bus id too long)",
                     nics[i].osdev->name ? nics[i].osdev->name : "?",
                     mxh_hwloc_pci_domain(nics[i].obj));
            continue;
        }
        mxh_strlcpy(n->name, nics[i].osdev->name ? nics[i].osdev->name : "", sizeof(n->name));
        n->hpc = hpc;
        n->numa = io_numa(topo, nics[i].obj);
        n->package = io_package(topo, nics[i].obj);
        n->ngpus = 0;
        nics[m->nnics] = nics[i];
        m->nnics++;
    }
}

/* The machine found, in the debug log. */
static void log_machine(const mxh_machine_t *m, int hpc)
{
    mxh_debug("%s: %d GPU(s), %d NIC(s) (%s), %d NVLink island(s)%s", m->source, m->ngpus,
              m->nnics, hpc ? "OpenFabrics" : "Ethernet", m->nislands,
              m->has_nvlink ? "" : " (no NVLink information)");
    for (int i = 0; i < m->ngpus; i++)
        mxh_debug("  GPU %d %s \"%s\" numa %d package %d island %d nic %d (%s)", i,
                  m->gpus[i].busid, m->gpus[i].model, m->gpus[i].numa, m->gpus[i].package,
                  m->gpus[i].island, m->gpus[i].nic, mxh_pci_distance_name(m->gpus[i].nic_distance));
    for (int i = 0; i < m->nnics; i++)
        mxh_debug("  NIC %d %s %s hpc %d numa %d package %d serves %d GPU(s)", i, m->nics[i].busid,
                  m->nics[i].name, m->nics[i].hpc, m->nics[i].numa, m->nics[i].package,
                  m->nics[i].ngpus);
}

mxh_status_t mxh_machine_from_hwloc(const char *xml_path, mxh_machine_t **machine_p)
{
    hwloc_topology_t topo = NULL;
    mxh_machine_t *m = NULL;
    dev_ref_t *gpus = NULL, *nics = NULL;
    int ngpus = 0, nnics = 0, hpc = 1;
    mxh_status_t st;

    if (machine_p == NULL) {
        mxh_error("mxh_machine_from_hwloc: machine_p is NULL");
        return MXH_ERR_INVALID_PARAM;
    }
    *machine_p = NULL;

    st = topology_open(xml_path, &topo);
    if (st != MXH_OK)
        return st;

    st = collect_gpus(topo, &gpus, &ngpus);
    if (st != MXH_OK)
        goto out;
    st = collect_nics(topo, MXH_HWLOC_OSDEV_OPENFABRICS, &nics, &nnics);
    if (st != MXH_OK)
        goto out;
    if (nnics == 0) { /* no HPC fabric: fall back to Ethernet */
        hpc = 0;
        st = collect_nics(topo, MXH_HWLOC_OSDEV_NETWORK, &nics, &nnics);
        if (st != MXH_OK)
            goto out;
    }

    m = calloc(1, sizeof(*m));
    if (m == NULL || (ngpus > 0 && (m->gpus = calloc((size_t)ngpus, sizeof(*m->gpus))) == NULL) ||
        (nnics > 0 && (m->nics = calloc((size_t)nnics, sizeof(*m->nics))) == NULL)) {
        mxh_error("hwloc discovery: out of memory for the machine record");
        st = MXH_ERR_NO_MEMORY;
        goto out;
    }
    if (xml_path != NULL)
        snprintf(m->source, sizeof(m->source), "hwloc XML %s", xml_path);
    else
        mxh_strlcpy(m->source, "hwloc", sizeof(m->source));

    add_gpus(topo, m, gpus, ngpus);
    add_nics(topo, m, nics, nnics, hpc);

    assign_rails(m, gpus, nics);
    st = compute_islands(topo, m, gpus);
    if (st != MXH_OK)
        goto out;

    log_machine(m, hpc);
    *machine_p = m;
    m = NULL;

out:
    mxh_machine_destroy(m);
    free(nics);
    free(gpus);
    hwloc_topology_destroy(topo);
    return st;
}

#else /* !HAVE_HWLOC */

mxh_status_t mxh_machine_from_hwloc(const char *xml_path, mxh_machine_t **machine_p)
{
    if (machine_p != NULL)
        *machine_p = NULL;
    if (xml_path != NULL) /* a file the user named: an error; the live machine degrades */
        mxh_error("cannot read %s: mpix-hier was built without hwloc (install libhwloc-dev, "
                  "reconfigure)", xml_path);
    else
        mxh_debug("built without hwloc: no description of this machine");
    return MXH_ERR_UNSUPPORTED;
}

#endif

/* What one node looks like: its GPUs and NICs, their PCIe placement, NVLink
 * islands, and which NIC (rail) serves each GPU. Built from hwloc (the live
 * machine or an XML export) or from an NCCL topology file. Plain records, no
 * MPI: unit tests load real machines' exports. */
#ifndef MXH_MACHINE_H
#define MXH_MACHINE_H

#include <stddef.h>

#include "util/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MXH_BUSID_LEN 16 /* "0000:07:00.0" + NUL */

typedef enum mxh_pci_distance {
    MXH_PCI_SAME_SWITCH = 0, /* behind the same PCIe switch (bridge below the host bridge) */
    MXH_PCI_SAME_HOSTBRIDGE, /* same host bridge / root complex */
    MXH_PCI_SAME_NUMA,       /* same NUMA node */
    MXH_PCI_SAME_PACKAGE,    /* same package (socket) */
    MXH_PCI_OTHER_SOCKET,    /* across the inter-socket link */
    MXH_PCI_UNKNOWN
} mxh_pci_distance_t;

typedef struct mxh_gpu {
    char busid[MXH_BUSID_LEN]; /* PCI bus id, lower case, "dddd:bb:dd.f" */
    char model[64];            /* e.g. "Tesla V100-SXM3-32GB-H", "" if unknown */
    int  numa;                 /* NUMA node (os index), -1 unknown */
    int  package;              /* package (os index), -1 unknown */
    int  island;               /* NVLink island index within the node (0..), every GPU
                                  without NVLink is its own island */
    int  nic;                  /* index into nics[] of the NIC serving it, -1 none */
    mxh_pci_distance_t nic_distance;
} mxh_gpu_t;

typedef struct mxh_nic {
    char busid[MXH_BUSID_LEN];
    char name[32];             /* OS device: "mlx5_0", "hfi1_0", "rdmap197s0", "eth0" */
    int  hpc;                  /* InfiniBand/OmniPath/EFA/RoCE (OpenFabrics OS device) */
    int  numa, package;
    int  ngpus;                /* GPUs it serves */
} mxh_nic_t;

typedef struct mxh_machine {
    char       source[256];    /* "hwloc", "hwloc XML <path>", "NCCL topology <path>" */
    int        ngpus;
    mxh_gpu_t *gpus;           /* in PCI bus order */
    int        nnics;
    mxh_nic_t *nics;           /* the NICs rails are counted over, in PCI bus order */
    int        nislands;
    int        has_nvlink;     /* NVLink information was present */
} mxh_machine_t;

/* Load from hwloc: @xml_path NULL = this machine, else an hwloc XML export
 * (v1 or v2). The I/O filter keeps every PCI and OS device. */
mxh_status_t mxh_machine_from_hwloc(const char *xml_path, mxh_machine_t **machine_p);
/* Load from an NCCL topology XML (root <system>). */
mxh_status_t mxh_machine_from_nccl(const char *path, mxh_machine_t **machine_p);
/* The same from the @len bytes at @text, named @path in messages. */
mxh_status_t mxh_machine_from_nccl_text(const char *text, size_t len, const char *path,
                                        mxh_machine_t **machine_p);
void mxh_machine_destroy(mxh_machine_t *machine);

/* Index of the GPU with this PCI bus id (any case, domain optional), or -1. */
int mxh_machine_find_gpu(const mxh_machine_t *machine, const char *busid);

/* Normalize a PCI bus id to "dddd:bb:dd.f" lower case; 0 on success. */
int mxh_busid_normalize(const char *in, char out[MXH_BUSID_LEN]);

const char *mxh_pci_distance_name(mxh_pci_distance_t d);

/* ---- for the loaders ---- */

/* GPU -> NIC for every GPU from @dist[g * nnics + k] (NULL: no NIC): the nearest NIC;
 * among equally near ones the one serving the fewest GPUs so far, ties in bus order,
 * so equally near GPUs spread one-to-one and GPUs outnumbering NICs share them. */
void mxh_machine_assign_rails(mxh_machine_t *machine, const mxh_pci_distance_t *dist);

/* Union-find (path halving; the smaller index becomes the root). */
int mxh_uf_find(int *parent, int x);
void mxh_uf_union(int *parent, int a, int b);
/* Number the islands of GPUs 0..ngpus-1 from a union-find over them (and possibly
 * more elements); @scratch has as many ints as @parent. Returns nislands. */
int mxh_machine_number_islands(mxh_machine_t *machine, int *parent, int *scratch);

#ifdef __cplusplus
}
#endif

#endif

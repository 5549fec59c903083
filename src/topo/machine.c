/* Machine records, whatever their source (hwloc, NCCL topology file): bus ids,
 * distances, the GPU -> NIC (rail) rule and NVLink island numbering. */
#include "topo/machine.h"
#include "util/log.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* Reads 1..@maxdigits hex digits at *@p; advances *@p. */
static int parse_hex(const char **p, int maxdigits, unsigned long *val)
{
    unsigned long v = 0;
    int n = 0;
    while (isxdigit((unsigned char)**p)) {
        int c = tolower((unsigned char)**p);
        if (n == maxdigits)
            return -1;
        v = v * 16 + (unsigned long)(isdigit(c) ? c - '0' : c - 'a' + 10);
        n++;
        (*p)++;
    }
    if (n == 0)
        return -1;
    *val = v;
    return 0;
}

int mxh_busid_normalize(const char *in, char out[MXH_BUSID_LEN])
{
    unsigned long f[3], func;
    const char *p = in;
    int nfields = 0, n;

    if (out == NULL)
        return -1;
    out[0] = '\0';
    if (in == NULL)
        return -1;
    while (isspace((unsigned char)*p))
        p++;
    /* [domain:]bus:dev.func; the domain has up to 8 digits (NVML writes
     * "00000000:07:00.0"), bus and dev up to 2, func 1. */
    for (;;) {
        if (parse_hex(&p, 8, &f[nfields]) != 0)
            return -1;
        nfields++;
        if (*p == ':' && nfields < 3) {
            p++;
            continue;
        }
        break;
    }
    if (nfields < 2 || *p != '.')
        return -1;
    p++;
    if (parse_hex(&p, 1, &func) != 0 || func > 7)
        return -1;
    while (isspace((unsigned char)*p))
        p++;
    if (*p != '\0')
        return -1;
    if (nfields == 2) { /* no domain */
        f[2] = f[1];
        f[1] = f[0];
        f[0] = 0;
    }
    if (f[1] > 0xff || f[2] > 0x1f)
        return -1;
    n = snprintf(out, MXH_BUSID_LEN, "%04lx:%02lx:%02lx.%lx", f[0], f[1], f[2], func);
    if (n < 0 || n >= MXH_BUSID_LEN) {
        out[0] = '\0';
        return -1;
    }
    return 0;
}

const char *mxh_pci_distance_name(mxh_pci_distance_t d)
{
    switch (d) {
    case MXH_PCI_SAME_SWITCH:     return "same-switch";
    case MXH_PCI_SAME_HOSTBRIDGE: return "same-hostbridge";
    case MXH_PCI_SAME_NUMA:       return "same-numa";
    case MXH_PCI_SAME_PACKAGE:    return "same-package";
    case MXH_PCI_OTHER_SOCKET:    return "other-socket";
    case MXH_PCI_UNKNOWN:         return "unknown";
    }
    return "unknown";
}

void mxh_machine_destroy(mxh_machine_t *machine)
{
    if (machine == NULL)
        return;
    free(machine->nics);
    free(machine->gpus);
    free(machine);
}

int mxh_machine_find_gpu(const mxh_machine_t *machine, const char *busid)
{
    char norm[MXH_BUSID_LEN];
    int i;

    if (machine == NULL || mxh_busid_normalize(busid, norm) != 0)
        return -1;
    for (i = 0; i < machine->ngpus; i++)
        if (strcmp(machine->gpus[i].busid, norm) == 0)
            return i;
    return -1;
}

/* ---- shared decisions of the loaders ---------------------------------------- */

void mxh_machine_assign_rails(mxh_machine_t *m, const mxh_pci_distance_t *dist)
{
    for (int k = 0; k < m->nnics; k++)
        m->nics[k].ngpus = 0;
    for (int g = 0; g < m->ngpus; g++) {
        mxh_gpu_t *gpu = &m->gpus[g];
        mxh_pci_distance_t best = MXH_PCI_UNKNOWN;
        int pick = -1;

        for (int k = 0; dist != NULL && k < m->nnics; k++) {
            mxh_pci_distance_t d = dist[(size_t)g * (size_t)m->nnics + (size_t)k];
            if (pick < 0 || d < best || (d == best && m->nics[k].ngpus < m->nics[pick].ngpus)) {
                best = d;
                pick = k;
            }
        }
        gpu->nic          = pick;
        gpu->nic_distance = pick >= 0 ? best : MXH_PCI_UNKNOWN;
        if (pick >= 0)
            m->nics[pick].ngpus++;
    }
}

int mxh_uf_find(int *parent, int x)
{
    while (parent[x] != x) {
        parent[x] = parent[parent[x]];
        x = parent[x];
    }
    return x;
}

void mxh_uf_union(int *parent, int a, int b)
{
    a = mxh_uf_find(parent, a);
    b = mxh_uf_find(parent, b);
    if (a < b)
        parent[b] = a;
    else if (b < a)
        parent[a] = b;
}

int mxh_machine_number_islands(mxh_machine_t *m, int *parent, int *scratch)
{
    /* scratch: one int per union-find element; islands numbered in bus order of
     * their first GPU */
    m->nislands = 0;
    for (int g = 0; g < m->ngpus; g++)
        scratch[mxh_uf_find(parent, g)] = -1;
    for (int g = 0; g < m->ngpus; g++) {
        int r = mxh_uf_find(parent, g);
        if (scratch[r] < 0)
            scratch[r] = m->nislands++;
        m->gpus[g].island = scratch[r];
    }
    return m->nislands;
}

/* The hierarchical alltoall's view of a layout (coll/alltoall.h): whether it
 * applies and the slot of every rank. Pure (no MPI), in the decision library
 * with the other layout functions, so that every rank computes the same answer
 * and unit tests can feed fabricated layouts. */
#include "config.h"

#include "coll/alltoall.h"

#include <stdlib.h>

int mxh_alltoall_applicable(const mxh_layout_t *L)
{
    int n = L->nranks, N = L->nnodes, g, last = 0;

    if (N < 2 || N > MXH_ALLTOALL_MAX_NODES || n % N != 0 || (g = n / N) < 2)
        return 0;
    /* local indices run 0..size-1 on every node: all nodes have g ranks iff no
     * index reaches g and every node has one of g-1 */
    for (int r = 0; r < n; r++) {
        if (L->local_index[r] >= g)
            return 0;
        last += L->local_index[r] == g - 1;
    }
    return last == N;
}

mxh_status_t mxh_alltoall_slots(const mxh_layout_t *L, int *slot)
{
    int n = L->nranks, N = L->nnodes;
    int *first = malloc(sizeof(int) * ((size_t)N + 1)), *by_node = malloc(sizeof(int) * (size_t)n);

    if (first == NULL || by_node == NULL) {
        free(first);
        free(by_node);
        return MXH_ERR_NO_MEMORY;
    }
    /* the ranks grouped by node (counting sort), then per rank its position in
     * (rail, local index) order among its node's ranks: O(n * ranks per node) */
    for (int v = 0; v <= N; v++)
        first[v] = 0;
    for (int r = 0; r < n; r++)
        first[L->node_of[r] + 1]++;
    for (int v = 0; v < N; v++)
        first[v + 1] += first[v];
    for (int r = 0; r < n; r++)
        by_node[first[L->node_of[r]] + L->local_index[r]] = r;
    for (int r = 0; r < n; r++) {
        int v = L->node_of[r], s = 0;
        for (int k = first[v]; k < first[v + 1]; k++) {
            int q = by_node[k];
            if (L->rail[q] < L->rail[r] ||
                (L->rail[q] == L->rail[r] && L->local_index[q] < L->local_index[r]))
                s++;
        }
        slot[r] = s;
    }
    free(first);
    free(by_node);
    return MXH_OK;
}

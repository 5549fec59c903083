// Unit tests (no MPI): records -> levels, and plans checked by a symbolic
// executor that runs every rank's plan in lockstep and tracks, for every
// element, which ranks' contributions it holds.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "coll/alltoall.h" /* has its own extern "C" (and includes mpi.h) */
extern "C" {
#include "decide/cost.h"
#include "exec/exec.h"
#include "decide/plan.h"
#include "decide/sched.h"
#include "decide/select.h"
#include "exec/p2p.h"
#include "decide/tune.h"
#include "decide/levels.h"
#include "decide/parallel.h"
#include "util/config.h"
#include "topo/record.h"
}

namespace {

const int kAllLevels = 0x7;

struct Layout {
    std::vector<mxh_record_t> recs;
    void add(const std::string &node, const std::string &leaf = "", int rail = -1)
    {
        mxh_record_t r;
        mxh_record_init(&r);
        snprintf(r.node, sizeof(r.node), "%s", node.c_str());
        snprintf(r.leaf, sizeof(r.leaf), "%s", leaf.c_str());
        r.rail = rail;
        recs.push_back(r);
    }
};

// nodes[i] ranks on node "n<i>", leaf "leaf<i / nodes_per_leaf>"; order: 0 = blocked,
// 1 = round-robin interleaved, 2 = random permutation (seeded).
Layout make_layout(const std::vector<int> &nodes, int nodes_per_leaf, int order, unsigned seed = 1)
{
    std::vector<std::pair<std::string, std::string>> ranks;
    if (order == 1) {
        int maxn = *std::max_element(nodes.begin(), nodes.end());
        for (int k = 0; k < maxn; k++)
            for (size_t v = 0; v < nodes.size(); v++)
                if (k < nodes[v])
                    ranks.push_back({"n" + std::to_string(v),
                                     nodes_per_leaf ? "leaf" + std::to_string(v / nodes_per_leaf) : ""});
    } else {
        for (size_t v = 0; v < nodes.size(); v++)
            for (int k = 0; k < nodes[v]; k++)
                ranks.push_back({"n" + std::to_string(v),
                                 nodes_per_leaf ? "leaf" + std::to_string(v / nodes_per_leaf) : ""});
        if (order == 2) {
            std::mt19937 g(seed);
            std::shuffle(ranks.begin(), ranks.end(), g);
        }
    }
    Layout L;
    for (auto &r : ranks)
        L.add(r.first, r.second);
    return L;
}

struct LayoutPtr {
    mxh_layout_t *p = nullptr;
    ~LayoutPtr() { mxh_layout_destroy(p); }
};

// A torus of nodes (dims: lengths, node n at coordinates n mod X, n / X mod Y, ...) with
// g ranks per node, rank order blocked, or shuffled (seed != 0); every record carries its
// node's coordinate, as the cluster file's torus= key gives it.
Layout make_torus(const std::vector<int> &dims, int g, unsigned seed = 0)
{
    int nn = 1;
    for (int k : dims)
        nn *= k;
    std::vector<std::pair<int, int>> ranks;
    for (int v = 0; v < nn; v++)
        for (int i = 0; i < g; i++)
            ranks.push_back({v, i});
    if (seed) {
        std::mt19937 gen(seed);
        std::shuffle(ranks.begin(), ranks.end(), gen);
    }
    Layout L;
    for (auto &r : ranks) {
        L.add("n" + std::to_string(r.first), "row");
        mxh_record_t &rec = L.recs.back();
        int v = r.first;
        rec.tndims = (int16_t)dims.size();
        for (size_t d = 0; d < dims.size(); d++) {
            rec.tcoord[d] = (int16_t)(v % dims[d]);
            v /= dims[d];
        }
    }
    return L;
}

// ---- symbolic executor ---------------------------------------------------------

struct Cell {
    long tag = -1;      // element index the value belongs to, -1: undefined
    long cnt = 0;       // number of contributions
    long sum = 0;       // sum of contributing ranks
    uint64_t xr = 0;    // xor of hashes of contributing ranks
};

uint64_t rank_hash(long r) { return (uint64_t)(r + 1) * 0x9E3779B97F4A7C15ULL; }

struct Sim {
    const mxh_layout_t *L;
    std::vector<mxh_plan_t *> plans;
    std::vector<std::vector<Cell>> buf;
    std::string error;

    ~Sim()
    {
        for (auto p : plans)
            mxh_plan_destroy(p);
    }

    Cell combine(const Cell &a, const Cell &b)
    {
        Cell c;
        if (a.tag < 0 || b.tag < 0) {
            if (error.empty())
                error = "reduction read an undefined element";
            return c;
        }
        if (a.tag != b.tag) {
            if (error.empty())
                error = "reduction mixed elements " + std::to_string(a.tag) + " and " +
                        std::to_string(b.tag);
            return c;
        }
        c.tag = a.tag;
        c.cnt = a.cnt + b.cnt;
        c.sum = a.sum + b.sum;
        c.xr = a.xr ^ b.xr;
        return c;
    }

    // run all plans; returns false on deadlock or inconsistency
    bool run()
    {
        int n = L->nranks;
        std::vector<int> pc(n, 0);
        std::map<std::pair<int, int>, std::vector<int>> groups;  // (level, color) -> ranks by coord
        for (int l = 0; l < L->nlevels; l++)
            for (int r = 0; r < n; r++) {
                auto &g = groups[{l, L->color[l][r]}];
                if ((int)g.size() < L->gsize[l][r])
                    g.resize(L->gsize[l][r], -1);
                g[L->coord[l][r]] = r;
            }
        // spread groups (level -1): the ranks of one node position, by spread key
        for (int r = 0; r < n && L->spread_p > 0; r++) {
            auto &g = groups[{-1, L->coord[0][r]}];
            g.resize(L->spread_p, -1);
            g[L->spread_key[r]] = r;
        }
        for (;;) {
            bool progress = false, done = true;
            for (int r = 0; r < n; r++) {
                if (pc[r] >= plans[r]->nsteps)
                    continue;
                done = false;
                const mxh_step_t &s = plans[r]->steps[pc[r]];
                auto &g = s.type == MXH_STEP_SPREAD ? groups[{-1, L->coord[0][r]}]
                                                    : groups[{s.level, L->color[s.level][r]}];
                if (s.type == MXH_STEP_SEND || s.type == MXH_STEP_RECV) {
                    int peer = g[s.root];
                    if (pc[peer] >= plans[peer]->nsteps)
                        continue;
                    const mxh_step_t &t = plans[peer]->steps[pc[peer]];
                    bool match = t.level == s.level && t.root == s.me &&
                                 ((s.type == MXH_STEP_SEND && t.type == MXH_STEP_RECV) ||
                                  (s.type == MXH_STEP_RECV && t.type == MXH_STEP_SEND));
                    if (!match)
                        continue;
                    if (s.count != t.count || s.offset != t.offset) {
                        error = "send/recv regions differ";
                        return false;
                    }
                    int src = s.type == MXH_STEP_SEND ? r : peer, dst = src == r ? peer : r;
                    for (size_t i = 0; i < s.count; i++)
                        buf[dst][s.offset + i] = buf[src][s.offset + i];
                    pc[r]++;
                    pc[peer]++;
                    progress = true;
                    continue;
                }
                bool ready = true;
                for (int x : g) {
                    if (x < 0 || pc[x] >= plans[x]->nsteps) {
                        ready = false;
                        break;
                    }
                    const mxh_step_t &t = plans[x]->steps[pc[x]];
                    if (t.level != s.level || t.type != s.type) {
                        ready = false;
                        break;
                    }
                }
                if (!ready)
                    continue;
                if (!exec(s, g, pc))
                    return false;
                for (int x : g)
                    pc[x]++;
                progress = true;
            }
            if (done)
                return true;
            if (!progress) {
                error = "deadlock:";
                for (int r = 0; r < n; r++)
                    if (pc[r] < plans[r]->nsteps)
                        error += " r" + std::to_string(r) + "@" +
                                 mxh_step_type_name(plans[r]->steps[pc[r]].type) + "/L" +
                                 std::to_string(plans[r]->steps[pc[r]].level);
                return false;
            }
        }
    }

    bool exec(const mxh_step_t &s, const std::vector<int> &g, const std::vector<int> &pc)
    {
        int gs = (int)g.size();
        // every member must see the same region, parts and root
        for (int k = 0; k < gs; k++) {
            const mxh_step_t &t = plans[g[k]]->steps[pc[g[k]]];
            bool same = t.offset == s.offset && t.count == s.count && t.root == s.root &&
                        t.gsize == gs && t.me == k;
            if (same && s.counts)
                same = t.counts && !memcmp(t.counts, s.counts, sizeof(int) * gs) &&
                       !memcmp(t.displs, s.displs, sizeof(int) * gs);
            if (!same) {
                error = std::string("members disagree on a ") + mxh_step_type_name(s.type) +
                        " step on level " + std::to_string(s.level);
                return false;
            }
        }
        size_t off = s.offset, cnt = s.count;
        int root = g.empty() ? -1 : g[s.root < gs ? s.root : 0];
        auto part = [&](int k, size_t &po, size_t &pn) {
            po = off + (size_t)s.displs[k];
            pn = (size_t)s.counts[k];
        };
        if (cnt == 0)
            return true;
        switch (s.type) {
        case MXH_STEP_REDUCE_SCATTER:
        case MXH_STEP_REDUCE:
        case MXH_STEP_ALLREDUCE: {
            std::vector<Cell> res(cnt);
            for (size_t i = 0; i < cnt; i++) {
                Cell c = buf[g[0]][off + i];
                for (int k = 1; k < gs; k++)
                    c = combine(c, buf[g[k]][off + i]);
                res[i] = c;
            }
            if (s.type == MXH_STEP_ALLREDUCE) {
                for (int x : g)
                    std::copy(res.begin(), res.end(), buf[x].begin() + off);
            } else if (s.type == MXH_STEP_REDUCE) {
                std::copy(res.begin(), res.end(), buf[root].begin() + off);
            } else {
                for (int k = 0; k < gs; k++) {
                    size_t po, pn;
                    part(k, po, pn);
                    for (size_t i = 0; i < cnt; i++)
                        buf[g[k]][off + i] = Cell();  // rest of the region: unspecified
                    for (size_t i = 0; i < pn; i++)
                        buf[g[k]][po + i] = res[po - off + i];
                }
            }
            break;
        }
        case MXH_STEP_SPREAD: {
            // member k: the regions of the members of key = k + port (mod ports), all
            // members of one group share the port (their node position)
            std::vector<std::vector<Cell>> res(gs, std::vector<Cell>(cnt));
            for (int k = 0; k < gs; k++) {
                const mxh_step_t &t = plans[g[k]]->steps[pc[g[k]]];
                if (t.port != s.port || t.ports != s.ports || s.ports < 2) {
                    error = "spread members disagree on the port";
                    return false;
                }
                int first = (k + s.port) % s.ports;
                for (size_t i = 0; i < cnt; i++) {
                    Cell c = buf[g[first]][off + i];
                    for (int x = first + s.ports; x < gs; x += s.ports)
                        c = combine(c, buf[g[x]][off + i]);
                    res[k][i] = c;
                }
            }
            for (int k = 0; k < gs; k++)
                std::copy(res[k].begin(), res[k].end(), buf[g[k]].begin() + off);
            break;
        }
        case MXH_STEP_ALLGATHER:
            for (int k = 0; k < gs; k++) {
                size_t po, pn;
                part(k, po, pn);
                for (int y : g)
                    if (y != g[k])
                        for (size_t i = 0; i < pn; i++)
                            buf[y][po + i] = buf[g[k]][po + i];
            }
            break;
        case MXH_STEP_BCAST:
            for (int y : g)
                if (y != root)
                    for (size_t i = 0; i < cnt; i++)
                        buf[y][off + i] = buf[root][off + i];
            break;
        case MXH_STEP_SCATTER:
            for (int k = 0; k < gs; k++) {
                size_t po, pn;
                part(k, po, pn);
                if (g[k] != root)
                    for (size_t i = 0; i < pn; i++)
                        buf[g[k]][po + i] = buf[root][po + i];
            }
            break;
        case MXH_STEP_GATHER:
            for (int k = 0; k < gs; k++) {
                size_t po, pn;
                part(k, po, pn);
                if (g[k] != root)
                    for (size_t i = 0; i < pn; i++)
                        buf[root][po + i] = buf[g[k]][po + i];
            }
            break;
        default:
            error = "unexpected step";
            return false;
        }
        return true;
    }
};

Cell contrib(long tag, long r)
{
    Cell c;
    c.tag = tag;
    c.cnt = 1;
    c.sum = r;
    c.xr = rank_hash(r);
    return c;
}

// Build every rank's plan, run them symbolically, check the collective's result.
// Returns "" on success or the first problem. @tsize: the element size the plans
// know (0: unknown; known sizes pick the latency and hybrid plans of small allreduces);
// @flags: the plan shape (MXH_PLAN_THROUGH).
std::string simulate(const mxh_layout_t *L, mxh_coll_t coll, size_t count, int root,
                     size_t tsize = 0, unsigned flags = 0)
{
    Sim sim;
    int n = L->nranks;
    sim.L = L;
    for (int r = 0; r < n; r++) {
        mxh_plan_t *p = nullptr;
        mxh_status_t st = mxh_plan_create_flags(L, r, coll, count, root, tsize, flags, &p);
        if (st != MXH_OK)
            return "plan_create failed on rank " + std::to_string(r);
        sim.plans.push_back(p);
    }
    size_t wc = sim.plans[0]->work_count;
    sim.buf.assign(n, std::vector<Cell>(wc));
    long full_sum = (long)n * (n - 1) / 2;
    uint64_t full_xr = 0;
    for (int r = 0; r < n; r++)
        full_xr ^= rank_hash(r);
    const int *pos = sim.plans[0]->block_pos;
    for (int r = 0; r < n; r++) {
        switch (coll) {
        case MXH_COLL_ALLREDUCE:
        case MXH_COLL_REDUCE:
            for (size_t i = 0; i < count; i++)
                sim.buf[r][i] = contrib((long)i, r);
            break;
        case MXH_COLL_BCAST:
            if (r == root)
                for (size_t i = 0; i < count; i++)
                    sim.buf[r][i] = contrib((long)i, r);
            break;
        case MXH_COLL_REDUCE_SCATTER_BLOCK:
            for (int d = 0; d < n; d++)
                for (size_t j = 0; j < count; j++)
                    sim.buf[r][(size_t)pos[d] * count + j] = contrib((long)(d * count + j), r);
            break;
        case MXH_COLL_ALLGATHER:
            for (size_t j = 0; j < count; j++)
                sim.buf[r][(size_t)pos[r] * count + j] = contrib((long)(r * count + j), r);
            break;
        default:
            break;
        }
    }
    if (!sim.run())
        return sim.error;
    if (!sim.error.empty())
        return sim.error;
    auto full = [&](const Cell &c, long tag) {
        return c.tag == tag && c.cnt == n && c.sum == full_sum && c.xr == full_xr;
    };
    for (int r = 0; r < n; r++) {
        for (size_t i = 0; i < count; i++) {
            bool ok = true;
            switch (coll) {
            case MXH_COLL_ALLREDUCE:
                ok = full(sim.buf[r][i], (long)i);
                break;
            case MXH_COLL_REDUCE:
                ok = r != root || full(sim.buf[r][i], (long)i);
                break;
            case MXH_COLL_BCAST: {
                const Cell &c = sim.buf[r][i];
                ok = c.tag == (long)i && c.cnt == 1 && c.sum == root;
                break;
            }
            case MXH_COLL_REDUCE_SCATTER_BLOCK:
                ok = full(sim.buf[r][(size_t)pos[r] * count + i], (long)(r * count + i));
                break;
            case MXH_COLL_ALLGATHER:
                for (int d = 0; d < n && ok; d++) {
                    const Cell &c = sim.buf[r][(size_t)pos[d] * count + i];
                    ok = c.tag == (long)(d * count + i) && c.cnt == 1 && c.sum == d;
                }
                break;
            default:
                break;
            }
            if (!ok)
                return std::string(mxh_coll_name(coll)) + ": wrong result on rank " +
                       std::to_string(r) + " element " + std::to_string(i);
        }
    }
    return "";
}

// v-plans: rank r's block has bcounts[r] elements (allgatherv, reduce_scatter).
std::string simulate_v(const mxh_layout_t *L, mxh_coll_t coll, const std::vector<size_t> &bc)
{
    Sim sim;
    int n = L->nranks;
    sim.L = L;
    for (int r = 0; r < n; r++) {
        mxh_plan_t *p = nullptr;
        if (mxh_plan_create_v(L, r, coll, bc.data(), &p) != MXH_OK)
            return "plan_create_v failed on rank " + std::to_string(r);
        sim.plans.push_back(p);
    }
    const int *pos = sim.plans[0]->block_pos;
    std::vector<size_t> off(n + 1, 0), first(n, 0); // work offset by position, tag base by rank
    std::vector<int> at(n);
    for (int r = 0; r < n; r++)
        at[pos[r]] = r;
    for (int i = 0; i < n; i++)
        off[i + 1] = off[i] + bc[at[i]];
    for (int r = 1; r < n; r++)
        first[r] = first[r - 1] + bc[r - 1];
    size_t wc = sim.plans[0]->work_count;
    if (wc != off[n])
        return "work_count " + std::to_string(wc) + " != " + std::to_string(off[n]);
    sim.buf.assign(n, std::vector<Cell>(wc));
    long full_sum = (long)n * (n - 1) / 2;
    uint64_t full_xr = 0;
    for (int r = 0; r < n; r++)
        full_xr ^= rank_hash(r);
    for (int r = 0; r < n; r++)
        for (int d = 0; d < n; d++)
            if (coll == MXH_COLL_REDUCE_SCATTER || d == r)
                for (size_t j = 0; j < bc[d]; j++)
                    sim.buf[r][off[pos[d]] + j] = contrib((long)(first[d] + j), r);
    if (!sim.run() || !sim.error.empty())
        return sim.error;
    for (int r = 0; r < n; r++)
        for (int d = 0; d < n; d++) {
            if (coll == MXH_COLL_REDUCE_SCATTER && d != r)
                continue;
            for (size_t j = 0; j < bc[d]; j++) {
                const Cell &c = sim.buf[r][off[pos[d]] + j];
                bool ok = coll == MXH_COLL_REDUCE_SCATTER
                              ? c.tag == (long)(first[d] + j) && c.cnt == n && c.sum == full_sum &&
                                    c.xr == full_xr
                              : c.tag == (long)(first[d] + j) && c.cnt == 1 && c.sum == d;
                if (!ok)
                    return std::string(mxh_coll_name(coll)) + ": wrong result on rank " +
                           std::to_string(r) + " block " + std::to_string(d) + " element " +
                           std::to_string(j);
            }
        }
    return "";
}

void check_all_colls(const Layout &lay, int mask, const std::vector<size_t> &counts,
                     bool all_roots = true)
{
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), (int)lay.recs.size(), mask, &L.p));
    if (L.p->nlevels < 1)
        return;
    int n = L.p->nranks;
    for (size_t c : counts) {
        for (int coll : {MXH_COLL_ALLREDUCE, MXH_COLL_REDUCE_SCATTER_BLOCK, MXH_COLL_ALLGATHER})
            EXPECT_EQ("", simulate(L.p, (mxh_coll_t)coll, c, -1))
                << mxh_coll_name((mxh_coll_t)coll) << " count " << c << " n " << n;
        for (int root = 0; root < n; root += (all_roots ? 1 : std::max(1, n / 3))) {
            EXPECT_EQ("", simulate(L.p, MXH_COLL_BCAST, c, root)) << "bcast count " << c << " root " << root;
            EXPECT_EQ("", simulate(L.p, MXH_COLL_REDUCE, c, root)) << "reduce count " << c << " root " << root;
            // the element size known: the chain for small ones on grid layouts
            EXPECT_EQ("", simulate(L.p, MXH_COLL_BCAST, c, root, 4))
                << "bcast (4-byte elements) count " << c << " root " << root;
            EXPECT_EQ("", simulate(L.p, MXH_COLL_REDUCE, c, root, 4))
                << "reduce (4-byte elements) count " << c << " root " << root;
            // the pipelines' shape: the root's groups move the whole region
            EXPECT_EQ("", simulate(L.p, MXH_COLL_BCAST, c, root, 0, MXH_PLAN_THROUGH))
                << "through bcast count " << c << " root " << root;
            EXPECT_EQ("", simulate(L.p, MXH_COLL_REDUCE, c, root, 0, MXH_PLAN_THROUGH))
                << "through reduce count " << c << " root " << root;
        }
    }
}

}  // namespace

// ---- levels ------------------------------------------------------------------

TEST(Levels, SingleRankIsTrivial)
{
    Layout lay = make_layout({1}, 0, 0);
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 1, kAllLevels, &L.p));
    EXPECT_EQ(0, L.p->nlevels);
    EXPECT_EQ(1, L.p->nnodes);
}

TEST(Levels, OneNodeIsOneLevel)
{
    Layout lay = make_layout({4}, 0, 0);
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 4, kAllLevels, &L.p));
    ASSERT_EQ(1, L.p->nlevels);
    EXPECT_EQ(MXH_LEVEL_NODE, L.p->type[0]);
    EXPECT_EQ(MXH_LEVEL_KIND_TOP, L.p->kind[0]);
}

TEST(Levels, OneRankPerNodeIsOneLevel)
{
    Layout lay = make_layout({1, 1, 1}, 0, 0);
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 3, kAllLevels, &L.p));
    ASSERT_EQ(1, L.p->nlevels);
    EXPECT_EQ(MXH_LEVEL_RAIL, L.p->type[0]);
}

TEST(Levels, TwoByTwo)
{
    Layout lay = make_layout({2, 2}, 0, 0);
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 4, kAllLevels, &L.p));
    ASSERT_EQ(2, L.p->nlevels);
    EXPECT_EQ(MXH_LEVEL_NODE, L.p->type[0]);
    EXPECT_EQ(MXH_LEVEL_KIND_SCATTER, L.p->kind[0]);
    EXPECT_EQ(MXH_LEVEL_RAIL, L.p->type[1]);
    EXPECT_EQ(MXH_LEVEL_KIND_TOP, L.p->kind[1]);
    // node groups {0,1} {2,3}; rail groups {0,2} {1,3}
    EXPECT_EQ(L.p->color[0][0], L.p->color[0][1]);
    EXPECT_NE(L.p->color[0][0], L.p->color[0][2]);
    EXPECT_EQ(L.p->color[1][0], L.p->color[1][2]);
    EXPECT_EQ(L.p->color[1][1], L.p->color[1][3]);
    EXPECT_NE(L.p->color[1][0], L.p->color[1][1]);
    EXPECT_EQ(1, L.p->coord[1][2]);
    char buf[1024];
    size_t need = mxh_layout_describe(L.p, lay.recs.data(), buf, sizeof(buf));
    EXPECT_LT(need, sizeof(buf));
    EXPECT_NE(nullptr, strstr(buf, "level 0 node  scatter 2 groups of 2: {0,1} {2,3}")) << buf;
    EXPECT_NE(nullptr, strstr(buf, "level 1 rail  top     2 groups of 2: {0,2} {1,3}")) << buf;
}

TEST(Levels, InterleavedRanks)
{
    Layout lay = make_layout({3, 3}, 0, 1);  // a b a b a b
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 6, kAllLevels, &L.p));
    ASSERT_EQ(2, L.p->nlevels);
    for (int r = 0; r < 6; r++) {
        EXPECT_EQ(r % 2, L.p->node_of[r]);
        EXPECT_EQ(r / 2, L.p->local_index[r]);
        EXPECT_EQ(r % 2, L.p->coord[1][r]);  // node position inside the rail group
    }
}

TEST(Levels, UnevenNodesUseLeaderKind)
{
    Layout lay = make_layout({3, 1}, 0, 0);
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 4, kAllLevels, &L.p));
    ASSERT_EQ(2, L.p->nlevels);
    EXPECT_EQ(MXH_LEVEL_KIND_LEADER, L.p->kind[0]);
    EXPECT_EQ(0, L.p->node_regular);
    // rail groups by local index: {0,3} {1} {2}
    EXPECT_EQ(L.p->color[1][0], L.p->color[1][3]);
    EXPECT_EQ(1, L.p->gsize[1][1]);
}

TEST(Levels, ShmIdSplitsNodesWithTheSameName)
{
    Layout lay = make_layout({4}, 0, 0);
    lay.recs[0].shm_id = lay.recs[2].shm_id = 0;
    lay.recs[1].shm_id = lay.recs[3].shm_id = 1;
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 4, kAllLevels, &L.p));
    EXPECT_EQ(2, L.p->nnodes);
    EXPECT_EQ(L.p->node_of[0], L.p->node_of[2]);
    EXPECT_NE(L.p->node_of[0], L.p->node_of[1]);
}

TEST(Levels, ExplicitRailsGroupByRailNotLocalIndex)
{
    Layout lay;
    lay.add("a", "", 1);
    lay.add("a", "", 0);
    lay.add("b", "", 0);
    lay.add("b", "", 1);
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 4, kAllLevels, &L.p));
    ASSERT_EQ(2, L.p->nlevels);
    EXPECT_EQ(MXH_LEVEL_KIND_SCATTER, L.p->kind[0]);
    EXPECT_EQ(L.p->color[1][0], L.p->color[1][3]);  // rail 1
    EXPECT_EQ(L.p->color[1][1], L.p->color[1][2]);  // rail 0
}

TEST(Levels, TorusOneLevelPerDimension)
{
    // 4x2x2 nodes x 8 GPUs: node level, then one level per dimension, each rail its order
    Layout lay = make_torus({4, 2, 2}, 8);
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 128, kAllLevels, &L.p));
    ASSERT_EQ(4, L.p->nlevels);
    EXPECT_EQ(MXH_LEVEL_NODE, L.p->type[0]);
    EXPECT_EQ(3, L.p->torus_ndims);
    EXPECT_EQ(8, L.p->torus_nrails);
    long load[3][2] = {};  // bytes per node over each dimension's + and - links, x 16
    for (int l = 1; l < 4; l++) {
        EXPECT_EQ(MXH_LEVEL_RAIL, L.p->type[l]);
        EXPECT_EQ(1, L.p->ring[l]);
        EXPECT_EQ(l < 3 ? MXH_LEVEL_KIND_SCATTER : MXH_LEVEL_KIND_TOP, L.p->kind[l]);
    }
    for (int c = 0; c < 8; c++) {
        // every rail crosses each dimension once
        int seen = 0;
        long frac = 16;
        for (int j = 0; j < 3; j++) {
            int e = L.p->torus_order[c * 3 + j], d = e & 3, k = L.p->torus_k[d];
            seen |= 1 << d;
            if (k == 2) {
                EXPECT_EQ(0, e & 4) << "a 2-ring has no - direction";
            }
            load[d][(e & 4) ? 1 : 0] += frac * (k - 1) / k;
            frac /= k;
        }
        EXPECT_EQ(7, seen) << "rail " << c;
    }
    // balanced: x carries (4-1)/4 of the x-first rails' shards, ... 15/16 of the vector in
    // all over 4 usable links per node (x+, x-, y, z): 15/4 per link, x 16 / 8 rails
    EXPECT_EQ(30, load[0][0]);
    EXPECT_EQ(30, load[0][1]);
    EXPECT_EQ(30, load[1][0]);
    EXPECT_EQ(30, load[2][0]);
    for (int r = 0; r < 128; r++) {
        int v = r / 8, c = r % 8, xyz[3] = {v % 4, v / 4 % 2, v / 8};
        EXPECT_EQ(c, L.p->coord[0][r]);
        for (int l = 1; l < 4; l++) {
            int e = L.p->torus_order[c * 3 + l - 1], d = e & 3, k = L.p->torus_k[d];
            EXPECT_EQ(k, L.p->gsize[l][r]);
            EXPECT_EQ((e & 4) ? (k - xyz[d]) % k : xyz[d], L.p->coord[l][r]) << r << " " << l;
            // a group: one rail, the other coordinates equal
            for (int q = 0; q < 128; q++) {
                int w = q / 8, qc[3] = {w % 4, w / 4 % 2, w / 8};
                bool same = q % 8 == c;
                for (int dd = 0; dd < 3; dd++)
                    if (dd != d && qc[dd] != xyz[dd])
                        same = false;
                EXPECT_EQ(same, L.p->color[l][q] == L.p->color[l][r]) << r << " " << q;
            }
        }
    }
    char buf[4096];
    mxh_layout_describe(L.p, lay.recs.data(), buf, sizeof(buf));
    EXPECT_NE(std::string(buf).find("torus x4 x y2 x z2, network levels per rail: 0:"),
              std::string::npos) << buf;
}

TEST(Levels, TorusShapes)
{
    struct {
        std::vector<int> dims;
        int g, nlevels;
    } cases[] = {{{4, 2, 2}, 1, 3}, {{2, 2}, 2, 3}, {{3, 1, 3}, 3, 3}, {{8}, 4, 2}, {{1, 1, 1}, 4, 1}};
    for (auto &t : cases) {
        Layout lay = make_torus(t.dims, t.g, 3);
        LayoutPtr L;
        ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), (int)lay.recs.size(), kAllLevels, &L.p));
        EXPECT_EQ(t.nlevels, L.p->nlevels) << t.dims.size() << " dims, g " << t.g;
        int nd = 0;
        for (int k : t.dims)
            nd += k > 1;
        EXPECT_EQ(nd > 0 ? nd : 0, L.p->torus_ndims);
    }
}

TEST(Levels, TorusNeedsAFullGridAndTheSpine)
{
    Layout lay = make_torus({4, 2}, 2);
    {  // without the spine level the network is one level, as without coordinates
        LayoutPtr L;
        ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 16, 0x3, &L.p));
        EXPECT_EQ(0, L.p->torus_ndims);
        EXPECT_EQ(2, L.p->nlevels);
    }
    {  // a missing node: the leaf levels (one leaf "row" here: node and rail)
        Layout part;
        part.recs.assign(lay.recs.begin(), lay.recs.end() - 2);
        LayoutPtr L;
        ASSERT_EQ(MXH_OK, mxh_layout_create(part.recs.data(), 14, kAllLevels, &L.p));
        EXPECT_EQ(0, L.p->torus_ndims);
        EXPECT_EQ(2, L.p->nlevels);
    }
    {  // two nodes at one coordinate
        Layout dup = lay;
        for (int i = 0; i < 2; i++)
            dup.recs[2 + i].tcoord[0] = 0;
        for (int i = 0; i < 2; i++)
            dup.recs[2 + i].tcoord[0] = 0, dup.recs[i].tcoord[0] = 0;
        LayoutPtr L;
        ASSERT_EQ(MXH_OK, mxh_layout_create(dup.recs.data(), 16, kAllLevels, &L.p));
        EXPECT_EQ(0, L.p->torus_ndims);
    }
    {  // ranks of one node that disagree, or a rank without a coordinate
        Layout bad = lay;
        bad.recs[1].tcoord[1] = 1;
        LayoutPtr L;
        ASSERT_EQ(MXH_OK, mxh_layout_create(bad.recs.data(), 16, kAllLevels, &L.p));
        EXPECT_EQ(0, L.p->torus_ndims);
        Layout none = lay;
        none.recs[5].tndims = 0;
        LayoutPtr L2;
        ASSERT_EQ(MXH_OK, mxh_layout_create(none.recs.data(), 16, kAllLevels, &L2.p));
        EXPECT_EQ(0, L2.p->torus_ndims);
    }
    {  // uneven nodes: no regular node level, no torus split
        Layout uneven = lay;
        uneven.recs.pop_back();
        LayoutPtr L;
        ASSERT_EQ(MXH_OK, mxh_layout_create(uneven.recs.data(), 15, kAllLevels, &L.p));
        EXPECT_EQ(0, L.p->torus_ndims);
    }
    {  // coordinates need not start at 0 nor be contiguous: positions among the values
        Layout sparse = lay;
        for (auto &r : sparse.recs)
            r.tcoord[0] = (int16_t)(10 + 3 * r.tcoord[0]);
        LayoutPtr L;
        ASSERT_EQ(MXH_OK, mxh_layout_create(sparse.recs.data(), 16, kAllLevels, &L.p));
        EXPECT_EQ(2, L.p->torus_ndims);
        EXPECT_EQ(4, L.p->torus_k[0]);
    }
}

TEST(Levels, ThreeLevelsFromLeaves)
{
    Layout lay = make_layout({2, 2, 2, 2}, 2, 0);  // leaf0: n0 n1, leaf1: n2 n3
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 8, kAllLevels, &L.p));
    ASSERT_EQ(3, L.p->nlevels);
    EXPECT_EQ(MXH_LEVEL_SPINE, L.p->type[2]);
    EXPECT_EQ(2, L.p->nleaves);
    EXPECT_EQ(MXH_LEVEL_KIND_SCATTER, L.p->kind[1]);
    // rank 0 (n0, rail 0): rail group {0,2}, spine group {0,4}
    EXPECT_EQ(L.p->color[1][0], L.p->color[1][2]);
    EXPECT_NE(L.p->color[1][0], L.p->color[1][4]);
    EXPECT_EQ(L.p->color[2][0], L.p->color[2][4]);
    EXPECT_EQ(L.p->color[2][2], L.p->color[2][6]);
    EXPECT_NE(L.p->color[2][0], L.p->color[2][2]);
    // without the spine level the leaves are ignored
    LayoutPtr L2;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 8, 0x3, &L2.p));
    EXPECT_EQ(2, L2.p->nlevels);
    EXPECT_EQ(4, L2.p->gsize[1][0]);
}

TEST(Levels, UnevenLeavesUseLeaderKind)
{
    Layout lay = make_layout({2, 2, 2}, 2, 0);  // leaf0: n0 n1, leaf1: n2
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 6, kAllLevels, &L.p));
    ASSERT_EQ(3, L.p->nlevels);
    EXPECT_EQ(MXH_LEVEL_KIND_SCATTER, L.p->kind[0]);
    EXPECT_EQ(MXH_LEVEL_KIND_LEADER, L.p->kind[1]);
}

TEST(Levels, LevelsMaskNeedsNodeAndRail)
{
    Layout lay = make_layout({2, 2}, 0, 0);
    LayoutPtr L;
    EXPECT_EQ(MXH_ERR_CONFIG, mxh_layout_create(lay.recs.data(), 4, 0x5, &L.p));
}

TEST(Levels, Cluster4096Ranks)
{
    // 512 nodes x 8 GPUs, 16 leaves of 32 nodes: node 8, rail 32, spine 16
    std::vector<int> nodes(512, 8);
    Layout lay = make_layout(nodes, 32, 0);
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 4096, kAllLevels, &L.p));
    ASSERT_EQ(3, L.p->nlevels);
    EXPECT_EQ(512, L.p->nnodes);
    EXPECT_EQ(16, L.p->nleaves);
    EXPECT_EQ(512, L.p->ngroups[0]);
    EXPECT_EQ(16 * 8, L.p->ngroups[1]);
    EXPECT_EQ(8 * 32, L.p->ngroups[2]);
    for (int r = 0; r < 4096; r += 97) {
        EXPECT_EQ(8, L.p->gsize[0][r]);
        EXPECT_EQ(32, L.p->gsize[1][r]);
        EXPECT_EQ(16, L.p->gsize[2][r]);
        EXPECT_EQ(r % 8, L.p->coord[0][r]);
        EXPECT_EQ((r / 8) % 32, L.p->coord[1][r]);
        EXPECT_EQ(r / 256, L.p->coord[2][r]);
    }
    for (int l = 0; l < 2; l++)
        EXPECT_EQ(MXH_LEVEL_KIND_SCATTER, L.p->kind[l]);
}

TEST(Levels, Cluster4096RanksRandomOrderIrregular)
{
    std::mt19937 g(7);
    std::vector<int> nodes;
    int total = 0;
    while (total < 4096) {
        int k = 1 + (int)(g() % 8);
        k = std::min(k, 4096 - total);
        nodes.push_back(k);
        total += k;
    }
    Layout lay = make_layout(nodes, 24, 2, 11);
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 4096, kAllLevels, &L.p));
    EXPECT_EQ((int)nodes.size(), L.p->nnodes);
    EXPECT_EQ(MXH_LEVEL_KIND_LEADER, L.p->kind[0]);
    // every group's coordinates are 0..size-1
    for (int l = 0; l < L.p->nlevels; l++) {
        std::map<int, std::vector<int>> seen;
        for (int r = 0; r < 4096; r++)
            seen[L.p->color[l][r]].push_back(L.p->coord[l][r]);
        for (auto &kv : seen) {
            std::sort(kv.second.begin(), kv.second.end());
            for (size_t i = 0; i < kv.second.size(); i++)
                ASSERT_EQ((int)i, kv.second[i]);
        }
    }
}

// ---- plans, executed symbolically ----------------------------------------------

TEST(Plan, TwoByTwoAllCollectives)
{
    check_all_colls(make_layout({2, 2}, 0, 0), kAllLevels, {1, 2, 3, 7, 16});
}

TEST(Plan, RegularInterleaved)
{
    check_all_colls(make_layout({3, 3}, 0, 1), kAllLevels, {1, 5, 11});
}

TEST(Plan, UnevenNodes)
{
    check_all_colls(make_layout({3, 1}, 0, 0), kAllLevels, {1, 4, 13});
    check_all_colls(make_layout({1, 2, 3}, 0, 0), kAllLevels, {1, 7});
    check_all_colls(make_layout({2, 2, 1}, 0, 1), kAllLevels, {1, 7});
    check_all_colls(make_layout({1, 4}, 0, 2, 3), kAllLevels, {5});
}

TEST(Plan, ThreeLevels)
{
    check_all_colls(make_layout({2, 2, 2, 2}, 2, 0), kAllLevels, {1, 3, 17});
    check_all_colls(make_layout({2, 2, 2, 2, 2, 2}, 2, 1), kAllLevels, {1, 13});
}

TEST(Plan, TorusLevels)
{
    // blocked and shuffled rank orders; rails of different level orders and orientations
    check_all_colls(make_torus({2, 2}, 2), kAllLevels, {1, 7, 33});
    check_all_colls(make_torus({3, 2}, 2, 11), kAllLevels, {1, 5, 24});
    check_all_colls(make_torus({4, 2, 2}, 1, 4), kAllLevels, {3, 17}, false);
    check_all_colls(make_torus({3, 3}, 3, 2), kAllLevels, {1, 10, 40}, false);
    check_all_colls(make_torus({4, 2, 2}, 8), kAllLevels, {1, 130}, false);
    check_all_colls(make_torus({3, 2, 2}, 4, 9), kAllLevels, {29}, false);
}

TEST(Plan, TorusSmallAllreduceKeepsOneSumOrder)
{
    // 2x2 torus, 2 ranks per node: every level has groups of 2 (a grid by sizes), but
    // rail 0 crosses x then y and rail 1 y then x; the latency plan (the whole vector at
    // every level) would sum in a different order on each rail: results not bitwise
    // identical across ranks (test_colls on torus-2x2 found it). Reduce-scatter plan.
    Layout lay = make_torus({2, 2}, 2);
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 8, kAllLevels, &L.p));
    ASSERT_EQ(3, L.p->nlevels);
    EXPECT_EQ(0, mxh_layout_same_order(L.p));
    EXPECT_NE(L.p->torus_order[0], L.p->torus_order[3]);
    // the hybrid plan instead (each piece summed on one rail only): reduce-scatter in the
    // node, an allreduce per dimension in the rail's order, allgather in the node
    for (int r = 0; r < 8; r++) {
        mxh_plan_t *p = nullptr;
        ASSERT_EQ(MXH_OK, mxh_plan_create_sized(L.p, r, MXH_COLL_ALLREDUCE, 31, -1, 8, &p));
        ASSERT_EQ(4, p->nsteps);
        EXPECT_EQ(MXH_STEP_REDUCE_SCATTER, p->steps[0].type) << "rank " << r;
        EXPECT_EQ(MXH_STEP_ALLREDUCE, p->steps[1].type) << "rank " << r;
        EXPECT_EQ(MXH_STEP_ALLREDUCE, p->steps[2].type) << "rank " << r;
        EXPECT_EQ(MXH_STEP_ALLGATHER, p->steps[3].type) << "rank " << r;
        mxh_plan_destroy(p);
    }
    for (size_t c : {1, 3, 31, 200, 3000})
        EXPECT_EQ("", simulate(L.p, MXH_COLL_ALLREDUCE, c, -1, 8)) << c;
    Layout big = make_torus({4, 2, 2}, 8, 5);
    LayoutPtr B;
    ASSERT_EQ(MXH_OK, mxh_layout_create(big.recs.data(), 128, kAllLevels, &B.p));
    for (size_t c : {5, 1000, 8192, 1 << 16})  // 64 KiB of floats: hybrid (5 x 8 KiB of copies)
        EXPECT_EQ("", simulate(B.p, MXH_COLL_ALLREDUCE, c, -1, 4)) << c;
    mxh_plan_t *h = nullptr;
    ASSERT_EQ(MXH_OK, mxh_plan_create_sized(B.p, 0, MXH_COLL_ALLREDUCE, 1 << 14, -1, 4, &h));
    EXPECT_EQ(5, h->nsteps) << "64 KiB on 4x2x2 x 8: hybrid, three dimensions";
    mxh_plan_destroy(h);
    // the same nodes without coordinates: the latency plan
    Layout flat = make_layout({2, 2, 2, 2}, 0, 0);
    LayoutPtr F;
    ASSERT_EQ(MXH_OK, mxh_layout_create(flat.recs.data(), 8, kAllLevels, &F.p));
    EXPECT_EQ(1, mxh_layout_same_order(F.p));
    mxh_plan_t *p = nullptr;
    ASSERT_EQ(MXH_OK, mxh_plan_create_sized(F.p, 0, MXH_COLL_ALLREDUCE, 31, -1, 8, &p));
    EXPECT_EQ(MXH_STEP_ALLREDUCE, p->steps[0].type);
    mxh_plan_destroy(p);
}

TEST(Plan, ThreeLevelsIrregular)
{
    check_all_colls(make_layout({2, 2, 2}, 2, 0), kAllLevels, {1, 5, 9});          // uneven leaves
    check_all_colls(make_layout({3, 1, 2, 2}, 2, 0), kAllLevels, {1, 5});          // uneven nodes
    check_all_colls(make_layout({2, 3, 1, 2, 2}, 2, 2, 5), kAllLevels, {1, 6});    // both, shuffled
    check_all_colls(make_layout({4, 4, 4, 4, 4, 4}, 4, 0), kAllLevels, {7});       // leaves 4 + 2
}

TEST(Plan, RandomLayouts)
{
    std::mt19937 g(42);
    for (int trial = 0; trial < 400; trial++) {
        int nn = 1 + (int)(g() % 8);
        std::vector<int> nodes;
        for (int v = 0; v < nn; v++)
            nodes.push_back(1 + (int)(g() % 5));
        int per_leaf = (int)(g() % 4);  // 0: no leaves
        Layout lay = make_layout(nodes, per_leaf, (int)(g() % 3), (unsigned)trial);
        SCOPED_TRACE("trial " + std::to_string(trial));
        check_all_colls(lay, kAllLevels, {1, 1 + (size_t)(g() % 20)}, false);
    }
}

// allgatherv and reduce_scatter: the block plans with per-rank block sizes
// (zeros, uneven), on regular, uneven, three-level and random layouts.
TEST(Plan, VPlansOnManyLayouts)
{
    std::mt19937 g(7);
    std::vector<Layout> lays = {make_layout({2, 2}, 0, 0),       make_layout({3, 3}, 0, 1),
                                make_layout({1, 2, 3}, 0, 0),    make_layout({2, 2, 2, 2}, 2, 0),
                                make_layout({2, 3, 1, 2, 2}, 2, 2, 5), make_layout({4}, 0, 0)};
    for (int trial = 0; trial < 60; trial++) {
        int nn = 1 + (int)(g() % 6);
        std::vector<int> nodes;
        for (int v = 0; v < nn; v++)
            nodes.push_back(1 + (int)(g() % 4));
        lays.push_back(make_layout(nodes, (int)(g() % 3), (int)(g() % 3), (unsigned)trial));
    }
    for (size_t li = 0; li < lays.size(); li++) {
        LayoutPtr L;
        ASSERT_EQ(MXH_OK, mxh_layout_create(lays[li].recs.data(), (int)lays[li].recs.size(),
                                            kAllLevels, &L.p));
        if (L.p->nlevels < 1)
            continue;
        int n = L.p->nranks;
        for (int k = 0; k < 3; k++) {
            std::vector<size_t> bc(n);
            for (int r = 0; r < n; r++)
                bc[r] = k == 0 ? (size_t)r % 3 : (size_t)(g() % 7); // zeros included
            for (mxh_coll_t c : {MXH_COLL_ALLGATHERV, MXH_COLL_REDUCE_SCATTER})
                EXPECT_EQ("", simulate_v(L.p, c, bc)) << "layout " << li << " n " << n;
        }
    }
}

// v-schedules: fragments of per-block pieces, two plans, offsets that tile the work buffer
TEST(Sched, VScheduleCutsEveryBlock)
{
    std::vector<size_t> bc = {0, 5000, 123456, 77};
    // 77 elements allow at most 9 fragments (77 >= 9 * 8), not 10
    EXPECT_EQ(9, mxh_sched_v_frags(bc.data(), 4, 8, 1024));
    EXPECT_EQ(1, mxh_sched_v_frags(bc.data(), 4, 8, 0));
    std::vector<size_t> big = {1u << 20, 3u << 20, 0, 1u << 19};
    EXPECT_EQ(18, mxh_sched_v_frags(big.data(), 4, 4, 1u << 20));  // 18 MiB in 1 MiB
    EXPECT_EQ(MXH_SCHED_MAX_FRAGS, mxh_sched_v_frags(big.data(), 4, 64, 1u << 20));
    LayoutPtr L;
    Layout lay = make_layout({2, 2}, 0, 0);
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 4, kAllLevels, &L.p));
    for (int nfrag : {1, 2, 9}) {
        mxh_sched_t *s = nullptr;
        ASSERT_EQ(MXH_OK, mxh_sched_create_v(L.p, 1, MXH_COLL_ALLGATHERV, bc.data(), 8, nfrag, 0, &s));
        EXPECT_EQ(nfrag, s->nfrag);
        EXPECT_EQ(nfrag > 1 ? 2 : 1, s->nplans);
        size_t total = 0;
        for (int r = 0; r < 4; r++) {
            EXPECT_EQ(bc[r], s->vpiece[r] * (size_t)(nfrag - 1) + s->vpiece[4 + r]) << r;
            total += bc[r];
        }
        EXPECT_EQ(total, s->vfrag_off[nfrag]);
        for (int f = 0; f < nfrag; f++)
            EXPECT_EQ(mxh_sched_plan(s, f)->work_count, s->vfrag_off[f + 1] - s->vfrag_off[f]) << f;
        mxh_sched_destroy(s);
    }
}

TEST(Plan, LargeRegularCluster)
{
    // 32 nodes x 8, 4 leaves: allreduce, reduce_scatter_block and allgather
    std::vector<int> nodes(32, 8);
    Layout lay = make_layout(nodes, 8, 0);
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 256, kAllLevels, &L.p));
    ASSERT_EQ(3, L.p->nlevels);
    EXPECT_EQ("", simulate(L.p, MXH_COLL_ALLREDUCE, 1000, -1));
    EXPECT_EQ("", simulate(L.p, MXH_COLL_REDUCE_SCATTER_BLOCK, 3, -1));
    EXPECT_EQ("", simulate(L.p, MXH_COLL_ALLGATHER, 2, -1));
    EXPECT_EQ("", simulate(L.p, MXH_COLL_BCAST, 999, 77));
    EXPECT_EQ("", simulate(L.p, MXH_COLL_REDUCE, 999, 200));
    EXPECT_EQ("", simulate(L.p, MXH_COLL_BCAST, 999, 77, 0, MXH_PLAN_THROUGH));
    EXPECT_EQ("", simulate(L.p, MXH_COLL_REDUCE, 999, 200, 0, MXH_PLAN_THROUGH));
}

// The pipelines' bcast and reduce (MXH_PLAN_THROUGH) on 2 nodes x 4: the root's
// node moves the whole region at the node level (bcast on the way up, reduce on
// the way down) and has no allgather / reduce-scatter there; the other node keeps
// them. Without the flag the root's node scatters and all-gathers (10000 floats: above
// the small sizes' chain).
TEST(Plan, ThroughShapeOnTheRootsPath)
{
    Layout lay = make_layout({4, 4}, 0, 0);
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 8, kAllLevels, &L.p));
    ASSERT_EQ(2, L.p->nlevels);
    auto types = [&](mxh_coll_t coll, int rank, unsigned flags) {
        mxh_plan_t *p = nullptr;
        std::string t;
        EXPECT_EQ(MXH_OK, mxh_plan_create_flags(L.p, rank, coll, 10000, 1, 4, flags, &p));
        for (int i = 0; p && i < p->nsteps; i++)
            t += std::string(i ? " " : "") + mxh_step_type_name(p->steps[i].type) + "/" +
                 std::to_string(p->steps[i].level) + ":" + std::to_string(p->steps[i].count);
        mxh_plan_destroy(p);
        return t;
    };
    // root 1 on node 0; rank 2 shares its node, rank 6 is on node 1
    EXPECT_EQ("bcast/0:10000 bcast/1:2500", types(MXH_COLL_BCAST, 2, MXH_PLAN_THROUGH));
    EXPECT_EQ("bcast/1:2500 allgather/0:10000", types(MXH_COLL_BCAST, 6, MXH_PLAN_THROUGH));
    EXPECT_EQ("scatter/0:10000 bcast/1:2500 allgather/0:10000", types(MXH_COLL_BCAST, 2, 0));
    EXPECT_EQ("reduce/1:2500 reduce/0:10000", types(MXH_COLL_REDUCE, 2, MXH_PLAN_THROUGH));
    EXPECT_EQ("reduce_scatter/0:10000 reduce/1:2500", types(MXH_COLL_REDUCE, 6, MXH_PLAN_THROUGH));
    EXPECT_EQ("reduce_scatter/0:10000 reduce/1:2500 gather/0:10000", types(MXH_COLL_REDUCE, 2, 0));
}

// Small bcast and reduce (the element size known): the chain, the whole region at
// every level, one step each (p2p.h flat). 4 leaf groups x 2 nodes x 2 GPUs, root 5
// (leaf 1, node 0, GPU 1): its rail (ranks 5, 7), then the spine from each of them,
// then every node from its GPU 1; reduce the mirror. Above MXH_PLAN_CHAIN_BYTES of
// copies per level the node scatters first and the chain carries its pieces; above
// that, and without the element size, the scatter shape.
TEST(Plan, ChainForSmallBcastAndReduce)
{
    Layout lay = make_layout({2, 2, 2, 2, 2, 2, 2, 2}, 2, 0);
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 16, kAllLevels, &L.p));
    ASSERT_EQ(3, L.p->nlevels);
    auto types = [&](mxh_coll_t coll, int rank, size_t count, size_t tsize) {
        mxh_plan_t *p = nullptr;
        std::string t;
        EXPECT_EQ(MXH_OK, mxh_plan_create_flags(L.p, rank, coll, count, 5, tsize, 0, &p));
        for (int i = 0; p && i < p->nsteps; i++)
            t += std::string(i ? " " : "") + mxh_step_type_name(p->steps[i].type) + "/" +
                 std::to_string(p->steps[i].level) + "@" + std::to_string(p->steps[i].root);
        mxh_plan_destroy(p);
        return t;
    };
    EXPECT_EQ("bcast/1@0 bcast/2@1 bcast/0@1", types(MXH_COLL_BCAST, 5, 10, 4));
    EXPECT_EQ("bcast/1@0 bcast/2@1 bcast/0@1", types(MXH_COLL_BCAST, 7, 10, 4));
    EXPECT_EQ("bcast/2@1 bcast/0@1", types(MXH_COLL_BCAST, 15, 10, 4)); // leaf 3, GPU 1
    EXPECT_EQ("bcast/0@1", types(MXH_COLL_BCAST, 14, 10, 4));           // GPU 0
    EXPECT_EQ("reduce/0@1 reduce/2@1 reduce/1@0", types(MXH_COLL_REDUCE, 7, 10, 4));
    EXPECT_EQ("reduce/0@1", types(MXH_COLL_REDUCE, 0, 10, 4));
    // 32 KiB of copies per level at most: 3 x 2730 floats, not 3 x 2731
    const size_t whole = MXH_PLAN_CHAIN_BYTES / 4 / 3, pieces = 2 * whole;
    EXPECT_EQ("bcast/1@0 bcast/2@1 bcast/0@1", types(MXH_COLL_BCAST, 5, whole, 4));
    // above: the node scatters (reduce-scatters) first, the chain carries the pieces
    EXPECT_EQ("scatter/0@1 bcast/1@0 bcast/2@1 allgather/0@0",
              types(MXH_COLL_BCAST, 5, whole + 1, 4));
    EXPECT_EQ("scatter/0@1 bcast/1@0 bcast/2@1 allgather/0@0", types(MXH_COLL_BCAST, 4, pieces, 4));
    EXPECT_EQ("bcast/2@1 allgather/0@0", types(MXH_COLL_BCAST, 14, pieces, 4));
    EXPECT_EQ("reduce_scatter/0@0 reduce/2@1 reduce/1@0 gather/0@1",
              types(MXH_COLL_REDUCE, 5, pieces, 4));
    EXPECT_EQ("reduce_scatter/0@0 reduce/2@1", types(MXH_COLL_REDUCE, 14, pieces, 4));
    // above that the scatter shape, as without the element size
    EXPECT_EQ("scatter/0@1 scatter/1@0 bcast/2@1 allgather/1@0 allgather/0@0",
              types(MXH_COLL_BCAST, 5, pieces + 2, 4));
    EXPECT_EQ("scatter/0@1 scatter/1@0 bcast/2@1 allgather/1@0 allgather/0@0",
              types(MXH_COLL_BCAST, 5, 10, 0));
    for (int root : {0, 5, 9, 14})
        for (size_t c : {(size_t)1, (size_t)10, whole, whole + 1, pieces, pieces + 2}) {
            EXPECT_EQ("", simulate(L.p, MXH_COLL_BCAST, c, root, 4)) << c << " root " << root;
            EXPECT_EQ("", simulate(L.p, MXH_COLL_REDUCE, c, root, 4)) << c << " root " << root;
        }
}

// Which steps of the through shape the stream executor staggers (a fragment waits
// until the one before has left the step's scatter): the non-roots of a rootless
// bcast step of more than two members, on every level, and of a rootless reduce step
// on the network (the executor and the model then decide where), nothing else. 2
// nodes x 4, root 1.
TEST(Plan, StaggeredSteps)
{
    Layout lay = make_layout({4, 4}, 0, 0);
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 8, kAllLevels, &L.p));
    auto staggered = [&](mxh_coll_t coll, int rank, unsigned flags) {
        mxh_plan_t *p = nullptr;
        std::string t;
        EXPECT_EQ(MXH_OK, mxh_plan_create_flags(L.p, rank, coll, 10000, 1, 4, flags, &p));
        for (int i = 0; p && i < p->nsteps; i++)
            t += std::to_string(mxh_step_staggered(&p->steps[i]));
        mxh_plan_destroy(p);
        return t;
    };
    // rank 1 is the root of the node bcast and of its rail's bcast (a pair)
    EXPECT_EQ("00", staggered(MXH_COLL_BCAST, 1, MXH_PLAN_THROUGH));
    // rank 2 receives the node bcast (4 members); its rail of 2 has no allgather
    EXPECT_EQ("10", staggered(MXH_COLL_BCAST, 2, MXH_PLAN_THROUGH));
    EXPECT_EQ("00", staggered(MXH_COLL_BCAST, 6, MXH_PLAN_THROUGH));
    EXPECT_EQ("000", staggered(MXH_COLL_BCAST, 2, 0));
    EXPECT_EQ("00", staggered(MXH_COLL_REDUCE, 2, MXH_PLAN_THROUGH));

    // 3 nodes x 4: the rails have 3 members; their rail bcast is staggered on its
    // non-roots as the root's node's is (posted ahead by the link times, exec.c)
    Layout lay3 = make_layout({4, 4, 4}, 0, 0);
    LayoutPtr L3;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay3.recs.data(), 12, kAllLevels, &L3.p));
    mxh_plan_t *p = nullptr;
    ASSERT_EQ(MXH_OK, mxh_plan_create_flags(L3.p, 6, MXH_COLL_BCAST, 1200, 1, 4,
                                            MXH_PLAN_THROUGH, &p));
    ASSERT_EQ(2, p->nsteps); // rail bcast of its piece, node allgather
    EXPECT_EQ(MXH_STEP_BCAST, p->steps[0].type);
    EXPECT_EQ(1, p->steps[0].rootless);
    EXPECT_EQ(1, mxh_step_staggered(&p->steps[0]));
    EXPECT_EQ(0, mxh_step_staggered(&p->steps[1]));
    mxh_plan_destroy(p);
    p = nullptr;
    ASSERT_EQ(MXH_OK, mxh_plan_create_flags(L3.p, 3, MXH_COLL_BCAST, 1200, 1, 4,
                                            MXH_PLAN_THROUGH, &p));
    ASSERT_EQ(2, p->nsteps); // node bcast from rank 1, rail bcast as its rail's root
    EXPECT_EQ(1, mxh_step_staggered(&p->steps[0]));
    EXPECT_EQ(0, mxh_step_staggered(&p->steps[1])); // the root of its rail's step
    mxh_plan_destroy(p);
    // reduce: the rail's rootless reduce of the others (rank 6: its rail's holder is
    // rank 2) may stagger, the holder's does not, nor any node step
    p = nullptr;
    ASSERT_EQ(MXH_OK, mxh_plan_create_flags(L3.p, 6, MXH_COLL_REDUCE, 1200, 1, 4,
                                            MXH_PLAN_THROUGH, &p));
    ASSERT_EQ(2, p->nsteps); // node reduce-scatter, rail reduce to rank 2
    EXPECT_EQ(MXH_STEP_REDUCE, p->steps[1].type);
    EXPECT_EQ(0, mxh_step_staggered(&p->steps[0]));
    EXPECT_EQ(1, mxh_step_staggered(&p->steps[1]));
    mxh_plan_destroy(p);
    p = nullptr;
    ASSERT_EQ(MXH_OK, mxh_plan_create_flags(L3.p, 3, MXH_COLL_REDUCE, 1200, 1, 4,
                                            MXH_PLAN_THROUGH, &p));
    for (int i = 0; i < p->nsteps; i++)
        EXPECT_EQ(0, mxh_step_staggered(&p->steps[i])) << i; // the node's, the rail's root
    mxh_plan_destroy(p);
}

TEST(Plan, AllreduceStepsOnTwoByTwo)
{
    Layout lay = make_layout({2, 2}, 0, 0);
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 4, kAllLevels, &L.p));
    mxh_plan_t *p = nullptr;
    ASSERT_EQ(MXH_OK, mxh_plan_create(L.p, 1, MXH_COLL_ALLREDUCE, 7, -1, &p));
    ASSERT_EQ(3, p->nsteps);
    EXPECT_EQ(MXH_STEP_REDUCE_SCATTER, p->steps[0].type);
    EXPECT_EQ(0u, p->steps[0].offset);
    EXPECT_EQ(7u, p->steps[0].count);
    EXPECT_EQ(4, p->steps[0].counts[0]);
    EXPECT_EQ(3, p->steps[0].counts[1]);
    EXPECT_EQ(MXH_STEP_ALLREDUCE, p->steps[1].type);
    EXPECT_EQ(4u, p->steps[1].offset);  // rank 1 owns the second part
    EXPECT_EQ(3u, p->steps[1].count);
    EXPECT_EQ(1, p->steps[1].level);
    EXPECT_EQ(MXH_STEP_ALLGATHER, p->steps[2].type);
    char buf[512];
    mxh_plan_describe(p, buf, sizeof(buf));
    EXPECT_NE(nullptr, strstr(buf, "allreduce count=7")) << buf;
    mxh_plan_destroy(p);
}

// Small allreduces on grid layouts: the latency plan (an allreduce per level);
// larger ones, or uneven layouts, the reduce-scatter plan.
TEST(Plan, LatencyPlanForSmallAllreduceOnGrids)
{
    Layout lay = make_layout({2, 2}, 0, 0);
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 4, kAllLevels, &L.p));
    mxh_plan_t *p = nullptr;
    ASSERT_EQ(MXH_OK, mxh_plan_create_sized(L.p, 1, MXH_COLL_ALLREDUCE, 7, -1, 4, &p));
    ASSERT_EQ(2, p->nsteps);
    for (int i = 0; i < 2; i++) {
        EXPECT_EQ(MXH_STEP_ALLREDUCE, p->steps[i].type);
        EXPECT_EQ(i, p->steps[i].level);
        EXPECT_EQ(0u, p->steps[i].offset);
        EXPECT_EQ(7u, p->steps[i].count);
    }
    mxh_plan_destroy(p);
    // steps of rank r's allreduce plan of c floats
    auto nsteps = [](const mxh_layout_t *lay, int r, size_t c) {
        mxh_plan_t *q = nullptr;
        if (mxh_plan_create_sized(lay, r, MXH_COLL_ALLREDUCE, c, -1, 4, &q) != MXH_OK)
            return -1;
        int n = q->nsteps;
        mxh_plan_destroy(q);
        return n;
    };
    EXPECT_EQ(3, nsteps(L.p, 1, MXH_PLAN_LATENCY_BYTES / 4 + 1));

    // a rail of 32 nodes: the latency plan would send 31 copies of the vector
    // through every NIC; it stops at MXH_PLAN_LATENCY_NET_BYTES of them
    Layout wide = make_layout(std::vector<int>(32, 2), 0, 0);
    LayoutPtr W;
    ASSERT_EQ(MXH_OK, mxh_layout_create(wide.recs.data(), 64, kAllLevels, &W.p));
    ASSERT_EQ(2, W.p->nlevels);
    EXPECT_EQ(2, nsteps(W.p, 5, 256)) << "1 KiB: 31 KiB of copies";
    ASSERT_EQ(MXH_OK, mxh_plan_create_sized(W.p, 5, MXH_COLL_ALLREDUCE, 1024, -1, 4, &p));
    EXPECT_EQ(3, p->nsteps) << "4 KiB: 124 KiB of copies";
    EXPECT_EQ(MXH_STEP_REDUCE_SCATTER, p->steps[0].type);
    mxh_plan_destroy(p);

    // three levels (node 4, rail 8 per leaf, spine 2): above the latency plan,
    // the hybrid plan reduce-scatters in the node and allreduces the node's piece
    // on the rail and across the spine, then allgathers in the node
    Layout three = make_layout(std::vector<int>(16, 4), 8, 0);
    LayoutPtr T;
    ASSERT_EQ(MXH_OK, mxh_layout_create(three.recs.data(), 64, kAllLevels, &T.p));
    ASSERT_EQ(3, T.p->nlevels);
    EXPECT_EQ(3, nsteps(T.p, 6, 1000)) << "4000 B: 8 copies = 32000 B, latency plan";
    ASSERT_EQ(MXH_OK, mxh_plan_create_sized(T.p, 6, MXH_COLL_ALLREDUCE, 2000, -1, 4, &p));
    ASSERT_EQ(4, p->nsteps);
    const mxh_step_type_t want[] = {MXH_STEP_REDUCE_SCATTER, MXH_STEP_ALLREDUCE,
                                    MXH_STEP_ALLREDUCE, MXH_STEP_ALLGATHER};
    const int lvl[] = {0, 1, 2, 0};
    for (int i = 0; i < 4; i++) {
        EXPECT_EQ(want[i], p->steps[i].type) << "step " << i;
        EXPECT_EQ(lvl[i], p->steps[i].level) << "step " << i;
        if (i > 0) {
            EXPECT_GT(p->steps[i].stage, p->steps[i - 1].stage) << "step " << i;
        }
    }
    EXPECT_EQ(1000u, p->steps[1].offset);  // rank 6 is GPU 2 of its node: piece 2 of 4
    EXPECT_EQ(500u, p->steps[1].count);
    EXPECT_EQ(1000u, p->steps[2].offset);
    EXPECT_EQ(500u, p->steps[2].count);
    mxh_plan_destroy(p);
    // larger: the reduce-scatter plan (5 steps)
    EXPECT_EQ(5, nsteps(T.p, 6, 1 << 16));

    Layout uneven = make_layout({3, 1}, 0, 0);
    LayoutPtr U;
    ASSERT_EQ(MXH_OK, mxh_layout_create(uneven.recs.data(), 4, kAllLevels, &U.p));
    ASSERT_EQ(MXH_OK, mxh_plan_create_sized(U.p, 0, MXH_COLL_ALLREDUCE, 7, -1, 4, &p));
    EXPECT_NE(MXH_STEP_ALLREDUCE, p->steps[0].type);
    mxh_plan_destroy(p);
}

// Small allreduces on layouts of two network levels or more with the spread group
// (MPIX_HIER_SPREAD): allreduce in the node, one spread exchange, allreduce in the node
// in class order.
TEST(Plan, SpreadPlanForSmallAllreduce)
{
    // node 4, rail 8 per leaf, spine 2: P = 16 nodes, 4 ports
    Layout three = make_layout(std::vector<int>(16, 4), 8, 0);
    LayoutPtr T;
    ASSERT_EQ(MXH_OK, mxh_layout_create(three.recs.data(), 64, kAllLevels, &T.p));
    ASSERT_EQ(3, T.p->nlevels);
    EXPECT_EQ(0, T.p->spread_p) << "only where the hierarchy asks for it";
    ASSERT_EQ(MXH_OK, mxh_layout_spread_init(T.p));
    ASSERT_EQ(16, T.p->spread_p);
    // every node position has every key once; a node's ranks share it
    std::map<std::pair<int, int>, int> seen;
    for (int r = 0; r < 64; r++) {
        EXPECT_EQ(T.p->spread_key[r], T.p->spread_key[T.p->node_first_rank[T.p->node_of[r]]]);
        std::pair<int, int> at(T.p->coord[0][r], T.p->spread_key[r]);
        EXPECT_EQ(0, seen[at]++) << "rank " << r;
    }
    for (int r = 0; r < 64; r++) {
        mxh_plan_t *p = nullptr;
        ASSERT_EQ(MXH_OK, mxh_plan_create_sized(T.p, r, MXH_COLL_ALLREDUCE, 1000, -1, 4, &p));
        ASSERT_EQ(3, p->nsteps) << "4000 B: 4 copies through the NIC";
        const mxh_step_type_t want[] = {MXH_STEP_ALLREDUCE, MXH_STEP_SPREAD, MXH_STEP_ALLREDUCE};
        const int lvl[] = {0, 1, 0};
        for (int i = 0; i < 3; i++) {
            EXPECT_EQ(want[i], p->steps[i].type) << "step " << i;
            EXPECT_EQ(lvl[i], p->steps[i].level) << "step " << i;
            EXPECT_EQ(0u, p->steps[i].offset);
            EXPECT_EQ(1000u, p->steps[i].count);
            if (i > 0) {
                EXPECT_GT(p->steps[i].stage, p->steps[i - 1].stage) << "step " << i;
            }
        }
        const mxh_step_t &x = p->steps[1], &z = p->steps[2];
        EXPECT_EQ(16, x.gsize);
        EXPECT_EQ(T.p->spread_key[r], x.me);
        EXPECT_EQ(4, x.ports);
        EXPECT_EQ(T.p->coord[0][r], x.port);
        EXPECT_TRUE(x.net);
        // the last step starts the reduction at the member that holds class 0: member
        // m holds class (key + m) % 4
        EXPECT_EQ(4, z.ports);
        EXPECT_EQ(0, (T.p->spread_key[r] + z.rot) % 4) << "rank " << r;
        EXPECT_EQ(0, p->steps[0].ports) << "the first node allreduce: any order";
        mxh_plan_destroy(p);
    }
    for (size_t c : {1, 7, 1000})
        EXPECT_EQ("", simulate(T.p, MXH_COLL_ALLREDUCE, c, -1, 4)) << "count " << c;
    // above MXH_PLAN_LATENCY_BYTES: the hybrid plan
    mxh_plan_t *p = nullptr;
    ASSERT_EQ(MXH_OK, mxh_plan_create_sized(T.p, 6, MXH_COLL_ALLREDUCE, 2000, -1, 4, &p));
    EXPECT_EQ(MXH_STEP_REDUCE_SCATTER, p->steps[0].type);
    mxh_plan_destroy(p);
    // other collectives keep their plans
    EXPECT_EQ("", simulate(T.p, MXH_COLL_REDUCE_SCATTER_BLOCK, 3, -1, 4));
    EXPECT_EQ("", simulate(T.p, MXH_COLL_BCAST, 5, 7, 4));

    // random rank order, 6 nodes in 3 leaf groups, 4 ports: classes of 2, 2, 1, 1 nodes
    Layout odd = make_layout(std::vector<int>(6, 4), 2, 2, 7);
    LayoutPtr O;
    ASSERT_EQ(MXH_OK, mxh_layout_create(odd.recs.data(), 24, kAllLevels, &O.p));
    ASSERT_EQ(3, O.p->nlevels);
    ASSERT_EQ(MXH_OK, mxh_layout_spread_init(O.p));
    ASSERT_EQ(6, O.p->spread_p);
    for (size_t c : {1, 5, 1024})
        EXPECT_EQ("", simulate(O.p, MXH_COLL_ALLREDUCE, c, -1, 4)) << "count " << c;
    // 2 bytes: every size of element the plans see
    EXPECT_EQ("", simulate(O.p, MXH_COLL_ALLREDUCE, 3, -1, 2));

    // fewer nodes than ports (4 nodes, 8 GPUs each): a class would be empty
    Layout few = make_layout(std::vector<int>(4, 8), 2, 0);
    LayoutPtr F;
    ASSERT_EQ(MXH_OK, mxh_layout_create(few.recs.data(), 32, kAllLevels, &F.p));
    ASSERT_EQ(3, F.p->nlevels);
    ASSERT_EQ(MXH_OK, mxh_layout_spread_init(F.p));
    EXPECT_EQ(0, F.p->spread_p);
    // one network level: nothing to merge
    Layout two = make_layout(std::vector<int>(8, 2), 0, 0);
    LayoutPtr W;
    ASSERT_EQ(MXH_OK, mxh_layout_create(two.recs.data(), 16, kAllLevels, &W.p));
    ASSERT_EQ(MXH_OK, mxh_layout_spread_init(W.p));
    EXPECT_EQ(0, W.p->spread_p);
    // uneven nodes (a LEADER level): no grid
    Layout uneven = make_layout({4, 4, 4, 3, 4, 4, 4, 4}, 2, 0);
    LayoutPtr U;
    ASSERT_EQ(MXH_OK, mxh_layout_create(uneven.recs.data(), 31, kAllLevels, &U.p));
    ASSERT_EQ(MXH_OK, mxh_layout_spread_init(U.p));
    EXPECT_EQ(0, U.p->spread_p);
    // a torus of nodes: its levels are dimensions, not rails and a spine
    Layout tor = make_torus({4, 2}, 2);
    LayoutPtr R;
    ASSERT_EQ(MXH_OK, mxh_layout_create(tor.recs.data(), 16, kAllLevels, &R.p));
    ASSERT_EQ(MXH_OK, mxh_layout_spread_init(R.p));
    EXPECT_EQ(0, R.p->spread_p);
}

TEST(Plan, RejectsBadRequests)
{
    Layout lay = make_layout({2, 2}, 0, 0);
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 4, kAllLevels, &L.p));
    mxh_plan_t *p = nullptr;
    EXPECT_EQ(MXH_ERR_INVALID_PARAM, mxh_plan_create(L.p, 4, MXH_COLL_ALLREDUCE, 1, -1, &p));
    EXPECT_EQ(MXH_ERR_INVALID_PARAM, mxh_plan_create(L.p, 0, MXH_COLL_BCAST, 1, 9, &p));
}

// ---- GPUs, rails and NVLink islands from discovery --------------------------------

namespace {

const int kWithIslands = 0xF;

// A node whose discovery found @ngpus GPUs with the given rails and islands;
// @ranks ranks on it, GPU chosen by local index (gpu = -1) unless @gpus given.
void add_gpu_node(Layout &lay, const std::string &node, const std::string &leaf, int ranks,
                  const std::vector<int> &rails, const std::vector<int> &islands,
                  const std::vector<int> &gpus = {})
{
    for (int k = 0; k < ranks; k++) {
        lay.add(node, leaf);
        mxh_record_t &r = lay.recs.back();
        r.ngpus = (int16_t)rails.size();
        for (size_t g = 0; g < rails.size(); g++) {
            r.gpu_rail[g] = (int8_t)rails[g];
            r.gpu_island[g] = (int8_t)islands[g];
        }
        if (!gpus.empty())
            r.gpu = (int16_t)gpus[k];
    }
}

// Nodes "a" and "b" (no leaf) of @ranks ranks each, the same GPUs on both.
Layout two_gpu_nodes(int ranks, const std::vector<int> &rails, const std::vector<int> &islands)
{
    Layout lay;
    add_gpu_node(lay, "a", "", ranks, rails, islands);
    add_gpu_node(lay, "b", "", ranks, rails, islands);
    return lay;
}

}  // namespace

TEST(Discovery, IslandsSplitTheNodeLevel)
{
    // 2 nodes x 8 GPUs in two NVLink islands of 4 (GPU 0-3, 4-7), one NIC per GPU
    Layout lay = two_gpu_nodes(8, {0, 1, 2, 3, 4, 5, 6, 7}, {0, 0, 0, 0, 1, 1, 1, 1});
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 16, kWithIslands, &L.p));
    ASSERT_EQ(3, L.p->nlevels);
    EXPECT_EQ(MXH_LEVEL_ISLAND, L.p->type[0]);
    EXPECT_EQ(MXH_LEVEL_NODE, L.p->type[1]);
    EXPECT_EQ(MXH_LEVEL_RAIL, L.p->type[2]);
    EXPECT_EQ(2, L.p->nislands);
    EXPECT_EQ(4, L.p->gsize[0][0]);
    EXPECT_EQ(2, L.p->gsize[1][0]);
    EXPECT_EQ(L.p->color[0][0], L.p->color[0][3]);  // GPUs 0 and 3 share an island
    EXPECT_NE(L.p->color[0][0], L.p->color[0][4]);
    EXPECT_EQ(L.p->color[1][0], L.p->color[1][4]);  // node level pairs GPU 0 with GPU 4
    EXPECT_EQ(L.p->color[2][0], L.p->color[2][8]);  // rail 0 on both nodes
    for (int r = 0; r < 16; r++)
        EXPECT_EQ(r % 8, L.p->rail[r]);
    check_all_colls(lay, kWithIslands, {1, 13, 64}, false);
    // without the island level the node is one level
    LayoutPtr L2;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 16, 0x7, &L2.p));
    EXPECT_EQ(2, L2.p->nlevels);
}

TEST(Discovery, OneIslandPerNodeIsTheNodeLevel)
{
    Layout lay = two_gpu_nodes(4, {0, 1, 2, 3}, {0, 0, 0, 0});
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 8, kWithIslands, &L.p));
    ASSERT_EQ(2, L.p->nlevels);
    EXPECT_EQ(MXH_LEVEL_NODE, L.p->type[0]);
}

TEST(Discovery, RailsFollowTheGpusNic)
{
    // the NIC nearest GPU 0 is NIC 1 and vice versa: rank 0 (GPU 0) is on rail 1
    Layout lay = two_gpu_nodes(2, {1, 0}, {0, 1});
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 4, kWithIslands, &L.p));
    EXPECT_EQ(1, L.p->rail[0]);
    EXPECT_EQ(0, L.p->rail[1]);
    ASSERT_EQ(2, L.p->nlevels);
    EXPECT_EQ(L.p->color[1][0], L.p->color[1][2]);
    EXPECT_EQ(1, L.p->coord[0][0]);  // ordered by rail inside the node
    check_all_colls(lay, kWithIslands, {1, 9});
}

TEST(Discovery, TwoGpusShareANic)
{
    // p4d-like: 8 GPUs, 4 EFA, GPU g on NIC g/2; 2 nodes x 8 ranks
    Layout lay = two_gpu_nodes(8, {0, 0, 1, 1, 2, 2, 3, 3}, {0, 0, 0, 0, 0, 0, 0, 0});
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 16, kWithIslands, &L.p));
    ASSERT_EQ(2, L.p->nlevels);
    EXPECT_EQ(MXH_LEVEL_KIND_SCATTER, L.p->kind[0]);
    // each rail group pairs ranks of the same NIC, one per node
    for (int r = 0; r < 16; r++) {
        EXPECT_EQ(2, L.p->gsize[1][r]);
        for (int x = 0; x < 16; x++) {
            if (L.p->color[1][x] == L.p->color[1][r]) {
                EXPECT_EQ(L.p->rail[r], L.p->rail[x]);
            }
        }
    }
    check_all_colls(lay, kWithIslands, {1, 31}, false);
}

TEST(Discovery, IrregularGpuLayoutsStayCorrect)
{
    // node a: 4 GPUs, 4 ranks; node b: 2 GPUs, 4 ranks (two ranks per GPU); node c: no
    // GPU information, 2 ranks; node d: GPUs without NICs
    Layout lay;
    add_gpu_node(lay, "a", "leaf0", 4, {0, 1, 2, 3}, {0, 0, 1, 1});
    add_gpu_node(lay, "b", "leaf0", 4, {0, 1}, {0, 0});
    lay.add("c", "leaf1");
    lay.add("c", "leaf1");
    add_gpu_node(lay, "d", "leaf1", 3, {-1, -1, -1}, {0, 1, 2});
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), (int)lay.recs.size(), kWithIslands,
                                        &L.p));
    EXPECT_EQ(0, L.p->node_regular);
    EXPECT_EQ(0, L.p->nislands);
    EXPECT_EQ(1, L.p->gpu_of[5]);  // b's second rank: GPU 1
    EXPECT_EQ(0, L.p->gpu_of[6]);  // b's third rank shares GPU 0
    EXPECT_EQ(-1, L.p->gpu_of[8]);
    check_all_colls(lay, kWithIslands, {1, 7});
}

TEST(Discovery, VisibleDevicesPickTheGpu)
{
    Layout lay;
    add_gpu_node(lay, "a", "", 2, {0, 1, 2, 3}, {0, 0, 0, 0});
    for (auto &r : lay.recs) {
        r.nvisible = 1;
        r.visible[0] = 3;
    }
    lay.recs[1].visible[0] = 2;
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 2, kWithIslands, &L.p));
    EXPECT_EQ(3, L.p->gpu_of[0]);
    EXPECT_EQ(2, L.p->gpu_of[1]);
    EXPECT_EQ(3, L.p->rail[0]);
}

TEST(Discovery, RandomGpuLayouts)
{
    std::mt19937 g(99);
    for (int trial = 0; trial < 150; trial++) {
        Layout lay;
        int nn = 1 + (int)(g() % 5), ng = 1 + (int)(g() % 8), nics = 1 + (int)(g() % 4);
        std::vector<int> rails, isl;
        int per_island = 1 + (int)(g() % 4);
        for (int k = 0; k < ng; k++) {
            rails.push_back((int)(k * nics / ng));
            isl.push_back(k / per_island);
        }
        bool same = g() % 2;
        for (int v = 0; v < nn; v++)
            add_gpu_node(lay, "n" + std::to_string(v), "leaf" + std::to_string(v / 2),
                         same ? ng : 1 + (int)(g() % (ng + 1)), rails, isl);
        SCOPED_TRACE("trial " + std::to_string(trial));
        check_all_colls(lay, kWithIslands, {1, 1 + (size_t)(g() % 17)}, false);
    }
}

// ---- pipelined schedules: issue order on every level group -------------------------

namespace {

struct SchedPtr {
    mxh_sched_t *p = nullptr;
    ~SchedPtr() { mxh_sched_destroy(p); }
};

// One issued step: what every member of a group must agree on.
struct Issued {
    int round, stage, frag, type, root;
    size_t count;
    bool operator==(const Issued &o) const
    {
        return round == o.round && stage == o.stage && frag == o.frag && type == o.type &&
               root == o.root && count == o.count;
    }
};

// For every rank, the steps it issues on each level group in the executor's order
// (round, then stage); members of a group must issue identical sequences, else
// nonblocking collectives would be matched wrongly or hang. Also: fragments tile
// the work buffer, and the last round finishes every fragment.
std::string check_sched_order(const mxh_layout_t *L, mxh_coll_t coll, size_t count, int root,
                              size_t tsize, size_t frag, int depth, int ramp = 0)
{
    int n = L->nranks;
    std::map<std::pair<int, int>, std::map<int, std::vector<Issued>>> seq;  // (level,color)->rank
    for (int r = 0; r < n; r++) {
        SchedPtr S;
        if (mxh_sched_create(L, r, coll, count, root, tsize, frag, depth, ramp, &S.p) != MXH_OK)
            return "sched_create failed on rank " + std::to_string(r);
        const mxh_sched_t *s = S.p;
        size_t per = (coll == MXH_COLL_REDUCE_SCATTER_BLOCK || coll == MXH_COLL_ALLGATHER)
                         ? (size_t)n : 1;
        size_t covered = 0;
        for (int f = 0; f < s->nfrag; f++) {
            if (mxh_sched_frag_count(s, f) == 0)
                return "fragment " + std::to_string(f) + " is empty";
            if (mxh_sched_frag_offset(s, f) != covered)
                return "fragment " + std::to_string(f) + " does not follow its predecessor";
            covered += mxh_sched_frag_count(s, f) * per;
            if (mxh_sched_plan(s, f)->count != mxh_sched_frag_count(s, f))
                return "fragment plan has the wrong count";
        }
        if (covered != s->work_count || covered != count * per)
            return "fragments do not tile the work buffer";
        std::vector<int> done(s->nfrag, 0);
        for (int round = 0; round < s->nrounds; round++) {
            for (int st = 0; st < s->nstages; st++) {
                int f = mxh_sched_frag_at(s, round, st);
                if (f < 0)
                    continue;
                const mxh_plan_t *p = mxh_sched_plan(s, f);
                done[f]++;
                int i = p->stage_step[st];
                if (i < 0)
                    continue;
                const mxh_step_t *step = &p->steps[i];
                if (step->stage != st)
                    return "stage map disagrees with the step";
                seq[{step->level, L->color[step->level][r]}][r].push_back(
                    {round, st, f, (int)step->type, step->root, step->count});
            }
        }
        for (int f = 0; f < s->nfrag; f++)
            if (done[f] != s->nstages)
                return "fragment " + std::to_string(f) + " did not pass every stage";
    }
    for (auto &g : seq) {
        // SEND/RECV pairs are point to point: compare collective steps only
        std::vector<Issued> ref;
        bool first = true;
        for (auto &m : g.second) {
            std::vector<Issued> coll_steps;
            for (auto &x : m.second)
                if (x.type != MXH_STEP_SEND && x.type != MXH_STEP_RECV)
                    coll_steps.push_back(x);
            if (first) {
                ref   = coll_steps;
                first = false;
            } else if (!(coll_steps == ref)) {
                return "level " + std::to_string(g.first.first) + " group " +
                       std::to_string(g.first.second) + ": rank " + std::to_string(m.first) +
                       " issues a different sequence";
            }
        }
    }
    return "";
}

}  // namespace

// The stream's window (tune.c stream_window), read off its scratch (one slot per
// fragment in flight): stages + 2; two more per rootless reduce stage; stages + 3 with
// three stages or more where the stream is paced, or where a bcast's staggered steps
// post ahead (link times in ctx->times). 32 nodes x 8 in 4 leaves, 256 MiB in 4 MiB
// fragments. (A rewrite of these rules once dropped two of them: reduce 256 MiB at 128
// simulated GPUs ran 1.6x slower.)
TEST(Sched, StreamWindow)
{
    std::vector<int> nodes(32, 8);
    Layout lay = make_layout(nodes, 8, 0);
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 256, kAllLevels, &L.p));
    mxh_config_t cfg;
    mxh_config_init_defaults(&cfg);
    mxh_cost_model_t m;
    mxh_cost_model_init(&m, &cfg, L.p);
    auto window = [&](mxh_coll_t coll, int rank, const mxh_cost_model_t *pace,
                      const mxh_cost_model_t *times, int *n, int *r) {
        SchedPtr S, one;
        size_t count = coll == MXH_COLL_ALLREDUCE || coll == MXH_COLL_BCAST ||
                               coll == MXH_COLL_REDUCE ? (size_t)64 << 20 : (size_t)1 << 18;
        int root = coll == MXH_COLL_BCAST || coll == MXH_COLL_REDUCE ? 0 : -1;
        EXPECT_EQ(MXH_OK, mxh_sched_create(L.p, rank, coll, count, root, 4, 4 << 20, 0, 2, &S.p));
        EXPECT_EQ(MXH_OK, mxh_sched_create(L.p, rank, coll, count, root, 4, 4 << 20, 1, 2, &one.p));
        mxh_exec_ctx_t ctx;
        memset(&ctx, 0, sizeof(ctx));
        ctx.extent = 4;
        // the tuning pass stamps the window (decide/tune.c), from these link times
        mxh_tune_in_t in = {};
        in.cfg           = &cfg;
        in.pace          = pace;
        in.pace_links    = pace;
        in.times         = times;
        if (S.p)
            mxh_tune_sched(S.p, &in);
        if (one.p)
            mxh_tune_sched(one.p, &in);
        *n = *r = 0;
        for (int st = 0; S.p && st < S.p->nstages; st++) {
            int i = S.p->plan->stage_step[st];
            *n += i >= 0;
            *r += i >= 0 && S.p->plan->steps[i].rootless &&
                  S.p->plan->steps[i].type == MXH_STEP_REDUCE && S.p->plan->steps[i].gsize > 1;
        }
        size_t w1 = mxh_exec_tmp_count(one.p, &ctx);
        return w1 ? (int)(mxh_exec_tmp_count(S.p, &ctx) / w1) : -1;
    };
    int n, r;
    // reduce, a rank of the root's node: its rootless node step
    int w = window(MXH_COLL_REDUCE, 1, nullptr, nullptr, &n, &r);
    ASSERT_GE(r, 1);
    EXPECT_EQ(n + 2 + 2 * r, w);
    // with link times (exec.c reduce_cap), exact links: four on the rail (2 us against
    // 512 KiB / 48 GB/s = 10.92 us) and the node (1 us against 4 MiB / 370 GB/s = 11.34
    // us), eight (the most) on the spine (4 us against 64 KiB / 48 GB/s = 1.37 us: 5 more)
    ASSERT_EQ(3, m.nlevels);
    EXPECT_EQ(n + 2 + 2 + 2 + 6, window(MXH_COLL_REDUCE, 1, nullptr, &m, &n, &r));
    ASSERT_EQ(3, r);
    // latencies of 11.6, 23.3 and 46.6 us: floor(2 x 11.6 / 11.34) = 2 more on the
    // node, floor(2 x 23.3 / 10.92) = 4 on the rail: six and eight
    mxh_cost_model_t slow = m;
    slow.lvl[0].alpha = 11.6e-6;
    slow.lvl[1].alpha = 23.3e-6;
    slow.lvl[2].alpha = 46.6e-6;
    EXPECT_EQ(n + 2 + 4 + 6 + 6, window(MXH_COLL_REDUCE, 1, nullptr, &slow, &n, &r));
    // bcast, a rank of another node of the root's leaf group (rail, spine and node
    // stages): on exact links n + 3 (it posts ahead); under the long latencies its
    // rootless rail step (512 KiB in messages of 1/7) adds floor(2 x 23.3 / 10.92) = 4
    // to n + 2, its spine step (64 KiB, light) nothing
    EXPECT_EQ(6, window(MXH_COLL_BCAST, 9, nullptr, &m, &n, &r));
    EXPECT_EQ(3, n);
    EXPECT_EQ(n + 2 + 4, window(MXH_COLL_BCAST, 9, nullptr, &slow, &n, &r));
    // allreduce, 5 stages: paced n + 3 (= 2n - 2 here), unpaced 2n - 2
    w = window(MXH_COLL_ALLREDUCE, 9, &m, nullptr, &n, &r);
    EXPECT_EQ(5, n);
    EXPECT_EQ(8, w);
    // reduce_scatter_block, 3 stages: paced n + 3, unpaced n + 2
    EXPECT_EQ(6, window(MXH_COLL_REDUCE_SCATTER_BLOCK, 9, &m, nullptr, &n, &r));
    EXPECT_EQ(3, n);
    EXPECT_EQ(5, window(MXH_COLL_REDUCE_SCATTER_BLOCK, 9, nullptr, nullptr, &n, &r));
    // bcast, a rank of the root's node (3 stages): n + 3 posting ahead, else n + 2
    EXPECT_EQ(6, window(MXH_COLL_BCAST, 1, nullptr, &m, &n, &r));
    EXPECT_EQ(3, n);
    EXPECT_EQ(5, window(MXH_COLL_BCAST, 1, nullptr, nullptr, &n, &r));
}

TEST(Sched, FragmentsAndRounds)
{
    LayoutPtr L;
    Layout lay = make_layout({2, 2}, 0, 0);
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 4, kAllLevels, &L.p));
    SchedPtr S;
    // 1000 floats in fragments of 1 KiB: 256 elements, 4 fragments (last 232)
    ASSERT_EQ(MXH_OK, mxh_sched_create(L.p, 0, MXH_COLL_ALLREDUCE, 1000, -1, 4, 1024, 0, 0, &S.p));
    EXPECT_EQ(4, S.p->nfrag);
    EXPECT_EQ(256u, S.p->frag_count);
    EXPECT_EQ(232u, S.p->last_count);
    EXPECT_EQ(3, S.p->nstages);  // RS(node), AR(rail), AG(node)
    EXPECT_EQ(1, S.p->stretch);
    EXPECT_EQ(6, S.p->nrounds);
    EXPECT_EQ(2, S.p->nplans);  // full fragments and the last
    EXPECT_EQ(232u, mxh_sched_plan(S.p, 3)->count);
    EXPECT_EQ(S.p->plan, mxh_sched_plan(S.p, 2));
    EXPECT_EQ(0, mxh_sched_frag_at(S.p, 0, 0));
    EXPECT_EQ(-1, mxh_sched_frag_at(S.p, 0, 1));
    EXPECT_EQ(1, mxh_sched_frag_at(S.p, 2, 1));  // fragment 1 crosses the rail ...
    EXPECT_EQ(2, mxh_sched_frag_at(S.p, 2, 0));  // ... while fragment 2 is reduce-scattered
    EXPECT_EQ(S.p->tmp_slot * 3, S.p->tmp_count);
    // depth 1: no two fragments in flight
    SchedPtr D;
    ASSERT_EQ(MXH_OK, mxh_sched_create(L.p, 0, MXH_COLL_ALLREDUCE, 1000, -1, 4, 1024, 1, 0, &D.p));
    EXPECT_EQ(3, D.p->stretch);
    EXPECT_EQ(12, D.p->nrounds);
    for (int r = 0; r < D.p->nrounds; r++) {
        int busy = 0;
        for (int st = 0; st < D.p->nstages; st++)
            busy += mxh_sched_frag_at(D.p, r, st) >= 0;
        EXPECT_EQ(1, busy) << "round " << r;
    }
    // block collectives: fragment of 1 KiB of the whole vector = 64 floats per block
    SchedPtr B;
    ASSERT_EQ(MXH_OK, mxh_sched_create(L.p, 0, MXH_COLL_REDUCE_SCATTER_BLOCK, 100, -1, 4, 1024, 0,
                                       0, &B.p));
    EXPECT_EQ(64u, B.p->frag_count);
    EXPECT_EQ(2, B.p->nfrag);
    EXPECT_EQ(64u * 4, mxh_sched_frag_offset(B.p, 1));
    // no fragmentation: one fragment, one tmp slot
    SchedPtr W;
    ASSERT_EQ(MXH_OK, mxh_sched_create(L.p, 0, MXH_COLL_ALLREDUCE, 1000, -1, 4, 0, 0, 0, &W.p));
    EXPECT_EQ(1, W.p->nfrag);
    EXPECT_EQ(W.p->tmp_slot, W.p->tmp_count);
    // tiny fragments: at least one element
    SchedPtr T;
    ASSERT_EQ(MXH_OK, mxh_sched_create(L.p, 0, MXH_COLL_ALLGATHER, 5, -1, 8, 1, 0, 0, &T.p));
    EXPECT_EQ(1u, T.p->frag_count);
    EXPECT_EQ(5, T.p->nfrag);
}

TEST(Sched, RampCutsFirstAndLastFragment)
{
    LayoutPtr L;
    Layout lay = make_layout({2, 2}, 0, 0);
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 4, kAllLevels, &L.p));
    const size_t M = (size_t)1 << 20;
    // 1 GiB of floats, 8 MiB fragments: MXH_SCHED_MAX_FRAGS (64) fragments of 16 MiB
    // (4 Mi floats)
    SchedPtr U, R;
    ASSERT_EQ(64, MXH_SCHED_MAX_FRAGS);
    ASSERT_EQ(MXH_OK, mxh_sched_create(L.p, 0, MXH_COLL_ALLREDUCE, 256 * M, -1, 4, 8 * M, 0, 0,
                                       &U.p));
    EXPECT_EQ(64, U.p->nfrag);
    EXPECT_EQ(1, U.p->nplans);
    // ramp 2: the first 16 MiB as 4+4+8, the last as 8+4+4
    ASSERT_EQ(MXH_OK, mxh_sched_create(L.p, 0, MXH_COLL_ALLREDUCE, 256 * M, -1, 4, 8 * M, 0, 2,
                                       &R.p));
    std::vector<size_t> want = {M, M, 2 * M};
    for (int i = 0; i < 62; i++)
        want.push_back(4 * M);
    for (size_t x : {2 * M, M, M})
        want.push_back(x);
    ASSERT_EQ((int)want.size(), R.p->nfrag);
    for (int f = 0; f < R.p->nfrag; f++) {
        EXPECT_EQ(want[f], mxh_sched_frag_count(R.p, f)) << "fragment " << f;
        EXPECT_EQ(want[f], mxh_sched_plan(R.p, f)->count) << "fragment " << f;
    }
    EXPECT_EQ(3, R.p->nplans);  // 4 Mi, 1 Mi, 2 Mi
    EXPECT_EQ(4 * M, R.p->frag_count);
    // bcast: the head ramp only (sched.h mxh_sched_tail_ramp); reduce both
    for (mxh_coll_t c : {MXH_COLL_BCAST, MXH_COLL_REDUCE}) {
        SchedPtr B;
        ASSERT_EQ(MXH_OK, mxh_sched_create(L.p, 0, c, 256 * M, 0, 4, 8 * M, 0, 2, &B.p));
        int tail = c == MXH_COLL_BCAST ? 0 : 2;
        ASSERT_EQ(64 + 2 + tail, B.p->nfrag) << mxh_coll_name(c);
        EXPECT_EQ(M, mxh_sched_frag_count(B.p, 0));
        EXPECT_EQ(tail ? M : 4 * M, mxh_sched_frag_count(B.p, B.p->nfrag - 1));
        EXPECT_EQ(256 * M, mxh_sched_frag_start(B.p, B.p->nfrag));
    }
    EXPECT_EQ(R.p->nfrag - 1 + R.p->nstages, R.p->nrounds);
    // the last fragment's ramp follows its own size; pieces stay >= 64 KiB
    SchedPtr O;
    size_t odd = 240 * M + 12345;
    ASSERT_EQ(MXH_OK, mxh_sched_create(L.p, 0, MXH_COLL_ALLREDUCE, odd, -1, 4, 8 * M, 0, 4,
                                       &O.p));
    EXPECT_EQ(odd, mxh_sched_frag_start(O.p, O.p->nfrag));
    size_t fc = (odd + 63) / 64;
    EXPECT_EQ(fc >> 4, mxh_sched_frag_count(O.p, 0));
    EXPECT_EQ(mxh_sched_frag_count(O.p, 0), mxh_sched_frag_count(O.p, 1));
    for (int f = 0; f < O.p->nfrag; f++)
        EXPECT_GE(mxh_sched_frag_count(O.p, f) * 4, MXH_SCHED_MIN_PIECE) << "fragment " << f;
    EXPECT_EQ("", check_sched_order(L.p, MXH_COLL_ALLREDUCE, odd, -1, 4, 8 * M, 0, 4));
    // small fragments (< 1 MiB) are never ramped; neither is a single fragment
    SchedPtr S, N;
    ASSERT_EQ(MXH_OK, mxh_sched_create(L.p, 0, MXH_COLL_ALLREDUCE, M, -1, 4, 512 << 10, 0, 2,
                                       &S.p));
    EXPECT_EQ(8, S.p->nfrag);
    ASSERT_EQ(MXH_OK, mxh_sched_create(L.p, 0, MXH_COLL_ALLREDUCE, M, -1, 4, 8 * M, 0, 2, &N.p));
    EXPECT_EQ(1, N.p->nfrag);
    // block collectives: ramps in elements per block, offsets fragment-major
    for (mxh_coll_t c : {MXH_COLL_REDUCE_SCATTER_BLOCK, MXH_COLL_ALLGATHER}) {
        SchedPtr B;
        ASSERT_EQ(MXH_OK, mxh_sched_create(L.p, 0, c, 64 * M, -1, 4, 8 * M, 0, 2, &B.p));
        EXPECT_EQ(68, B.p->nfrag);
        EXPECT_EQ(M / 4, mxh_sched_frag_count(B.p, 0));
        EXPECT_EQ(M / 4 * 4, mxh_sched_frag_offset(B.p, 1));
        EXPECT_EQ("", check_sched_order(L.p, c, 16 * M + 7, -1, 4, 8 * M, 2, 2));
    }
}

TEST(Sched, LinearRampGrowsByEighths)
{
    LayoutPtr L;
    Layout lay = make_layout({2, 2}, 0, 0);
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 4, kAllLevels, &L.p));
    const size_t M = (size_t)1 << 20;
    const int lin  = MXH_SCHED_RAMP_LINEAR;
    // 256 MiB of floats in 8 MiB fragments (2 Mi floats, F): F/8, 2F/8, ..., 7F/8 (3.5 F),
    // 25 full fragments, then the same reversed
    SchedPtr R;
    ASSERT_EQ(MXH_OK, mxh_sched_create(L.p, 0, MXH_COLL_ALLREDUCE, 64 * M, -1, 4, 8 * M, 0, lin,
                                       &R.p));
    const size_t F = 2 * M;
    std::vector<size_t> want;
    for (size_t j = 1; j < 8; j++)
        want.push_back(F * j / 8);
    for (int i = 0; i < 25; i++)
        want.push_back(F);
    for (size_t j = 7; j >= 1; j--)
        want.push_back(F * j / 8);
    ASSERT_EQ((int)want.size(), R.p->nfrag);
    for (int f = 0; f < R.p->nfrag; f++) {
        EXPECT_EQ(want[f], mxh_sched_frag_count(R.p, f)) << "fragment " << f;
        EXPECT_EQ(want[f], mxh_sched_plan(R.p, f)->count) << "fragment " << f;
    }
    EXPECT_EQ(8, R.p->nplans); // F and its seven eighths
    EXPECT_EQ(64 * M, mxh_sched_frag_start(R.p, R.p->nfrag));
    // the cost model cuts the same (decide/cost.c mxh_cost_frags -> mxh_sched_cut)
    std::vector<size_t> cut(want.size() + 1);
    EXPECT_EQ(want.size(), mxh_sched_cut(MXH_COLL_ALLREDUCE, 64 * M, 4, 1, 8 * M, lin,
                                         cut.data(), cut.size()));
    cut.pop_back();
    EXPECT_EQ(want, cut);
    // bcast: the head only; an odd count keeps its remainder last among the full ones
    SchedPtr B, O;
    ASSERT_EQ(MXH_OK, mxh_sched_create(L.p, 0, MXH_COLL_BCAST, 64 * M, 0, 4, 8 * M, 0, lin, &B.p));
    EXPECT_EQ(7 + 29, B.p->nfrag); // 64 Mi - 3.5 F = 28.5 F
    EXPECT_EQ(F / 2, mxh_sched_frag_count(B.p, B.p->nfrag - 1));
    size_t odd = 64 * M + 12345;
    ASSERT_EQ(MXH_OK, mxh_sched_create(L.p, 0, MXH_COLL_REDUCE, odd, 0, 4, 8 * M, 0, lin, &O.p));
    EXPECT_EQ(odd, mxh_sched_frag_start(O.p, O.p->nfrag));
    EXPECT_EQ(F / 8, mxh_sched_frag_count(O.p, 0));
    EXPECT_EQ(F / 8, mxh_sched_frag_count(O.p, O.p->nfrag - 1));
    EXPECT_EQ(12345u, mxh_sched_frag_count(O.p, O.p->nfrag - 8));
    EXPECT_LE(O.p->nplans, MXH_SCHED_MAX_PLANS);
    EXPECT_EQ("", check_sched_order(L.p, MXH_COLL_REDUCE, odd, 0, 4, 8 * M, 0, lin));
    // 5 fragments' worth: 5 steps (jF/5 at each end, one full fragment between); 1: none
    SchedPtr S, N;
    const size_t G = 5 * M / 4; // 5 MiB fragments of floats: eighths and fifths exact
    ASSERT_EQ(MXH_OK, mxh_sched_create(L.p, 0, MXH_COLL_ALLREDUCE, 5 * G, -1, 4, 5 * M, 0, lin,
                                       &S.p));
    std::vector<size_t> short_want = {G / 5, 2 * G / 5, 3 * G / 5, 4 * G / 5, G,
                                      4 * G / 5, 3 * G / 5, 2 * G / 5, G / 5};
    ASSERT_EQ((int)short_want.size(), S.p->nfrag);
    for (int f = 0; f < S.p->nfrag; f++)
        EXPECT_EQ(short_want[f], mxh_sched_frag_count(S.p, f)) << "fragment " << f;
    ASSERT_EQ(MXH_OK, mxh_sched_create(L.p, 0, MXH_COLL_ALLREDUCE, M, -1, 4, 8 * M, 0, lin, &N.p));
    EXPECT_EQ(1, N.p->nfrag);
    // block collectives: in elements per block; allgather's ramp in sixths
    // (mxh_sched_linear_steps): 5 pieces per end (2.5 fragments' worth, less the
    // floors' 2 elements), 27 full fragments and the 4 elements left
    for (mxh_coll_t c : {MXH_COLL_REDUCE_SCATTER_BLOCK, MXH_COLL_ALLGATHER}) {
        SchedPtr K;
        int m = c == MXH_COLL_ALLGATHER ? 6 : 8;
        EXPECT_EQ(m, mxh_sched_linear_steps(c));
        ASSERT_EQ(MXH_OK, mxh_sched_create(L.p, 0, c, 16 * M, -1, 4, 8 * M, 0, lin, &K.p));
        EXPECT_EQ(m == 8 ? 7 + 25 + 7 : 5 + 28 + 5, K.p->nfrag);
        EXPECT_EQ(F / 4 / m, mxh_sched_frag_count(K.p, 0));
        EXPECT_EQ(F / 4 / m * 4, mxh_sched_frag_offset(K.p, 1));
        EXPECT_EQ(F / 4 * (m - 1) / m, mxh_sched_frag_count(K.p, m - 2));
        EXPECT_EQ(F / 4 / m, mxh_sched_frag_count(K.p, K.p->nfrag - 1));
        EXPECT_EQ(16 * M, mxh_sched_frag_start(K.p, K.p->nfrag));
        EXPECT_EQ("", check_sched_order(L.p, c, 4 * M + 7, -1, 4, 8 * M, 2, lin));
    }
    // auto: the model's pick where the network is flat and not a torus, else 2 halvings;
    // a schedule asked for auto or pick runs halvings
    EXPECT_EQ(MXH_SCHED_RAMP_PICK, mxh_sched_ramp_auto(MXH_SCHED_RAMP_AUTO, 1, 0));
    EXPECT_EQ(2, mxh_sched_ramp_run(MXH_SCHED_RAMP_PICK));
    EXPECT_EQ(2, mxh_sched_ramp_run(MXH_SCHED_RAMP_AUTO));
    EXPECT_EQ(lin, mxh_sched_ramp_run(lin));
    EXPECT_EQ(2, mxh_sched_ramp_auto(MXH_SCHED_RAMP_AUTO, 0, 0));
    EXPECT_EQ(2, mxh_sched_ramp_auto(MXH_SCHED_RAMP_AUTO, 1, 1));
    EXPECT_EQ(3, mxh_sched_ramp_auto(3, 1, 0));
}

TEST(Sched, IssueOrderAgreesOnEveryGroup)
{
    std::mt19937 g(7);
    for (int trial = 0; trial < 250; trial++) {
        int nn = 1 + (int)(g() % 6);
        std::vector<int> nodes;
        for (int v = 0; v < nn; v++)
            nodes.push_back(1 + (int)(g() % 4));
        Layout lay = make_layout(nodes, (int)(g() % 3), (int)(g() % 3), (unsigned)trial);
        LayoutPtr L;
        ASSERT_EQ(MXH_OK,
                  mxh_layout_create(lay.recs.data(), (int)lay.recs.size(), kAllLevels, &L.p));
        if (L.p->nlevels < 1)
            continue;
        int n      = L.p->nranks;
        size_t cnt = 1 + g() % 40, tsize = 1 + g() % 8, frag = g() % 5 == 0 ? 0 : 1 + g() % 64;
        int depth  = (int)(g() % 4), ramp = 0;
        if (trial % 5 == 0) {  // pipelines of big fragments, ramped
            frag = ((size_t)1 << 20) * (1 + g() % 4);
            cnt  = frag / tsize * (1 + g() % 20) / 2 + g() % 1000;
            ramp = (int)(g() % 5);
        }
        SCOPED_TRACE("trial " + std::to_string(trial) + " n " + std::to_string(n) + " count " +
                     std::to_string(cnt) + " frag " + std::to_string(frag) + " depth " +
                     std::to_string(depth) + " ramp " + std::to_string(ramp));
        for (int c = 0; c < MXH_COLL_NSCHED; c++) {
            int root = (c == MXH_COLL_BCAST || c == MXH_COLL_REDUCE) ? (int)(g() % n) : -1;
            EXPECT_EQ("", check_sched_order(L.p, (mxh_coll_t)c, cnt, root, tsize, frag, depth,
                                              ramp))
                << mxh_coll_name((mxh_coll_t)c) << " root " << root;
        }
    }
}

TEST(Sched, TorusIssueOrderAgreesOnEveryGroup)
{
    std::mt19937 g(17);
    const std::vector<std::vector<int>> shapes = {{2, 2}, {3, 2}, {4, 2, 2}, {3, 3}, {2, 2, 2}};
    for (int trial = 0; trial < 40; trial++) {
        Layout lay = make_torus(shapes[trial % shapes.size()], 1 + (int)(g() % 4), (unsigned)trial);
        LayoutPtr L;
        ASSERT_EQ(MXH_OK,
                  mxh_layout_create(lay.recs.data(), (int)lay.recs.size(), kAllLevels, &L.p));
        ASSERT_GT(L.p->torus_ndims, 0);
        int n      = L.p->nranks;
        size_t cnt = 1 + g() % 400, tsize = 4, frag = 1 + g() % 64;
        int depth  = (int)(g() % 4);
        SCOPED_TRACE("trial " + std::to_string(trial) + " n " + std::to_string(n));
        for (int c = 0; c < MXH_COLL_NSCHED; c++) {
            int root = (c == MXH_COLL_BCAST || c == MXH_COLL_REDUCE) ? (int)(g() % n) : -1;
            EXPECT_EQ("", check_sched_order(L.p, (mxh_coll_t)c, cnt, root, tsize, frag, depth))
                << mxh_coll_name((mxh_coll_t)c) << " root " << root;
        }
    }
}

// ---- selection -------------------------------------------------------------------

TEST(Select, DefaultsByShapeAndSize)
{
    mxh_config_t cfg;
    mxh_config_init_defaults(&cfg);
    mxh_select_shape_t one_node = {4, 1, 1}, two_levels = {8, 2, 0}, flat = {4, 1, 0};
    mxh_select_shape_t single = {1, 0, 0};

    for (int c = 0; c < MXH_COLL_NSCHED; c++) {
        auto coll = (mxh_coll_t)c;
        EXPECT_EQ(MXH_ALGO_SHM, mxh_select(&cfg, &one_node, coll, 8, 8).algo);
        // shared memory at every size, but allgather hands large messages to MPI
        // (MPICH's single-copy rendezvous wins there)
        bool unlimited = coll != MXH_COLL_ALLGATHER;
        EXPECT_EQ(unlimited ? MXH_ALGO_SHM : MXH_ALGO_MPI,
                  mxh_select(&cfg, &one_node, coll, 64 << 20, 64 << 20).algo);
        size_t lim = mxh_select_shm_max(coll);
        EXPECT_EQ(unlimited, lim == SIZE_MAX);
        if (!unlimited) {
            EXPECT_EQ(MXH_ALGO_SHM, mxh_select(&cfg, &one_node, coll, 1, lim - 1).algo);
            EXPECT_EQ(MXH_ALGO_MPI, mxh_select(&cfg, &one_node, coll, 1, lim).algo);
        }
        EXPECT_EQ(MXH_ALGO_MPI, mxh_select(&cfg, &flat, coll, 1 << 20, 1 << 20).algo);
        EXPECT_EQ(MXH_ALGO_MPI, mxh_select(&cfg, &single, coll, 1 << 20, 1 << 20).algo);
        EXPECT_EQ(MXH_ALGO_HIER, mxh_select(&cfg, &two_levels, coll, 8, 8).algo);
        mxh_choice_t big = mxh_select(&cfg, &two_levels, coll, 64 << 20, 64 << 20);
        EXPECT_EQ(MXH_ALGO_PIPELINE, big.algo);
        EXPECT_EQ(cfg.frag_size, big.frag_bytes);
        // the threshold is two fragments of the whole vector
        EXPECT_EQ(MXH_ALGO_HIER,
                  mxh_select(&cfg, &two_levels, coll, 1, 2 * cfg.frag_size - 1).algo);
        EXPECT_EQ(MXH_ALGO_PIPELINE, mxh_select(&cfg, &two_levels, coll, 1, 2 * cfg.frag_size).algo);
    }
    cfg.min_bytes = 4096;
    EXPECT_EQ(MXH_ALGO_MPI, mxh_select(&cfg, &one_node, MXH_COLL_ALLREDUCE, 4095, 4095).algo);
    EXPECT_EQ(MXH_ALGO_SHM, mxh_select(&cfg, &one_node, MXH_COLL_ALLREDUCE, 4096, 4096).algo);
    cfg.min_bytes = 0;
    cfg.frag_size = 0;  // pipelining disabled
    EXPECT_EQ(MXH_ALGO_HIER, mxh_select(&cfg, &two_levels, MXH_COLL_ALLREDUCE, 1 << 30, 1 << 30).algo);
    cfg.enable = 0;
    EXPECT_EQ(MXH_ALGO_MPI, mxh_select(&cfg, &one_node, MXH_COLL_ALLREDUCE, 8, 8).algo);
}

TEST(Select, ForcedAlgorithmsDegrade)
{
    mxh_config_t cfg;
    mxh_config_init_defaults(&cfg);
    mxh_select_shape_t one_node = {4, 1, 1}, two_levels = {8, 2, 0}, one_node_noshm = {4, 1, 0};

    ASSERT_EQ(MXH_OK, mxh_config_set(&cfg, "MPIX_HIER_ALGO", "pipeline,bcast:mpi", "test"));
    EXPECT_EQ(MXH_ALGO_PIPELINE, mxh_select(&cfg, &two_levels, MXH_COLL_ALLREDUCE, 8, 8).algo);
    EXPECT_EQ(MXH_ALGO_MPI, mxh_select(&cfg, &two_levels, MXH_COLL_BCAST, 8 << 20, 8 << 20).algo);
    // pipeline on one node: shm; without a segment: mpi
    EXPECT_EQ(MXH_ALGO_SHM, mxh_select(&cfg, &one_node, MXH_COLL_ALLGATHER, 8, 8).algo);
    EXPECT_EQ(MXH_ALGO_MPI, mxh_select(&cfg, &one_node_noshm, MXH_COLL_ALLGATHER, 8, 8).algo);
    ASSERT_EQ(MXH_OK, mxh_config_set(&cfg, "MPIX_HIER_ALGO", "shm", "test"));
    EXPECT_EQ(MXH_ALGO_HIER, mxh_select(&cfg, &two_levels, MXH_COLL_REDUCE, 8, 8).algo);
    // forcing overrides MIN_BYTES
    cfg.min_bytes = 1 << 20;
    EXPECT_EQ(MXH_ALGO_SHM, mxh_select(&cfg, &one_node, MXH_COLL_REDUCE, 8, 8).algo);
    ASSERT_EQ(MXH_OK, mxh_config_set(&cfg, "mpix_hier_algo",
                                     "reduce_scatter_block:hier,allreduce:mpi", "test"));
    EXPECT_EQ(MXH_ALGO_HIER, cfg.algo[MXH_COLL_REDUCE_SCATTER_BLOCK]);
    EXPECT_EQ(MXH_ALGO_MPI, cfg.algo[MXH_COLL_ALLREDUCE]);
    EXPECT_EQ(MXH_ALGO_AUTO, cfg.algo[MXH_COLL_BCAST]);
    char buf[256];
    mxh_config_get_string(&cfg, "MPIX_HIER_ALGO", buf, sizeof(buf));
    EXPECT_STREQ("allreduce:mpi,reduce_scatter_block:hier", buf);
    for (const char *bad : {"fast", "allreduce:", "allreduce:fast", "scan:mpi", ":mpi", "mpi,,"})
        EXPECT_EQ(MXH_ERR_PARSE, mxh_config_set(&cfg, "MPIX_HIER_ALGO", bad, "test")) << bad;
}

TEST(Select, DescribeNamesSizeRanges)
{
    mxh_config_t cfg;
    mxh_config_init_defaults(&cfg);
    mxh_select_shape_t two_levels = {8, 2, 0};
    char buf[512];

    cfg.min_bytes = 1024;
    mxh_select_describe(&cfg, &two_levels, MXH_COLL_ALLREDUCE, buf, sizeof(buf));
    EXPECT_STREQ("[0 B, 1 KiB) mpi; [1 KiB, 16 MiB) hier; [16 MiB, inf) pipeline (fragments of 8 MiB)",
                 buf);
    // block collectives: two fragments of the whole vector = 16 MiB / 8 ranks per block
    mxh_select_describe(&cfg, &two_levels, MXH_COLL_ALLGATHER, buf, sizeof(buf));
    EXPECT_STREQ("[0 B, 1 KiB) mpi; [1 KiB, 2 MiB) hier; [2 MiB, inf) pipeline (fragments of 8 MiB)",
                 buf);
    mxh_select_shape_t one_node = {2, 1, 1};
    cfg.min_bytes = 0;
    mxh_select_describe(&cfg, &one_node, MXH_COLL_ALLREDUCE, buf, sizeof(buf));
    EXPECT_STREQ("[0 B, inf) shm", buf);
    mxh_select_describe(&cfg, &one_node, MXH_COLL_BCAST, buf, sizeof(buf));
    EXPECT_STREQ("[0 B, inf) shm", buf);
    // allgather: the limit is on the whole vector, 2 MiB / 2 ranks per block
    mxh_select_describe(&cfg, &one_node, MXH_COLL_ALLGATHER, buf, sizeof(buf));
    EXPECT_STREQ("[0 B, 1 MiB) shm; [1 MiB, inf) mpi", buf);
}

// ---- the hierarchical alltoall's view of a layout ------------------------------

// Applies to >= 2 nodes of the same size >= 2, in any rank order.
TEST(AlltoallLayout, Applicable)
{
    struct {
        std::vector<int> nodes;
        int order;
        bool want;
    } cases[] = {
        {{2, 2}, 0, true},        {{3, 3}, 1, true},        {{2, 2, 2, 2}, 2, true},
        {{8, 8, 8, 8}, 2, true},  {{2, 2, 2}, 1, true},     {{3, 1}, 0, false},
        {{1, 3}, 0, false},       {{1, 2, 3}, 0, false},    {{2, 3}, 0, false},
        {{3, 3, 2}, 2, false},    {{4}, 0, false},          {{1, 1, 1}, 0, false},
        {{1}, 0, false},
    };
    for (auto &c : cases) {
        Layout lay = make_layout(c.nodes, 0, c.order);
        LayoutPtr L;
        ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), (int)lay.recs.size(), kAllLevels, &L.p));
        std::string name;
        for (int v : c.nodes)
            name += std::to_string(v) + " ";
        EXPECT_EQ(c.want, mxh_alltoall_applicable(L.p) != 0) << "nodes " << name << "order " << c.order;
        if (!c.want)
            continue;
        // slots: a permutation of 0..g-1 on every node (rails = local index here)
        int n = L.p->nranks, g = n / L.p->nnodes;
        std::vector<int> slot(n, -1);
        ASSERT_EQ(MXH_OK, mxh_alltoall_slots(L.p, slot.data()));
        std::map<std::pair<int, int>, int> seen;
        for (int r = 0; r < n; r++) {
            EXPECT_EQ(L.p->local_index[r], slot[r]) << "rank " << r;
            EXPECT_TRUE(slot[r] >= 0 && slot[r] < g);
            int k = seen[std::make_pair(L.p->node_of[r], slot[r])]++;
            EXPECT_EQ(0, k) << "rank " << r;
        }
    }
}

// Slots follow the rails: the same slot is the same rail on every node.
TEST(AlltoallLayout, SlotsFollowRails)
{
    Layout lay;
    lay.add("a", "", 1);
    lay.add("a", "", 0);
    lay.add("b", "", 0);
    lay.add("b", "", 1);
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 4, kAllLevels, &L.p));
    ASSERT_TRUE(mxh_alltoall_applicable(L.p));
    std::vector<int> slot(4, -1);
    ASSERT_EQ(MXH_OK, mxh_alltoall_slots(L.p, slot.data()));
    for (int r = 0; r < 4; r++)
        EXPECT_EQ(L.p->rail[r], slot[r]) << "rank " << r;
    EXPECT_EQ(1, slot[0]);
    EXPECT_EQ(0, slot[1]);
}

// The tuning pass stamps the executor's choices into the schedule, and the cost model
// prices a stream by the same rules (tune.h): for a rank that runs every stage of the
// plan's stages, the window and stage caps the model uses are the ones stamped into the
// schedule, unpaced and paced, and every step carries the algorithm p2p.c's choice
// gives it. 32 nodes x 8 GPUs in 4 leaf groups, 256 MiB in 4 MiB fragments.
TEST(Tune, ModelReadsTheExecutorsCapsAndWindow)
{
    std::vector<int> nodes(32, 8);
    Layout lay = make_layout(nodes, 8, 0);
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 256, kAllLevels, &L.p));
    mxh_config_t cfg;
    mxh_config_init_defaults(&cfg);
    mxh_cost_model_t m;
    mxh_cost_model_init(&m, &cfg, L.p);
    ASSERT_EQ(3, m.nlevels);
    for (mxh_coll_t coll : {MXH_COLL_ALLREDUCE, MXH_COLL_REDUCE_SCATTER_BLOCK})
        for (int paced : {0, 1}) {
            size_t count = coll == MXH_COLL_ALLREDUCE ? (size_t)64 << 20 : (size_t)1 << 18;
            SchedPtr S;
            ASSERT_EQ(MXH_OK, mxh_sched_create(L.p, 9, coll, count, -1, 4, 4 << 20, 0, 0, &S.p));
            mxh_tune_in_t in = {};
            in.cfg           = &cfg;
            in.times         = &m;
            in.pace          = paced ? &m : nullptr;
            in.pace_links    = in.pace;
            mxh_tune_sched(S.p, &in);
            mxh_cost_model_t mm = m;
            mm.pace             = paced;
            mm.ramp             = 0;
            int cap[2 * MXH_MAX_LEVELS + 1];
            int W = mxh_cost_stream_caps(&mm, coll, count, 4, 4 << 20, cap, 2 * MXH_MAX_LEVELS + 1);
            std::string what = std::string(mxh_coll_name(coll)) + (paced ? " paced" : "");
            EXPECT_EQ(1, S.p->tuned.stream) << what;
            EXPECT_EQ(W, S.p->tuned.window) << what;
            ASSERT_EQ(2 * m.nlevels - 1, S.p->nstages) << what;
            int n = 0; // allreduce: all five stages; reduce_scatter_block: the three up
            for (int st = 0; st < S.p->nstages; st++) {
                if (S.p->plan->stage_step[st] < 0)
                    continue;
                n++;
                EXPECT_EQ(cap[st + 1], S.p->tuned.cap[st]) << what << " stage " << st;
            }
            EXPECT_EQ(coll == MXH_COLL_ALLREDUCE ? 5 : 3, n) << what;
            EXPECT_EQ(paced ? MXH_TUNE_STAGE_CAP_PACED : MXH_TUNE_STAGE_CAP, S.p->tuned.cap[0])
                << what;
            EXPECT_EQ(paced != 0, S.p->tuned.pace != nullptr) << what;
            for (int i = 0; i < S.p->plan->nsteps; i++) {
                const mxh_step_t *s = &S.p->plan->steps[i];
                EXPECT_EQ((int)mxh_p2p_choose(s, 4) + 1, s->algo) << what << " step " << i;
            }
        }
}

// MPIX_HIER_ALGO spells the collectives as the collectives' table names them.
TEST(CollDesc, ConfigParsesTheTablesNames)
{
    for (int c = 0; c < MXH_COLL_COUNT; c++) {
        mxh_config_t cfg;
        mxh_config_init_defaults(&cfg);
        std::string v = std::string(mxh_coll_name((mxh_coll_t)c)) + ":mpi";
        ASSERT_EQ(MXH_OK, mxh_config_set(&cfg, "MPIX_HIER_ALGO", v.c_str(), "test")) << v;
        for (int d = 0; d < MXH_COLL_COUNT; d++)
            EXPECT_EQ(d == c ? 1 : 0, cfg.algo[d]) << v << " collective " << d;
        char buf[128];
        mxh_config_get_string(&cfg, "MPIX_HIER_ALGO", buf, sizeof(buf));
        EXPECT_EQ(v, std::string(buf));
    }
    mxh_config_t cfg;
    mxh_config_init_defaults(&cfg);
    EXPECT_NE(MXH_OK, mxh_config_set(&cfg, "MPIX_HIER_ALGO", "allreduc:mpi", "test"));
    EXPECT_STREQ("?", mxh_coll_name(MXH_COLL_COUNT));
}

// The facts the bodies, plans and cost model read from the table.
TEST(CollDesc, Facts)
{
    for (int c = 0; c < MXH_COLL_COUNT; c++) {
        const mxh_coll_desc_t *d = mxh_coll_info((mxh_coll_t)c);
        EXPECT_EQ(c == MXH_COLL_BCAST || c == MXH_COLL_REDUCE, d->rooted) << d->name;
        EXPECT_EQ(c == MXH_COLL_ALLGATHERV || c == MXH_COLL_REDUCE_SCATTER ||
                      c == MXH_COLL_ALLTOALLV,
                  d->vector)
            << d->name;
        EXPECT_EQ(c < MXH_COLL_NSCHED, !d->vector && c != MXH_COLL_ALLTOALL) << d->name;
    }
}

// ---- parallelism groups (decide/parallel.h) ----------------------------------------

namespace {

// The topology order of parallel.h written out on its own: ranks sorted by (leaf, node's
// place in its leaf, node, island, rail, GPU, local index, rank); [rank] -> position.
std::vector<int> ref_order(const mxh_layout_t *L)
{
    int n = L->nranks;
    std::vector<int> order(n), at(n);
    for (int r = 0; r < n; r++)
        order[r] = r;
    auto key = [L](int r) {
        int v = L->node_of[r];
        return std::vector<int>{L->leaf_of_node[v], L->node_pos[v], v,
                                L->nislands ? L->island_of[r] : 0, L->rail[r], L->gpu_of[r],
                                L->local_index[r], r};
    };
    std::sort(order.begin(), order.end(), [&](int a, int b) { return key(a) < key(b); });
    for (int p = 0; p < n; p++)
        at[order[p]] = p;
    return at;
}

// The placement rule: dimension d's group of a rank is the ranks whose position in the
// topology order has the same mixed-radix digits but the d-th. Returns each rank's group
// as the sorted list of its members.
std::vector<std::vector<int>> ref_groups(const mxh_layout_t *L, const std::vector<int> &size,
                                         size_t d)
{
    int n = L->nranks;
    std::vector<int> at = ref_order(L);
    auto digits = [&](int p) {
        std::vector<int> dg;
        for (int s : size) {
            dg.push_back(p % s);
            p /= s;
        }
        return dg;
    };
    std::vector<std::vector<int>> g(n);
    for (int r = 0; r < n; r++)
        for (int s = 0; s < n; s++) {
            std::vector<int> a = digits(at[r]), b = digits(at[s]);
            a[d] = b[d] = 0;
            if (a == b)
                g[r].push_back(s);
        }
    return g;
}

struct Placed {
    mxh_status_t st;
    std::vector<int> size;
    std::vector<mxh_parallel_span_t> span;
    std::vector<std::vector<std::vector<int>>> groups; // [d][rank]: members, sorted
    std::string why;
};

Placed place(const mxh_layout_t *L, std::vector<int> size)
{
    Placed P;
    int n = L->nranks;
    std::vector<int> pos(n);
    P.span.resize(size.size());
    char why[256];
    P.st   = mxh_parallel_place(L, (int)size.size(), size.data(), pos.data(), P.span.data(),
                                why, sizeof(why));
    P.size = size;
    P.why  = why;
    if (P.st != MXH_OK)
        return P;
    for (size_t d = 0; d < size.size(); d++) {
        std::map<int, std::vector<std::pair<int, int>>> by_color; // colour -> (key, rank)
        std::vector<int> color(n), key(n);
        for (int r = 0; r < n; r++) {
            mxh_parallel_group(size.data(), (int)d, pos[r], &color[r], &key[r]);
            by_color[color[r]].push_back({key[r], r});
        }
        std::vector<std::vector<int>> g(n);
        for (int r = 0; r < n; r++) {
            auto m = by_color[color[r]];
            std::sort(m.begin(), m.end());
            for (size_t k = 0; k < m.size(); k++) {
                EXPECT_EQ((int)k, m[k].first) << "keys of a group are 0..size-1";
                g[r].push_back(m[k].second);
            }
            std::sort(g[r].begin(), g[r].end());
        }
        P.groups.push_back(g);
    }
    return P;
}

// Places @size on @lay; expects the reference's groups and @spans.
void expect_placement(const Layout &lay, int mask, const std::vector<int> &size,
                      const std::vector<mxh_parallel_span_t> &spans)
{
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), (int)lay.recs.size(), mask, &L.p));
    Placed P = place(L.p, size);
    ASSERT_EQ(MXH_OK, P.st) << P.why;
    for (size_t d = 0; d < size.size(); d++) {
        EXPECT_EQ(spans[d], P.span[d]) << "dimension " << d;
        auto ref = ref_groups(L.p, P.size, d);
        for (int r = 0; r < L.p->nranks; r++) {
            EXPECT_EQ(ref[r], P.groups[d][r]) << "dimension " << d << " rank " << r;
            EXPECT_EQ((size_t)P.size[d], P.groups[d][r].size());
        }
    }
}

} // namespace

// tp = 8 inside a node, pp = 2 on the nodes of one leaf, dp = the rest across leaves;
// ranks interleaved over the nodes and shuffled: the groups follow the machine.
TEST(Parallel, GroupsFollowTheMachine)
{
    const auto N = MXH_SPAN_NODE, F = MXH_SPAN_LEAF, S = MXH_SPAN_SPINE;
    for (int order : {0, 1, 2}) {
        Layout lay = make_layout({8, 8, 8, 8, 8, 8, 8, 8}, 2, order, 7);
        expect_placement(lay, kAllLevels, {8, 2, 0}, {N, F, S});
        expect_placement(lay, kAllLevels, {4, 2, 2, 0}, {N, N, F, S});
        expect_placement(lay, kAllLevels, {0}, {S});
        expect_placement(lay, kAllLevels, {1, 64}, {MXH_SPAN_SELF, S});
        LayoutPtr L;
        ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 64, kAllLevels, &L.p));
        Placed P = place(L.p, {8, 2, 0});
        ASSERT_EQ(MXH_OK, P.st);
        EXPECT_EQ(4, P.size[2]);
        for (int r = 0; r < 64; r++) {
            for (int m : P.groups[0][r]) // tp: one node
                EXPECT_EQ(L.p->node_of[r], L.p->node_of[m]);
            for (int m : P.groups[1][r]) { // pp: one leaf, one rail
                EXPECT_EQ(L.p->leaf_of_node[L.p->node_of[r]], L.p->leaf_of_node[L.p->node_of[m]]);
                EXPECT_EQ(L.p->rail[r], L.p->rail[m]);
            }
            std::set<int> leaves;
            for (int m : P.groups[2][r]) { // dp: one rail, every leaf
                EXPECT_EQ(L.p->rail[r], L.p->rail[m]);
                leaves.insert(L.p->leaf_of_node[L.p->node_of[m]]);
            }
            EXPECT_EQ(4u, leaves.size());
        }
    }
}

// Two nodes of 8 GPUs in NVLink islands of 4 (GPUs 0-3 and 4-7), ranks in reverse GPU
// order: a group of 4 is one island, of 2 half of one.
TEST(Parallel, IslandsHoldTheInnermostGroups)
{
    Layout lay;
    add_gpu_node(lay, "a", "", 8, {0, 1, 2, 3, 4, 5, 6, 7}, {0, 0, 0, 0, 1, 1, 1, 1},
                 {7, 6, 5, 4, 3, 2, 1, 0});
    add_gpu_node(lay, "b", "", 8, {0, 1, 2, 3, 4, 5, 6, 7}, {0, 0, 0, 0, 1, 1, 1, 1},
                 {7, 6, 5, 4, 3, 2, 1, 0});
    const auto I = MXH_SPAN_ISLAND, N = MXH_SPAN_NODE, F = MXH_SPAN_LEAF;
    expect_placement(lay, kWithIslands, {4, 2, 2}, {I, N, F});
    expect_placement(lay, kWithIslands, {2, 2, 0}, {I, I, F});
    expect_placement(lay, kWithIslands, {8, 2}, {N, F});
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), 16, kWithIslands, &L.p));
    Placed P = place(L.p, {4, 0});
    ASSERT_EQ(MXH_OK, P.st);
    for (int m : P.groups[0][0])
        EXPECT_EQ(L.p->island_of[0], L.p->island_of[m]);
    // 8 GPUs of a node as 2 x 4 where islands are 4: whole islands, fine; 6 would split one
    Placed Q = place(L.p, {2, 4, 2});
    EXPECT_EQ(MXH_OK, Q.st) << Q.why;
}

// Sizes that split a level or do not multiply to the ranks: MXH_ERR_INVALID_PARAM and the reason.
TEST(Parallel, SizesThatDoNotFitAreErrors)
{
    Layout three = make_layout({4, 4, 4}, 0, 0);
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(three.recs.data(), 12, kAllLevels, &L.p));
    struct {
        std::vector<int> size;
        const char *why;
    } bad[] = {
        {{6, 2}, "dimension 0: groups of 6 consecutive ranks (the sizes up to it) split a node"},
        {{5, 0}, "the sizes' product (without the rest) 5 does not divide the 12 ranks"},
        {{4, 4}, "the sizes' product 16 does not equal the 12 ranks"},
        {{4, 2}, "the sizes' product 8 does not equal the 12 ranks"},
        {{0, 0}, "size 0 of dimension 1: a size is positive, or 0 (the rest) for one dimension"},
        {{-2, 6}, "size -2 of dimension 0: a size is positive, or 0 (the rest) for one dimension"},
        {{}, "ndims 0 out of range [1, 8]"},
    };
    for (auto &b : bad) {
        Placed P = place(L.p, b.size);
        EXPECT_EQ(MXH_ERR_INVALID_PARAM, P.st);
        EXPECT_EQ(b.why, P.why);
    }
    expect_placement(three, kAllLevels, {2, 6}, {MXH_SPAN_NODE, MXH_SPAN_LEAF});
    expect_placement(three, kAllLevels, {12}, {MXH_SPAN_LEAF});
    // uneven nodes (3 + 1): whole nodes place, pairs would split the first
    Layout uneven = make_layout({3, 1}, 0, 0);
    expect_placement(uneven, kAllLevels, {1, 4}, {MXH_SPAN_SELF, MXH_SPAN_LEAF});
    LayoutPtr U;
    ASSERT_EQ(MXH_OK, mxh_layout_create(uneven.recs.data(), 4, kAllLevels, &U.p));
    Placed P = place(U.p, {2, 2});
    EXPECT_EQ(MXH_ERR_INVALID_PARAM, P.st);
    EXPECT_EQ("dimension 0: groups of 2 consecutive ranks (the sizes up to it) split a node",
              P.why);
    // leaves of 3 and 1 nodes of 2: groups of 2 nodes split the first leaf
    Layout leaves;
    for (auto nl : {std::pair<const char *, const char *>{"n0", "l0"}, {"n1", "l0"}, {"n2", "l0"},
                    {"n3", "l1"}})
        for (int k = 0; k < 2; k++)
            leaves.add(nl.first, nl.second);
    LayoutPtr V;
    ASSERT_EQ(MXH_OK, mxh_layout_create(leaves.recs.data(), 8, kAllLevels, &V.p));
    Placed Q = place(V.p, {2, 2, 2});
    EXPECT_EQ(MXH_ERR_INVALID_PARAM, Q.st);
    EXPECT_EQ("dimension 1: groups of 4 consecutive ranks (the sizes up to it) split a leaf",
              Q.why);
    expect_placement(leaves, kAllLevels, {2, 0}, {MXH_SPAN_NODE, MXH_SPAN_SPINE});
}

namespace {

// mxh_parallel_order of @lay: checked against ref_order, against the placement of one
// dimension of every rank, and that each node's and each leaf's ranks are one block.
std::vector<int> expect_order(const Layout &lay, int mask)
{
    LayoutPtr L;
    int n = (int)lay.recs.size();
    std::vector<int> pos(n, -1), at(n, -1);
    EXPECT_EQ(MXH_OK, mxh_layout_create(lay.recs.data(), n, mask, &L.p));
    if (L.p == nullptr)
        return pos;
    EXPECT_EQ(MXH_OK, mxh_parallel_order(L.p, pos.data()));
    EXPECT_EQ(ref_order(L.p), pos);
    for (int r = 0; r < n; r++) {
        EXPECT_TRUE(pos[r] >= 0 && pos[r] < n && at[pos[r]] < 0) << "not a permutation";
        if (pos[r] >= 0 && pos[r] < n)
            at[pos[r]] = r;
    }
    std::set<int> nodes, leaves;
    for (int p = 0; p < n; p++) { // a node or leaf seen before comes back: not one block
        int v = L.p->node_of[at[p]], f = L.p->leaf_of_node[v];
        if (p == 0 || v != L.p->node_of[at[p - 1]]) {
            EXPECT_TRUE(nodes.insert(v).second) << "node " << v << " split at position " << p;
        }
        if (p == 0 || f != L.p->leaf_of_node[L.p->node_of[at[p - 1]]]) {
            EXPECT_TRUE(leaves.insert(f).second) << "leaf " << f << " split at position " << p;
        }
    }
    int whole = n;
    mxh_parallel_span_t span;
    char why[256];
    std::vector<int> placed(n);
    EXPECT_EQ(MXH_OK, mxh_parallel_place(L.p, 1, &whole, placed.data(), &span, why, sizeof(why)));
    EXPECT_EQ(pos, placed);
    return pos;
}

} // namespace

// MPIX_Hier_comm_reorder's order: nodes (and leaves) in the order their first rank has,
// each node's ranks by rail, GPU, then their own order: on blocked, interleaved and
// shuffled ranks, uneven nodes and leaves, and NVLink islands.
TEST(Parallel, OrderPutsEachNodesRanksTogether)
{
    for (int order : {0, 1, 2}) {
        expect_order(make_layout({4, 4, 4, 4, 4, 4}, 2, order, 11), kAllLevels);
        expect_order(make_layout({3, 1, 2}, 0, order, 5), kAllLevels);
        expect_order(make_layout({2, 5, 1, 3}, 2, order, 3), kAllLevels);
    }
    // 3 nodes, rank r on node r mod 3: node n0's ranks 0 and 3 first, then n1's, n2's
    EXPECT_EQ((std::vector<int>{0, 2, 4, 1, 3, 5}), expect_order(make_layout({2, 2, 2}, 0, 1),
                                                                  kAllLevels));
    // 4 nodes interleaved under leaves {n0, n1}, {n2, n3}
    EXPECT_EQ((std::vector<int>{0, 2, 4, 6, 1, 3, 5, 7}),
              expect_order(make_layout({2, 2, 2, 2}, 2, 1), kAllLevels));
    // leaves first: n0 and n2 are under the leaf of rank 0, n1 and n3 under the other
    Layout crossed;
    for (auto nl : {std::pair<const char *, const char *>{"n0", "lB"}, {"n1", "lA"}, {"n2", "lB"},
                    {"n3", "lA"}})
        crossed.add(nl.first, nl.second);
    EXPECT_EQ((std::vector<int>{0, 2, 1, 3}), expect_order(crossed, kAllLevels));
    // without the spine level the leaves are not used: node order alone
    EXPECT_EQ((std::vector<int>{0, 1, 2, 3}), expect_order(crossed, 0x3));
    // two nodes of 8 GPUs in islands of 4, ranks in reverse GPU order: GPU (and rail) order
    Layout isl;
    for (const char *node : {"a", "b"})
        add_gpu_node(isl, node, "", 8, {0, 1, 2, 3, 4, 5, 6, 7}, {0, 0, 0, 0, 1, 1, 1, 1},
                     {7, 6, 5, 4, 3, 2, 1, 0});
    std::vector<int> want(16);
    for (int r = 0; r < 16; r++)
        want[r] = r / 8 * 8 + 7 - r % 8;
    EXPECT_EQ(want, expect_order(isl, kWithIslands));
}

// mxh_parallel_span_of: the smallest level holding a set of ranks, and for the placed
// groups the span mxh_parallel_place reports.
TEST(Parallel, SpanOfAnySetOfRanks)
{
    Layout isl;
    for (const char *nl : {"a", "b", "c", "d"})
        add_gpu_node(isl, nl, nl[0] < 'c' ? "l0" : "l1", 8, {0, 1, 2, 3, 4, 5, 6, 7},
                     {0, 0, 0, 0, 1, 1, 1, 1});
    LayoutPtr L;
    ASSERT_EQ(MXH_OK, mxh_layout_create(isl.recs.data(), 32, kWithIslands, &L.p));
    struct {
        std::vector<int> m;
        mxh_parallel_span_t want;
    } sets[] = {
        {{5}, MXH_SPAN_SELF},         {{5, 5}, MXH_SPAN_SELF},    {{0, 3}, MXH_SPAN_ISLAND},
        {{3, 4}, MXH_SPAN_NODE},      {{0, 8}, MXH_SPAN_LEAF},    {{1, 2, 9}, MXH_SPAN_LEAF},
        {{0, 16}, MXH_SPAN_SPINE},    {{0, 1, 31}, MXH_SPAN_SPINE},
    };
    for (auto &s : sets)
        EXPECT_EQ(s.want, mxh_parallel_span_of(L.p, s.m.data(), (int)s.m.size()))
            << "set of " << s.m.size() << " from " << s.m[0];
    for (auto size : {std::vector<int>{4, 2, 2, 2}, {2, 2, 8}, {8, 4}, {1, 16, 2}}) {
        Placed P = place(L.p, size);
        ASSERT_EQ(MXH_OK, P.st) << P.why;
        for (size_t d = 0; d < size.size(); d++) {
            mxh_parallel_span_t widest = MXH_SPAN_SELF;
            for (int r = 0; r < 32; r++)
                widest = std::max(widest, mxh_parallel_span_of(L.p, P.groups[d][r].data(),
                                                               (int)P.groups[d][r].size()));
            EXPECT_EQ(P.span[d], widest) << "dimension " << d;
        }
    }
}

namespace {

// The cost model's choice for @coll of @bytes (the whole vector) on a grid of @type and
// @gsize, built from the shape alone (not from a layout): seconds.
double grid_choice(const mxh_config_t *cfg, std::vector<mxh_level_type_t> type,
                   std::vector<int> gsize, mxh_coll_t coll, size_t bytes)
{
    mxh_cost_model_t m;
    mxh_cost_model_grid(&m, cfg, (int)type.size(), type.data(), gsize.data());
    size_t count = bytes / 4 / (coll == MXH_COLL_ALLGATHER ? (size_t)m.nranks : 1);
    mxh_cost_cand_t c[64];
    int n = mxh_cost_candidates(&m, coll, count, 4, c, 64), b = mxh_cost_choose(c, n);
    return b >= 0 ? c[b].t : -1;
}

} // namespace

// mxh_parallel_cost (mpix_info --parallel): 4 nodes x 8 ranks, tp=8 pp=2 dp=2. Placed (or
// in block order): tp is one node's 8 ranks, pp and dp two ranks of one rail; in the
// round-robin order (rank r on node r mod 4) tp is 2 ranks on each of 4 nodes, pp and dp
// pairs inside a node. Each prediction is the model's of the group's grid.
TEST(Parallel, CostOfEachDimensionsGroups)
{
    mxh_config_t cfg;
    mxh_config_init_defaults(&cfg);
    const size_t B = 64 << 20;
    const auto N = MXH_LEVEL_NODE, R = MXH_LEVEL_RAIL;
    Layout block = make_layout({8, 8, 8, 8}, 0, 0), rr = make_layout({8, 8, 8, 8}, 0, 1);
    LayoutPtr Lb, Lr;
    ASSERT_EQ(MXH_OK, mxh_layout_create(block.recs.data(), 32, kAllLevels, &Lb.p));
    ASSERT_EQ(MXH_OK, mxh_layout_create(rr.recs.data(), 32, kAllLevels, &Lr.p));
    std::vector<int> size = {8, 2, 2}, naive(32), pos(32);
    std::vector<mxh_parallel_span_t> span(3);
    char why[256];
    ASSERT_EQ(MXH_OK, mxh_parallel_place(Lb.p, 3, size.data(), pos.data(), span.data(), why,
                                         sizeof(why)));
    for (int r = 0; r < 32; r++)
        naive[r] = r;
    struct {
        const mxh_layout_t *L;
        const Layout *lay;
        const int *pos;
        int d;
        mxh_parallel_span_t span;
        std::vector<mxh_level_type_t> type;
        std::vector<int> gsize;
    } cases[] = {
        {Lb.p, &block, pos.data(), 0, MXH_SPAN_NODE, {N}, {8}},
        {Lb.p, &block, pos.data(), 1, MXH_SPAN_LEAF, {R}, {2}},
        {Lb.p, &block, pos.data(), 2, MXH_SPAN_LEAF, {R}, {2}},
        {Lb.p, &block, naive.data(), 0, MXH_SPAN_NODE, {N}, {8}},
        {Lr.p, &rr, naive.data(), 0, MXH_SPAN_LEAF, {N, R}, {2, 4}},
        {Lr.p, &rr, naive.data(), 1, MXH_SPAN_NODE, {N}, {2}},
        {Lr.p, &rr, naive.data(), 2, MXH_SPAN_NODE, {N}, {2}},
    };
    for (auto &k : cases) {
        mxh_parallel_cost_t c;
        ASSERT_EQ(MXH_OK, mxh_parallel_cost(&cfg, k.lay->recs.data(), k.L, size.data(), k.d,
                                            k.pos, B, 4, &c));
        EXPECT_EQ(k.span, c.span) << "dimension " << k.d;
        EXPECT_STREQ("", c.why);
        EXPECT_DOUBLE_EQ(grid_choice(&cfg, k.type, k.gsize, MXH_COLL_ALLREDUCE, B), c.t[0]);
        EXPECT_DOUBLE_EQ(grid_choice(&cfg, k.type, k.gsize, MXH_COLL_ALLGATHER, B), c.t[1]);
        EXPECT_GT(c.t[0], c.t[1]); // an allreduce moves twice the all-gather's bytes
    }
    // spread over 4 nodes the tensor-parallel allreduce is slower than inside one
    mxh_parallel_cost_t in, across;
    ASSERT_EQ(MXH_OK, mxh_parallel_cost(&cfg, block.recs.data(), Lb.p, size.data(), 0,
                                        pos.data(), B, 4, &in));
    ASSERT_EQ(MXH_OK, mxh_parallel_cost(&cfg, rr.recs.data(), Lr.p, size.data(), 0,
                                        naive.data(), B, 4, &across));
    EXPECT_GT(across.t[0], 2 * in.t[0]);

    // groups of one rank: no collective; groups of 3 ranks over nodes of 2 and 1: not a grid
    Layout three = make_layout({4, 4, 4}, 0, 0);
    LayoutPtr L3;
    ASSERT_EQ(MXH_OK, mxh_layout_create(three.recs.data(), 12, kAllLevels, &L3.p));
    std::vector<int> s3 = {1, 2, 3, 2}, n3(12);
    for (int r = 0; r < 12; r++)
        n3[r] = r;
    mxh_parallel_cost_t c;
    ASSERT_EQ(MXH_OK, mxh_parallel_cost(&cfg, three.recs.data(), L3.p, s3.data(), 0, n3.data(),
                                        B, 4, &c));
    EXPECT_EQ(MXH_SPAN_SELF, c.span);
    EXPECT_EQ(-1, c.t[0]);
    EXPECT_STREQ("groups of one rank: no collective", c.why);
    ASSERT_EQ(MXH_OK, mxh_parallel_cost(&cfg, three.recs.data(), L3.p, s3.data(), 2, n3.data(),
                                        B, 4, &c)); // {r, r + 2, r + 4}: 2 + 1 or 1 + 2 a node
    EXPECT_EQ(MXH_SPAN_LEAF, c.span);
    EXPECT_EQ(-1, c.t[0]);
    EXPECT_EQ(-1, c.t[1]);
    EXPECT_STREQ("the group's ranks are not a grid (uneven ranks per node or leaf): the cost "
                 "model describes grids only", c.why);
    // fewer bytes than one element per rank: the all-gather is not modelled
    ASSERT_EQ(MXH_OK, mxh_parallel_cost(&cfg, three.recs.data(), L3.p, s3.data(), 1, n3.data(),
                                        4, 4, &c));
    EXPECT_GT(c.t[0], 0);
    EXPECT_EQ(-1, c.t[1]);
    EXPECT_STREQ("allgather: fewer bytes than one element per rank", c.why);
}

#!/usr/bin/env python3
"""Write a SimGrid platform (XML), the matching mpix-hier cluster file and an
SMPI hostfile for a GPU cluster in which every GPU is a simulated host.

Topologies (--topology):
  rail       rail-optimized: N nodes x g GPUs; each GPU has an NVSwitch link
             (B_nvl) to its node's NVSwitch and its own NIC link (B_nic) to the
             leaf switch of its rail in its leaf group (--nodes-per-leaf nodes,
             a "scalable unit"); every leaf has one uplink to the spine of
             capacity nodes_per_leaf * B_nic / oversub. Traffic between different
             rails or different leaf groups crosses the spine.
  fattree    generic fat-tree: the GPUs of a node reach the network through one
             node uplink of g * B_nic (each GPU's own NIC share is B_nic) into
             the leaf of its leaf group; leaves join through the spine (uplink
             nodes_per_leaf * g * B_nic / oversub).
  dragonfly  groups of --df-routers routers, all-to-all inside a group (local
             links, --b-local), --df-global-links parallel global links
             (--b-global) between every pair of groups, spread round-robin over
             the routers of each group; --df-nodes-per-router nodes per router,
             each through one node uplink of g * B_nic. Minimal routing: local
             hop to the router holding the global link, global link, local hop
             to the destination router (the global link of a pair of nodes is
             (n1 + n2) mod k among the k parallel links).
  torus      2D or 3D torus of nodes (--torus-dims XxY[xZ]; default: the most
             balanced factorisation of N in --torus-ndims dimensions); node =
             g GPUs on an NVSwitch, each GPU's NIC (B_nic) into the node's
             router, one link per direction to each neighbour (--b-torus,
             default g * B_nic / (2 * ndims): the node's torus links carry as
             much as its NICs). Dimension-order routing (x, then y, then z),
             shortest way round each ring (ties: the + direction).
  torus2d, torus3d: torus with --torus-ndims 2 / 3.

Routes are explicit (one <route> per pair of hosts in a Full zone), so what a
message crosses is exactly what this file says: no path through another GPU.
Links are SPLITDUPLEX (each direction has the full bandwidth). Latencies are
per link: two GPUs of one node are 2 NVLink links apart, GPUs of two nodes
under one leaf 2 NIC links (+ 2 node-uplinks of latency 0 in fattree and
dragonfly), and every switch-to-switch link adds its own latency.

The cluster file (MPIX_HIER_CLUSTER_FILE) gives node, rail (= local GPU index)
and leaf group of every host: the leaf group is the scalable unit (rail,
fattree), the dragonfly group, or for a torus a row of nodes along x
(--torus-leaf row; 'plane' = an x-y plane, 'none' = one group). For a torus
every line also gives the node's coordinate (torus=XxYxZ), from which the
library builds one network level per dimension instead of the leaf levels.

Units: bandwidths in GB/s (1e9 bytes/s), latencies in microseconds.
Python 3 standard library only.
"""
import argparse
import itertools
import os
import sys
import time

TOPOLOGIES = ["rail", "fattree", "dragonfly", "torus", "torus2d", "torus3d"]


# The platform parameters, in --help order: (flags, default, help, other keywords).
# The type of each is its default's (int, float or str).
TOPOLOGY_PARAMS = [
    (("--topology",), "rail", "rail, fattree, dragonfly, torus (torus2d/torus3d) (default rail)",
     {"choices": TOPOLOGIES}),
    (("--nodes", "-N"), 4, "nodes (default 4)", {}),
    (("--gpus", "-g"), 4, "GPUs per node (default 4)", {}),
    (("--nodes-per-leaf",), 0, "rail/fattree: nodes under one leaf switch (leaf group, "
     "scalable unit); 0 = all nodes in one leaf group (default 0)", {}),
    (("--oversub",), 1.0, "rail/fattree: leaf-to-spine oversubscription ratio (default 1 = "
     "non-blocking)", {}),
    (("--b-nvl",), 370.0, "NVLink/NVSwitch bandwidth per GPU and direction, GB/s (default 370)",
     {}),
    (("--b-nic",), 48.0, "NIC bandwidth per GPU and direction, GB/s (default 48, NDR)", {}),
    (("--lat-nvl",), 0.5, "latency of one GPU-NVSwitch link, us (default 0.5: 1 us GPU to GPU)",
     {}),
    (("--lat-nic",), 1.0, "latency of one GPU-leaf (GPU-router) link, us (default 1: 2 us "
     "through one switch)", {}),
    (("--lat-spine",), 1.0, "rail/fattree: latency of one leaf-spine link, us (default 1)", {}),
    (("--df-routers",), 4, "dragonfly: routers per group (default 4)", {}),
    (("--df-nodes-per-router",), 2, "dragonfly: nodes per router (default 2); groups = N / "
     "(routers * nodes per router)", {}),
    (("--df-global-links",), 0, "dragonfly: parallel global links between each pair of "
     "groups; 0 = enough for a group's global capacity to match its nodes' injection "
     "(ceil(nodes per group / (groups - 1))) (default 0)", {}),
    (("--b-local",), 0.0, "dragonfly: router-to-router link in a group, GB/s per direction "
     "(default 0 = g * B_nic)", {}),
    (("--b-global",), 0.0, "dragonfly: one global link, GB/s per direction (default 0 = "
     "g * B_nic)", {}),
    (("--lat-local",), 1.0, "dragonfly: latency of a local link, us (default 1)", {}),
    (("--lat-global",), 1.0, "dragonfly: latency of a global link, us (default 1)", {}),
    (("--torus-dims",), "", "torus: dimensions XxY or XxYxZ whose product is N (default: "
     "balanced factorisation of N in --torus-ndims dimensions)", {}),
    (("--torus-ndims",), 0, "torus: 2 or 3 (default 2; torus2d/torus3d set it)", {}),
    (("--b-torus",), 0.0, "torus: one node-to-neighbour link, GB/s per direction (default 0 = "
     "g * B_nic / (2 * ndims))", {}),
    (("--lat-torus",), 1.0, "torus: latency of one node-to-neighbour link, us (default 1)", {}),
    (("--torus-leaf",), "row", "torus: leaf group written to the cluster file: row (nodes "
     "along x), plane (x-y plane), none (default row)", {"choices": ["row", "plane", "none"]}),
    (("--speed",), "100Gf", "host compute speed (default 100Gf)", {}),
]


def add_topology_args(ap):
    """The platform parameters, shared by gen_platform.py, run_sim.py, whatif.py."""
    g = ap.add_argument_group("platform")
    for flags, default, help_, kw in TOPOLOGY_PARAMS:
        g.add_argument(*flags, type=type(default), default=default, help=help_, **kw)
    return g


def topology_argv(a):
    """The command-line arguments that reproduce the platform parameters of @a."""
    out = []
    for flags, _, _, _ in TOPOLOGY_PARAMS:
        k = flags[0][2:].replace("-", "_")
        v = getattr(a, k)
        if k == "torus_dims" and not v:
            continue
        out += ["--" + k.replace("_", "-"), str(v)]
    return out


def balanced_dims(n, d):
    """Factorisation of n into d factors, most balanced first (largest first)."""
    best = None
    for dims in itertools.product(*[range(1, n + 1)] * (d - 1)):
        p = 1
        for x in dims:
            p *= x
        if n % p:
            continue
        full = sorted(list(dims) + [n // p], reverse=True)
        key = (full[0], full)
        if best is None or key < best[0]:
            best = (key, full)
    return best[1]


class Platform:
    """One platform: hosts, links, the path between any two hosts, its cuts."""

    def __init__(self, a, error=None):
        def err(msg):
            if error:
                error(msg)
            raise ValueError(msg)

        self.a = a
        self.topo = a.topology
        N, g = a.nodes, a.gpus
        if N < 1 or g < 1:
            err("--nodes and --gpus must be >= 1")
        self.N, self.g = N, g
        if self.topo in ("torus2d", "torus3d"):
            self.topo = "torus"
            self.ndims = 2 if a.topology == "torus2d" else 3
        else:
            self.ndims = a.torus_ndims or 2
        self.nic_bw = a.b_nic
        self.links = {}      # id -> (GB/s, us)
        self.leaf_of_node = {}
        if self.topo in ("rail", "fattree"):
            self.npl = a.nodes_per_leaf if a.nodes_per_leaf > 0 else N
            if N % self.npl:
                err("--nodes (%d) must be a multiple of --nodes-per-leaf (%d)"
                    % (N, self.npl))
            if a.oversub <= 0:
                err("--oversub must be > 0")
            self.nleafgroups = N // self.npl
            for n in range(N):
                self.leaf_of_node[n] = "su%d" % (n // self.npl)
        elif self.topo == "dragonfly":
            R, p = a.df_routers, a.df_nodes_per_router
            if R < 1 or p < 1 or N % (R * p):
                err("dragonfly: --nodes (%d) must be a multiple of --df-routers (%d) x "
                    "--df-nodes-per-router (%d)" % (N, R, p))
            self.R, self.p = R, p
            self.G = N // (R * p)
            npg = R * p
            self.k = a.df_global_links or (max(1, -(-npg // (self.G - 1))) if self.G > 1 else 0)
            self.b_local = a.b_local or g * a.b_nic
            self.b_global = a.b_global or g * a.b_nic
            for n in range(N):
                self.leaf_of_node[n] = "g%d" % (n // npg)
        elif self.topo == "torus":
            if a.torus_dims:
                try:
                    dims = [int(x) for x in a.torus_dims.lower().split("x")]
                except ValueError:
                    dims = []
                if len(dims) not in (2, 3) or min(dims) < 1:
                    err("--torus-dims: expected XxY or XxYxZ, got %r" % a.torus_dims)
                self.ndims = len(dims)
            else:
                if self.ndims not in (2, 3):
                    err("--torus-ndims must be 2 or 3")
                dims = balanced_dims(N, self.ndims)
            prod = 1
            for x in dims:
                prod *= x
            if prod != N:
                err("--torus-dims %s: product %d != --nodes %d"
                    % ("x".join(map(str, dims)), prod, N))
            self.dims = dims
            self.b_torus = a.b_torus or g * a.b_nic / (2.0 * self.ndims)
            for n in range(N):
                c = self.coords(n)
                if a.torus_leaf == "row":
                    self.leaf_of_node[n] = "row" + "_".join(map(str, c[1:]))
                elif a.torus_leaf == "plane":
                    self.leaf_of_node[n] = "plane%d" % (c[2] if len(c) > 2 else 0)
                else:
                    self.leaf_of_node[n] = "t0"
        self._build_links()
        self._cache = {}

    # ---- names -----------------------------------------------------------
    @staticmethod
    def host(n, i):
        return "n%dg%d" % (n, i)

    def hosts(self):
        return [(n, i) for n in range(self.N) for i in range(self.g)]

    def coords(self, n):
        c = []
        for k in self.dims:
            c.append(n % k)
            n //= k
        return c

    def node_of_coords(self, c):
        n, m = 0, 1
        for x, k in zip(c, self.dims):
            n += x * m
            m *= k
        return n

    def _leaf(self, n, i):
        s = n // self.npl
        return "leaf_su%d_r%d" % (s, i) if self.topo == "rail" else "leaf_su%d" % s

    # ---- links -----------------------------------------------------------
    def _build_links(self):
        a, L = self.a, self.links
        for n, i in self.hosts():
            h = self.host(n, i)
            if self.g > 1:
                L["nvl_" + h] = (a.b_nvl, a.lat_nvl)
            L["nic_" + h] = (a.b_nic, a.lat_nic)
        if self.topo in ("fattree", "dragonfly"):
            for n in range(self.N):
                L["node_up_n%d" % n] = (self.g * a.b_nic, 0.0)
        if self.topo == "rail":
            leaves = [(s, r) for s in range(self.nleafgroups) for r in range(self.g)]
            up_bw = self.npl * a.b_nic / a.oversub
        elif self.topo == "fattree":
            leaves = [(s, 0) for s in range(self.nleafgroups)]
            up_bw = self.npl * self.g * a.b_nic / a.oversub
        else:
            leaves = []
        self.nleaves = len(leaves)
        if len(leaves) > 1:
            for s, r in leaves:
                L["up_" + self._leaf(s * self.npl, r)] = (up_bw, a.lat_spine)
        if self.topo == "dragonfly":
            for grp in range(self.G):
                for r1 in range(self.R):
                    for r2 in range(r1 + 1, self.R):
                        L["loc_g%d_%d_%d" % (grp, r1, r2)] = (self.b_local, a.lat_local)
            for g1 in range(self.G):
                for g2 in range(g1 + 1, self.G):
                    for m in range(self.k):
                        L["glb_%d_%d_%d" % (g1, g2, m)] = (self.b_global, a.lat_global)
        if self.topo == "torus":
            for n in range(self.N):
                for d, k in enumerate(self.dims):
                    if k > 1:
                        L["tor_n%d_d%d" % (n, d)] = (self.b_torus, a.lat_torus)

    # ---- routing ---------------------------------------------------------
    def _df_router(self, grp, peer, m):
        """Router of group grp holding global link m towards group peer."""
        d = (peer - grp - 1) % self.G
        return (d * self.k + m) % self.R

    def _df_local(self, grp, r1, r2):
        if r1 == r2:
            return []
        if r1 < r2:
            return [("loc_g%d_%d_%d" % (grp, r1, r2), "UP")]
        return [("loc_g%d_%d_%d" % (grp, r2, r1), "DOWN")]

    def node_path(self, n1, n2):
        """Links between the network attachment of node n1 and that of n2
        (dragonfly, torus; for fattree the node uplinks and the spine)."""
        key = (n1, n2)
        if key in self._cache:
            return self._cache[key]
        p = []
        if self.topo == "fattree":
            p.append(("node_up_n%d" % n1, "UP"))
            l1, l2 = self._leaf(n1, 0), self._leaf(n2, 0)
            if l1 != l2:
                p += [("up_" + l1, "UP"), ("up_" + l2, "DOWN")]
            p.append(("node_up_n%d" % n2, "DOWN"))
        elif self.topo == "dragonfly":
            npg = self.R * self.p
            g1, g2 = n1 // npg, n2 // npg
            r1, r2 = (n1 // self.p) % self.R, (n2 // self.p) % self.R
            p.append(("node_up_n%d" % n1, "UP"))
            if g1 == g2:
                p += self._df_local(g1, r1, r2)
            else:
                m = (n1 + n2) % self.k
                x, y = self._df_router(g1, g2, m), self._df_router(g2, g1, m)
                p += self._df_local(g1, r1, x)
                if g1 < g2:
                    p.append(("glb_%d_%d_%d" % (g1, g2, m), "UP"))
                else:
                    p.append(("glb_%d_%d_%d" % (g2, g1, m), "DOWN"))
                p += self._df_local(g2, y, r2)
            p.append(("node_up_n%d" % n2, "DOWN"))
        elif self.topo == "torus":
            c, t = self.coords(n1), self.coords(n2)
            for d, k in enumerate(self.dims):
                fwd = (t[d] - c[d]) % k
                if fwd == 0:
                    continue
                plus = fwd <= k - fwd
                for _ in range(fwd if plus else k - fwd):
                    cur = self.node_of_coords(c)
                    if plus:
                        p.append(("tor_n%d_d%d" % (cur, d), "UP"))
                        c[d] = (c[d] + 1) % k
                    else:
                        c[d] = (c[d] - 1) % k
                        p.append(("tor_n%d_d%d" % (self.node_of_coords(c), d), "DOWN"))
        self._cache[key] = p
        return p

    def path(self, src, dst):
        (n1, i1), (n2, i2) = src, dst
        if n1 == n2:
            return [("nvl_" + self.host(n1, i1), "UP"), ("nvl_" + self.host(n2, i2), "DOWN")]
        p = [("nic_" + self.host(n1, i1), "UP")]
        if self.topo == "rail":
            l1, l2 = self._leaf(n1, i1), self._leaf(n2, i2)
            if l1 != l2:
                p += [("up_" + l1, "UP"), ("up_" + l2, "DOWN")]
        else:
            p += self.node_path(n1, n2)
        p.append(("nic_" + self.host(n2, i2), "DOWN"))
        return p

    def latency_us(self, src, dst):
        return sum(self.links[lk][1] for lk, _ in self.path(src, dst))

    def diameter_us(self):
        """Largest path latency, from hosts of nodes 0 and N-1 to every host."""
        best = 0.0
        for s in {(0, 0), (self.N - 1, self.g - 1)}:
            for d in self.hosts():
                if d != s:
                    best = max(best, self.latency_us(s, d))
        return best

    # ---- cuts for the analytic bound -------------------------------------
    def cuts(self):
        """[(name, parties P, capacity C of one party in GB/s per direction)]:
        the bound charges each cut the time an allreduce among P parties whose
        injection is C needs, 2(P-1)/P n / C (ARCHITECTURE.md section 3)."""
        a, N, g = self.a, self.N, self.g
        out = []
        if g > 1:
            out.append(("nvlink", g, a.b_nvl))
        if N > 1:
            out.append(("node", N, g * a.b_nic))
        if self.topo == "torus" and N > 1:
            # Per-dimension sharing. The links a node can send on under the routes: two
            # per dimension of length k >= 3 (to the + and the - neighbour), one per
            # dimension of length 2 (both neighbours are one node and ties go +, so the
            # other link between the two carries nothing), none for length 1.
            # torus_links: every byte a node sends leaves through those links, so the
            # node is a party of capacity sum_d u_d B_torus (multi-hop routes only add).
            # torus_<d>: the k_d slabs of nodes along dimension d (dimension-order routes
            # cross between slabs on d's links only) are parties of capacity
            # N/k_d * u_d * B_torus.
            u = [2 if k > 2 else (1 if k == 2 else 0) for k in self.dims]
            out.append(("torus_links", N, sum(u) * self.b_torus))
            for d, k in enumerate(self.dims):
                if k > 1:
                    out.append(("torus_" + "xyz"[d], k, N // k * u[d] * self.b_torus))
        if self.topo in ("rail", "fattree") and self.nleafgroups > 1:
            if self.topo == "rail":
                cap = g * self.npl * a.b_nic / a.oversub
            else:
                cap = self.npl * g * a.b_nic / a.oversub
            out.append(("spine", self.nleafgroups, cap))
        if self.topo == "dragonfly" and self.G > 1:
            out.append(("global", self.G, (self.G - 1) * self.k * self.b_global))
        return out

    def summary(self):
        a, N, g = self.a, self.N, self.g
        s = "%s %d nodes x %d GPUs = %d GPU hosts, B_nvl %g, B_nic %g GB/s" % (
            self.topo, N, g, N * g, a.b_nvl, a.b_nic)
        if self.topo in ("rail", "fattree"):
            s += ", %d node(s) per leaf group, %d leaf group(s), oversub %g" % (
                self.npl, self.nleafgroups, a.oversub)
        elif self.topo == "dragonfly":
            s += (", %d groups x %d routers x %d nodes, %d global link(s) per group pair, "
                  "B_local %g, B_global %g GB/s" % (self.G, self.R, self.p, self.k,
                                                   self.b_local, self.b_global))
        elif self.topo == "torus":
            s += ", torus %s, B_torus %g GB/s per link, leaf %s" % (
                "x".join(map(str, self.dims)), self.b_torus, a.torus_leaf)
        return s

    # ---- output ----------------------------------------------------------
    def write(self, prefix, argv=None):
        hosts = self.hosts()
        names = [self.host(n, i) for n, i in hosts]
        out = []
        w = out.append
        w("<?xml version='1.0'?>")
        w('<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">')
        w("<!-- generated by benchmarks/sim/gen_platform.py %s -->" % " ".join(
            x.replace("--", "-") for x in (argv if argv is not None else sys.argv[1:])))
        w('<platform version="4.1">')
        w('<zone id="cluster" routing="Full">')
        for h in names:
            w('  <host id="%s" speed="%s"/>' % (h, self.a.speed))
        for lk, (bw, lat) in self.links.items():
            w('  <link id="%s" bandwidth="%.6gGBps" latency="%.6gus" '
              'sharing_policy="SPLITDUPLEX"/>' % (lk, bw, lat))
        ctn = {}

        def c(lk):
            s = ctn.get(lk)
            if s is None:
                s = ctn[lk] = '<link_ctn id="%s" direction="%s"/>' % lk
            return s

        nroutes = 0
        for x in range(len(hosts)):
            s, hs = hosts[x], names[x]
            for y in range(x + 1, len(hosts)):
                w('  <route src="%s" dst="%s">%s</route>' % (
                    hs, names[y], "".join(c(lk) for lk in self.path(s, hosts[y]))))
                nroutes += 1
        w("</zone>")
        w("</platform>")
        with open(prefix + ".xml", "w") as f:
            f.write("\n".join(out) + "\n")
        with open(prefix + ".cluster", "w") as f:
            f.write("# mpix-hier cluster file (MPIX_HIER_CLUSTER_FILE) for %s.xml\n"
                    % os.path.basename(prefix))
            f.write("# %s\n" % self.summary())
            g = self.g
            for n in range(self.N):
                hl = "n%dg[0-%d]" % (n, g - 1) if g > 1 else "n%dg0" % n
                rails = "[0-%d]" % (g - 1) if g > 1 else "0"
                tor = (" torus=" + "x".join(map(str, self.coords(n)))) if self.topo == "torus" else ""
                f.write("%s node=n%d rail=%s leaf=%s%s\n" % (hl, n, rails, self.leaf_of_node[n],
                                                             tor))
        with open(prefix + ".hosts", "w") as f:
            f.write("\n".join(names) + "\n")
        return nroutes


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog=__doc__[__doc__.index("Topologies"):],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    add_topology_args(ap)
    ap.add_argument("--prefix", "-o", required=True,
                    help="output prefix: writes PREFIX.xml, PREFIX.cluster, PREFIX.hosts")
    a = ap.parse_args(argv)
    t0 = time.time()
    plat = Platform(a, error=ap.error)
    nroutes = plat.write(a.prefix, argv)
    size = os.path.getsize(a.prefix + ".xml")
    sys.stderr.write("%s.xml: %s; %d links, %d routes, %.1f MB, %.1f s\n"
                     % (a.prefix, plat.summary(), len(plat.links), nroutes, size / 1e6,
                        time.time() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())

// Metrics (src/coll/metrics.h): exact counts, bytes and fallback reasons of
// known calls through MPIX_Hier_comm_get_stats, level times (> 0 on the levels
// of the hierarchy, 0 elsewhere), reset, errors, freed communicators, and the
// Prometheus text (on demand) checked by a strict parser of the exposition
// format. The file written at MPI_Finalize (MPIX_HIER_METRICS_FILE) is checked
// by run_mpi_tests.sh after the job (tests/mpi/check_prometheus.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "mpi_util.hh"
#include "mpix_hier.h"

namespace {

double stat(MPI_Comm c, const std::string &sel)
{
    double v = -1;
    EXPECT_EQ(MPIX_Hier_comm_get_stats(c, sel.c_str(), &v), MPI_SUCCESS) << sel;
    return v;
}

void sum_op(void *in, void *io, int *len, MPI_Datatype *)
{
    for (int i = 0; i < *len; i++)
        ((float *)io)[i] += ((const float *)in)[i];
}

struct Sample {
    std::string name;
    std::map<std::string, std::string> labels;
    double value;
};

// A strict parser of the text exposition format 0.0.4 as the library writes
// it: # HELP / # TYPE once per family, before its samples, families not
// interleaved, counters named *_total, label values with \\, \" and \n
// escapes, a value, no timestamps, a final line feed. Fails the test on
// anything else.
std::vector<Sample> parse_prom(const std::string &text)
{
    std::vector<Sample> out;
    std::map<std::string, std::string> type;
    std::set<std::string> helped, done;
    std::string cur;
    EXPECT_FALSE(text.empty());
    EXPECT_EQ(text.back(), '\n') << "no final line feed";
    std::istringstream in(text);
    std::string line;
    auto is_name = [](const std::string &n, bool colon) {
        if (n.empty() || std::isdigit((unsigned char)n[0]))
            return false;
        for (char ch : n)
            if (!(std::isalnum((unsigned char)ch) || ch == '_' || (colon && ch == ':')))
                return false;
        return true;
    };
    while (std::getline(in, line)) {
        if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) {
            std::string rest = line.substr(7);
            size_t sp        = rest.find(' ');
            EXPECT_NE(sp, std::string::npos) << line;
            if (sp == std::string::npos)
                continue;
            std::string n = rest.substr(0, sp);
            EXPECT_TRUE(is_name(n, true)) << line;
            EXPECT_EQ(done.count(n), 0u) << "family " << n << " interleaved or repeated";
            if (n != cur) {
                if (!cur.empty())
                    done.insert(cur);
                cur = n;
            }
            if (line[2] == 'H') {
                EXPECT_TRUE(helped.insert(n).second) << "two HELP for " << n;
            } else {
                std::string t = rest.substr(sp + 1);
                EXPECT_TRUE(t == "counter" || t == "gauge") << line;
                EXPECT_EQ(type.count(n), 0u) << "two TYPE for " << n;
                type[n] = t;
                if (t == "counter") {
                    EXPECT_TRUE(n.size() > 6 && n.compare(n.size() - 6, 6, "_total") == 0) << n;
                }
            }
            continue;
        }
        EXPECT_FALSE(line.empty() || line[0] == '#') << "unexpected line '" << line << "'";
        Sample s;
        size_t i = 0;
        while (i < line.size() && line[i] != '{' && line[i] != ' ')
            i++;
        s.name = line.substr(0, i);
        EXPECT_TRUE(is_name(s.name, true)) << line;
        EXPECT_EQ(s.name, cur) << "sample outside its family: " << line;
        EXPECT_EQ(type.count(s.name), 1u) << "no TYPE before " << line;
        if (i < line.size() && line[i] == '{') {
            i++;
            while (i < line.size() && line[i] != '}') {
                size_t k = i;
                while (i < line.size() && line[i] != '=')
                    i++;
                std::string key = line.substr(k, i - k);
                EXPECT_TRUE(is_name(key, false)) << "label name '" << key << "' in " << line;
                EXPECT_TRUE(i + 1 < line.size() && line[i + 1] == '"') << line;
                i += 2;
                std::string val;
                bool closed = false;
                while (i < line.size()) {
                    char ch = line[i++];
                    if (ch == '"') {
                        closed = true;
                        break;
                    }
                    if (ch == '\\') {
                        char e = i < line.size() ? line[i++] : '?';
                        EXPECT_TRUE(e == '\\' || e == '"' || e == 'n') << "escape \\" << e;
                        val += e == 'n' ? '\n' : e;
                    } else {
                        val += ch;
                    }
                }
                EXPECT_TRUE(closed) << line;
                EXPECT_EQ(s.labels.count(key), 0u) << "label twice: " << line;
                s.labels[key] = val;
                if (i < line.size() && line[i] == ',')
                    i++;
            }
            EXPECT_TRUE(i < line.size() && line[i] == '}') << line;
            i++;
        }
        EXPECT_TRUE(i < line.size() && line[i] == ' ') << line;
        std::string v = line.substr(i + 1);
        char *end     = nullptr;
        s.value       = std::strtod(v.c_str(), &end);
        EXPECT_TRUE(!v.empty() && *end == '\0') << "value '" << v << "' (timestamps are not written)";
        out.push_back(s);
    }
    for (auto &t : type)
        EXPECT_EQ(helped.count(t.first), 1u) << "no HELP for " << t.first;
    return out;
}

std::string text_now()
{
    int len = 0, len2 = 0;
    EXPECT_EQ(MPIX_Hier_metrics_text(nullptr, 0, &len), MPI_SUCCESS);
    std::vector<char> buf((size_t)len + 1);
    EXPECT_EQ(MPIX_Hier_metrics_text(buf.data(), len + 1, &len2), MPI_SUCCESS);
    EXPECT_EQ(len, len2) << "the text changed without calls in between";
    return std::string(buf.data(), std::min(len, len2));
}

TEST(Metrics, KnownCallsExact)
{
    MPI_Comm c;
    int size, nlevels = 0;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_size(c, &size);
    MPI_Comm_set_name(c, "metrics_known");
    // 8000 B: above the spread plan's 4 KiB (one step across rail and spine, counted on
    // rail), so the schedule has steps on every level (the level checks below)
    std::vector<float> a(2000, 1.0f), b(2000);
    for (int i = 0; i < 3; i++)
        ASSERT_EQ(MPIX_Hier_allreduce(a.data(), b.data(), 2000, MPI_FLOAT, MPI_SUM, c), MPI_SUCCESS);
    MPI_Op op;
    MPI_Op_create(sum_op, 1, &op);
    ASSERT_EQ(MPIX_Hier_allreduce(a.data(), b.data(), 10, MPI_FLOAT, op, c), MPI_SUCCESS);
    MPI_Op_free(&op);
    MPI_Request r;
    ASSERT_EQ(MPIX_Hier_Iallreduce(a.data(), b.data(), 16, MPI_FLOAT, MPI_SUM, c, &r), MPI_SUCCESS);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    ASSERT_EQ(MPIX_Hier_bcast(a.data(), 8, MPI_INT, 0, c), MPI_SUCCESS);
    ASSERT_EQ(MPIX_Hier_allreduce(a.data(), b.data(), 0, MPI_FLOAT, MPI_SUM, c), MPI_SUCCESS);
    ASSERT_EQ(MPIX_Hier_comm_get_num_levels(c, &nlevels), MPI_SUCCESS);

    EXPECT_EQ(stat(c, "mpix_hier_calls_total"), 7);
    EXPECT_EQ(stat(c, "mpix_hier_calls_total{coll=\"allreduce\"}"), 6);
    EXPECT_EQ(stat(c, "mpix_hier_calls_total{coll=\"allreduce\",blocking=\"1\"}"), 5);
    EXPECT_EQ(stat(c, "mpix_hier_calls_total{coll=\"allreduce\",blocking=\"0\"}"), 1);
    EXPECT_EQ(stat(c, "mpix_hier_calls_total{coll=\"allreduce\",path=\"none\"}"), 1);
    EXPECT_EQ(stat(c, "mpix_hier_calls_total{coll=\"bcast\"}"), 1);
    EXPECT_EQ(stat(c, "mpix_hier_bytes_total{coll=\"allreduce\"}"), 3 * 8000 + 40 + 64);
    EXPECT_EQ(stat(c, "mpix_hier_bytes_total{coll=\"bcast\"}"), 32);
    EXPECT_EQ(stat(c, "mpix_hier_fallbacks_total{reason=\"user_op\"}"), 1);
    EXPECT_EQ(stat(c, "mpix_hier_calls_total{algo=\"mpi\"}"),
              stat(c, "mpix_hier_fallbacks_total"));
    EXPECT_GT(stat(c, "mpix_hier_call_seconds_total{coll=\"allreduce\"}"), 0);
    EXPECT_EQ(stat(c, "mpix_hier_call_seconds_total{coll=\"alltoall\"}"), 0);
    if (size > 1) {
        // every allreduce with MPI_SUM and a count left MPI's path exactly once: the user op
        EXPECT_EQ(stat(c, "mpix_hier_fallbacks_total{coll=\"allreduce\"}"), 1);
        EXPECT_EQ(stat(c, "mpix_hier_calls_total{coll=\"allreduce\",algo=\"mpi\"}"), 1);
    } else {
        EXPECT_EQ(stat(c, "mpix_hier_fallbacks_total{coll=\"allreduce\",reason=\"single_rank\"}"), 4);
    }
    // levels: the schedule's steps on every level of a hierarchy of >= 2 levels
    std::set<std::string> used;
    if (nlevels >= 2) {
        EXPECT_EQ(stat(c, "mpix_hier_calls_total{coll=\"allreduce\",path=\"sched\"}"), 4);
        for (int l = 0; l < nlevels; l++) {
            MPI_Comm lc;
            char name[MPIX_HIER_MAX_LEVEL_NAME];
            ASSERT_EQ(MPIX_Hier_comm_get_level(c, l, &lc, name), MPI_SUCCESS);
            int lsize;
            MPI_Comm_size(lc, &lsize);
            if (lsize < 2)
                continue; // a rank alone in its group there: nothing to time
            used.insert(name);
            std::string sel = std::string("{coll=\"allreduce\",level=\"") + name + "\"}";
            EXPECT_GT(stat(c, "mpix_hier_level_seconds_total" + sel), 0) << name;
            EXPECT_GT(stat(c, "mpix_hier_level_steps_total" + sel), 0) << name;
        }
    }
    for (const char *lv : {"island", "node", "rail", "spine"})
        if (nlevels >= 2 && !used.count(lv)) {
            std::string sel = std::string("{coll=\"allreduce\",level=\"") + lv + "\"}";
            EXPECT_EQ(stat(c, "mpix_hier_level_seconds_total" + sel), 0) << lv;
        }
    EXPECT_EQ(stat(c, "mpix_hier_level_seconds_total{coll=\"alltoall\"}"), 0);
    // per algorithm: the small allreduces are not pipelined; the shm path counts on node
    EXPECT_EQ(stat(c, "mpix_hier_level_seconds_total{coll=\"allreduce\",algo=\"pipeline\"}"), 0);
    if (nlevels >= 2) {
        EXPECT_EQ(stat(c, "mpix_hier_level_seconds_total{coll=\"allreduce\",algo=\"hier\"}"),
                  stat(c, "mpix_hier_level_seconds_total{coll=\"allreduce\"}"));
    }
    if (stat(c, "mpix_hier_calls_total{coll=\"allreduce\",path=\"shm\"}") > 0) {
        EXPECT_GT(stat(c, "mpix_hier_level_seconds_total{algo=\"shm\",level=\"node\"}"), 0);
        EXPECT_EQ(stat(c, "mpix_hier_level_steps_total{algo=\"shm\",level=\"node\"}"),
                  stat(c, "mpix_hier_calls_total{path=\"shm\"}"));
    }

    ASSERT_EQ(MPIX_Hier_comm_reset_stats(c), MPI_SUCCESS);
    EXPECT_EQ(stat(c, "mpix_hier_calls_total"), 0);
    EXPECT_EQ(stat(c, "mpix_hier_level_seconds_total"), 0);
    MPI_Comm_free(&c);
}

// Calls that repeat their shape (the entry's remembered-shape path, mpix/colls.c;
// on a layout with nothing to exploit, 1+1, MPI's collective called from the
// entry): every call counted, with its bytes and, on path plain, its reason.
TEST(Metrics, RepeatedShapesExact)
{
    MPI_Comm c;
    int size, rank;
    const int n = 7, count = 4;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_size(c, &size);
    MPI_Comm_rank(c, &rank);
    std::vector<int> a(count * size, rank + 1), b(count * size, 0);
    for (int i = 0; i < n; i++) {
        ASSERT_EQ(MPIX_Hier_allreduce(a.data(), b.data(), count, MPI_INT, MPI_SUM, c), MPI_SUCCESS);
        EXPECT_EQ(b[0], size * (size + 1) / 2);
        ASSERT_EQ(MPIX_Hier_reduce_scatter_block(a.data(), b.data(), count, MPI_INT, MPI_SUM, c),
                  MPI_SUCCESS);
        EXPECT_EQ(b[count - 1], size * (size + 1) / 2);
        ASSERT_EQ(MPIX_Hier_allgather(a.data(), count, MPI_INT, b.data(), count, MPI_INT, c),
                  MPI_SUCCESS);
        EXPECT_EQ(b[count * size - 1], size);
        ASSERT_EQ(MPIX_Hier_bcast(b.data(), count, MPI_INT, size - 1, c), MPI_SUCCESS);
        ASSERT_EQ(MPIX_Hier_reduce(a.data(), b.data(), count, MPI_INT, MPI_MAX, 0, c), MPI_SUCCESS);
        if (rank == 0) {
            EXPECT_EQ(b[0], size);
        }
    }
    const size_t bytes = count * sizeof(int);
    EXPECT_EQ(stat(c, "mpix_hier_calls_total"), 5 * n);
    EXPECT_EQ(stat(c, "mpix_hier_calls_total{blocking=\"1\"}"), 5 * n);
    for (const char *coll : {"allreduce", "reduce_scatter_block", "allgather", "bcast", "reduce"}) {
        std::string sel = std::string("{coll=\"") + coll + "\"}";
        EXPECT_EQ(stat(c, "mpix_hier_calls_total" + sel), n) << coll;
        bool blocks = !strcmp(coll, "reduce_scatter_block") || !strcmp(coll, "allgather");
        EXPECT_EQ(stat(c, "mpix_hier_bytes_total" + sel), n * bytes * (blocks ? size : 1)) << coll;
        EXPECT_GT(stat(c, "mpix_hier_call_seconds_total" + sel), 0) << coll;
    }
    EXPECT_EQ(stat(c, "mpix_hier_calls_total{algo=\"mpi\"}"), stat(c, "mpix_hier_fallbacks_total"));
    if (getenv("MXH_TEST_EXPECT_PLAIN") != nullptr) { // nothing to exploit: all MPI's
        EXPECT_EQ(stat(c, "mpix_hier_calls_total{path=\"plain\"}"), 5 * n);
        EXPECT_EQ(stat(c, "mpix_hier_fallbacks_total"), 5 * n);
    }
    MPI_Comm_free(&c);
}

TEST(Metrics, FallbackOnlyCommunicator)
{
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Op op;
    MPI_Op_create(sum_op, 1, &op);
    float a[4] = {1, 2, 3, 4}, b[4];
    for (int i = 0; i < 5; i++)
        ASSERT_EQ(MPIX_Hier_allreduce(a, b, 4, MPI_FLOAT, op, c), MPI_SUCCESS);
    MPI_Op_free(&op);
    EXPECT_EQ(stat(c, "mpix_hier_calls_total"), 5);
    EXPECT_EQ(stat(c, "mpix_hier_calls_total{path=\"plain\",algo=\"mpi\"}"), 5);
    EXPECT_EQ(stat(c, "mpix_hier_fallbacks_total{coll=\"allreduce\",blocking=\"1\",reason=\"user_op\"}"), 5);
    EXPECT_EQ(stat(c, "mpix_hier_bytes_total"), 5 * 16);
    EXPECT_EQ(stat(c, "mpix_hier_level_steps_total"), 0);
    MPI_Comm_free(&c);
}

// The reason label of each kind of fallback the test can provoke portably.
TEST(Metrics, FallbackReasons)
{
    int size, rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::vector<float> a(1000, 1.0f), b(1000);

    // configuration: MIN_BYTES above the message (per-communicator info key)
    MPI_Comm c;
    MPI_Info info;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpix_hier_min_bytes", "1m");
    ASSERT_EQ(MPIX_Hier_comm_init(c, info), MPI_SUCCESS);
    MPI_Info_free(&info);
    ASSERT_EQ(MPIX_Hier_allreduce(a.data(), b.data(), 1000, MPI_FLOAT, MPI_SUM, c), MPI_SUCCESS);
    EXPECT_EQ(stat(c, std::string("mpix_hier_fallbacks_total{reason=\"") +
                          (size > 1 ? "below_min_bytes" : "single_rank") + "\"}"),
              1);
    MPI_Comm_free(&c);

    // MPIX_HIER_ENABLE=no
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpix_hier_enable", "no");
    ASSERT_EQ(MPIX_Hier_comm_init(c, info), MPI_SUCCESS);
    MPI_Info_free(&info);
    ASSERT_EQ(MPIX_Hier_bcast(a.data(), 10, MPI_FLOAT, 0, c), MPI_SUCCESS);
    EXPECT_EQ(stat(c, "mpix_hier_fallbacks_total{coll=\"bcast\",reason=\"disabled\"}"), 1);
    MPI_Comm_free(&c);

    // MPI_MAXLOC
    struct {
        float v;
        int i;
    } in = {1.0f, rank}, out;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    ASSERT_EQ(MPIX_Hier_allreduce(&in, &out, 1, MPI_FLOAT_INT, MPI_MAXLOC, c), MPI_SUCCESS);
    EXPECT_EQ(stat(c, "mpix_hier_fallbacks_total{reason=\"loc_op\"}"), 1);
    MPI_Comm_free(&c);

    // an intercommunicator (blocking: timed; nonblocking: counted)
    if (size >= 2) {
        MPI_Comm half;
        int color;
        MPI_Comm inter = mxh_test::world_intercomm(&half, &color);
        int x = 1, y = 0;
        ASSERT_EQ(MPIX_Hier_allreduce(&x, &y, 1, MPI_INT, MPI_SUM, inter), MPI_SUCCESS);
        MPI_Request r;
        ASSERT_EQ(MPIX_Hier_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, inter, &r), MPI_SUCCESS);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        EXPECT_EQ(stat(inter, "mpix_hier_fallbacks_total{reason=\"intercomm\"}"), 2);
        EXPECT_EQ(stat(inter, "mpix_hier_calls_total{path=\"plain\"}"), 2);
        EXPECT_EQ(stat(inter, "mpix_hier_bytes_total"), 8);
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);
    }
}

TEST(Metrics, Errors)
{
    double v = 0;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int cls = 0;
    for (const char *bad : {"no_such_metric", "mpix_hier_calls_total{nolabel=\"x\"}",
                            "mpix_hier_calls_total{coll=\"allreduc\"}",
                            "mpix_hier_calls_total{coll=\"allreduce\"", "{coll=\"x\"}"}) {
        int rc = MPIX_Hier_comm_get_stats(MPI_COMM_WORLD, bad, &v);
        ASSERT_NE(rc, MPI_SUCCESS) << bad;
        MPI_Error_class(rc, &cls);
        EXPECT_EQ(cls, MPI_ERR_ARG) << bad;
    }
    EXPECT_NE(MPIX_Hier_comm_get_stats(MPI_COMM_NULL, "mpix_hier_calls_total", &v), MPI_SUCCESS);
    EXPECT_NE(MPIX_Hier_comm_get_stats(MPI_COMM_WORLD, "mpix_hier_calls_total", nullptr),
              MPI_SUCCESS);
    int rc = MPIX_Hier_metrics_write("/nonexistent-dir/x/m.prom");
    MPI_Error_class(rc, &cls);
    EXPECT_EQ(cls, MPI_ERR_IO);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

TEST(Metrics, TextParsesFreedAndEscaped)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    const char *weird = "we\"ird\\name\nx";
    MPI_Comm_set_name(c, weird);
    int x = 1, y = 0;
    ASSERT_EQ(MPIX_Hier_allreduce(&x, &y, 1, MPI_INT, MPI_SUM, c), MPI_SUCCESS);
    MPI_Comm_free(&c);

    // on demand, to a file (placeholders) and to a buffer: the same grammar
    const char *dir = getenv("MXH_TEST_METRICS_DIR");
    std::string tmpl = std::string(dir ? dir : "/tmp") + "/mxh-test-metrics-%p-%r.prom";
    ASSERT_EQ(MPIX_Hier_metrics_write(tmpl.c_str()), MPI_SUCCESS);
    char path[4096];
    std::snprintf(path, sizeof(path), "%s/mxh-test-metrics-%ld-%d.prom", dir ? dir : "/tmp",
                  (long)getpid(), rank);
    std::ifstream f(path);
    ASSERT_TRUE(f.good()) << path;
    std::stringstream ss;
    ss << f.rdbuf();
    std::remove(path);
    for (const std::string &text : {ss.str(), text_now()}) {
        std::vector<Sample> all = parse_prom(text);
        bool freed_seen = false, world_seen = false;
        for (const Sample &s : all) {
            EXPECT_EQ(s.labels.at("rank"), std::to_string(rank));
            EXPECT_TRUE(s.labels.count("host") && s.labels.count("comm") &&
                        s.labels.count("comm_size"));
            if (s.name == "mpix_hier_comm_live" && s.labels.at("comm_name") == weird) {
                EXPECT_EQ(s.value, 0);
                freed_seen = true;
            }
            if (s.name == "mpix_hier_calls_total" && s.labels.at("comm_name") == weird) {
                EXPECT_EQ(s.value, 1);
            }
            if (s.name == "mpix_hier_comm_live" && s.labels.at("comm_name") == "MPI_COMM_WORLD")
                world_seen = true;
        }
        EXPECT_TRUE(freed_seen) << "the freed communicator's series";
        EXPECT_TRUE(world_seen);
    }
}

double sum_of(const std::vector<Sample> &all, const std::string &name, const char *comm_name)
{
    double v = 0;
    for (const Sample &s : all)
        if (s.name == name && (comm_name == nullptr || s.labels.at("comm_name") == comm_name))
            v += s.value;
    return v;
}

// Communicators created and freed in a loop: the registry stays bounded (the
// oldest freed ones are summed into comm="freed"), no count is lost.
// The file is written through a temporary of its own (mkstemp in the target directory):
// a symlink planted where the old predictable name <path>.tmp.<pid> was is not followed,
// the file it points to keeps its contents, and the metrics land at the path.
TEST(Metrics, TemporaryFileFollowsNoSymlink)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *dir = getenv("MXH_TEST_METRICS_DIR");
    std::string base = std::string(dir ? dir : "/tmp") + "/mxh-test-symlink-" +
                       std::to_string((long)getpid()) + "-";
    std::string tmpl = base + "%r.prom"; // one file per rank (no ".rankN" suffix added)
    std::string path = base + std::to_string(rank) + ".prom";
    std::string victim = base + std::to_string(rank) + ".victim";
    std::string planted = path + ".tmp." + std::to_string((long)getpid());
    {
        std::ofstream v(victim);
        v << "keep\n";
    }
    std::remove(planted.c_str());
    ASSERT_EQ(0, symlink(victim.c_str(), planted.c_str())) << planted;
    EXPECT_EQ(MPIX_Hier_metrics_write(tmpl.c_str()), MPI_SUCCESS);
    std::ifstream v(victim), m(path);
    std::string line;
    std::getline(v, line);
    EXPECT_EQ(line, "keep") << "the planted symlink was followed";
    std::stringstream ss;
    ss << m.rdbuf();
    EXPECT_NE(ss.str().find("mpix_hier_calls_total"), std::string::npos) << path;
    struct stat sb;
    EXPECT_EQ(0, lstat(planted.c_str(), &sb));
    EXPECT_TRUE(S_ISLNK(sb.st_mode)) << "the planted link is left alone";
    std::remove(planted.c_str());
    std::remove(victim.c_str());
    std::remove(path.c_str());
}

TEST(Metrics, ManyFreedCommunicatorsFolded)
{
    std::vector<Sample> before = parse_prom(text_now());
    double calls0 = sum_of(before, "mpix_hier_calls_total", nullptr);
    MPI_Op op;
    MPI_Op_create(sum_op, 1, &op);
    float a = 1, b;
    for (int i = 0; i < 300; i++) {
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        MPI_Comm_set_name(c, "loop");
        ASSERT_EQ(MPIX_Hier_allreduce(&a, &b, 1, MPI_FLOAT, op, c), MPI_SUCCESS);
        MPI_Comm_free(&c);
    }
    MPI_Op_free(&op);
    std::vector<Sample> all = parse_prom(text_now());
    EXPECT_EQ(sum_of(all, "mpix_hier_calls_total", nullptr), calls0 + 300);
    int comms = 0, folded = 0;
    for (const Sample &s : all)
        if (s.name == "mpix_hier_comm_live") {
            comms++;
            folded += s.labels.at("comm") == "freed";
        }
    EXPECT_EQ(folded, 1);
    EXPECT_LE(comms, 256 + 2 + 1); // the freed ones kept, the live ones, the sum
}

// MPIX_HIER_METRICS=no (run_mpi_tests.sh sets MXH_TEST_METRICS_OFF with it):
// nothing is counted, the API still answers.
TEST(Metrics, Disabled)
{
    if (getenv("MXH_TEST_METRICS_OFF") == nullptr)
        GTEST_SKIP() << "MXH_TEST_METRICS_OFF not set";
    int x = 1, y = 0;
    for (int i = 0; i < 3; i++) // the later ones shaped like the first (mpix/colls.c: PLAIN_FAST)
        ASSERT_EQ(MPIX_Hier_allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
    EXPECT_EQ(y, 1 * [] { int s; MPI_Comm_size(MPI_COMM_WORLD, &s); return s; }());
    EXPECT_EQ(stat(MPI_COMM_WORLD, "mpix_hier_calls_total"), 0);
    parse_prom(text_now()); // still a valid text (no samples counted)
}

// MPIX_HIER_METRICS_INTERVAL: the file appears while the program runs (checked
// in library calls). Runs where run_mpi_tests.sh sets MXH_TEST_METRICS_PERIODIC
// (the expected file, %r for the rank) with MPIX_HIER_METRICS_FILE and a short
// interval.
TEST(Metrics, PeriodicFile)
{
    const char *want = getenv("MXH_TEST_METRICS_PERIODIC");
    if (want == nullptr || getenv("MPIX_HIER_METRICS_INTERVAL") == nullptr)
        GTEST_SKIP() << "MXH_TEST_METRICS_PERIODIC not set";
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::string path = want;
    size_t at        = path.find("%r");
    if (at != std::string::npos)
        path.replace(at, 2, std::to_string(rank));
    std::remove(path.c_str());
    int x = 1, y = 0, seen = 0;
    double t0 = MPI_Wtime();
    while (MPI_Wtime() - t0 < 10) {
        ASSERT_EQ(MPIX_Hier_allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_SUCCESS);
        std::ifstream f(path);
        int mine = f.good() ? 1 : 0;
        MPIX_Hier_allreduce(&mine, &seen, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        if (seen)
            break;
    }
    ASSERT_TRUE(seen) << path << " not written within 10 s";
    std::ifstream f(path);
    std::stringstream ss;
    ss << f.rdbuf();
    std::vector<Sample> all = parse_prom(ss.str());
    EXPECT_FALSE(all.empty());
}

} // namespace

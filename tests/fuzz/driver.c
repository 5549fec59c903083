/* A self-contained driver for the LLVMFuzzerTestOneInput targets of tests/fuzz, so they
 * run where libFuzzer is not (gcc -fsanitize=address,undefined). It runs every seed, then
 * mutates seeds at random (bit flips, byte insertion and deletion, dictionary tokens,
 * numbers, splices, truncation) for a given time or number of runs; no coverage feedback.
 *
 *   fuzz_X [-t SECONDS] [-n RUNS] [-s SEED] [-m MAXLEN] [-T TIMEOUT] [-M MiB] [-o DIR]
 *          PATH...
 *
 * PATH: a folder (its regular files are seeds) or a file. Without -t and -n only the seeds
 * run (to reproduce a crash: fuzz_X crash-file). A finding stops the run with a nonzero
 * status after the input was written to DIR (default .) as crash-X-HASH (timeout-, oom-,
 * leak-): a sanitizer report (ASan, UBSan built with -fno-sanitize-recover, LeakSanitizer
 * on an input after which heap stayed allocated), abort(), a fatal signal, an input running
 * longer than TIMEOUT seconds (default 20), or one whose heap grows beyond MiB (default 256;
 * sanitizer builds only). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#define DRV_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DRV_ASAN 1
#endif
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

#ifdef DRV_ASAN
/* The sanitizer runtime's interface (not all of it has a header in gcc 12). */
void __sanitizer_set_death_callback(void (*callback)(void));
int __sanitizer_install_malloc_and_free_hooks(void (*m)(const volatile void *, size_t),
                                              void (*f)(const volatile void *));
size_t __sanitizer_get_allocated_size(const volatile void *p);
int __lsan_do_recoverable_leak_check(void);

/* Findings stop the run; leaks are checked per input (below), not again at exit. */
const char *__asan_default_options(void)
{
    return "abort_on_error=1:detect_leaks=0:malloc_context_size=30";
}
const char *__lsan_default_options(void) { return "exitcode=1"; }
#endif

typedef struct buf {
    uint8_t *p;
    size_t   n;
} buf_t;

static struct {
    const char *name;      /* the target: the program's base name */
    const char *dir;       /* where findings are written */
    const uint8_t *cur;    /* the input running now */
    size_t  cur_n;
    size_t  mem_limit;     /* bytes of heap growth allowed per input, 0: unchecked */
    volatile size_t live;  /* heap bytes allocated now (sanitizer builds) */
    volatile size_t base;  /* ... when the input started */
    volatile int    in_run, reported;
    unsigned timeout;
} drv = {"fuzz", ".", NULL, 0, (size_t)256 << 20, 0, 0, 0, 0, 20};

/* fprintf without the heap: the malloc hook and the signal handlers print with it. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n > 0 && write(2, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1) < 0)
        return;
}

static uint64_t fnv(const uint8_t *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* Writes the running input to DIR/KIND-NAME-HASH (called from signal handlers and the
 * sanitizers' death callback: open/write, no allocation). */
static void save_input(const char *kind)
{
    char path[4096], hex[17];
    uint64_t h;
    int fd;

    if (drv.reported || drv.cur == NULL)
        return;
    drv.reported = 1;
    h = fnv(drv.cur, drv.cur_n);
    for (int i = 15; i >= 0; i--, h >>= 4)
        hex[i] = "0123456789abcdef"[h & 15];
    hex[16] = '\0';
    snprintf(path, sizeof(path), "%s/%s-%s-%s", drv.dir, kind, drv.name, hex);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
        size_t off = 0;
        while (off < drv.cur_n) {
            ssize_t w = write(fd, drv.cur + off, drv.cur_n - off);
            if (w <= 0)
                break;
            off += (size_t)w;
        }
        close(fd);
    }
    say("==%s== %s: input of %zu bytes written to %s\n", drv.name, kind, drv.cur_n,
            fd >= 0 ? path : "(cannot write it)");
}

static void on_death(void) { save_input("crash"); }

static void on_signal(int sig)
{
    if (sig == SIGALRM) {
        say("==%s== timeout: an input ran longer than %u s\n", drv.name, drv.timeout);
        save_input("timeout");
        _exit(70);
    }
    save_input("crash");
    signal(sig, SIG_DFL);
    raise(sig);
}

#ifdef DRV_ASAN
static void malloc_hook(const volatile void *p, size_t n)
{
    (void)p;
    drv.live += n;
    if (drv.in_run && drv.mem_limit && drv.live > drv.base + drv.mem_limit && !drv.reported) {
        say("==%s== out of memory: an input took more than %zu MiB of heap\n", drv.name,
                drv.mem_limit >> 20);
        save_input("oom");
        abort();
    }
}

static void free_hook(const volatile void *p)
{
    if (p != NULL)
        drv.live -= __sanitizer_get_allocated_size(p);
}
#endif

/* ------------------------------------------------------------------ the inputs */

static buf_t *seeds;
static size_t nseeds, seeds_cap;

static void add_seed(const char *path)
{
    FILE *f = fopen(path, "rb");
    buf_t b = {NULL, 0};
    size_t cap = 0;

    if (f == NULL) {
        fprintf(stderr, "%s: cannot open %s: %s\n", drv.name, path, strerror(errno));
        exit(2);
    }
    for (;;) {
        if (b.n == cap) {
            cap = cap ? 2 * cap : 4096;
            if ((b.p = realloc(b.p, cap)) == NULL)
                abort();
        }
        size_t got = fread(b.p + b.n, 1, cap - b.n, f);
        if (got == 0)
            break;
        b.n += got;
    }
    fclose(f);
    if (nseeds == seeds_cap) {
        seeds_cap = seeds_cap ? 2 * seeds_cap : 64;
        if ((seeds = realloc(seeds, seeds_cap * sizeof(*seeds))) == NULL)
            abort();
    }
    seeds[nseeds++] = b;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A file, or every regular file of a folder in name order (so runs repeat with -s). */
static void add_path(const char *path)
{
    struct stat sb;
    DIR *d;
    struct dirent *e;
    char **names = NULL;
    size_t n = 0;

    if (stat(path, &sb) != 0) {
        fprintf(stderr, "%s: %s: %s\n", drv.name, path, strerror(errno));
        exit(2);
    }
    if (!S_ISDIR(sb.st_mode)) {
        add_seed(path);
        return;
    }
    if ((d = opendir(path)) == NULL) {
        fprintf(stderr, "%s: cannot open folder %s\n", drv.name, path);
        exit(2);
    }
    while ((e = readdir(d)) != NULL) {
        char full[4096];
        snprintf(full, sizeof(full), "%s/%s", path, e->d_name);
        if (e->d_name[0] == '.' || stat(full, &sb) != 0 || !S_ISREG(sb.st_mode))
            continue;
        if ((names = realloc(names, (n + 1) * sizeof(*names))) == NULL ||
            (names[n] = strdup(full)) == NULL)
            abort();
        n++;
    }
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof(*names), cmp_str);
    for (size_t i = 0; i < n; i++) {
        add_seed(names[i]);
        free(names[i]);
    }
    free(names);
}

/* Runs the target on an exact-size copy of @p (reads past the end are caught), then checks
 * that the heap went back to what it was; when it did not, a leak check. */
static void run_one(const uint8_t *p, size_t n)
{
    uint8_t *copy = malloc(n ? n : 1);

    if (copy == NULL)
        abort();
    if (n)
        memcpy(copy, p, n);
    drv.cur = copy;
    drv.cur_n = n;
    if (drv.timeout)
        alarm(drv.timeout);
    drv.base = drv.live;
    drv.in_run = 1;
    LLVMFuzzerTestOneInput(copy, n);
    drv.in_run = 0;
    alarm(0);
#ifdef DRV_ASAN
    if (drv.live > drv.base && __lsan_do_recoverable_leak_check() != 0) {
        say("==%s== leak: heap stayed allocated after this input\n", drv.name);
        save_input("leak");
        exit(71);
    }
#endif
    drv.cur = NULL;
    free(copy);
}

/* ------------------------------------------------------------------ mutations */

static uint64_t rng_state;

static uint64_t rnd(void)
{
    uint64_t x = rng_state; /* xorshift64* */
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    rng_state = x;
    return x * 2685821657736338717ull;
}

static size_t below(size_t n) { return n ? (size_t)(rnd() % n) : 0; }

/* Tokens of every format the targets read: XML, hostlists, topology.conf and cluster file
 * keys, numbers at the edges of their types, configuration suffixes, JSON. */
static const char *const dict[] = {
    "<", ">", "/>", "</", "=\"", "\"", "'", "&", "&amp;", "&lt;", "&#", "&#x", ";", "&#0;",
    "&#x10FFFF;", "<!--", "-->", "--", "<![CDATA[", "]]>", "<?", "?>", "<?xml version=\"1.0\"?>",
    "<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">", "<!DOCTYPE", "[", "]", "-", ",", "=", " ",
    "\t", "\n", "\r\n", "\\\n", "#", "\xef\xbb\xbf", "\xc3\xa9", "\xff", "0", "00", "9", "-1",
    "99999999999999999999", "999999", "1048575", "1048576", "2147483647", "2147483648",
    "4294967296", "9223372036854775807", "18446744073709551615", "18446744073709551616",
    "1e308", "1e-308", "inf", "nan", "0x", "k", "m", "g", "t", "b", "s", "us", "ms", "ns",
    ":", ";", "SwitchName=", "Nodes=", "Switches=", "BlockName=", "BlockSizes=", "LinkSpeed=",
    "node=", "rail=", "leaf=", "torus=", "x", "[0-999999]", "[0-7]", "[01-10]", "<system version=\"1\">",
    "</system>", "<cpu numaid=\"0\">", "</cpu>", "<pci busid=\"0000:01:00.0\" class=\"0x030200\">",
    "</pci>", "<gpu dev=\"0\"/>", "<nic>", "<net name=\"mlx5_0\"/>", "</nic>",
    "<nvlink target=\"0000:02:00.0\" tclass=\"0x068000\"/>", "vendor=\"0x10de\"",
    "<topology version=\"2.0\">", "</topology>", "<object type=\"", "Machine", "Package", "PU",
    "PCIDev", "OSDev", "NUMANode", "cpuset=\"0x1\"", "os_index=\"0\"", "<info name=\"", "value=\"",
    "<distances2 ", "nbobjs=\"2\"", "\"exclude_rails\": [", "\"exclude_rails\"", "1, 3", "],",
    "{", "}", "frag=", "algo=", "allreduce:pipeline", "net_bw=", "lat_factor=",
};
#define NDICT (sizeof(dict) / sizeof(dict[0]))

/* Makes room for @add more bytes at @at of *@b (at most @max in all): 0, or -1 when full. */
static int open_gap(buf_t *b, size_t at, size_t add, size_t max, size_t *cap)
{
    if (b->n + add > max)
        return -1;
    if (b->n + add > *cap) {
        *cap = (b->n + add) * 2;
        if ((b->p = realloc(b->p, *cap)) == NULL)
            abort();
    }
    memmove(b->p + at + add, b->p + at, b->n - at);
    b->n += add;
    return 0;
}

static void insert(buf_t *b, size_t at, const void *s, size_t n, size_t max, size_t *cap)
{
    if (open_gap(b, at, n, max, cap) == 0)
        memcpy(b->p + at, s, n);
}

/* One random change of *@b (capacity *@cap, length at most @max). */
static void mutate_once(buf_t *b, size_t max, size_t *cap)
{
    size_t at = below(b->n + 1), len;
    const buf_t *o;

    switch (below(12)) {
    case 0: /* flip a bit */
        if (b->n)
            b->p[below(b->n)] ^= (uint8_t)(1u << below(8));
        break;
    case 1: /* set a byte to anything */
        if (b->n)
            b->p[below(b->n)] = (uint8_t)rnd();
        break;
    case 2: { /* insert a few random or repeated bytes */
        uint8_t tmp[16], c = (uint8_t)rnd();
        len = 1 + below(sizeof(tmp));
        for (size_t i = 0; i < len; i++)
            tmp[i] = below(2) ? c : (uint8_t)rnd();
        insert(b, at, tmp, len, max, cap);
        break;
    }
    case 3: /* delete a range */
        if (b->n) {
            at = below(b->n);
            len = 1 + below(b->n - at < 64 ? b->n - at : 64);
            memmove(b->p + at, b->p + at + len, b->n - at - len);
            b->n -= len;
        }
        break;
    case 4:
    case 5:
    case 6: { /* insert or overwrite with a dictionary token */
        const char *t = dict[below(NDICT)];
        size_t tn = strlen(t);
        if (below(2) || at + tn > b->n)
            insert(b, at, t, tn, max, cap);
        else
            memcpy(b->p + at, t, tn);
        break;
    }
    case 7: /* duplicate a range of itself */
        if (b->n) {
            size_t from = below(b->n);
            len = 1 + below(b->n - from < 256 ? b->n - from : 256);
            uint8_t *tmp = malloc(len);
            if (tmp == NULL)
                abort();
            memcpy(tmp, b->p + from, len);
            insert(b, at, tmp, len, max, cap);
            free(tmp);
        }
        break;
    case 8: /* splice: the tail from another seed */
        o = &seeds[below(nseeds)];
        if (o->n) {
            size_t from = below(o->n);
            b->n = at;
            insert(b, at, o->p + from, o->n - from, max, cap);
        }
        break;
    case 9: /* insert a piece of another seed */
        o = &seeds[below(nseeds)];
        if (o->n) {
            size_t from = below(o->n);
            len = 1 + below(o->n - from < 512 ? o->n - from : 512);
            insert(b, at, o->p + from, len, max, cap);
        }
        break;
    case 10: /* truncate */
        b->n = below(b->n + 1);
        break;
    default: /* a number: replace a run of digits */
        if (b->n) {
            size_t s = below(b->n), e;
            while (s < b->n && (b->p[s] < '0' || b->p[s] > '9'))
                s++;
            for (e = s; e < b->n && b->p[e] >= '0' && b->p[e] <= '9'; e++)
                ;
            if (s < b->n) {
                static const char *const nums[] = {"0", "1", "7", "255", "65536", "1048576",
                                                   "2147483648", "99999999999999999999",
                                                   "18446744073709551616", "-1"};
                const char *t = nums[below(sizeof(nums) / sizeof(nums[0]))];
                memmove(b->p + s, b->p + e, b->n - e);
                b->n -= e - s;
                insert(b, s, t, strlen(t), max, cap);
            }
        }
        break;
    }
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: %s [-t SECONDS] [-n RUNS] [-s SEED] [-m MAXLEN] [-T TIMEOUT] [-M MiB] "
            "[-o DIR] PATH...\n"
            "  runs every file of PATH (folders: their files), then random mutations of them\n"
            "  for SECONDS or RUNS; a crash, timeout, leak or heap growth beyond MiB writes the\n"
            "  input to DIR and stops with a nonzero status\n",
            drv.name);
    exit(2);
}

int main(int argc, char **argv)
{
    double seconds = 0, t0;
    unsigned long long runs = 0, done = 0, max_runs = 0;
    unsigned long long seed = 1;
    size_t max_len = 256 * 1024, cap = 0, longest = 0;
    buf_t cur = {NULL, 0};
    int opt;
    struct sigaction sa;

    drv.name = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    while ((opt = getopt(argc, argv, "t:n:s:m:T:M:o:h")) != -1) {
        switch (opt) {
        case 't': seconds = atof(optarg); break;
        case 'n': max_runs = strtoull(optarg, NULL, 10); break;
        case 's': seed = strtoull(optarg, NULL, 0); break;
        case 'm': max_len = (size_t)strtoull(optarg, NULL, 10); break;
        case 'T': drv.timeout = (unsigned)strtoul(optarg, NULL, 10); break;
        case 'M': drv.mem_limit = (size_t)strtoull(optarg, NULL, 10) << 20; break;
        case 'o': drv.dir = optarg; break;
        default: usage();
        }
    }
    if (optind >= argc)
        usage();
    if (LLVMFuzzerInitialize != NULL)
        LLVMFuzzerInitialize(&argc, &argv);
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigaction(SIGALRM, &sa, NULL);
    sigaction(SIGABRT, &sa, NULL);
#ifdef DRV_ASAN
    __sanitizer_set_death_callback(on_death);
    __sanitizer_install_malloc_and_free_hooks(malloc_hook, free_hook);
#else
    (void)on_death;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGBUS, &sa, NULL);
    sigaction(SIGFPE, &sa, NULL);
    sigaction(SIGILL, &sa, NULL);
#endif
    for (int i = optind; i < argc; i++)
        add_path(argv[i]);
    if (nseeds == 0) {
        fprintf(stderr, "%s: no seed files in the paths given\n", drv.name);
        return 2;
    }
    t0 = now();
    for (size_t i = 0; i < nseeds; i++) {
        run_one(seeds[i].p, seeds[i].n);
        longest = seeds[i].n > longest ? seeds[i].n : longest;
    }
    rng_state = seed * 0x9e3779b97f4a7c15ull + 1;
    if (max_len < longest)
        max_len = longest;
    while ((seconds > 0 || max_runs > 0) && (max_runs == 0 || runs < max_runs) &&
           (seconds <= 0 || now() - t0 < seconds)) {
        /* a fresh copy of a seed, or (one time in four) keep changing the last input */
        if (cur.p == NULL || below(4) != 0) {
            const buf_t *s = &seeds[below(nseeds)];
            if (s->n > cap) {
                cap = s->n * 2;
                if ((cur.p = realloc(cur.p, cap)) == NULL)
                    abort();
            }
            if (cur.p == NULL && (cur.p = malloc(cap = 64)) == NULL)
                abort();
            memcpy(cur.p, s->p, s->n);
            cur.n = s->n;
        }
        for (size_t k = 1 + below((size_t)1 << below(5)); k > 0; k--)
            mutate_once(&cur, max_len, &cap);
        run_one(cur.p, cur.n);
        runs++;
    }
    done = nseeds + runs;
    double el = now() - t0;
    printf("%s: %zu seeds, %llu mutated runs, %llu runs in %.1f s (%.0f/s), seed %llu, no "
           "finding\n",
           drv.name, nseeds, runs, done, el, el > 0 ? (double)done / el : 0.0, seed);
    free(cur.p);
    for (size_t i = 0; i < nseeds; i++)
        free(seeds[i].p);
    free(seeds);
    return 0;
}

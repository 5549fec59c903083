#!/usr/bin/env python3
"""Strict checker of the Prometheus text exposition format (0.0.4) as
libmpixhier writes it (MPIX_HIER_METRICS_FILE): one HELP and one TYPE per
family before its samples, families not interleaved, counters named *_total,
label names [a-zA-Z_][a-zA-Z0-9_]*, label values with only \\\\, \\" and \\n escapes,
float values, no timestamps, a final line feed. With prometheus_client
installed, its parser must accept the file too.

  check_prometheus.py FILE...                  check each file
  check_prometheus.py --expect-ranks N TMPL    TMPL with %r: files of ranks 0..N-1 exist
                                               and pass; each names its rank
"""
import re
import sys

NAME = re.compile(r'[a-zA-Z_:][a-zA-Z0-9_:]*$')
LABEL = re.compile(r'[a-zA-Z_][a-zA-Z0-9_]*')
VALUE = re.compile(r'([+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?|NaN|[+-]Inf)$')


def parse(text):
    if not text.endswith('\n'):
        raise ValueError('no final line feed')
    types, helps, done, samples = {}, set(), set(), []
    cur = None
    for n, line in enumerate(text.split('\n')[:-1], 1):
        where = 'line %d: %r' % (n, line)
        m = re.match(r'# (HELP|TYPE) (\S+) (.*)$', line)
        if m:
            kind, name, rest = m.groups()
            if not NAME.match(name):
                raise ValueError('bad name, ' + where)
            if name in done:
                raise ValueError('family interleaved or repeated, ' + where)
            if name != cur:
                if cur is not None:
                    done.add(cur)
                cur = name
            if kind == 'HELP':
                if name in helps:
                    raise ValueError('second HELP, ' + where)
                helps.add(name)
            else:
                if name in types or rest not in ('counter', 'gauge'):
                    raise ValueError('bad TYPE, ' + where)
                if rest == 'counter' and not name.endswith('_total'):
                    raise ValueError('counter without _total, ' + where)
                types[name] = rest
            continue
        if not line or line.startswith('#'):
            raise ValueError('unexpected line, ' + where)
        m = re.match(r'([a-zA-Z_:][a-zA-Z0-9_:]*)', line)
        name = m.group(1) if m else ''
        if name != cur or name not in types:
            raise ValueError('sample outside its family, ' + where)
        i, labels = len(name), {}
        if i < len(line) and line[i] == '{':
            i += 1
            while line[i] != '}':
                m = LABEL.match(line, i)
                if not m or line[m.end():m.end() + 2] != '="':
                    raise ValueError('bad label, ' + where)
                key, i, val = m.group(0), m.end() + 2, ''
                while line[i] != '"':
                    if line[i] == '\\':
                        e = line[i + 1]
                        if e not in '\\"n':
                            raise ValueError('bad escape, ' + where)
                        val += '\n' if e == 'n' else e
                        i += 2
                    else:
                        val += line[i]
                        i += 1
                i += 1
                if key in labels:
                    raise ValueError('label twice, ' + where)
                labels[key] = val
                if line[i] == ',':
                    i += 1
            i += 1
        if line[i:i + 1] != ' ' or not VALUE.match(line[i + 1:]):
            raise ValueError('bad value (or a timestamp), ' + where)
        samples.append((name, labels, float(line[i + 1:])))
    if set(types) != helps:
        raise ValueError('HELP and TYPE differ: %s' % (set(types) ^ helps))
    parser = official_parser()
    if parser is not None:
        official = sum(len(f.samples) for f in parser(text))
        if official != len(samples):
            raise ValueError('prometheus_client reads %d samples, this checker %d'
                             % (official, len(samples)))
    return samples


def official_parser():
    """prometheus_client's parser, also from Debian's python3-prometheus-client
    when this python is another one (pure Python: any 3.x)."""
    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:
        sys.path.append('/usr/lib/python3/dist-packages')
        try:
            from prometheus_client.parser import text_string_to_metric_families
        except ImportError:
            return None
    return text_string_to_metric_families


def USED():
    return ', prometheus_client agrees' if official_parser() else ''


def main(argv):
    if len(argv) >= 3 and argv[0] == '--expect-ranks':
        n, tmpl = int(argv[1]), argv[2]
        for r in range(n):
            path = tmpl.replace('%r', str(r))
            samples = parse(open(path).read())
            if not samples or any(s[1].get('rank') != str(r) for s in samples):
                raise ValueError('%s: no samples, or not all of rank %d' % (path, r))
            if not any(s[0] == 'mpix_hier_calls_total' and s[2] > 0 for s in samples):
                raise ValueError('%s: no calls counted' % path)
            print('ok %s (%d samples%s)' % (path, len(samples), USED()))
        return 0
    for path in argv:
        print('ok %s (%d samples%s)' % (path, len(parse(open(path).read())), USED()))
    return 0


if __name__ == '__main__':
    try:
        sys.exit(main(sys.argv[1:]))
    except (ValueError, OSError, IndexError) as e:
        print('check_prometheus: %s' % e, file=sys.stderr)
        sys.exit(1)

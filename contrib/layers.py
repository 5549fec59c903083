#!/usr/bin/env python3
"""Check the layer rule (HACKING.md "The layer rule"): every #include "dir/file.h"
between folders of src/ and mpix/ points down the order below; none points up or
sideways, so there is no include circle across folders. Prints the offending
includes and exits 1 if any."""
import os
import re
import sys

ORDER = ["tools", "mpix", "coll", "exec", "decide", "topo", "mem", "reduce", "sim",
         "diag", "util"]  # top first


def folder(path):
    parts = path.split(os.sep)
    if parts[0] == "mpix":
        return "mpix"
    return parts[1] if parts[0] == "src" and len(parts) > 2 else None


def main(root):
    bad = []
    inc = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/[^"]+"', re.M)
    for top in ("src", "mpix"):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if not f.endswith((".c", ".h", ".cu")):
                    continue
                rel = os.path.relpath(os.path.join(d, f), root)
                src = folder(rel)
                with open(os.path.join(root, rel), errors="replace") as fh:
                    text = fh.read()
                for m in inc.finditer(text):
                    dst = m.group(1)
                    if dst == src or dst not in ORDER:
                        continue
                    if src not in ORDER or ORDER.index(dst) <= ORDER.index(src):
                        bad.append(f"{rel}: includes {m.group(0).split()[-1]} ({src} -> {dst})")
    for b in bad:
        print(b)
    print(f"layers: {len(bad)} upward includes" if bad else "layers: every include points down")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))

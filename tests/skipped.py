#!/usr/bin/env python3
"""Lists the tests ctest skipped, and why, from its JUnit files.

Usage: skipped.py LABEL=JUNIT.xml...   (e.g. openmpi=build/openmpi/junit.xml)

A skipped test prints its reason on a line starting "SKIP" (tests/harness.h
and the placeholders for rank counts that are not run); this prints that
line beside the test's name, and the count.  Standard library only, so that
it runs whatever Python is at hand.
"""
import sys
import xml.etree.ElementTree as ET


def skipped_tests(path):
    """[(test name, reason)] of the skipped tests in one JUnit file."""
    out = []
    for case in ET.parse(path).getroot().iter("testcase"):
        if case.find("skipped") is None:
            continue
        text = case.findtext("system-out") or ""
        reasons = [line.strip() for line in text.splitlines() if line.startswith("SKIP")]
        out.append((case.get("name"), "; ".join(reasons) or "(no reason printed)"))
    return out


def main(argv):
    total = 0
    for arg in argv:
        label, _, path = arg.rpartition("=")
        try:
            found = skipped_tests(path)
        except (OSError, ET.ParseError) as exc:
            print(f"skipped.py: cannot read {path}: {exc}", file=sys.stderr)
            return 1
        total += len(found)
        for name, reason in found:
            print(f"  skipped ({label or path}) {name}: {reason}")
    print(f"ctest: {total} tests skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

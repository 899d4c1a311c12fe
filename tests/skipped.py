#!/usr/bin/env python3
"""Lists the tests ctest skipped, and why, from its JUnit files, then the
totals of all the runs as one line: "ctest: N passed, N failed, N skipped".

Usage: skipped.py LABEL=JUNIT.xml...   (e.g. openmpi=build/openmpi/junit.xml)

A skipped test prints its reason on a line starting "SKIP" (tests/harness.h
and the placeholders for rank counts that are not run); this prints that
line beside the test's name.  Standard library only, so that it runs
whatever Python is at hand.
"""
import sys
import xml.etree.ElementTree as ET


def read_junit(path):
    """(passed, failed, [(test name, reason)] of the skipped) of one file."""
    passed = failed = 0
    skipped = []
    for case in ET.parse(path).getroot().iter("testcase"):
        if case.find("skipped") is not None:
            text = case.findtext("system-out") or ""
            reasons = [line.strip() for line in text.splitlines() if line.startswith("SKIP")]
            skipped.append((case.get("name"), "; ".join(reasons) or "(no reason printed)"))
        elif case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        else:
            passed += 1
    return passed, failed, skipped


def main(argv):
    passed = failed = skips = 0
    for arg in argv:
        label, _, path = arg.rpartition("=")
        try:
            p, f, found = read_junit(path)
        except (OSError, ET.ParseError) as exc:
            print(f"skipped.py: cannot read {path}: {exc}", file=sys.stderr)
            return 1
        passed, failed, skips = passed + p, failed + f, skips + len(found)
        for name, reason in found:
            print(f"  skipped ({label or path}) {name}: {reason}")
    print(f"ctest: {passed} passed, {failed} failed, {skips} skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

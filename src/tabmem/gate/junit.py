"""A scorecard as JUnit XML: one test suite per table checked, one test case per rule.

CI systems (GitHub Actions' test reporters, GitLab, Jenkins) render this format: a rule that
fails or is unresolved is a ``<failure>`` carrying its line and the advice, a rule whose figure
was not measured is ``<skipped>`` (a ``<failure>`` when the policy requires it).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from tabmem.gate.engine import NOT_MEASURED, Scorecard

__all__ = ["junit_xml"]


def junit_xml(card: Scorecard) -> str:
    """The JUnit XML document of ``card`` (UTF-8 text with its declaration)."""
    policy = card.policy.name
    root = ET.Element("testsuites", name=f"tabmem check ({policy})")
    total = failures = skipped = 0
    for source in card.sources:
        judgements = card.for_source(source)
        suite = ET.SubElement(root, "testsuite", name=f"{policy}: {source}")
        n_fail = n_skip = 0
        for j in judgements:
            case = ET.SubElement(suite, "testcase", classname=f"tabmem.check.{policy}", name=f"{j.rule.id} [{source}]")
            if j.failed:
                n_fail += 1
                failure = ET.SubElement(case, "failure", message=j.message, type=j.status)
                failure.text = "\n".join(
                    t
                    for t in (
                        j.message,
                        f"why this limit: {j.rule.why}" if j.rule.why else "",
                        f"what to do: {j.rule.advice}",
                    )
                    if t
                )
            elif j.status == NOT_MEASURED:
                n_skip += 1
                ET.SubElement(case, "skipped", message=j.message)
            ET.SubElement(case, "system-out").text = j.message
        suite.set("tests", str(len(judgements)))
        suite.set("failures", str(n_fail))
        suite.set("errors", "0")
        suite.set("skipped", str(n_skip))
        total, failures, skipped = total + len(judgements), failures + n_fail, skipped + n_skip
    root.set("tests", str(total))
    root.set("failures", str(failures))
    root.set("errors", "0")
    root.set("skipped", str(skipped))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"

"""JUnit XML of a gate result: one test case per measurement (a point's time, flop/s and
bytes/s are one); a verdict in the policy's fail_on is a failure, an incomparable measurement
is skipped (with its reason), everything else passes."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from perfkit.core.units import fmt_p
from perfkit.regression.gate.compare import GateResult
from perfkit.regression.gate.types import Verdict
from perfkit.reports.gate_format import fmt_change, fmt_interval, row_name


def render_junit(result: GateResult, suite: str = "perfkit gate") -> str:
    cases = result.rows
    failing = set(result.policy.fail_on)
    root = ET.Element("testsuites", name=suite)
    ts = ET.SubElement(
        root,
        "testsuite",
        name=suite,
        tests=str(len(cases)),
        failures=str(sum(1 for c in cases if c.verdict.value in failing)),
        skipped=str(sum(1 for c in cases if c.verdict == Verdict.INCOMPARABLE and c.verdict.value not in failing)),
        errors="0",
    )
    props = ET.SubElement(ts, "properties")
    for key, value in (("baseline", result.base.run_id), ("candidate", result.cand.run_id),
                       ("gpu", result.cand.gpu), ("policy", result.policy.source),
                       ("fail_on", ",".join(result.policy.fail_on))):
        ET.SubElement(props, "property", name=key, value=str(value))
    for c in cases:
        case = ET.SubElement(ts, "testcase", classname=f"perfkit.{c.direction}", name=c.metric, time="0")
        detail = (f"{row_name(c)}: {c.verdict.value}: change {fmt_change(c)} interval {fmt_interval(c)} "
                  f"p={fmt_p(c.p_value)}; {c.reason}")
        if c.verdict.value in failing:
            failure = ET.SubElement(case, "failure", message=detail, type=c.verdict.value)
            failure.text = detail
        elif c.verdict == Verdict.INCOMPARABLE:
            ET.SubElement(case, "skipped", message=detail)
        else:
            ET.SubElement(case, "system-out").text = detail
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"

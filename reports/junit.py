"""JUnit XML of a gate result: one test case per measurement (a point's time, flop/s and
bytes/s are one); a verdict in the policy's fail_on is a failure; a measurement that could not
have shown a regression (noisy, inconclusive, incomparable) is skipped with its verdict and
reason, so a CI view never counts it as passed; regressed-free decisive verdicts pass. The suite
carries the headline (GateResult.outcome) as its `outcome` property and its system-out."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from perfkit.regression.gate.compare import DECISIVE, GateResult
from perfkit.reports.gate_format import VALUES_NOTE, status_text, verdict_line


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
        skipped=str(sum(1 for c in cases if c.verdict not in DECISIVE and c.verdict.value not in failing)),
        errors="0",
    )
    props = ET.SubElement(ts, "properties")
    for key, value in (("baseline", result.base.run_id), ("candidate", result.cand.run_id),
                       ("gpu", result.cand.gpu), ("policy", result.policy.source),
                       ("fail_on", ",".join(result.policy.fail_on)), ("outcome", result.outcome),
                       ("headline", status_text(result))):
        ET.SubElement(props, "property", name=key, value=str(value))
    for c in cases:
        case = ET.SubElement(ts, "testcase", classname=f"perfkit.{c.direction}", name=c.metric, time="0")
        detail = verdict_line(c)
        if c.verdict.value in failing:
            failure = ET.SubElement(case, "failure", message=detail, type=c.verdict.value)
            failure.text = detail
        elif c.verdict not in DECISIVE:
            ET.SubElement(case, "skipped", message=detail, type=c.verdict.value)
        else:
            ET.SubElement(case, "system-out").text = detail
    ET.SubElement(ts, "system-out").text = f"perfkit gate {status_text(result)}. {VALUES_NOTE}."
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"

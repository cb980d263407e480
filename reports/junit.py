"""JUnit XML of a gate result: one test case per measurement (a point's time, flop/s and
bytes/s are one); a verdict in the policy's fail_on is a failure; a measurement that could not
have shown a regression (noisy, inconclusive, incomparable) is skipped with its verdict and
reason, so a CI view never counts it as passed; regressed-free decisive verdicts pass. The suite
carries the headline (GateResult.outcome) as its `outcome` property and its system-out.

Escaping (JUnit XML's one rule, `xml_text`, applied to every string written: metric names,
run ids, GPU names, the policy's path, reasons): characters XML 1.0 does not allow (C0 controls
but tab, newline and carriage return; lone surrogates; U+FFFE, U+FFFF) and those it discourages
(DEL, C1 controls) are shown as their Python escapes (`\\x1b`, as in the terminal), then
ElementTree escapes `&`, `<`, `>` and, in attributes, quotes and line breaks. Every name thus
parses, whatever bytes a run or a trace held."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from perfkit.core.terminal import escaped_char
from perfkit.regression.gate.compare import DECISIVE, GateResult
from perfkit.regression.gate.headline import headline
from perfkit.reports.gate.format import VALUES_NOTE, not_compared_text, status_text, verdict_line

_NOT_IN_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def xml_text(value: Any) -> str:
    """`value`'s text with what XML 1.0 refuses or discourages shown as escapes (see the module)."""
    s = "" if value is None else str(value)
    return _NOT_IN_XML.sub(lambda m: escaped_char(m.group(0)), s)


def render_junit(result: GateResult, suite: str = "perfkit gate") -> str:
    cases = result.rows
    fails = result.policy.fails
    root = ET.Element("testsuites", name=xml_text(suite))
    ts = ET.SubElement(
        root,
        "testsuite",
        name=xml_text(suite),
        tests=str(len(cases)),
        failures=str(sum(1 for c in cases if fails(c))),
        skipped=str(sum(1 for c in cases if c.verdict not in DECISIVE and not fails(c))),
        errors="0",
    )
    head = headline(result)
    props = ET.SubElement(ts, "properties")
    for key, value in (("answer", head.text), ("why", head.why), ("baseline", result.base.run_id), ("candidate", result.cand.run_id),
                       ("gpu", result.cand.gpu), ("policy", result.policy.source),
                       ("fail_on", ",".join(result.policy.fail_on)), ("outcome", result.outcome),
                       ("headline", status_text(result))):
        ET.SubElement(props, "property", name=key, value=xml_text(value))
    for c in cases:
        case = ET.SubElement(ts, "testcase", classname=xml_text(f"perfkit.{c.direction}"), name=xml_text(c.metric),
                             time="0")
        detail = xml_text(verdict_line(c))
        if fails(c):
            failure = ET.SubElement(case, "failure", message=detail, type=c.verdict.value)
            failure.text = detail
        elif c.verdict not in DECISIVE:
            ET.SubElement(case, "skipped", message=detail, type=c.verdict.value)
        else:
            ET.SubElement(case, "system-out").text = detail
    answer = f"answer: {head.text}" + (f"\nwhy: {head.why}" if head.why else "")
    summary = f"{answer}\nperfkit gate {status_text(result)}. {VALUES_NOTE}. {not_compared_text(result)}".rstrip()
    ET.SubElement(ts, "system-out").text = xml_text(summary)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"

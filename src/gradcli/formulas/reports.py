"""Reports CI systems read: JUnit XML (one testsuite per file, one testcase per check) and
GitHub Actions workflow commands (``::error file=…,line=…::message``), escaped as GitHub's
``command.ts`` does; characters XML 1.0 forbids even escaped become U+FFFD (``xml_text``).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable

from gradcli.errors import ExitStatus
from gradcli.formulas.files import CheckFileError
from gradcli.formulas.outcomes import CheckOutcome

# What XML 1.0 does not allow: C0 controls but tab, LF and CR; lone surrogates; U+FFFE, U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: str) -> str:
    """``text`` with every character XML 1.0 forbids replaced by U+FFFD."""
    return _NOT_XML.sub("\ufffd", text)


def junit_xml(outcomes: Iterable[CheckOutcome], errors: Iterable[CheckFileError] = ()) -> str:
    """JUnit XML: failed assertions are ``<failure>``, numeric and file errors ``<error>``."""
    root = ET.Element("testsuites", name="gradcli check")
    suites: dict[str, ET.Element] = {}

    def suite(file: str) -> ET.Element:
        if file not in suites:
            suites[file] = ET.SubElement(root, "testsuite", name=file)
        return suites[file]

    for outcome in outcomes:
        spec = outcome.spec
        case = ET.SubElement(suite(spec.file), "testcase", classname=spec.file, name=spec.name,
                             time=f"{outcome.seconds:.6f}", file=spec.file, line=str(spec.line))
        failures = outcome.failures
        if failures:
            error = outcome.status != ExitStatus.CHECK_FAILED  # numeric, or the check's own
            kind = "numeric error" if outcome.status == ExitStatus.NUMERIC else "check error"
            element = ET.SubElement(case, "error" if error else "failure",
                                    message=failures[0].describe(),
                                    type=kind if error else "check failed")
            element.text = "\n".join(f"{spec.file}:{f.line}: {f.describe()}" for f in failures)
        ET.SubElement(case, "system-out").text = "\n".join(f.describe() for f in outcome.findings)
    for error in errors:
        case = ET.SubElement(suite(error.file), "testcase", classname=error.file,
                             name="load check file", time="0")
        ET.SubElement(case, "error", message=error.one_line(), type="bad check file")
    for element in suites.values():
        cases = element.findall("testcase")
        element.set("tests", str(len(cases)))
        element.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
        element.set("errors", str(sum(1 for c in cases if c.find("error") is not None)))
        element.set("time", f"{sum(float(c.get('time', 0)) for c in cases):.6f}")
    for total in ("tests", "failures", "errors"):
        root.set(total, str(sum(int(s.get(total, 0)) for s in suites.values())))
    for element in root.iter():
        element.attrib = {key: xml_text(value) for key, value in element.attrib.items()}
        element.text = None if element.text is None else xml_text(element.text)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, "unicode") + "\n"


def github_annotations(outcomes: Iterable[CheckOutcome],
                       errors: Iterable[CheckFileError] = ()) -> list[str]:
    """One ``::error`` workflow command per failed assertion and per bad file."""
    lines = []
    for outcome in outcomes:
        for finding in outcome.failures:
            lines.append(annotation(outcome.spec.file, finding.line,
                                    f"gradcli check {outcome.spec.name}", finding.describe()))
    for error in errors:
        lines.append(annotation(error.file, error.line, "gradcli check: bad check file",
                                error.one_line()))
    return lines


def annotation(file: str, line: int | None, title: str, message: str) -> str:
    """``::error file=F,line=L,title=T::MESSAGE`` with GitHub's escaping."""
    properties = [f"file={escape_property(file)}"]
    if line is not None:
        properties.append(f"line={line}")
    properties.append(f"title={escape_property(title)}")
    return f"::error {','.join(properties)}::{escape_data(message)}"


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")

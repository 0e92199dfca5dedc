"""The jar cache's key."""

from pathlib import Path

import pytest

from kfaild_lab import jars

POM = """<?xml version="1.0"?>
<!-- {comment} -->
<project><dependencies><dependency>{dependency}</dependency></dependencies></project>
"""


def digest_of(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, comment: str, dep: str) -> str:
    pom = tmp_path / f"pom-{len(list(tmp_path.iterdir()))}.xml"
    pom.write_text(POM.format(comment=comment, dependency=dep))
    monkeypatch.setattr(jars, "POM", pom)
    return jars.pom_digest()


def test_a_comment_does_not_change_the_key_but_a_dependency_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = digest_of(tmp_path, monkeypatch, "lab/lab fetch", "kafka 4.3.1")
    assert digest_of(tmp_path, monkeypatch, "moved\nacross lines", "kafka 4.3.1") == first
    assert digest_of(tmp_path, monkeypatch, "lab/lab fetch", "kafka 4.3.2") != first

"""One search for ncu / nsys (perfkit.core.cuda_tools), on real executables laid out in a temporary
folder the way NVIDIA's installers lay them out: PATH, $CUDA_HOME, /opt/nvidia/nsight-systems/<v>/bin,
the nsight-systems-cli package, a /usr/bin link; the newest version wins and the choice is said."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from perfkit.core.cuda_tools import INSTALL_GLOBS, path_version, search_cuda_tool


def _exe(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\necho 'NVIDIA Nsight Systems version 2024.5.1'\n")
    path.chmod(0o755)
    return path


def test_path_version_reads_nsight_and_cuda_folders() -> None:
    assert path_version("/opt/nvidia/nsight-systems/2024.5.1/bin/nsys") == (2024, 5, 1)
    assert path_version("/opt/nvidia/nsight-systems-cli/2025.1.1/target-linux-x64/nsys") == (2025, 1, 1)
    assert path_version("/usr/local/cuda-12.4/bin/nsys") == (12, 4)
    assert path_version("/usr/local/cuda-12.4/nsight-systems-2023.4.4/bin/nsys") == (2023, 4, 4)
    assert path_version("/usr/bin/nsys") is None


def test_the_newest_install_wins_over_path_and_says_why(tmp_path: Path) -> None:
    old = _exe(tmp_path / "opt/nvidia/nsight-systems/2023.4.1/bin/nsys")
    new = _exe(tmp_path / "opt/nvidia/nsight-systems/2024.6.2/bin/nsys")
    _exe(tmp_path / "opt/nvidia/nsight-systems/2024.10.1/bin/not-nsys")
    on_path = _exe(tmp_path / "usr/bin/nsys")  # a version the path does not show
    found = search_cuda_tool("nsys", env={"PATH": str(on_path.parent)},
                             install_globs=[str(tmp_path / "opt/nvidia/nsight-systems/*/bin/nsys")])
    assert found.path == str(new)
    assert [c.path for c in found.candidates] == [str(on_path), str(old), str(new)]
    why = found.chosen_because
    assert "version 2024.6.2" in why and "the newest version of 3 found" in why and str(old) in why


def test_numeric_not_lexical_version_order(tmp_path: Path) -> None:
    _exe(tmp_path / "2024.9.1/nsys")
    ten = _exe(tmp_path / "2024.10.1/nsys")
    found = search_cuda_tool("nsys", env={"PATH": ""}, install_globs=[str(tmp_path / "*/nsys")])
    assert found.path == str(ten)


def test_a_link_on_path_counts_as_the_version_it_points_to(tmp_path: Path) -> None:
    real = _exe(tmp_path / "opt/nvidia/nsight-systems-cli/2025.1.1/target-linux-x64/nsys")
    link_dir = tmp_path / "usr/bin"
    link_dir.mkdir(parents=True)
    (link_dir / "nsys").symlink_to(real)
    older = _exe(tmp_path / "cuda-12.4/bin/nsys")  # a CUDA toolkit's copy: its version is 12.4
    found = search_cuda_tool("nsys", env={"PATH": str(link_dir), "CUDA_HOME": str(tmp_path / "cuda-12.4")},
                             install_globs=[str(tmp_path / "opt/nvidia/nsight-systems-cli/*/target-linux-x64/nsys")])
    # the link and the real file are one executable: listed once, under PATH
    assert [c.path for c in found.candidates] == [str(link_dir / "nsys"), str(older)]
    assert found.path == str(link_dir / "nsys") and found.chosen is not None and found.chosen.where == "PATH"
    assert found.chosen.version == (2025, 1, 1)


def test_path_first_when_no_path_shows_a_version(tmp_path: Path) -> None:
    first = _exe(tmp_path / "a/ncu")
    _exe(tmp_path / "b/ncu")
    found = search_cuda_tool("ncu", env={"PATH": os.pathsep.join([str(tmp_path / "a"), str(tmp_path / "b")])},
                             install_globs=[str(tmp_path / "b/ncu")])
    assert found.path == str(first) and "first in search order" in found.chosen_because


def test_nothing_found_names_every_place_looked(tmp_path: Path) -> None:
    (tmp_path / "nsys").write_text("not executable")
    found = search_cuda_tool("nsys", env={"PATH": str(tmp_path)}, install_globs=["/nonexistent/*/bin/nsys"])
    assert found.path is None and found.candidates == ()
    assert found.chosen_because == "nsys not found in PATH, /nonexistent/*/bin/nsys"


@pytest.mark.parametrize("where", ["/opt/nvidia/nsight-systems/*/bin/nsys", "/opt/nvidia/nsight-systems-cli/*/bin/nsys",
                                   "/usr/local/cuda*/bin/nsys"])
def test_nvidia_install_folders_are_searched(where: str) -> None:
    assert where in INSTALL_GLOBS["nsys"]


def test_perfkit_tool_dirs_replaces_the_install_folders(tmp_path: Path) -> None:
    newer = _exe(tmp_path / "nsight-systems" / "2025.1.1" / "bin" / "nsys")
    on_path = _exe(tmp_path / "bin" / "nsys")
    env = {"PATH": str(on_path.parent), "PERFKIT_TOOL_DIRS": str(tmp_path / "nsight-systems" / "*" / "bin")}
    found = search_cuda_tool("nsys", env=env)
    assert found.path == str(newer) and "2025.1.1" in found.chosen_because
    only_path = search_cuda_tool("nsys", env={**env, "PERFKIT_TOOL_DIRS": ""})  # the suite's setting
    assert only_path.path == str(on_path) and not any("nvidia" in p for p in only_path.searched)

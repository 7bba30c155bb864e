"""A controller is staged (graded) or imported (flown) only from the path given: a link in its
place, or a folder's controller.py linking out of the folder, is refused naming it (issue 28,
row 3), so nothing outside the folder is copied, scanned and signed as the controller's; and a
file past the staging bound is refused before it is read (row 5)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from plimsoll_ci.commands.fly import load_controller
from plimsoll_ci.errors import BadInput
from plimsoll_ci.sandbox import stage

CONTROLLER = "class Controller:\n    def __init__(self, info):\n        pass\n"


def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside" / "agent"
    folder.mkdir(parents=True)
    (folder / "controller.py").write_text(CONTROLLER + "# 9912345678\n")
    return folder


@pytest.mark.parametrize("linked", ["folder", "file"])
def test_stage_refuses_a_controller_path_that_is_a_link(tmp_path: Path, linked: str) -> None:
    target = outside(tmp_path)
    link = tmp_path / ("agent" if linked == "folder" else "agent.py")
    link.symlink_to(target if linked == "folder" else target / "controller.py")
    with pytest.raises(BadInput, match=f"controller {link}: is a symbolic link"):
        stage.stage(str(link))


def test_stage_refuses_a_link_inside_a_controller_folder(tmp_path: Path) -> None:
    target = outside(tmp_path)
    folder = tmp_path / "agent"
    folder.mkdir()
    (folder / "controller.py").symlink_to(target / "controller.py")
    with pytest.raises(BadInput, match="controller.py is not a regular file"):
        stage.stage(str(folder))


def test_fly_refuses_a_folder_whose_controller_links_outside_it(tmp_path: Path) -> None:
    target = outside(tmp_path)
    folder = tmp_path / "agent"
    folder.mkdir()
    (folder / "controller.py").symlink_to(target / "controller.py")
    with pytest.raises(BadInput, match="controller.py leads outside"):
        load_controller(str(folder))
    (folder / "controller.py").unlink()
    (folder / "v2.py").write_text(CONTROLLER)
    (folder / "controller.py").symlink_to("v2.py")  # a link that stays inside is followed
    assert load_controller(str(folder)).__name__ == "Controller"


def test_a_controller_file_past_the_staging_bound_is_refused_before_it_is_read(tmp_path: Path):
    from plimsoll_ci.squeeze import checks

    folder = tmp_path / "agent"
    folder.mkdir()
    (folder / "controller.py").write_text(CONTROLLER)
    with open(folder / "weights.bin", "wb") as fh:  # sparse: 8 GiB that take no disk
        fh.truncate(8 << 30)
    start = time.monotonic()
    with pytest.raises(BadInput, match=r"weights\.bin \(the files together\): \d+ bytes, over"):
        stage.stage(str(folder))
    with pytest.raises(BadInput, match=r"weights\.bin \(the files together\): \d+ bytes, over"):
        checks.controller_files(folder)
    assert time.monotonic() - start < 10

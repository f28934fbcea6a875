"""Fixtures every folder of tests shares, and the hooks that hand tests to pytest-xdist's processes (process_groups).

Helpers that are not fixtures live in modules of their own in tests/helpers/ (courses.py, once_per_run.py, ...;
pyproject.toml puts the folder on the path), so that a folder's own conftest.py never shadows them."""

import os
from pathlib import Path

import courses
import process_groups
import pytest
from chromium import CHROMIUM, CHROMIUM_ARGS
from playwright import sync_api


@pytest.fixture(scope="session", autouse=True)
def _remember_tmp_path_factory(tmp_path_factory):
    courses.remember(tmp_path_factory)


def pytest_collection_modifyitems(config, items):
    process_groups.write(config, items)


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # before xdist's own, whose loadgroup pytest 9 defeats
def pytest_xdist_make_scheduler(config, log):
    return process_groups.scheduler(config, log) if config.getvalue("dist") == "loadgroup" else None


@pytest.fixture(scope="session")
def course_dir(tmp_path_factory):
    return courses.make_course(tmp_path_factory.mktemp("course"))


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    folder = Path(os.environ.get("PERFAUDIT_BROWSER_ARTIFACTS") or tmp_path_factory.mktemp("browser-artifacts"))
    folder.mkdir(parents=True, exist_ok=True)
    print(f"\nbrowser test artifacts (screenshots, cell timings): {folder}")
    return folder


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} not found: install Debian's chromium (apt-get install -y chromium) "
                    "or set PERFAUDIT_CHROMIUM; never a downloaded browser.")
    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 1280, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()
